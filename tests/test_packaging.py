"""The wheel carries the shipped catalogs, role libraries and question banks, so defaults work outside a checkout."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO


def test_wheel_contains_shipped_pools_and_roles(tmp_path: Path) -> None:
    pytest.importorskip("hatchling", reason="hatchling (a dev extra) builds the wheel")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(REPO),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    (wheel,) = tmp_path.glob("agentbalance-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for shipped in sorted((REPO / "pools").glob("*.yaml")) + sorted((REPO / "roles").glob("*.yaml")):
        assert f"agentbalance/_shipped/{shipped.parent.name}/{shipped.name}" in names
    assert "agentbalance/cli/__init__.py" in names
    banks = sorted((REPO / "agentbalance" / "worlds" / "simulated" / "banks").glob("*.yaml"))
    assert banks and all(f"agentbalance/worlds/simulated/banks/{bank.name}" in names for bank in banks)

"""The `agentbalance` command as a user runs it: from any directory, clear errors, files written."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO, agentbalance, cli


def test_pools_json_from_another_directory_uses_the_shipped_catalog(tmp_path: Path) -> None:
    done = agentbalance("pools", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert len(result["kept"]) + len(result["dropped"]) == 14
    assert len(result["pools"]) == 4
    assert sorted(n for pool in result["pools"] for n in pool) == sorted(result["kept"])
    for dropped in result["dropped"]:
        assert set(dropped) >= {"name", "dominated_by"} and dropped["dominated_by"]
    costs = {b["name"]: b["tok_cost"] for b in result["backbones"]}
    first_pool_max = max(costs[name] for name in result["pools"][0])
    last_pool_max = max(costs[name] for name in result["pools"][-1])
    assert first_pool_max < last_pool_max


def test_pools_table_plot_and_json_file(tmp_path: Path) -> None:
    done = agentbalance("pools", "--k", "3", "--plot", "out/pools.png", "--json-out", "out/pools.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "dominated by" in done.stdout and "pool 2" in done.stdout
    png = (tmp_path / "out" / "pools.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 10_000
    assert len(json.loads((tmp_path / "out" / "pools.json").read_text())["pools"]) == 3


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


BAD_INPUTS = {
    "missing file": (["--catalog", "does-not-exist.yaml"], "catalog file not found: does-not-exist.yaml"),
    "malformed yaml": (["--catalog", "broken.yaml"], "broken.yaml: line 3, column 1: malformed YAML"),
    "negative price": (["--catalog", "negative.yaml"], "negative.yaml: backbones entry 0 ('cheap'), field price_in"),
    "duplicate name": (["--catalog", "duplicate.yaml"], "duplicate name 'cheap'"),
    "k too large": (["--k", "14"], "cannot make 14 pools from"),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_gives_one_clear_error_line_and_exit_code_2(tmp_path: Path, case: str) -> None:
    entry = {
        "name": "cheap",
        "family": "t",
        "reasoning": False,
        "params_active_b": 1.0,
        "price_in": 0.1,
        "price_out": 0.1,
        "scores": {"mmlu": 40},
    }
    write(tmp_path, "broken.yaml", "backbones:\n  - name: [x\n")
    write(tmp_path, "negative.yaml", yaml.safe_dump({"backbones": [{**entry, "price_in": -0.5}]}))
    write(tmp_path, "duplicate.yaml", yaml.safe_dump({"backbones": [entry, entry]}))
    args, expected = BAD_INPUTS[case]
    done = agentbalance("pools", *args, cwd=tmp_path)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr + done.stdout
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert expected in lines[0]


def test_flag_out_of_range_is_rejected_without_traceback(tmp_path: Path) -> None:
    done = agentbalance("pools", "--k", "0", cwd=tmp_path)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and "--k" in done.stderr


@pytest.mark.slow
def test_console_script_is_installed() -> None:
    script = Path(sys.executable).parent / "agentbalance"
    assert script.exists(), "pip install registers the `agentbalance` console script"
    done = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert done.returncode == 0 and "pools" in done.stdout


def test_every_option_name_reads_whole_in_the_help_of_an_80_column_terminal(tmp_path: Path) -> None:
    import typer.main

    from agentbalance.cli import app

    group = typer.main.get_command(app)
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        with contextlib.chdir(tmp_path):
            code, out, err = cli(name, "--help", env={"COLUMNS": "80"})
        assert code == 0, err
        assert "…" not in out, f"{name} --help cuts a line:\n{out}"
        for param in command.params:
            for option in param.opts:
                if option.startswith("--"):
                    assert option in out, f"{name} --help does not show {option} whole"

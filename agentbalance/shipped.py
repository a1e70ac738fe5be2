"""Where the shipped catalogs (pools/) and role libraries (roles/) are, from any working directory.

Never hard-codes a working-directory-relative path: a user runs commands from anywhere.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def shipped_dir(kind: str) -> Path:
    """The folder of shipped `pools` or `roles` files.

    A wheel carries them as package data under `agentbalance/_shipped/`; a source checkout or an
    editable install has them at the repository root beside the package.
    """
    if kind not in ("pools", "roles"):
        raise ValueError(f"unknown shipped data kind {kind!r}")
    for candidate in (_PACKAGE_DIR / "_shipped" / kind, _PACKAGE_DIR.parent / kind):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"the installation is incomplete: no shipped '{kind}' folder next to {_PACKAGE_DIR}")


def default_catalog_path() -> Path:
    return shipped_dir("pools") / "qwen3-deepseek.yaml"


def default_roles_path(domain: str = "general") -> Path:
    return shipped_dir("roles") / f"{domain}.yaml"

"""Reproduce the pools figures and tables the README shows: every shipped catalog, k = 4, seed 0.

Run: .venv/bin/python benchmarks/pools.py   (writes benchmarks/results/pools-<catalog>.{json,png})
"""

from __future__ import annotations

import json
from pathlib import Path

from agentbalance.catalog import Catalog
from agentbalance.plots import plot_pools
from agentbalance.pooling import build_pools
from agentbalance.shipped import shipped_dir

RESULTS = Path(__file__).resolve().parent / "results"


def main() -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    for path in sorted(shipped_dir("pools").glob("*.yaml")):
        catalog = Catalog.load(path)
        result = build_pools(catalog, seed=0)
        stem = f"pools-{path.stem}"
        payload = {"command": f"python benchmarks/pools.py (catalog {path.name}, k=default, seed=0)"}
        payload.update(result.to_json())
        (RESULTS / f"{stem}.json").write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
        plot_pools(result, RESULTS / f"{stem}.png", title=path.name)
        print(f"{path.name}: kept {len(result.kept)}/{len(catalog)}, pools {result.pools}")


if __name__ == "__main__":
    main()

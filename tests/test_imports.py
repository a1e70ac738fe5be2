"""The package's import rules (DESIGN.md's arrows and "never"s), read from the source: every import counts,
at module level, inside functions and under TYPE_CHECKING alike."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import networkx as nx
import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "agentbalance"

# the leaves every layer may use: plain data types, errors, files
CORE = {
    "errors", "files", "shared_sqlite", "executors", "named", "shipped",
    "query", "catalog", "roles", "mas", "budgets",
}  # fmt: skip
# unit -> the units it may import (besides CORE); a unit is a top-level module or package of agentbalance
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "files": {"errors"},
    "shared_sqlite": {"errors"},
    "executors": {"errors"},
    "named": {"errors"},
    "shipped": set(),
    "query": {"errors", "files"},
    "catalog": {"errors", "files", "named", "shipped"},
    "roles": {"errors", "files", "named", "shipped"},
    "mas": {"catalog", "errors", "files", "roles"},
    "budgets": {"errors"},
    "pooling": CORE,
    "encoders": CORE,
    "templates": CORE,
    "plots": CORE | {"pooling"},
    "tasks": CORE,
    "worlds": CORE | {"tasks", "encoders"},
    "runtime": CORE | {"worlds"},
    "policy": CORE | {"pooling", "encoders"},
    "splits": CORE | {"worlds", "tasks"},
    "agreement": CORE | {"encoders", "tasks", "worlds"},
    "task_rules": CORE | {"agreement", "runtime", "tasks", "worlds"},
    "experiment": CORE
    | {"worlds", "tasks", "encoders", "pooling", "splits", "runtime", "policy", "agreement", "task_rules"},
    "measuring": CORE | {"runtime", "experiment", "policy"},
    "run_folder": CORE | {"experiment", "policy", "pooling", "encoders", "worlds"},
    "train": CORE
    | {"policy", "experiment", "runtime", "templates", "measuring", "run_folder", "splits", "pooling"}
    | {"encoders", "worlds", "plots"},
    "trained": CORE
    | {"run_folder", "runtime", "worlds", "experiment", "measuring", "policy", "tasks"}
    | {"encoders", "agreement", "task_rules"},
    "evaluation": CORE
    | {"trained", "train", "runtime", "experiment", "measuring", "policy"}
    | {"templates", "pooling", "plots", "encoders", "worlds", "splits", "tasks"},
    "adapters": CORE | {"trained", "runtime", "worlds", "encoders", "agreement"},
    "serve": CORE | {"trained", "runtime", "worlds", "encoders", "templates", "agreement", "task_rules"},
    "agentbalance": CORE | {"pooling", "runtime", "worlds", "trained"},
}
NEVER = [
    ("policy", "worlds", "the controller sees query text only: it must not reach where calls go"),
    ("policy", "tasks", "tasks hold gold answers, which the controller must never see"),
    ("policy", "runtime", "deciding is not executing"),
    ("runtime", "policy", "execution never decides the MAS"),
    ("worlds", "policy", "worlds answer calls; they never decide the MAS"),
    ("adapters", "train", "the adapter uses a trained controller, never the trainer"),
    ("serve", "train", "the server uses a trained controller, never the trainer"),
    ("experiment", "train", "an experiment is what training stands on"),
    ("measuring", "evaluation", "the measuring module imports no sweep"),
    ("measuring", "trained", "the measuring module sits below TrainedController"),
    ("measuring", "train", "training measures with it: it sits below training"),
    ("trained", "train", "a trained controller reads its run folder; it never trains"),
    ("run_folder", "train", "the run folder is read without the trainer"),
    ("tasks", "worlds", "worlds read tasks, never the other way round"),
    ("tasks", "runtime", "tasks know nothing of execution"),
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def unit(module: str) -> str:
    parts = module.split(".")[1:]
    return parts[0] if parts else "agentbalance"


def imports_of(path: Path, module: str, known: set[str]) -> Iterator[str]:
    """Every agentbalance module `path` imports by name, anywhere in the file."""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            submodules = [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in known]
            # `from package import submodule` depends on the submodule (the package's __init__ runs first
            # for every import of its submodules, so that implicit step is not counted anywhere)
            names = submodules if len(submodules) == len(node.names) else [base, *submodules]
        else:
            continue
        yield from (name for name in names if name in known and name != module)


@pytest.fixture(scope="module")
def graph() -> nx.DiGraph:
    paths = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph = nx.DiGraph()
    graph.add_nodes_from(paths)
    for module, path in paths.items():
        graph.add_edges_from((module, target) for target in imports_of(path, module, set(paths)))
    return graph


def unit_edges(graph: nx.DiGraph) -> dict[tuple[str, str], list[tuple[str, str]]]:
    edges: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for source, target in graph.edges:
        if unit(source) != unit(target):
            edges.setdefault((unit(source), unit(target)), []).append((source, target))
    return edges


def test_no_module_imports_itself_through_others(graph: nx.DiGraph) -> None:
    cycles = [sorted(component) for component in nx.strongly_connected_components(graph) if len(component) > 1]
    assert not cycles, f"import cycles: {cycles}"


def test_no_two_layers_import_each_other(graph: nx.DiGraph) -> None:
    layers = nx.DiGraph(list(unit_edges(graph)))
    cycles = [sorted(component) for component in nx.strongly_connected_components(layers) if len(component) > 1]
    assert not cycles, f"layers that import each other: {cycles}"


def test_every_layer_imports_only_what_design_allows(graph: nx.DiGraph) -> None:
    unexpected = {
        pair: modules
        for pair, modules in unit_edges(graph).items()
        if pair[0] != "cli" and pair[1] not in ALLOWED.get(pair[0], set())
    }
    assert not unexpected, "\n".join(f"{a} -> {b}: {modules}" for (a, b), modules in unexpected.items())


@pytest.mark.parametrize(("source", "target", "why"), NEVER, ids=[f"{s}-never-{t}" for s, t, _ in NEVER])
def test_never(graph: nx.DiGraph, source: str, target: str, why: str) -> None:
    found = unit_edges(graph).get((source, target), [])
    assert not found, f"{why}: {found}"


def test_nothing_but_the_cli_imports_the_cli(graph: nx.DiGraph) -> None:
    found = [(a, b) for a, b in graph.edges if unit(b) == "cli" and unit(a) != "cli"]
    assert not found, found


def test_the_live_worlds_call_policy_never_reaches_http() -> None:
    """It decides retries, waits, the deadline and the limits; the endpoint client sends, and the world composes."""
    path = PACKAGE / "worlds" / "call_policy.py"
    imported: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
    http = {"openai", "httpx", "agentbalance.worlds.endpoint_client", "agentbalance.worlds.live"}
    assert not {name for name in imported if name.split(".")[0] in http or name in http}


def test_no_module_is_over_700_lines() -> None:
    long = {module_name(path): n for path in PACKAGE.rglob("*.py") if (n := len(path.read_text().splitlines())) > 700}
    assert not long, long

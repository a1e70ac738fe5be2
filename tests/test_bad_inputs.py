"""Bad input wherever a user types or points: one clear `error:` line naming what and where, exit code 2.

Complements the per-module tests (test_catalog, test_roles, test_mas, test_cli*, test_replay_world) with the
cases they lack: numbers that are not numbers (NaN, Infinity, 5,000 digits), nesting too deep to parse,
out-of-range flags, and damaged checkpoints.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from agentbalance.catalog import Catalog
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS
from agentbalance.query import read_queries
from agentbalance.roles import RoleSet
from agentbalance.runtime.runner import Caps
from agentbalance.tasks.registry import load_task
from agentbalance.worlds.live import LiveWorld
from agentbalance.worlds.replay import ReplayWorld
from tests.conftest import cli
from tests.test_catalog import write_catalog
from tests.test_replay_world import mcq_tables, write_world

HUGE = "1" + "0" * 5000  # Python refuses to read an integer of more than 4,300 digits
DEEP = "[" * 100_000 + "]" * 100_000


def one_error_line(done: tuple[int, str, str], *expected: str, noise: tuple[str, ...] = ()) -> None:
    """Exit code 2 and one line on stderr, `error: ...`; `noise`: prefixes of other lines a library may print."""
    code, out, err = done
    lines = [line for line in err.splitlines() if line.strip() and not line.lstrip("\r").startswith(noise)]
    assert code == 2, out + err
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for fragment in expected:
        assert fragment in lines[0], f"{fragment!r} not in {lines[0]!r}"


# ----------------------------------------------------------------------------- JSON that is not JSON


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"id": "a", "question": "q", "answer": NaN}', "line 2: NaN is not valid JSON"),
        ('{"id": "a", "question": "q", "answer": -Infinity}', "line 2: -Infinity is not valid JSON"),
        ('{"id": "a", "question": "q", "answer": ' + HUGE + "}", "line 2: unreadable JSON: Exceeds the limit"),
        (DEEP, "line 2: malformed JSON: nested too deeply"),
    ],
    ids=["NaN", "Infinity", "5000 digits", "deep"],
)
def test_a_query_line_with_json_python_would_misread_names_its_line(tmp_path: Path, line: str, expected: str) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text('{"id": "ok", "question": "fine"}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(AgentBalanceError, match=expected.replace("(", r"\(")) as error:
        read_queries(path)
    assert str(error.value).startswith(f"{path}: line 2") and "\n" not in str(error.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"agents": [], "decision": "d", "pool": NaN}', "NaN is not valid JSON"),
        ('{"pool": ' + HUGE + "}", "unreadable JSON"),
        (DEEP, "nested too deeply"),
    ],
    ids=["NaN", "5000 digits", "deep"],
)
def test_a_mas_file_python_would_misread_is_a_clear_error(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "mas.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(AgentBalanceError, match=expected) as error:
        MAS.load(path)
    assert str(error.value).startswith(str(path))


def test_the_run_command_names_the_bad_line_of_a_query_file(tmp_path: Path) -> None:
    mas = tmp_path / "mas.json"
    mas.write_text(
        json.dumps({"agents": [{"id": "d", "role": "Decision Maker", "backbone": "qwen3-8b"}], "decision": "d"})
    )
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"id": "a", "question": "q"}\n\n{"id": "b", "question": "q", "answer": ' + HUGE + "}\n")
    one_error_line(cli("run", "--mas", str(mas), "--input", str(queries)), "queries.jsonl: line 3: unreadable JSON")


def test_a_math_problem_file_with_an_unreadable_number_names_the_file(tmp_path: Path) -> None:
    problem = tmp_path / "test" / "algebra" / "1.json"
    problem.parent.mkdir(parents=True)
    problem.write_text('{"problem": "x", "level": ' + HUGE + ', "solution": "\\\\boxed{1}"}', encoding="utf-8")
    with pytest.raises(AgentBalanceError, match=r"algebra/1\.json: unreadable JSON"):
        load_task("math", tmp_path)


# ----------------------------------------------------------------------------- YAML: catalogs, role files


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"price_in": float("inf")}, "price_in"),
        ({"price_out": float("nan")}, "price_out"),
        ({"params_active_b": float("inf")}, "params_active_b"),
        ({"decode_tps": float("inf")}, "decode_tps"),
        ({"request": {"temperature": float("nan")}}, "request"),
        ({"request": {"seed_date": datetime.date(2025, 1, 1)}}, "request"),
    ],
    ids=["inf price", "nan price", "inf params", "inf speed", "nan in request", "date in request"],
)
def test_a_catalog_number_that_is_not_finite_names_the_entry_and_field(
    tmp_path: Path, change: dict[str, object], field: str
) -> None:
    with pytest.raises(AgentBalanceError, match=rf"backbones entry 0 \('cheap'\), field {field}"):
        Catalog.load(write_catalog(tmp_path, [{**entry(), **change}]))


def entry() -> dict[str, object]:
    return {
        "name": "cheap",
        "family": "t",
        "reasoning": False,
        "params_active_b": 1.0,
        "price_in": 0.1,
        "price_out": 0.2,
        "scores": {"mmlu": 40},
    }


def test_assumptions_must_be_finite_too(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"backbones": [entry()], "assumptions": {"prompt_tokens": float("inf")}}))
    with pytest.raises(AgentBalanceError, match=r"assumptions\.prompt_tokens"):
        Catalog.load(path)


def test_yaml_nested_too_deeply_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text(DEEP, encoding="utf-8")
    with pytest.raises(AgentBalanceError, match=r"deep\.yaml: malformed YAML: nested too deeply to be a catalog file"):
        Catalog.load(path)
    with pytest.raises(AgentBalanceError, match="nested too deeply to be a role library file"):
        RoleSet.load(path)


# ----------------------------------------------------------------------------- replay folders


@pytest.mark.parametrize(
    ("column", "value", "expected"),
    [
        ("cost_usd", "inf", "a finite non-negative number"),
        ("latency_s", "Infinity", "a finite non-negative number"),
        ("completion_tokens", str(10**30), "a non-negative integer up to 10,000,000"),
    ],
)
def test_a_recorded_number_that_would_poison_every_sum_names_its_line(
    tmp_path: Path, column: str, value: str, expected: str
) -> None:
    questions, outcomes = mcq_tables()
    outcomes = outcomes.assign(**{column: [value if row == 3 else "1" for row in range(len(outcomes))]})
    folder = write_world(tmp_path / "world", questions, outcomes)
    with pytest.raises(AgentBalanceError, match=rf"outcomes\.csv\.gz: line 5, column {column}: expected {expected}"):
        ReplayWorld.load(folder)


def test_a_ragged_csv_is_one_error_line(tmp_path: Path) -> None:
    import gzip

    questions, outcomes = mcq_tables()
    folder = write_world(tmp_path / "world", questions, outcomes)
    rows = gzip.decompress((folder / "outcomes.csv.gz").read_bytes()).decode().splitlines()
    rows[3] += ",1,2,3"
    (folder / "outcomes.csv.gz").write_bytes(gzip.compress("\n".join(rows).encode()))
    with pytest.raises(AgentBalanceError, match="malformed CSV") as error:
        ReplayWorld.load(folder)
    assert "\n" not in str(error.value)


# ----------------------------------------------------------------------------- flags out of range


@pytest.mark.parametrize("flag", ["--max-usd", "--max-seconds"])
@pytest.mark.parametrize("value", ["nan", "inf", "0"])
def test_a_per_query_cap_must_be_a_positive_finite_number(flag: str, value: str, tmp_path: Path) -> None:
    mas = tmp_path / "mas.json"
    mas.write_text(
        json.dumps({"agents": [{"id": "d", "role": "Decision Maker", "backbone": "qwen3-8b"}], "decision": "d"})
    )
    one_error_line(cli("run", "--mas", str(mas), flag, value, "2+2?"), f"{flag[2:].replace('-', '_')} must be positive")


def test_caps_refuse_nan_which_would_never_cap() -> None:
    with pytest.raises(AgentBalanceError, match="max_usd must be positive and finite, got nan"):
        Caps(max_usd=float("nan"))


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"timeout_s": float("nan")}, "timeout_s must be positive"),
        ({"timeout_s": float("inf")}, "timeout_s must be positive"),
        ({"backoff_base_s": -1.0}, "backoff_base_s must be a finite number >= 0"),
        ({"backoff_max_s": float("nan")}, "backoff_max_s must be a finite number >= 0"),
        ({"deadline_s": 0.0}, "deadline_s must be a positive number"),
        ({"max_retries": -1}, "max_retries must be 0 or more"),
        ({"concurrency": 0}, "concurrency must be at least 1"),
    ],
)
def test_live_world_settings_out_of_range_are_clear_errors(
    tmp_path: Path, options: dict[str, object], expected: str
) -> None:
    from tests.test_live_world import write_catalog as live_catalog

    with pytest.raises(AgentBalanceError, match=expected):
        LiveWorld(live_catalog(tmp_path), base_url="http://127.0.0.1:9/v1", api_key="k", cache_dir=tmp_path, **options)  # type: ignore[arg-type]


def test_a_live_timeout_out_of_range_is_one_error_line(tmp_path: Path) -> None:
    mas = tmp_path / "mas.json"
    mas.write_text(
        json.dumps({"agents": [{"id": "d", "role": "Decision Maker", "backbone": "qwen3-8b"}], "decision": "d"})
    )
    live = ["--world", "live", "--base-url", "http://127.0.0.1:9/v1"]
    for value in ("0", "nan"):
        one_error_line(
            cli("run", "--mas", str(mas), *live, "--timeout", value, "2+2?", env={"AGENTBALANCE_API_KEY": "k"}),
            "timeout_s must be positive",
        )


# ----------------------------------------------------------------------------- checkpoints (run folders)


@pytest.fixture(scope="module")
def run_folder(trained_run: Path) -> Path:
    """A small but real run folder of `build` (the session's; the tests damage copies of it)."""
    return trained_run


def damaged(run_folder: Path, tmp_path: Path, file: str, content: bytes | None) -> Path:
    """A copy of the run folder with `file` replaced by `content` (None: a directory in its place)."""
    folder = tmp_path / "damaged"
    shutil.copytree(run_folder, folder)
    (folder / file).unlink()
    if content is None:
        (folder / file).mkdir()
    else:
        (folder / file).write_bytes(content)
    return folder


def config_with(run_folder: Path, change: Callable[[dict[str, object]], dict[str, object]]) -> bytes:
    return json.dumps(change(json.loads((run_folder / "config.json").read_text()))).encode()


LOADING_BAR = ("Loading weights",)  # the sentence encoder's progress bar (transformers), printed before the error
CHECKPOINTS: dict[str, tuple[str, Callable[[Path], bytes | None], str]] = {
    # name: (file, its damaged content, what the error line must say)
    "controller.pt truncated": (
        "controller.pt",
        lambda run: (run / "controller.pt").read_bytes()[:300],
        "cannot load the controller",
    ),
    "controller.pt a folder": ("controller.pt", lambda run: None, "cannot load the controller"),
    "controller.pt empty": ("controller.pt", lambda run: b"", "cannot load the controller"),
    "controller.pt random bytes": (
        "controller.pt",
        lambda run: os.urandom(512),
        "cannot load the controller",
    ),
    "config.json empty": ("config.json", lambda run: b"", "unreadable run configuration"),
    "config.json not UTF-8": ("config.json", lambda run: b"\xff\xfe{}", "unreadable run configuration"),
    "config.json a list": ("config.json", lambda run: b"[]", "checkpoint version None is not supported"),
    "config.json other roles": (
        "config.json",
        lambda run: config_with(run, lambda c: {**c, "role_names": ["Wizard"]}),
        "trained on roles ['Wizard']",
    ),
    "config.json missing keys": (
        "config.json",
        lambda run: json.dumps({"version": 1}).encode(),
        "config.json",
    ),
    "config.json wrong type": (
        "config.json",
        lambda run: config_with(run, lambda c: {**c, "pool_count": "four"}),
        "config.json",
    ),
}


@pytest.mark.parametrize(
    "case",
    list(CHECKPOINTS),
)
def test_a_damaged_checkpoint_is_one_error_line(run_folder: Path, tmp_path: Path, case: str) -> None:
    file, content, expected = CHECKPOINTS[case]
    folder = damaged(run_folder, tmp_path, file, content(run_folder))
    done = cli("export", "--model", str(folder), "--query", "What is 2 + 2?")
    one_error_line(done, expected, noise=LOADING_BAR)


def test_the_undamaged_checkpoint_exports(run_folder: Path) -> None:
    code, out, err = cli("export", "--model", str(run_folder), "--query", "What is 2 + 2?")
    assert code == 0, err
    assert MAS.from_json(json.loads(out)).decision

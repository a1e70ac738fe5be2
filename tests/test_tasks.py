"""Task loaders and scorers: each benchmark's public format in, queries + prompts + parsing + scoring out.

Every fixture is written here in the dataset's real format; hub loading is mocked (no network).
"""

from __future__ import annotations

import ast
import csv
import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentbalance.errors import AgentBalanceError
from agentbalance.query import DOMAINS
from agentbalance.tasks.base import Task
from agentbalance.tasks.humaneval import complete_program
from agentbalance.tasks.registry import TASK_NAMES, load_task
from agentbalance.tasks.replay_questions import load_replay_questions
from agentbalance.worlds import open_task, task_names
from agentbalance.worlds.simulated.questions import generate_synthetic
from tests.conftest import REPLAY_WORLDS

TASKS_DIR = Path(__file__).resolve().parent.parent / "agentbalance" / "tasks"


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


def write_csv(path: Path, rows: list[list[str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(rows)
    return path


# ----------------------------------------------------------------------------- fixtures in the real formats

ALGEBRA_ROWS = [
    ["Find the degree of Q(sqrt(2)) over Q.", "0", "2", "4", "6", "B"],
    ["Let p = (1, 2)(5, 4)(2, 3) in S_5. Find the index of <p> in S_5.", "8", "2", "24", "120", "C"],
]
ANATOMY_ROWS = [["Which of these is a bone,\nof the skull?", "Femur", "Sphenoid, greater wing", "Tibia", "Ulna", "B"]]


@pytest.fixture
def mmlu_folder(tmp_path: Path) -> Path:
    """The original layout: data/test/<subject>_test.csv, headerless, quoted cells with commas and newlines."""
    folder = tmp_path / "data" / "test"
    folder.mkdir(parents=True)
    write_csv(folder / "anatomy_test.csv", ANATOMY_ROWS)
    write_csv(folder / "abstract_algebra_test.csv", ALGEBRA_ROWS)
    return folder


MMLU_PRO_RECORDS = [
    {
        "question_id": 71,
        "question": "Managers are entrusted to run the company in the best interest of ________.",
        "options": [f"option {i}" for i in range(10)],
        "answer": "F",
        "answer_index": 5,
        "cot_content": "",
        "category": "business",
        "src": "ori_mmlu-business_ethics",
    },
    {
        "question_id": 72,
        "question": "What is 2 + 2?",
        "options": ["3", "4", "5", "22"],
        "answer": "B",
        "answer_index": 1,
        "cot_content": "",
        "category": "math",
        "src": "stemez-Arithmetic",
    },
]

MATH_PROBLEMS = {
    "algebra/1.json": {
        "problem": "What is $\\frac{1}{4} + \\frac{1}{4}$?",
        "level": "Level 1",
        "type": "Algebra",
        "solution": "We add: $\\frac{1}{4}+\\frac{1}{4}=\\frac{2}{4}=\\boxed{\\frac{1}{2}}$.",
    },
    "algebra/10.json": {
        "problem": "Solve $2x = 8$ for $x$.",
        "level": "Level ?",
        "type": "Algebra",
        "solution": "First $x = \\boxed{3}$ is wrong; dividing by 2 gives $x = \\boxed{4}$.",
    },
    "geometry/2.json": {
        "problem": "A square has side $3$. What is its area?",
        "level": "Level 3",
        "type": "Geometry",
        "solution": "The area is $3^2 = \\boxed{9}$.",
    },
}


@pytest.fixture
def math_folder(tmp_path: Path) -> Path:
    """The original MATH tree: MATH/test/<subject>/<n>.json, one problem a file."""
    root = tmp_path / "MATH" / "test"
    for relative, problem in MATH_PROBLEMS.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(json.dumps(problem), encoding="utf-8")
    return tmp_path / "MATH"


MATH500_RECORDS = [
    {
        "problem": "Convert the point $(0,3)$ in rectangular coordinates to polar coordinates.",
        "solution": "We have $r = 3$ and $\\theta = \\frac{\\pi}{2}$, "
        "so $\\boxed{\\left( 3, \\frac{\\pi}{2} \\right)}$.",
        "answer": "\\left( 3, \\frac{\\pi}{2} \\right)",
        "subject": "Precalculus",
        "level": 2,
        "unique_id": "test/precalculus/807.json",
    },
    {
        "problem": "What is the smallest positive perfect cube that can be written as the sum of three consecutive "
        "integers?",
        "solution": "... so the answer is $\\boxed{27}$.",
        "answer": "27",
        "subject": "Number Theory",
        "level": 3,
        "unique_id": "test/number_theory/515.json",
    },
]

GSM8K_RECORDS = [
    {
        "question": "Janet's ducks lay 16 eggs per day. She eats three and bakes with four. She sells the rest at $2 "
        "each. How much does she make every day?",
        "answer": "Janet sells 16 - 3 - 4 = <<16-3-4=9>>9 duck eggs a day.\nShe makes 9 * 2 = $<<9*2=18>>18.\n#### 18",
    },
    {
        "question": "A company sells 1,000 widgets a week for 52 weeks. How many widgets a year?",
        "answer": "1000 * 52 = <<1000*52=52000>>52000\n#### 52,000",
    },
]

HUMANEVAL_PROMPT = (
    "from typing import List\n\n\n"
    "def sum_positive(numbers: List[int]) -> int:\n"
    '    """Return the sum of the positive numbers of the list.\n'
    "    >>> sum_positive([1, -2, 3])\n"
    "    4\n"
    '    """\n'
)
HUMANEVAL_RECORD = {
    "task_id": "HumanEval/900",
    "prompt": HUMANEVAL_PROMPT,
    "canonical_solution": "    return sum(n for n in numbers if n > 0)\n",
    "test": "\n\nMETADATA = {}\n\n\ndef check(candidate):\n"
    "    assert candidate([1, -2, 3]) == 4\n    assert candidate([]) == 0\n    assert candidate([-1, -5]) == 0\n",
    "entry_point": "sum_positive",
}

MBPP_RECORD = {
    "task_id": 2,
    "text": "Write a function to find the shared elements from the given two lists.",
    "code": "def similar_elements(test_tup1, test_tup2):\n"
    "  res = tuple(set(test_tup1) & set(test_tup2))\n  return (res) ",
    "test_list": [
        "assert set(similar_elements((3, 4, 5, 6),(5, 7, 4, 10))) == set((4, 5))",
        "assert set(similar_elements((1, 2, 3, 4),(5, 4, 3, 7))) == set((3, 4))",
        "assert set(similar_elements((11, 12, 14, 13),(17, 15, 14, 13))) == set((13, 14))",
    ],
    "test_setup_code": "",
    "challenge_test_list": [],
}


# ----------------------------------------------------------------------------- the registry


def test_registry_names_every_benchmark_and_open_task_adds_the_synthetic_domains() -> None:
    assert TASK_NAMES == ("mmlu", "mmlu-pro", "math", "gsm8k", "humaneval", "mbpp", "jsonl", "replay", "served")
    assert task_names() == (*TASK_NAMES, "synthetic-general", "synthetic-math", "synthetic-code")
    with pytest.raises(AgentBalanceError, match="unknown task 'synthetic-math'"):
        load_task("synthetic-math")  # the registry alone: the simulator's tasks live above it, in worlds


def test_unknown_task_lists_the_valid_ones() -> None:
    with pytest.raises(AgentBalanceError, match="unknown task 'mmlu_pro'") as error:
        open_task("mmlu_pro")
    assert all(name in str(error.value) for name in task_names())


def test_tasks_never_import_worlds_policy_or_runtime_and_never_datasets_at_import() -> None:
    for module in TASKS_DIR.glob("*.py"):
        tree = ast.parse(module.read_text(encoding="utf-8"))
        imported = [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
        imported += [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
        forbidden = [m for m in imported if m.split(".")[:2] in (["agentbalance", p] for p in ("worlds", "policy"))]
        forbidden += [m for m in imported if m.startswith(("agentbalance.runtime", "agentbalance.cli"))]
        assert not forbidden, f"{module.name} imports {forbidden}"
    code = "import sys, agentbalance.tasks.registry; print('datasets' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


# ----------------------------------------------------------------------------- MMLU and MMLU-Pro


def test_mmlu_folder_reads_subjects_in_sorted_order_with_ids_golds_and_verbatim_questions(mmlu_folder: Path) -> None:
    task = load_task("mmlu", mmlu_folder)
    queries = list(task.items())
    assert isinstance(task, Task) and task.name == "mmlu" and task.domain == "general"
    assert [q.id for q in queries] == ["mmlu-abstract_algebra-0", "mmlu-abstract_algebra-1", "mmlu-anatomy-0"]
    assert [q.answer for q in queries] == ["B", "C", "B"]
    anatomy = queries[2]
    assert anatomy.question == "Which of these is a bone,\nof the skull?"
    assert anatomy.choices == ("Femur", "Sphenoid, greater wing", "Tibia", "Ulna")
    assert anatomy.metadata["subject"] == "anatomy"
    prompt = task.prompt(anatomy)
    assert anatomy.question in prompt and "(B) Sphenoid, greater wing" in prompt and "letter" in prompt
    assert task.parse("The sphenoid is a skull bone. Answer: (B)", anatomy) == "B"
    assert task.score(anatomy, "B") is True and task.score(anatomy, "C") is False and task.score(anatomy, None) is False


def test_mmlu_accepts_the_data_root_a_single_csv_and_any_csv_names(mmlu_folder: Path, tmp_path: Path) -> None:
    root = mmlu_folder.parent  # data/ holds test/
    assert len(list(load_task("mmlu", root).items())) == 3
    single = list(load_task("mmlu", mmlu_folder / "anatomy_test.csv").items())
    assert [q.id for q in single] == ["mmlu-anatomy-0"]
    plain = tmp_path / "plain"
    plain.mkdir()
    write_csv(plain / "virology.csv", ALGEBRA_ROWS)
    assert [q.id for q in load_task("mmlu", plain).items()] == ["mmlu-virology-0", "mmlu-virology-1"]


def test_mmlu_row_with_wrong_column_count_names_file_and_row(mmlu_folder: Path) -> None:
    bad = write_csv(mmlu_folder / "zoology_test.csv", [ALGEBRA_ROWS[0], ["Too short?", "a", "b", "C"]])
    with pytest.raises(AgentBalanceError, match=r"zoology_test\.csv: row 2 \(line 2\): expected 6 columns.*found 4"):
        load_task("mmlu", bad)


def test_mmlu_gold_that_is_no_option_letter_is_an_error(tmp_path: Path) -> None:
    bad = write_csv(tmp_path / "law_test.csv", [["Q?", "a", "b", "c", "d", "E"]])
    with pytest.raises(AgentBalanceError, match=r"law_test\.csv: row 1.*answer 'E' is not one of the option letters"):
        load_task("mmlu", bad)


def test_mmlu_pro_jsonl_gives_ten_option_queries_with_ids_of_the_replay_world(tmp_path: Path) -> None:
    task = load_task("mmlu-pro", write_jsonl(tmp_path / "test.jsonl", MMLU_PRO_RECORDS))
    first, second = task.items()
    assert (first.id, first.answer, len(first.choices or ())) == ("mmlupro-71", "F", 10)
    assert first.metadata == {"category": "business", "src": "ori_mmlu-business_ethics"}
    assert second.letters == ("A", "B", "C", "D")
    assert task.parse("Let's think step by step. The answer is (F).", first) == "F"
    assert task.score(first, "F") is True and task.score(second, "A") is False
    assert "(J) option 9" in task.prompt(first)


def test_mmlu_pro_answer_that_disagrees_with_answer_index_is_an_error(tmp_path: Path) -> None:
    record = {**MMLU_PRO_RECORDS[1], "answer_index": 2}
    path = write_jsonl(tmp_path / "test.jsonl", [MMLU_PRO_RECORDS[0], record])
    with pytest.raises(AgentBalanceError, match=r"test\.jsonl: line 2: answer 'B' disagrees with answer_index 2"):
        load_task("mmlu-pro", path)


# ----------------------------------------------------------------------------- MATH and MATH-500


def test_math_folder_reads_problem_files_sorted_with_the_last_boxed_answer_as_gold(math_folder: Path) -> None:
    task = load_task("math", math_folder)
    queries = list(task.items())
    assert task.domain == "math"
    assert [q.id for q in queries] == ["math-test-algebra-1", "math-test-algebra-10", "math-test-geometry-2"]
    assert [q.answer for q in queries] == ["\\frac{1}{2}", "4", "9"]
    assert [q.metadata["level"] for q in queries] == [1, None, 3]
    assert queries[2].metadata["subject"] == "Geometry"
    prompt = task.prompt(queries[0])
    assert queries[0].question in prompt and "\\boxed{}" in prompt
    assert task.parse("So it is $\\boxed{\\frac{1}{2}}$.", queries[0]) == "\\frac{1}{2}"
    assert task.score(queries[0], "\\frac{1}{2}") is True
    assert task.score(queries[0], "0.5") is True  # math_equivalent, not string equality
    assert task.score(queries[2], "8") is False


def test_math500_jsonl_keeps_its_answer_level_and_subject_and_ids_match_the_math_tree(tmp_path: Path) -> None:
    task = load_task("math", write_jsonl(tmp_path / "math500.jsonl", MATH500_RECORDS))
    polar, cube = task.items()
    assert polar.id == "math-test-precalculus-807"  # MATH/test/precalculus/807.json would get the same id
    assert polar.answer == "\\left( 3, \\frac{\\pi}{2} \\right)"
    assert (cube.metadata["level"], cube.metadata["subject"]) == (3, "Number Theory")
    assert task.score(cube, task.parse("The cube is $\\boxed{27}$.", cube)) is True


def test_math_problem_without_a_boxed_answer_names_the_file(math_folder: Path) -> None:
    bad = math_folder / "test" / "algebra" / "5.json"
    bad.write_text(json.dumps({**MATH_PROBLEMS["algebra/1.json"], "solution": "It is one half."}), encoding="utf-8")
    with pytest.raises(AgentBalanceError, match=r"algebra/5\.json: no answer.*\\boxed"):
        load_task("math", math_folder)


def test_math_malformed_problem_file_names_the_file(math_folder: Path) -> None:
    (math_folder / "test" / "algebra" / "7.json").write_text('{"problem": "x"', encoding="utf-8")
    with pytest.raises(AgentBalanceError, match=r"algebra/7\.json: line 1: malformed JSON"):
        load_task("math", math_folder)


# ----------------------------------------------------------------------------- GSM8K


def test_gsm8k_gold_is_the_number_after_the_marker_and_scoring_compares_numbers(tmp_path: Path) -> None:
    task = load_task("gsm8k", write_jsonl(tmp_path / "test.jsonl", GSM8K_RECORDS))
    ducks, widgets = task.items()
    assert (task.domain, ducks.id, ducks.answer, widgets.answer) == ("math", "gsm8k-0", "18", "52000")
    assert ducks.question in task.prompt(ducks)
    assert task.parse("She sells 9 eggs at $2, so she makes $18.\n#### 18", ducks) == "18"
    assert task.score(ducks, "18") is True and task.score(ducks, "18.0") is True and task.score(ducks, "17") is False
    assert task.score(widgets, "52,000") is True


def test_gsm8k_answer_without_marker_and_malformed_line_name_the_line(tmp_path: Path) -> None:
    no_marker = write_jsonl(tmp_path / "a.jsonl", [GSM8K_RECORDS[0], {"question": "Q?", "answer": "It is 5."}])
    with pytest.raises(AgentBalanceError, match=r"a\.jsonl: line 2: .*'####'"):
        load_task("gsm8k", no_marker)
    broken = tmp_path / "b.jsonl"
    broken.write_text(json.dumps(GSM8K_RECORDS[0]) + '\n{"question": "Q?", "answer": \n', encoding="utf-8")
    with pytest.raises(AgentBalanceError, match=r"b\.jsonl: line 2, column \d+: malformed JSON"):
        load_task("gsm8k", broken)


# ----------------------------------------------------------------------------- HumanEval (runs the sandbox)


def test_humaneval_prompt_contains_the_function_prompt_and_tests_stay_in_metadata(tmp_path: Path) -> None:
    path = tmp_path / "HumanEval.jsonl.gz"  # the original ships gzipped
    path.write_bytes(gzip.compress((json.dumps(HUMANEVAL_RECORD) + "\n").encode()))
    task = load_task("humaneval", path)
    (query,) = task.items()
    assert (task.domain, query.id, query.answer) == ("code", "HumanEval/900", None)
    assert query.question == HUMANEVAL_PROMPT and HUMANEVAL_PROMPT in task.prompt(query)
    assert query.metadata["entry_point"] == "sum_positive" and "def check(candidate)" in query.metadata["test"]
    assert "def check" not in task.prompt(query)
    assert task.parse("I cannot help with that.", query) is None


def test_complete_program_prepends_the_prompt_to_a_full_function_and_indents_a_bare_body() -> None:
    full = "def sum_positive(numbers):\n    return sum(n for n in numbers if n > 0)\n"
    program = complete_program(HUMANEVAL_PROMPT, full, "sum_positive")
    assert program.startswith(HUMANEVAL_PROMPT) and program.rstrip().endswith("if n > 0)")
    body = "total = 0\nfor n in numbers:\n    if n > 0:\n        total += n\nreturn total"
    program = complete_program(HUMANEVAL_PROMPT, body, "sum_positive")
    assert "\n    total = 0\n    for n in numbers:\n        if n > 0:\n" in program
    for text in (program, complete_program(HUMANEVAL_PROMPT, "    return 0\n", "sum_positive")):
        compile(text, "<program>", "exec")  # syntax only: nothing runs outside the sandbox


def test_humaneval_reads_an_unfenced_body_as_completion_models_write_it(tmp_path: Path) -> None:
    task = load_task("humaneval", write_jsonl(tmp_path / "HumanEval.jsonl", [HUMANEVAL_RECORD]))
    (query,) = task.items()
    program = task.parse(HUMANEVAL_RECORD["canonical_solution"], query)
    assert program == HUMANEVAL_PROMPT + HUMANEVAL_RECORD["canonical_solution"]
    assert task.parse("Sorry, I don't know how to write this.", query) is None


def test_humaneval_canonical_solution_passes_and_a_wrong_one_fails_in_the_sandbox(tmp_path: Path) -> None:
    task = load_task("humaneval", write_jsonl(tmp_path / "HumanEval.jsonl", [HUMANEVAL_RECORD]))
    (query,) = task.items()
    fenced = (
        "Here it is:\n```python\ndef sum_positive(numbers: List[int]) -> int:\n"
        "    return sum(n for n in numbers if n > 0)\n```\n"
    )
    assert task.score(query, task.parse(fenced, query)) is True
    body_only = "```python\n" + HUMANEVAL_RECORD["canonical_solution"] + "```"
    assert task.score(query, task.parse(body_only, query)) is True
    wrong = "```python\ndef sum_positive(numbers):\n    return sum(numbers)\n```"
    assert task.score(query, task.parse(wrong, query)) is False


# ----------------------------------------------------------------------------- MBPP (runs the sandbox)


def test_mbpp_prompt_shows_the_text_and_first_assert_and_the_asserts_judge(tmp_path: Path) -> None:
    task = load_task("mbpp", write_jsonl(tmp_path / "mbpp.jsonl", [MBPP_RECORD]))
    (query,) = task.items()
    assert (task.domain, query.id, query.answer) == ("code", "mbpp-2", None)
    prompt = task.prompt(query)
    assert MBPP_RECORD["text"] in prompt and MBPP_RECORD["test_list"][0] in prompt
    assert MBPP_RECORD["test_list"][2] not in prompt
    assert query.metadata["function"] == "similar_elements"
    right = f"```python\n{MBPP_RECORD['code']}\n```"
    assert task.score(query, task.parse(right, query)) is True
    wrong = "```python\ndef similar_elements(a, b):\n    return tuple(a)\n```"
    assert task.score(query, task.parse(wrong, query)) is False


def test_mbpp_sanitized_variant_and_missing_tests(tmp_path: Path) -> None:
    sanitized = {
        "task_id": 7,
        "prompt": "Write a function to add.",
        "code": "import math\ndef add(a, b): ...",
        "test_imports": ["import math"],
        "test_list": ["assert add(1, 2) == 3"],
        "source_file": "x",
    }
    (query,) = load_task("mbpp", write_jsonl(tmp_path / "sanitized.jsonl", [sanitized])).items()
    assert query.metadata["test"] == "import math\nassert add(1, 2) == 3"
    no_tests = write_jsonl(tmp_path / "bad.jsonl", [{**MBPP_RECORD, "test_list": []}])
    with pytest.raises(AgentBalanceError, match=r"bad\.jsonl: line 1: field 'test_list' is empty"):
        load_task("mbpp", no_tests)


# ----------------------------------------------------------------------------- the user's JSONL


def test_user_jsonl_resolves_domains_letters_and_formats_per_line(tmp_path: Path) -> None:
    lines = [
        {"id": "capital", "question": "Capital of France?", "choices": ["Rome", "Paris"], "answer": "Paris"},
        {"id": "sum", "question": "What is 17 + 25?", "answer": 42},
        {"id": "frac", "question": "Simplify 2/4.", "answer": "\\frac{1}{2}", "domain": "biology"},
        {"id": "poet", "question": "Who wrote Faust?", "answer": "Goethe"},
        {"id": "free", "question": "Name a prime.", "domain": "math"},
    ]
    task = load_task("jsonl", write_jsonl(tmp_path / "mine.jsonl", lines))
    capital, total, frac, poet, free = task.items()
    assert [q.domain for q in task.items()] == ["general", "math", "math", "general", "math"]
    assert task.domain == "math" and frac.metadata["label"] == "biology"
    assert capital.answer == "B" and task.score(capital, task.parse("It is (B) Paris.", capital)) is True
    assert task.score(total, task.parse("17 + 25 = \\boxed{42}", total)) is True
    assert "\\boxed{}" in task.prompt(total)
    assert task.score(frac, "0.5") is True
    assert task.parse("Faust was written by Goethe.\nAnswer: goethe.", poet) == "goethe."
    assert task.score(poet, "goethe.") is True and task.score(poet, "Schiller") is False
    assert task.score(free, "7") is None  # no gold


def test_user_jsonl_gold_that_is_neither_letter_nor_choice_names_the_query(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "mine.jsonl", [{"id": "q1", "question": "?", "choices": ["a", "b"], "answer": "c"}])
    with pytest.raises(AgentBalanceError, match=r"mine\.jsonl: query 'q1': answer 'c' is neither an option letter"):
        load_task("jsonl", path)


def test_user_jsonl_needs_data() -> None:
    with pytest.raises(AgentBalanceError, match=r"task 'jsonl' needs --data PATH"):
        load_task("jsonl")


# ----------------------------------------------------------------------------- replay questions


def test_replay_task_on_a_written_world_reads_letters_without_choices(tmp_path: Path) -> None:
    questions = [
        {"id": "w1", "domain": "winograde", "question": "A) Ian\nB) Dennis\nWho?", "choices": None, "answer": "B",
         "source": "x"},
        {"id": "w2", "domain": "winograde", "question": "A) cat\nB) dog\nWhich?", "choices": None, "answer": "A",
         "source": "x"},
    ]  # fmt: skip
    write_jsonl(tmp_path / "questions.jsonl", questions)
    task = load_task("replay", tmp_path)
    w1, w2 = task.items()
    assert task.domain == "general" and w1.domain == "winograde" and w1.metadata == {"source": "x"}
    assert task.parse("The answer is B", w1) == "B" and task.score(w1, "B") is True and task.score(w2, "B") is False
    assert load_task("replay", tmp_path / "questions.jsonl", limit=1).queries == (w1,)


def test_replay_questions_errors_name_the_line(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "questions.jsonl", [{"id": "a", "question": "?", "answr": "B"}])
    with pytest.raises(AgentBalanceError, match=r"questions\.jsonl: line 1: unknown key\(s\) answr"):
        load_replay_questions(tmp_path)
    with pytest.raises(AgentBalanceError, match=r"replay world .*empty: missing file .*questions\.jsonl"):
        (tmp_path / "empty").mkdir()
        load_task("replay", tmp_path / "empty")


@pytest.mark.parametrize("world", REPLAY_WORLDS)
def test_replay_task_reads_every_shared_world(shared_data: Path, world: str) -> None:
    task = load_task("replay", shared_data / world, limit=50)
    queries = list(task.items())
    expected = {"gsm8k-reasoning-dev": "math", "routerbench-mbpp": "code"}.get(world, "general")
    assert len(queries) == 50 and task.domain == expected
    query = queries[0]
    assert query.question in task.prompt(query)
    if expected == "code":
        assert task.score(query, "def f(): pass") is None  # code worlds record no tests
    elif query.answer is not None:
        assert task.score(query, query.answer) is True
        wrong = "A" if query.answer != "A" else "B"
        assert task.score(query, wrong if expected == "general" else "-1") is False


# ----------------------------------------------------------------------------- synthetic


@pytest.mark.parametrize(
    ("domain", "completion"),
    [
        ("general", "[simulated m as r]\nAnswer: {gold}"),
        ("math", "[simulated m as r] Final answer: \\boxed{{{gold}}}"),
        ("code", "[simulated m as r]\n```python\n# simulated solution, behaviour: {gold}\n```"),
    ],
)
def test_synthetic_tasks_read_the_simulated_worlds_answers_and_score_exactly(domain: str, completion: str) -> None:
    task = open_task(f"synthetic-{domain}", limit=8, seed=3)
    queries = list(task.items())
    assert task.domain == domain and queries == generate_synthetic(domain, 8, 3)
    for query in queries:
        assert query.question in task.prompt(query)
        parsed = task.parse(completion.format(gold=query.answer), query)
        assert parsed == query.answer and task.score(query, parsed) is True
        assert task.score(query, query.metadata["distractors"][0]) is False


def test_synthetic_default_count_and_seed() -> None:
    assert len(open_task("synthetic-math")) == 500  # type: ignore[arg-type]
    assert list(open_task("synthetic-general", limit=3, seed=1).items()) != list(
        open_task("synthetic-general", limit=3, seed=2).items()
    )


# ----------------------------------------------------------------------------- --limit and bad input


def test_limit_takes_the_first_items_in_file_order(mmlu_folder: Path, math_folder: Path, tmp_path: Path) -> None:
    assert [q.id for q in load_task("mmlu", mmlu_folder, limit=2).items()] == [
        "mmlu-abstract_algebra-0",
        "mmlu-abstract_algebra-1",
    ]
    assert [q.id for q in load_task("math", math_folder, limit=1).items()] == ["math-test-algebra-1"]
    gsm8k = write_jsonl(tmp_path / "test.jsonl", GSM8K_RECORDS)
    assert len(list(load_task("gsm8k", gsm8k, limit=10).items())) == 2
    for bad in (0, -3):
        with pytest.raises(AgentBalanceError, match=f"--limit must be a positive integer, got {bad}"):
            load_task("gsm8k", gsm8k, limit=bad)


@pytest.mark.parametrize("name", ["mmlu", "mmlu-pro", "math", "gsm8k", "humaneval", "mbpp", "jsonl", "replay"])
def test_missing_data_path_is_an_error_naming_it(name: str, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "data.jsonl"
    with pytest.raises(AgentBalanceError, match="not found") as error:
        load_task(name, missing)
    assert str(missing) in str(error.value)


def test_missing_field_names_the_line_and_field(tmp_path: Path) -> None:
    record = {key: value for key, value in HUMANEVAL_RECORD.items() if key != "entry_point"}
    path = write_jsonl(tmp_path / "HumanEval.jsonl", [HUMANEVAL_RECORD, record])
    with pytest.raises(AgentBalanceError, match=r"HumanEval\.jsonl: line 2: missing field 'entry_point'"):
        load_task("humaneval", path)


# ----------------------------------------------------------------------------- the Hugging Face hub (mocked)


class FakeHub:
    """Stands in for datasets.load_dataset: records what it was asked, returns plain dicts."""

    def __init__(self, records: list[dict[str, Any]]) -> None:
        self.records = records
        self.calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    def __call__(self, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        self.calls.append((args, kwargs))
        return self.records


def test_mmlu_from_the_hub_converts_like_the_csv(monkeypatch: pytest.MonkeyPatch, mmlu_folder: Path) -> None:
    datasets = pytest.importorskip("datasets")
    hub_rows = [
        {"question": row[0], "subject": subject, "choices": row[1:5], "answer": "ABCD".index(row[5])}
        for subject, rows in (("abstract_algebra", ALGEBRA_ROWS), ("anatomy", ANATOMY_ROWS))
        for row in rows
    ]
    fake = FakeHub(hub_rows)
    monkeypatch.setattr(datasets, "load_dataset", fake)
    from_hub = load_task("mmlu", limit=3)
    assert fake.calls == [(("cais/mmlu", "all"), {"split": "test"})]
    assert list(from_hub.items()) == list(load_task("mmlu", mmlu_folder).items())


def test_math_from_the_hub_reads_math500(monkeypatch: pytest.MonkeyPatch) -> None:
    datasets = pytest.importorskip("datasets")
    fake = FakeHub(MATH500_RECORDS)
    monkeypatch.setattr(datasets, "load_dataset", fake)
    task = load_task("math")
    assert fake.calls == [(("HuggingFaceH4/MATH-500",), {"split": "test"})]
    assert [q.id for q in task.items()] == ["math-test-precalculus-807", "math-test-number_theory-515"]


def test_hub_records_are_checked_like_file_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    datasets = pytest.importorskip("datasets")
    monkeypatch.setattr(datasets, "load_dataset", FakeHub([{"question": "Q?", "answer": "no marker"}]))
    with pytest.raises(AgentBalanceError, match=r"hub dataset openai/gsm8k \(main\), split test: record 0: .*####"):
        load_task("gsm8k")


def test_failed_hub_load_asks_for_a_local_file(monkeypatch: pytest.MonkeyPatch) -> None:
    datasets = pytest.importorskip("datasets")

    def offline(*args: Any, **kwargs: Any) -> None:
        raise ConnectionError("Couldn't reach 'HuggingFaceH4/MATH-500' on the Hub (LocalEntryNotFoundError)\nmore")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(AgentBalanceError) as error:
        load_task("math")
    assert str(error.value) == (
        "task 'math' needs --data PATH (a local MATH-500 JSONL or MATH folder); loading 'HuggingFaceH4/MATH-500' "
        "from the Hugging Face hub failed: ConnectionError: Couldn't reach 'HuggingFaceH4/MATH-500' on the Hub "
        "(LocalEntryNotFoundError)"
    )


def test_every_task_satisfies_the_protocol_and_a_known_domain(
    mmlu_folder: Path, math_folder: Path, tmp_path: Path
) -> None:
    tasks = [
        load_task("mmlu", mmlu_folder),
        load_task("math", math_folder),
        load_task("mmlu-pro", write_jsonl(tmp_path / "p.jsonl", MMLU_PRO_RECORDS)),
        load_task("gsm8k", write_jsonl(tmp_path / "g.jsonl", GSM8K_RECORDS)),
        load_task("humaneval", write_jsonl(tmp_path / "h.jsonl", [HUMANEVAL_RECORD])),
        load_task("mbpp", write_jsonl(tmp_path / "m.jsonl", [MBPP_RECORD])),
        open_task("synthetic-code", limit=2),
    ]
    for task in tasks:
        assert isinstance(task, Task) and task.domain in DOMAINS
        for query in task.items():
            assert query.question in task.prompt(query)

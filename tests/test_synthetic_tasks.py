"""Synthetic queries: reproducible per index, varied, calibrated difficulty that text reveals only partly; their
question banks load through a strict schema."""

from __future__ import annotations

import ast
import re
import shutil
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

from agentbalance.errors import AgentBalanceError
from agentbalance.query import DOMAINS
from agentbalance.worlds.simulated.questions import generate_synthetic, synthetic_topics
from agentbalance.worlds.simulated.questions.banks import (
    BANK_DIR,
    BANKS,
    CodeTopics,
    GeographyBank,
    MathBank,
    bank_path,
    load_bank,
    read_bank,
)
from agentbalance.worlds.simulated.questions.code import topic_specs

N = 2000
SEED = 11

# Words that would hand the estimator its label; none may appear anywhere in a rendered query.
DIFFICULTY_WORDS = re.compile(
    r"\b(hard|harder|hardest|easy|easier|easiest|difficult|difficulty|simple|simplest|challenging|trivial|"
    r"trivially|level|levels|advanced|beginner|novice|intermediate|expert|tricky|straightforward|elementary|"
    r"basic|tough)\b",
    re.IGNORECASE,
)


@pytest.fixture(scope="module")
def items() -> dict[str, list]:
    return {domain: generate_synthetic(domain, N, SEED) for domain in DOMAINS}


def test_generation_is_deterministic_and_item_i_does_not_depend_on_count_or_start() -> None:
    for domain in DOMAINS:
        first = generate_synthetic(domain, 50, 3)
        assert first == generate_synthetic(domain, 50, 3)
        assert first[10:20] == generate_synthetic(domain, 10, 3, start=10)
        assert [q.id for q in first[:2]] == [f"syn-{domain}-3-0", f"syn-{domain}-3-1"]


def test_seeds_differ_and_texts_are_almost_all_distinct(items: dict[str, list]) -> None:
    for domain in DOMAINS:
        other = generate_synthetic(domain, 100, SEED + 1)
        assert sum(a.question != b.question for a, b in zip(items[domain][:100], other, strict=True)) >= 95
        assert len({q.question for q in items[domain]}) >= N - 10


def test_difficulty_is_centred_with_the_spread_of_an_irt_scale(items: dict[str, list]) -> None:
    for domain in DOMAINS:
        b = np.array([q.metadata["difficulty"] for q in items[domain]])
        assert abs(b.mean()) <= 0.15, domain
        assert 1.0 <= b.std() <= 1.4, domain


def test_no_text_names_its_own_difficulty(items: dict[str, list]) -> None:
    for domain in DOMAINS:
        leaks = [q.render() for q in items[domain] if DIFFICULTY_WORDS.search(q.render())]
        assert not leaks, leaks[:3]


def _tokens(text: str) -> list[str]:
    words = re.findall(r"[a-z]+|\d+", text.lower())
    return words + [f"{a} {b}" for a, b in pairwise(words)]


def bag_of_words_r2(queries: list, alpha: float = 10.0) -> float:
    """Ridge on unigram+bigram counts (vocabulary from the first half), R^2 on the second half."""
    texts = [_tokens(q.render()) for q in queries]
    y = np.array([q.metadata["difficulty"] for q in queries])
    half = len(texts) // 2
    counts: dict[str, int] = {}
    for tokens in texts[:half]:
        for token in tokens:
            counts[token] = counts.get(token, 0) + 1
    vocabulary = {token: j for j, token in enumerate(t for t, c in counts.items() if c >= 2)}
    x = np.zeros((len(texts), len(vocabulary)), np.float32)
    for i, tokens in enumerate(texts):
        for token in tokens:
            if token in vocabulary:
                x[i, vocabulary[token]] += 1
    centre = x[:half].mean(axis=0)
    train, test = x[:half] - centre, x[half:] - centre
    gram = (train @ train.T).astype(np.float64)
    dual = np.linalg.solve(gram + alpha * np.eye(half), y[:half] - y[:half].mean())
    predicted = (test @ train.T).astype(np.float64) @ dual + y[:half].mean()
    residual = ((y[half:] - predicted) ** 2).sum()
    return float(1 - residual / ((y[half:] - y[half:].mean()) ** 2).sum())


def test_a_bag_of_words_probe_recovers_difficulty_only_partly(items: dict[str, list]) -> None:
    for domain in DOMAINS:
        r2 = bag_of_words_r2(items[domain])
        assert 0.25 <= r2 <= 0.85, (domain, r2)


def test_mcq_items_have_four_distinct_choices_and_the_other_letters_as_distractors(items: dict[str, list]) -> None:
    golds = []
    for q in items["general"]:
        assert q.choices is not None and len(q.choices) == 4 and len(set(q.choices)) == 4
        assert q.answer in "ABCD"
        distractors = q.metadata["distractors"]
        assert len(distractors) == 3 and sorted([*distractors, q.answer]) == ["A", "B", "C", "D"]
        golds.append(q.answer)
    shares = np.array([golds.count(letter) for letter in "ABCD"]) / len(golds)
    assert np.all(np.abs(shares - 0.25) < 0.04)


def test_math_distractors_are_wrong_and_distinct_and_code_items_are_function_specs(items: dict[str, list]) -> None:
    for q in items["math"]:
        distractors = q.metadata["distractors"]
        assert q.choices is None and q.answer
        assert len(set(distractors)) == 3 and q.answer not in distractors
        assert re.fullmatch(r"[-+0-9/.iπ]{1,12}", q.answer), q.answer
    for q in items["code"]:
        assert q.answer == "pass" and q.choices is None
        assert q.metadata["distractors"] == ["fail-edge-case", "fail-logic", "fail-syntax"]
        assert re.search(r"`def [a-z_]+\(.*\) -> .+`", q.question)


def test_simple_arithmetic_answers_agree_with_the_numbers_in_the_question() -> None:
    equation = re.compile(r"Solve for x: (-?\d*)x ([+-]) (\d+) = (-?\d+)\.")
    boxes = re.compile(r"buys (\d+) boxes of [a-z ]+, and each box holds (\d+) ")
    checked = 0
    for q in generate_synthetic("math", 400, 5) + generate_synthetic("general", 400, 5):
        if m := equation.search(q.question):
            a, b, c = int(m[1] or 1), int(m[3]) * (1 if m[2] == "+" else -1), int(m[4])
            assert a * int(q.answer) + b == c, q.question
            checked += 1
        if m := boxes.search(q.question):
            assert q.choices is not None
            assert q.choices["ABCD".index(q.answer)] == str(int(m[1]) * int(m[2])), q.question
            checked += 1
    assert checked >= 5


def test_each_domain_spans_its_topics_from_introductory_to_professional() -> None:
    for domain, minimum in (("general", 12), ("math", 10), ("code", 10)):
        topics = synthetic_topics(domain)
        assert len(topics) >= minimum
        assert max(t.base for t in topics) - min(t.base for t in topics) >= 2.0


def test_an_unknown_domain_or_a_negative_count_is_a_user_error() -> None:
    with pytest.raises(AgentBalanceError, match="general, math, code"):
        generate_synthetic("chemistry", 5, 0)
    with pytest.raises(AgentBalanceError, match="count"):
        generate_synthetic("math", -1, 0)


# ----------------------------------------------------------------------------- the question banks


def test_every_shipped_bank_loads_and_every_bank_file_has_a_schema() -> None:
    for schema in BANKS:
        assert load_bank(schema) is load_bank(schema)  # read once per process
    assert sorted(path.name for path in BANK_DIR.glob("*.yaml")) == sorted(bank_path(s).name for s in BANKS)
    for topic in CodeTopics.model_fields:
        assert topic_specs(topic)  # every spec's example drawer or writer exists
    assert {t.name for t in synthetic_topics("code")} == set(CodeTopics.model_fields)


def _copy(schema: type, tmp_path: Path) -> Path:
    return Path(shutil.copy(bank_path(schema), tmp_path / bank_path(schema).name))


def test_a_bank_with_an_unknown_key_is_an_error_naming_the_file_and_the_key(tmp_path: Path) -> None:
    path = _copy(GeographyBank, tmp_path)
    path.write_text(path.read_text(encoding="utf-8") + "capitols: []\n", encoding="utf-8")
    with pytest.raises(AgentBalanceError) as error:
        read_bank(path, GeographyBank)
    assert str(path) in str(error.value) and "capitols" in str(error.value)
    assert "Extra inputs are not permitted" in str(error.value)


def test_a_bank_value_of_the_wrong_type_is_an_error_naming_the_file_and_the_field(tmp_path: Path) -> None:
    path = _copy(GeographyBank, tmp_path)
    text = path.read_text(encoding="utf-8")
    assert "  offset: -0.3\n" in text
    path.write_text(text.replace("  offset: -0.3\n", "  offset: rather obscure\n", 1), encoding="utf-8")
    with pytest.raises(AgentBalanceError) as error:
        read_bank(path, GeographyBank)
    assert f"{path}: facts.0.offset:" in str(error.value)


def test_a_template_with_an_unknown_placeholder_is_an_error_naming_it(tmp_path: Path) -> None:
    path = _copy(MathBank, tmp_path)
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("{subject} exercise", "{subjcet} exercise", 1), encoding="utf-8")
    with pytest.raises(AgentBalanceError, match=r"frames\.0: .*unknown placeholder \{subjcet\}") as error:
        read_bank(path, MathBank)
    assert str(path) in str(error.value)


def test_the_questions_never_import_the_simulator_or_the_tasks() -> None:
    for module in (Path(__file__).resolve().parent.parent / "agentbalance/worlds/simulated/questions").glob("*.py"):
        tree = ast.parse(module.read_text(encoding="utf-8"))
        imported = [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
        forbidden = [m for m in imported if m.startswith(("agentbalance.worlds.simulated.world", "agentbalance.tasks"))]
        assert not forbidden, f"{module.name} imports {forbidden}"

"""Synthetic queries: reproducible per index, varied, calibrated difficulty that text reveals only partly."""

from __future__ import annotations

import re
from itertools import pairwise

import numpy as np
import pytest

from agentbalance.errors import AgentBalanceError
from agentbalance.query import DOMAINS
from agentbalance.worlds.simulated.questions import generate_synthetic, synthetic_topics

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

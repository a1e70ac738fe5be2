"""The synthetic question generator: the topic registry of each domain and `generate_synthetic`, which assembles items.

It must never name difficulty in the text nor use global random state: item i depends only on (domain, seed, i).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from agentbalance.errors import AgentBalanceError
from agentbalance.query import DOMAINS, Query
from agentbalance.worlds.simulated.questions import algebra, knowledge, reasoning
from agentbalance.worlds.simulated.questions import math as maths
from agentbalance.worlds.simulated.questions.code import specs_topic
from agentbalance.worlds.simulated.questions.common import Build

RESIDUAL_SD = 0.7
"""Standard deviation of the part of b that no text feature reveals (the estimator's irreducible error)."""

LETTERS = ("A", "B", "C", "D")


@dataclass(frozen=True)
class Topic:
    """A topic of a domain: its base difficulty and the builder that writes one item of it."""

    name: str
    base: float
    build: Build


# The topics of each domain, easiest first; the order is part of every seed's items.
GENERAL_TOPICS = (
    Topic("elementary_mathematics", -1.7, reasoning.elementary_mathematics),
    Topic("high_school_geography", -1.2, knowledge.high_school_geography),
    Topic("nutrition", -0.8, knowledge.nutrition),
    Topic("marketing", -0.6, knowledge.marketing),
    Topic("world_history", -0.4, knowledge.world_history),
    Topic("high_school_biology", -0.3, knowledge.high_school_biology),
    Topic("high_school_chemistry", -0.1, knowledge.high_school_chemistry),
    Topic("clinical_knowledge", 0.1, knowledge.clinical_knowledge),
    Topic("moral_scenarios", 0.2, knowledge.moral_scenarios),
    Topic("college_physics", 0.5, reasoning.college_physics),
    Topic("formal_logic", 0.6, reasoning.formal_logic),
    Topic("econometrics", 0.9, reasoning.econometrics),
    Topic("professional_law", 1.1, knowledge.professional_law),
    Topic("abstract_algebra", 1.3, reasoning.abstract_algebra),
)
MATH_TOPICS = (
    Topic("arithmetic", -1.7, maths.arithmetic),
    Topic("percentages", -1.1, maths.percentages),
    Topic("ratios", -0.8, maths.ratios),
    Topic("linear_equations", -0.6, maths.framed(algebra.linear_equations, ("algebra", "pre-algebra"))),
    Topic("sequences", -0.1, maths.framed(algebra.sequences, ("algebra", "sequences and series"))),
    Topic("systems_of_equations", 0.0, maths.framed(algebra.systems_of_equations, ("algebra", "linear algebra"))),
    Topic("quadratics", 0.3, maths.framed(algebra.quadratics, ("algebra", "precalculus"))),
    Topic("probability", 0.4, maths.framed(maths.probability, ("probability", "statistics"))),
    Topic("geometry", 0.5, maths.framed(maths.geometry, ("geometry", "coordinate geometry"))),
    Topic("inequalities", 0.7, maths.framed(algebra.inequalities, ("algebra", "precalculus"))),
    Topic("combinatorics", 0.8, maths.framed(maths.combinatorics, ("counting", "combinatorics"))),
    Topic("number_theory", 1.0, maths.framed(maths.number_theory, ("number theory", "olympiad"))),
    Topic("complex_numbers", 1.2, maths.framed(algebra.complex_numbers, ("precalculus", "complex analysis"))),
)
CODE_TOPICS = tuple(
    Topic(name, base, specs_topic(name))
    for name, base in (
        ("string_manipulation", -1.4),
        ("list_filtering", -1.2),
        ("number_utilities", -0.9),
        ("counting_with_dictionaries", -0.7),
        ("sorting_with_keys", -0.4),
        ("parsing", -0.1),
        ("two_pointers", 0.2),
        ("recursion", 0.3),
        ("intervals", 0.6),
        ("graph_search", 0.9),
        ("dynamic_programming", 1.2),
    )
)

# (domain, code mixed into the per-item seed, topics, centre subtracted so that b has mean ~0 over the domain)
_DOMAIN_TABLE = (
    ("general", 1, GENERAL_TOPICS, 0.27),
    ("math", 2, MATH_TOPICS, 0.48),
    ("code", 3, CODE_TOPICS, 0.70),
)


def synthetic_topics(domain: str) -> tuple[Topic, ...]:
    """The topics of a synthetic domain with their base difficulties (for reports and the simulator)."""
    return _domain_entry(domain)[2]


def _domain_entry(domain: str) -> tuple[str, int, tuple[Topic, ...], float]:
    for entry in _DOMAIN_TABLE:
        if entry[0] == domain:
            return entry
    raise AgentBalanceError(f"unknown synthetic domain {domain!r}; valid domains: {', '.join(DOMAINS)}")


def _topic_slot(seed: int, code: int, index: int, topic_count: int) -> int:
    """Topics are dealt in shuffled blocks of `topic_count` consecutive items, so any 2,000 items
    carry an almost exact topic mix: the sample's mean difficulty, and with it a backbone's score,
    varies far less from one seed to another than with independent draws."""
    block, slot = divmod(index, topic_count)
    return int(np.random.default_rng([seed, code, 1, block]).permutation(topic_count)[slot])


def _synthetic_item(domain: str, code: int, topics: tuple[Topic, ...], centre: float, seed: int, index: int) -> Query:
    rng = np.random.default_rng([seed, code, index])
    topic = topics[_topic_slot(seed, code, index, len(topics))]
    residual = float(rng.normal(0.0, RESIDUAL_SD))
    draft = topic.build(rng)
    difficulty = round(topic.base + draft.complexity + residual - centre, 4)
    if domain == "general":
        gold_position = int(rng.integers(4))
        others = [p for p in range(4) if p != gold_position]
        others = [others[int(j)] for j in rng.permutation(3)]
        choices = [""] * 4
        choices[gold_position] = draft.answer
        for position, text in zip(others, draft.wrong, strict=True):
            choices[position] = text
        return Query(
            id=f"syn-{domain}-{seed}-{index}",
            question=draft.question,
            choices=tuple(choices),
            answer=LETTERS[gold_position],
            domain=domain,
            metadata={"difficulty": difficulty, "topic": topic.name, "distractors": [LETTERS[p] for p in others]},
        )
    return Query(
        id=f"syn-{domain}-{seed}-{index}",
        question=draft.question,
        answer=draft.answer,
        domain=domain,
        metadata={"difficulty": difficulty, "topic": topic.name, "distractors": list(draft.wrong)},
    )


def generate_synthetic(domain: str, count: int, seed: int, start: int = 0) -> list[Query]:
    """Queries start .. start+count-1 of a synthetic domain; item i depends only on (domain, seed, i).

    Each item has its own generator seeded by (seed, domain code, i), so a slice of a long run equals a short run.
    metadata["difficulty"] = topic base + visible complexity (steps, conditions, number size, EXCEPT/NOT, extra
    requirements and edge cases) + hidden N(0, RESIDUAL_SD) - a per-domain centre, so b has mean ~0 and sd ~1.1-1.2.
    """
    name, code, topics, centre = _domain_entry(domain)
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise AgentBalanceError(f"synthetic {domain}: count must be a non-negative integer, got {count!r}")
    if isinstance(start, bool) or not isinstance(start, int) or start < 0:
        raise AgentBalanceError(f"synthetic {domain}: start must be a non-negative integer, got {start!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise AgentBalanceError(f"synthetic {domain}: seed must be a non-negative integer, got {seed!r}")
    return [_synthetic_item(name, code, topics, centre, seed, index) for index in range(start, start + count)]

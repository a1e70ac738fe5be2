"""The simulated world: calibrated to published scores, realistic against the real recordings, deterministic."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest

from agentbalance.catalog import Backbone, Catalog
from agentbalance.mas import Agent
from agentbalance.query import DOMAINS, Query
from agentbalance.roles import Role, RoleSet
from agentbalance.worlds.base import AgentCall, Completion, Upstream
from agentbalance.worlds.simulated import SimulatedWorld, SimulationParameters, relation
from agentbalance.worlds.simulated.questions import generate_synthetic
from agentbalance.worlds.simulated.world import (
    SHIPPED_CALIBRATION,
    calibration_difficulties,
    generated_difficulties,
)

CATALOG = Catalog.load()
LIBRARIES = {domain: RoleSet.load(domain) for domain in DOMAINS}
STATS = Path(__file__).resolve().parent.parent / "benchmarks" / "studies" / "results" / "replay_stats.json"


@pytest.fixture(scope="module")
def world() -> SimulatedWorld:
    return SimulatedWorld(CATALOG, seed=0)


@pytest.fixture(scope="module")
def items() -> dict[str, list[Query]]:
    return {domain: generate_synthetic(domain, 2000, seed=7) for domain in DOMAINS}


AGENT = Agent(id="a", role="agent", backbone="agent")  # the world reads the role and backbone of the call


def ask(
    world: SimulatedWorld,
    backbone: str,
    role: Role,
    queries: Sequence[Query],
    inputs: Callable[[Query], list[Upstream]] = lambda query: [],
) -> list[Completion]:
    """One agent call per query, straight to the world; `inputs` gives each call its incoming answers."""
    calls = [AgentCall(AGENT, role, CATALOG[backbone], query, inputs(query)) for query in queries]

    async def all_calls() -> list[Completion]:
        return list(await asyncio.gather(*(world.complete(call) for call in calls)))

    return asyncio.run(all_calls())


def accuracy(completions: Sequence[Completion]) -> float:
    return 100 * float(np.mean([c.correct for c in completions]))


@pytest.mark.slow
def test_a_single_agent_scores_its_published_score_within_3_points(
    world: SimulatedWorld, items: dict[str, list[Query]]
) -> None:
    for domain in DOMAINS:
        decision = LIBRARIES[domain].decision  # neutral role: the calibration target is the backbone alone
        for backbone in CATALOG:
            measured = accuracy(ask(world, backbone.name, decision, items[domain]))
            published = 100 * world.published_score(backbone, domain)
            assert abs(measured - published) <= 3, (backbone.name, domain, measured, published)


def test_the_shipped_calibration_sample_is_what_the_generator_gives() -> None:
    """The simulator calibrates on shipped difficulties (generating them cost seconds in every process): they must be
    exactly the generator's, so that a change to the synthetic items cannot leave the calibration behind."""
    count = SimulationParameters().calibration_items
    for domain in DOMAINS:
        shipped = calibration_difficulties(domain, count)
        assert np.array_equal(shipped, generated_difficulties(domain, count)), (
            f"{SHIPPED_CALIBRATION} is stale for {domain}: run "
            "`python -c 'from agentbalance.worlds.simulated.world import write_shipped_calibration as w; w()'`"
        )
    assert calibration_difficulties("math", 50).shape == (50,)  # another size is generated


def test_outcomes_are_a_pure_function_of_seed_query_backbone_role_and_inputs(items: dict[str, list[Query]]) -> None:
    role = LIBRARIES["math"]["Mathematician"]
    first = ask(SimulatedWorld(CATALOG, seed=0), "qwen3-8b", role, items["math"][:300])
    again = ask(SimulatedWorld(CATALOG, seed=0), "qwen3-8b", role, items["math"][:300])
    other = ask(SimulatedWorld(CATALOG, seed=1), "qwen3-8b", role, items["math"][:300])
    assert first == again
    assert first != other


def test_what_an_agent_does_alone_is_kept_without_changing_any_answer(
    items: dict[str, list[Query]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A world keeps each agent's solo draws (training asks for them again and again); a world that keeps none, a
    second asking, inputs that change the answer, and a role renamed to another's with other domains all agree."""
    from agentbalance.worlds.simulated import world as simulated

    queries = items["math"][:60]
    mathematician = LIBRARIES["math"]["Mathematician"]
    impostor = mathematician.model_copy(update={"domains": ("code",)})  # same name, another fit

    def asked(world: SimulatedWorld) -> list[list[Completion]]:
        return [
            ask(world, "qwen3-8b", mathematician, queries),
            ask(world, "qwen3-8b", mathematician, queries, lambda query: [wrong_input(world, query)] * 2),
            ask(world, "qwen3-8b", impostor, queries),
            ask(world, "qwen3-8b", mathematician, queries),
        ]

    kept = asked(SimulatedWorld(CATALOG, seed=0))
    assert kept[3] == kept[0] and kept[1] != kept[0] and kept[2] != kept[0]
    monkeypatch.setattr(simulated, "ALONE_KEPT", 1)  # every solo draw computed afresh
    assert asked(SimulatedWorld(CATALOG, seed=0)) == kept


def test_reasoning_backbones_write_more_take_longer_and_gain_on_hard_items_not_easy_ones(
    world: SimulatedWorld, items: dict[str, list[Query]]
) -> None:
    queries = items["math"]
    difficulty = np.array([q.metadata["difficulty"] for q in queries])
    easy, hard = difficulty <= np.quantile(difficulty, 1 / 3), difficulty >= np.quantile(difficulty, 2 / 3)
    role = LIBRARIES["math"].decision
    gains_easy, gains_hard, ratios = [], [], []
    for size in ("qwen3-8b", "qwen3-14b", "qwen3-32b"):
        plain = ask(world, size, role, queries)
        thinking = ask(world, f"{size}-think", role, queries)
        plain_ok = np.array([c.correct for c in plain], float)
        think_ok = np.array([c.correct for c in thinking], float)
        gains_easy.append(think_ok[easy].mean() - plain_ok[easy].mean())
        gains_hard.append(think_ok[hard].mean() - plain_ok[hard].mean())
        ratios.append(
            np.median([c.completion_tokens for c in thinking]) / np.median([c.completion_tokens for c in plain])
        )
        assert np.median([c.latency_s for c in thinking]) > 2 * np.median([c.latency_s for c in plain])
    assert max(gains_easy) < 0.05, "little gain on easy items"
    assert min(np.array(gains_hard) - np.array(gains_easy)) > 0.08, "the gain is on hard items"
    assert all(3.0 <= ratio <= 6.0 for ratio in ratios), ratios


def test_reasoning_token_multiplier_matches_the_gsm8k_recordings(
    world: SimulatedWorld, items: dict[str, list[Query]]
) -> None:
    recorded = json.loads(STATS.read_text())["worlds"]["gsm8k-reasoning-dev"]
    real_ratio = recorded["completion_tokens"]["ratio_of_medians"]  # 3.98, measured on the real recordings
    role = LIBRARIES["math"].decision
    reasoning = [b.name for b in CATALOG if b.reasoning]
    plain = [b.name for b in CATALOG if not b.reasoning]
    tokens = {
        name: [c.completion_tokens for c in ask(world, name, role, items["math"][:500])] for name in reasoning + plain
    }
    simulated_ratio = np.median([t for n in reasoning for t in tokens[n]]) / np.median(
        [t for n in plain for t in tokens[n]]
    )
    assert abs(simulated_ratio - real_ratio) / real_ratio < 0.25, (simulated_ratio, real_ratio)


def test_role_domain_fit_matters(world: SimulatedWorld, items: dict[str, list[Query]]) -> None:
    mathematician = accuracy(ask(world, "qwen3-8b", LIBRARIES["math"]["Mathematician"], items["math"]))
    psychologist = accuracy(ask(world, "qwen3-8b", LIBRARIES["general"]["Psychologist"], items["math"]))
    assert mathematician - psychologist >= 5


def wrong_input(world: SimulatedWorld, query: Query, backbone: str = "qwen3-1.7b") -> Upstream:
    wrong = world.profile(query).distractors[0]
    completion = Completion("wrong", wrong, 10, 200, 0.0, 1.0, score=0.0)
    return Upstream("u", LIBRARIES["math"]["Mathematician"], CATALOG[backbone], completion)


def right_input(world: SimulatedWorld, query: Query) -> Upstream:
    completion = Completion("right", world.profile(query).gold, 10, 200, 0.0, 1.0, score=1.0)
    return Upstream("r", LIBRARIES["math"]["Mathematician"], CATALOG["qwen3-1.7b"], completion)


def test_weak_agents_are_misled_by_wrong_inputs(world: SimulatedWorld, items: dict[str, list[Query]]) -> None:
    queries = items["math"][:1000]
    role = LIBRARIES["math"]["Mathematician"]
    alone = accuracy(ask(world, "qwen3-1.7b", role, queries))
    misled = accuracy(ask(world, "qwen3-1.7b", role, queries, lambda q: [wrong_input(world, q), wrong_input(world, q)]))
    assert alone - misled >= 15


def test_critics_repair_wrong_answers_more_often_the_stronger_they_are(
    world: SimulatedWorld, items: dict[str, list[Query]]
) -> None:
    queries = items["math"][:1000]
    critic = LIBRARIES["math"]["Verifier"]
    repaired = {
        backbone: accuracy(ask(world, backbone, critic, queries, lambda q: [wrong_input(world, q)]))
        for backbone in ("qwen3-1.7b", "qwen3-8b", "qwen3-235b-a22b-think")
    }
    assert repaired["qwen3-1.7b"] < repaired["qwen3-8b"] < repaired["qwen3-235b-a22b-think"]
    assert repaired["qwen3-235b-a22b-think"] >= 70
    # given one right and one wrong input, a critic picks the right one more often than a plain solver
    both = lambda q: [right_input(world, q), wrong_input(world, q)]  # noqa: E731
    as_critic = accuracy(ask(world, "qwen3-8b", critic, queries, both))
    as_solver = accuracy(ask(world, "qwen3-8b", LIBRARIES["math"]["Number Theorist"], queries, both))
    assert as_critic > as_solver


def error_matrix(world: SimulatedWorld, queries: Sequence[Query], backbones: Sequence[str]) -> np.ndarray:
    role = LIBRARIES["general"].decision
    return np.array([[not c.correct for c in ask(world, name, role, queries)] for name in backbones], float)


def test_errors_are_correlated_as_in_the_mmlu_pro_recordings(
    world: SimulatedWorld, items: dict[str, list[Query]]
) -> None:
    recorded = json.loads(STATS.read_text())["worlds"]["mmlu-pro-dev"]
    queries = items["general"]
    backbones = [b.name for b in CATALOG]
    errors = error_matrix(world, queries, backbones)
    phis = [np.corrcoef(errors[i], errors[j])[0, 1] for i, j in itertools.combinations(range(len(backbones)), 2)]
    real = recorded["error_correlation"]["all_pairs"]
    assert real["q25"] - 0.1 <= float(np.median(phis)) <= real["q75"] + 0.1, (np.median(phis), real)
    # beyond difficulty the errors are nearly independent, as measured within difficulty bins (about 0; only a
    # family's backbones share a little: the test above)
    difficulty = np.array([q.metadata["difficulty"] for q in queries])
    bins = np.quantile(difficulty, np.linspace(0, 1, 6))
    within = []
    for low, high in itertools.pairwise(bins):
        rows = (difficulty >= low) & (difficulty <= high)
        for i, j in itertools.combinations(range(len(backbones)), 2):
            a, b = errors[i, rows], errors[j, rows]
            if a.std() > 0 and b.std() > 0:
                within.append(np.corrcoef(a, b)[0, 1])
    assert abs(float(np.mean(within))) < 0.1


def test_majority_vote_gains_little_over_its_best_member_as_in_the_recordings(
    world: SimulatedWorld, items: dict[str, list[Query]]
) -> None:
    recorded = json.loads(STATS.read_text())["worlds"]["mmlu-pro-dev"]["majority_vote_gain"]["k3"]["random_groups"]
    queries = items["general"][:1000]
    role = LIBRARIES["general"].decision
    answers = {b.name: [c.answer for c in ask(world, b.name, role, queries)] for b in CATALOG}
    gold = [q.answer for q in queries]
    accuracy_of = {name: np.mean([a == g for a, g in zip(ans, gold, strict=True)]) for name, ans in answers.items()}
    gains = []
    for group in itertools.combinations(sorted(answers), 3):
        ordered = sorted(group, key=lambda n: -accuracy_of[n])
        votes = []
        for k in range(len(queries)):
            picks = [answers[n][k] for n in ordered]
            votes.append(max(picks, key=lambda a: (picks.count(a), -picks.index(a))))
        vote_accuracy = np.mean([v == g for v, g in zip(votes, gold, strict=True)])
        gains.append(vote_accuracy - accuracy_of[ordered[0]])
    assert recorded["min"] - 0.03 <= float(np.median(gains)) <= recorded["max"], (np.median(gains), recorded)


def pair_agreement(first: Sequence[Completion], second: Sequence[Completion]) -> dict[str, float]:
    """P(both give the same answer), P(it is right | they agree), P(same answer | both wrong and both answered)."""
    a, b = [c.answer for c in first], [c.answer for c in second]
    right = np.array([c.correct for c in first], bool)
    right_b = np.array([c.correct for c in second], bool)
    answered = np.array([x is not None and y is not None for x, y in zip(a, b, strict=True)])
    same = np.array([x == y for x, y in zip(a, b, strict=True)])
    agree, both_wrong = answered & same, answered & ~right & ~right_b
    return {
        "p_agree": float(agree.mean()),
        "p_right_given_agree": float(right[agree].mean()),
        "p_same_given_both_wrong": float(same[both_wrong].mean()),
    }


def test_an_agreed_answer_is_right_more_often_than_either_backbone_and_agreement_grows_with_their_strength(
    world: SimulatedWorld, items: dict[str, list[Query]]
) -> None:
    """What a cascade relies on: two backbones that agree are more often right than either alone, and stronger
    pairs agree more and more often rightly. It fails if wrong answers coincide too much (weak pairs would
    agree as often as strong ones, on wrong answers) or never (an agreement would always be right)."""
    queries = items["general"][:1000]
    role = LIBRARIES["general"].decision
    names = ("qwen3-1.7b", "qwen3-8b", "qwen3-32b", "qwen3-235b-a22b")  # weakest to strongest on mmlu
    answers = {name: ask(world, name, role, queries) for name in names}
    accuracy_of = {name: accuracy(answers[name]) / 100 for name in names}
    pairs = {pair: pair_agreement(answers[pair[0]], answers[pair[1]]) for pair in itertools.combinations(names, 2)}
    for (first, second), stats in pairs.items():
        assert stats["p_right_given_agree"] > max(accuracy_of[first], accuracy_of[second]), (first, second, stats)
        assert stats["p_right_given_agree"] < 1.0, "agreeing on a wrong answer happens"
    weakest, strongest = pairs[names[:2]], pairs[names[2:]]
    assert strongest["p_agree"] > weakest["p_agree"] + 0.05
    assert strongest["p_right_given_agree"] > weakest["p_right_given_agree"]


def test_wrong_answers_coincide_less_often_when_a_question_has_more_options(world: SimulatedWorld) -> None:
    """Two wrong backbones pick the same option by the question's shared appeal, not by chance, and less often
    among ten options than among four (measured: 69% on ARC-Challenge's four, 35% on MMLU-Pro's ten)."""
    role = LIBRARIES["general"].decision
    names = ("qwen3-1.7b", "qwen3-8b", "qwen3-14b", "qwen3-32b")
    coincidence = {}
    for options in (4, 10):
        choices = tuple(f"option {k}" for k in range(options))
        queries = [
            Query(id=f"options-{options}-{i}", question="Which?", choices=choices, answer="A") for i in range(1500)
        ]
        answers = {name: ask(world, name, role, queries) for name in names}
        coincidence[options] = np.mean(
            [
                pair_agreement(answers[x], answers[y])["p_same_given_both_wrong"]
                for x, y in itertools.combinations(names, 2)
            ]
        )
    assert 0.55 <= coincidence[4] <= 0.85, coincidence  # chance among three wrong options would be 1/3
    assert 0.25 <= coincidence[10] <= 0.5, coincidence  # chance among nine would be 1/9
    assert coincidence[4] - coincidence[10] >= 0.15, coincidence


PRICES_AND_SCORE = {"price_in": 0.1, "price_out": 0.2, "scores": {"mmlu": 45.0}}


def test_a_backbones_measured_unanswered_share_decides_how_many_of_its_wrong_answers_lack_a_letter() -> None:
    """A catalog's `unanswered_share` (measured: 0-38% per backbone on MMLU-Pro) replaces the pooled 17% for that
    backbone only; it changes which wrong answers carry no letter, never which answers are right, and the letters
    that remain are the ones the backbone gave."""
    shares = {"pooled": None, "never": 0.0, "often": 0.4}
    backbones = [
        Backbone(name=name, family=name, reasoning=False, params_active_b=7, unanswered_share=share, **PRICES_AND_SCORE)
        for name, share in shares.items()
    ]
    role = LIBRARIES["general"].decision
    choices = tuple(f"option {k}" for k in range(10))
    queries = [Query(id=f"unanswered-{i}", question="Which?", choices=choices, answer="A") for i in range(3000)]

    def answers(catalog: Catalog) -> dict[str, list[Completion]]:
        world = SimulatedWorld(catalog, seed=0)
        return {b.name: [world.answer(AgentCall(AGENT, role, b, q, [])) for q in queries] for b in catalog}

    measured = answers(Catalog(backbones))
    pooled = answers(Catalog([b.model_copy(update={"unanswered_share": None}) for b in backbones]))
    for name, share in shares.items():
        wrong = [c for c in measured[name] if not c.correct]
        unanswered = np.mean([c.answer is None for c in wrong])
        assert abs(unanswered - (0.17 if share is None else share)) < 0.03, (name, unanswered)
        assert [c.correct for c in measured[name]] == [c.correct for c in pooled[name]]
        kept = [(a.answer, b.answer) for a, b in zip(measured[name], pooled[name], strict=True)]
        assert all(x == y for x, y in kept if x is not None and y is not None)
    with pytest.raises(ValueError, match="unanswered_share"):
        Backbone(name="x", family="x", reasoning=False, params_active_b=7, unanswered_share=1.5, **PRICES_AND_SCORE)


def family_and_other_pairs(parameters: SimulationParameters) -> dict[str, dict[str, float]]:
    """Mean correlation of errors beyond difficulty (of error minus its probability at the item's difficulty) and
    P(same | both wrong) over the three pairs of one family's backbones of one size, and over the three pairs of
    backbones of three other families: all six have the same size and published score."""
    backbones = [
        Backbone(name=name, family=family, reasoning=False, params_active_b=7, params_total_b=7, **PRICES_AND_SCORE)
        for name, family in (("a1", "a"), ("a2", "a"), ("a3", "a"), ("b", "b"), ("c", "c"), ("d", "d"))
    ]
    world = SimulatedWorld(Catalog(backbones), seed=0, parameters=parameters)
    role = LIBRARIES["general"].decision
    choices = tuple(f"option {k}" for k in range(10))
    queries = [Query(id=f"family-{i}", question="Which?", choices=choices, answer="A") for i in range(4000)]
    difficulties = [world.profile(q).difficulty for q in queries]
    answers = {b.name: [world.answer(AgentCall(AGENT, role, b, q, [])) for q in queries] for b in backbones}
    surprise = {  # the same for all six backbones: their scores, slopes and abilities are equal
        b.name: np.array([not c.correct for c in answers[b.name]], float)
        - np.array([1 - world.solve_probability(b, role, "general", d) for d in difficulties])
        for b in backbones
    }
    out = {}
    for group, names in (("family", ("a1", "a2", "a3")), ("other", ("b", "c", "d"))):
        pairs = list(itertools.combinations(names, 2))
        out[group] = {
            "residual": float(np.mean([np.corrcoef(surprise[x], surprise[y])[0, 1] for x, y in pairs])),
            "same": float(
                np.mean([pair_agreement(answers[x], answers[y])["p_same_given_both_wrong"] for x, y in pairs])
            ),
        }
    return out


def test_backbones_of_one_family_and_size_err_together_and_share_wrong_answers_beyond_their_accuracy() -> None:
    """Recorded MMLU-Pro pairs of one checkpoint (one family or point release, one size) err together beyond
    difficulty (latent noise correlation +0.17 over 16 pairs) and their wrong answers coincide more (+0.08) than
    different-family pairs of the same accuracies (`instruct` not given here: the simulator takes the midpoint). The
    simulator's family and checkpoint shares give that to backbones of equal scores; without them (shares 0) the gap
    is gone."""
    with_mechanism = family_and_other_pairs(SimulationParameters())
    assert with_mechanism["family"]["residual"] - with_mechanism["other"]["residual"] >= 0.04, with_mechanism
    assert with_mechanism["family"]["same"] - with_mechanism["other"]["same"] >= 0.04, with_mechanism
    without = family_and_other_pairs(
        SimulationParameters(
            family_noise_share=0, checkpoint_noise_share=0, family_wrong_share=0, checkpoint_wrong_share=0
        )
    )
    assert abs(without["family"]["residual"] - without["other"]["residual"]) < 0.03, without
    assert abs(without["family"]["same"] - without["other"]["same"]) < 0.03, without


def pair_residuals(
    specs: Sequence[tuple[str, str, bool | None, float]], pairs: Sequence[tuple[str, str]]
) -> list[float]:
    """Correlation of errors beyond difficulty for each of `pairs`, among backbones (name, family, instruct, total
    size) of one published score."""
    backbones = [
        Backbone(
            name=name,
            family=family,
            reasoning=False,
            instruct=instruct,
            params_active_b=size,
            params_total_b=size,
            **PRICES_AND_SCORE,
        )
        for name, family, instruct, size in specs
    ]
    world = SimulatedWorld(Catalog(backbones), seed=0)
    role = LIBRARIES["general"].decision
    choices = tuple(f"option {k}" for k in range(10))
    queries = [Query(id=f"release-{i}", question="Which?", choices=choices, answer="A") for i in range(4000)]
    difficulties = [world.profile(q).difficulty for q in queries]
    surprise = {
        b.name: np.array([not world.answer(AgentCall(AGENT, role, b, q, [])).correct for q in queries], float)
        - np.array([1 - world.solve_probability(b, role, "general", d) for d in difficulties])
        for b in backbones
    }
    return [float(np.corrcoef(surprise[x], surprise[y])[0, 1]) for x, y in pairs]


def test_two_base_releases_of_one_checkpoint_err_together_far_more_than_a_base_model_and_its_tuning() -> None:
    """Recorded MMLU-Pro pairs of one size: two base releases (Llama-3 and 3.1 at 8B and 70B, Mistral-7B v0.1 and
    v0.2) err together beyond difficulty by +0.45 over unrelated pairs, a base model and a tuned one of its checkpoint
    +0.12, two tuned ones +0.04; a point release at another size shares nothing (-0.02). The simulator reads that from
    `family` (a point release "x-3.1" is of series "x-3"), `params_total_b` and `instruct`."""
    specs = [
        ("x3", "x-3", False, 8),
        ("x31", "x-3.1", False, 8),
        ("x31-chat", "x-3.1", True, 8),
        ("x31-chat2", "x-3.1", True, 8),
        ("x31-70", "x-3.1", False, 70),
        ("y", "y", False, 8),
    ]
    base, mixed, tuned, other_size, unrelated = pair_residuals(
        specs, [("x3", "x31"), ("x31", "x31-chat"), ("x31-chat", "x31-chat2"), ("x3", "x31-70"), ("x3", "y")]
    )
    # errors are 0/1, so their correlation beyond difficulty is about 0.6 times the latent one (0.44 -> 0.26)
    assert base - unrelated >= 0.18, (base, unrelated)
    assert 0.04 <= mixed - unrelated <= 0.16, (mixed, unrelated)
    assert tuned < mixed < base and tuned - unrelated <= 0.08, (tuned, mixed)
    assert abs(other_size - unrelated) < 0.03, (other_size, unrelated)


def test_relation_reads_point_releases_of_one_size_as_one_checkpoint() -> None:
    def backbone(family: str, size: float | None) -> Backbone:
        return Backbone(
            name=f"{family}-{size}",
            family=family,
            reasoning=False,
            params_active_b=size or 7,
            params_total_b=size,
            **PRICES_AND_SCORE,
        )

    assert relation(backbone("llama-3", 8), backbone("llama-3.1", 8)) == "checkpoint"
    assert relation(backbone("llama-3", 8), backbone("llama-3.1", 70)) == "different"
    assert relation(backbone("llama-2", 70), backbone("llama-3", 70)) == "different"
    assert relation(backbone("qwen2.5", 72), backbone("qwen3", 72)) == "different"
    assert relation(backbone("mistral", 7.2), backbone("mistral", 7.2)) == "checkpoint"
    assert relation(backbone("gemini-1.5", None), backbone("gemini-1.5", None)) == "family"


def test_usage_tokens_cost_and_latency_follow_the_catalog(world: SimulatedWorld, items: dict[str, list[Query]]) -> None:
    query = items["code"][0]
    backbone: Backbone = CATALOG["qwen3-32b"]
    role = LIBRARIES["code"]["Programming Expert"]
    alone = ask(world, "qwen3-32b", role, [query])[0]
    fed = ask(world, "qwen3-32b", role, [query], lambda q: [wrong_input(world, q)])[0]
    assert fed.prompt_tokens == alone.prompt_tokens + 200, "upstream completions are read in full"
    assert alone.cost_usd == pytest.approx(backbone.call_cost_usd(alone.prompt_tokens, alone.completion_tokens))
    speed = backbone.decode_speed(CATALOG.assumptions)
    assert alone.latency_s > alone.completion_tokens / speed
    assert alone.text.startswith("[simulated qwen3-32b as Programming Expert]") and "```python" in alone.text


def test_free_text_queries_get_a_domain_and_no_claimed_correctness(world: SimulatedWorld) -> None:
    query = Query(id="user-1", question="Implement a Python function that returns the n-th prime.")
    assert world.profile(query).domain == "code"
    completion = ask(world, "qwen3-8b", LIBRARIES["code"].decision, [query])[0]
    assert completion.correct is None


def test_the_real_side_of_these_comparisons_is_what_the_recordings_say(shared_data: Path) -> None:
    """The committed statistics the simulator is checked against are recomputed from ../shared/data."""
    import pandas as pd

    folder = shared_data / "gsm8k-reasoning-dev"
    outcomes = pd.read_csv(folder / "outcomes.csv.gz")
    reasoning = {b.name: b.reasoning for b in Catalog.load(folder / "models.yaml")}
    is_reasoning = outcomes["model"].map(reasoning)
    ratio = outcomes[is_reasoning]["completion_tokens"].median() / outcomes[~is_reasoning]["completion_tokens"].median()
    committed = json.loads(STATS.read_text())["worlds"]["gsm8k-reasoning-dev"]["completion_tokens"]["ratio_of_medians"]
    assert ratio == pytest.approx(committed, abs=1e-3)

"""The simulated world, the embedded default: a calibrated, deterministic simulator of a catalog's backbones.

It must stay a pure function of (seed, query, backbone, role, incoming answers), and it always says it
is a simulator (`simulated = True`, "[simulated ...]" in every completion). See docs/simulated-world.md.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import NormalDist

import numpy as np

from agentbalance.catalog import Backbone, Catalog
from agentbalance.errors import AgentBalanceError
from agentbalance.query import DOMAINS, Query
from agentbalance.roles import Role, RoleKind
from agentbalance.worlds.base import AgentCall, Completion, Upstream, estimate_prompt_tokens
from agentbalance.worlds.simulated.questions import generate_synthetic

# Catalog score keys that stand for each simulated domain, most specific first.
DOMAIN_BENCHMARKS: dict[str, tuple[str, ...]] = {
    "general": ("mmlu", "mmlu_redux", "mmlu_pro", "arc", "arc_challenge", "winogrande"),
    "math": ("math", "math500", "math_500", "gsm8k"),
    "code": ("humaneval", "evalplus", "mbpp"),
}
CALIBRATION_SEED = 20251212  # fixed: calibration must not move with the world's seed
_NORMAL = NormalDist()
# what agents do alone, kept per world (`SimulatedWorld._alone`): a default build's 600 training questions times the
# backbones and roles its systems use fit, and at about 300 bytes each it stays under 40 MB
ALONE_KEPT = 2**17


@dataclass(frozen=True)
class SimulationParameters:
    """Every constant of the simulator; docs/simulated-world.md explains and justifies each one."""

    discrimination: float = 1.9  # IRT slope a of competent non-reasoning backbones: how much difficulty is shared
    reasoning_discrimination: float = 1.33  # flatter (0.7 a): reasoning gains most on hard items
    competence_scale: float = 0.185  # competence = 1 - exp(-score / this): slope and considered errors scale with it
    role_noise_share: float = 0.3  # share of an agent's solve noise that depends on its role (prompt)
    family_noise_share: float = 0.04  # of the solve noise, shared by a catalog family's backbones (measured 0.037)
    checkpoint_noise_share: float = 0.435  # more, shared by two base models of one checkpoint (fit on 16 pairs)
    family_wrong_share: float = 0.02  # of the items, those where a family's wrong answers come from one draw (0.017)
    checkpoint_wrong_share: float = 0.337  # of the items, those where two base models' of one checkpoint do (fit)
    tuned_inheritance: float = 0.21  # of its checkpoint's idiosyncrasy, what a tuned (instruct) model keeps (fit)
    unknown_inheritance: float = 0.6  # `instruct` not given: halfway between a base model (1) and a tuned one
    specialist_bonus: float = 0.15  # logit bonus of a solver whose domain is the query's
    mismatch_penalty: float = 0.7  # logit penalty of a role from another domain (halved for non-solvers)
    self_weight_base: float = 0.5  # an agent's weight on its own answer: base + skill * p_own
    self_weight_skill: float = 1.5
    input_weight: float = 1.0  # weight of each incoming answer
    verify_strength: dict[str, float] = field(
        default_factory=lambda: {"solver": 1.0, "critic": 2.2, "decision": 1.6}
    )  # how well a role recognises the right answer among candidates, times p_own
    choice_temperature: float = 0.5
    distractor_concentration: float = 0.23  # Dirichlet alpha of an item's wrong-answer appeal, shared by backbones
    unanswered_share: float = 0.17  # of wrong answers to a multiple-choice query: no option letter can be read
    base_completion_tokens: dict[str, float] = field(
        default_factory=lambda: {"general": 220.0, "math": 330.0, "code": 260.0}
    )
    role_token_factor: dict[str, float] = field(default_factory=lambda: {"solver": 1.0, "critic": 0.8, "decision": 0.6})
    reasoning_token_multiplier: float = 3.7  # on easy items; measured 3.72 on GSM8K recordings
    difficulty_token_slope: float = 0.12  # log-tokens per unit difficulty, non-reasoning
    reasoning_difficulty_token_slope: float = 0.35  # reasoning models write much more on hard items
    token_noise_sd: float = 0.3
    prefill_speedup: float = 20.0  # prefill tokens/s = decode tokens/s x this
    calibration_items: int = 8000  # the reference sample; its own sampling error is ~0.5 points

    def __post_init__(self) -> None:
        """Reject shares that cannot be shares: when building, not on the first call."""
        noise = self.role_noise_share + self.family_noise_share + self.checkpoint_noise_share
        if min(self.role_noise_share, self.family_noise_share, self.checkpoint_noise_share) < 0 or noise > 1:
            raise ValueError(f"the solve-noise shares must be >= 0 and sum to at most 1 (they sum to {noise})")
        shares = (self.family_wrong_share, self.checkpoint_wrong_share)
        if min(shares) < 0 or max(shares) > 1:
            raise ValueError(f"the shared wrong-answer shares must be within 0-1 (they are {shares})")
        inheritances = (self.tuned_inheritance, self.unknown_inheritance)
        if min(inheritances) < 0 or max(inheritances) > 1:
            raise ValueError(
                f"the inheritances of tuned and unknown models must be within 0-1 (they are {inheritances})"
            )


@dataclass(frozen=True)
class QueryProfile:
    """What the simulator knows about a query: its domain, latent difficulty, gold and wrong answers, and
    whether it has options (how much each wrong answer appeals is `SimulatedWorld.appeal`, drawn when needed)."""

    domain: str
    difficulty: float
    gold: str
    distractors: tuple[str, ...]
    gold_known: bool
    multiple_choice: bool = False


class SimulatedWorld:
    """Answers agent calls by an item-response model calibrated to the catalog's published scores."""

    name = "simulated"
    simulated = True

    def __init__(self, catalog: Catalog, seed: int = 0, parameters: SimulationParameters | None = None) -> None:
        self.catalog = catalog
        self.seed = seed
        self.parameters = parameters or SimulationParameters()
        self.competences = {
            (b.name, domain): 1.0 - math.exp(-self.published_score(b, domain) / self.parameters.competence_scale)
            for b in catalog
            for domain in DOMAINS
        }
        self.abilities = self._calibrate()
        self.checkpoints = {b.name: _checkpoint(b) for b in catalog}
        self.inheritances = {b.name: self.inheritance(b) for b in catalog}
        self._kept_alone: dict[tuple[object, ...], tuple[float, str | None, int]] = {}  # see `_alone`

    # ---- calibration

    def published_score(self, backbone: Backbone, domain: str) -> float:
        """The catalog score (0-1) standing for `domain`: a matching benchmark, else the mean of all scores."""
        for key in DOMAIN_BENCHMARKS[domain]:
            if key in backbone.scores:
                return backbone.scores[key] / 100
        if backbone.scores:
            return sum(backbone.scores.values()) / len(backbone.scores) / 100
        raise AgentBalanceError(
            f"the simulated world needs a published score for backbone {backbone.name!r} "
            f"(catalog {self.catalog.source}): add `scores` to its entry"
        )

    def competence(self, backbone: Backbone, domain: str) -> float:
        """How much a backbone's answers come from knowing rather than guessing, 0-1 (near 1 for strong ones):
        near chance, right answers depend less on an item's difficulty and wrong ones less on its appeal."""
        return self.competences[(backbone.name, domain)]

    def inheritance(self, backbone: Backbone) -> float:
        """How much of its pretrained checkpoint's idiosyncrasy (beyond difficulty) a backbone keeps, 0-1: all of it
        for a base model (two base releases of one checkpoint err alike), a fifth for an instruction-tuned one (its
        tuning adds its own), halfway when the catalog does not say. Two backbones of one checkpoint share the product
        of their inheritances times the checkpoint shares (measured: base-base 0.45, base-tuned 0.12, tuned-tuned 0.04
        of the solve noise beyond difficulty; docs, "Why answers agree")."""
        p = self.parameters
        if backbone.instruct is None:
            return p.unknown_inheritance
        return p.tuned_inheritance if backbone.instruct else 1.0

    def unanswered_share(self, backbone: Backbone) -> float:
        """Of a backbone's wrong answers to a multiple-choice query, the share with no readable option letter: its
        catalog's measured `unanswered_share` (0-38% per backbone on MMLU-Pro: how its outputs parse, which nothing
        else in a catalog tells), else the pooled rate."""
        return self.parameters.unanswered_share if backbone.unanswered_share is None else backbone.unanswered_share

    def discrimination(self, backbone: Backbone, domain: str) -> float:
        p = self.parameters
        slope = p.reasoning_discrimination if backbone.reasoning else p.discrimination
        return slope * self.competence(backbone, domain)

    def _calibrate(self) -> dict[tuple[str, str], float]:
        """Ability theta per (backbone, domain) such that the mean solve probability over the domain's
        synthetic difficulty distribution equals the published score."""
        abilities: dict[tuple[str, str], float] = {}
        for domain in DOMAINS:
            difficulties = calibration_difficulties(domain, self.parameters.calibration_items)
            for backbone in self.catalog:
                target = min(max(self.published_score(backbone, domain), 0.01), 0.99)
                slope = self.discrimination(backbone, domain)
                abilities[(backbone.name, domain)] = _solve_ability(difficulties, slope, target)
        return abilities

    # ---- the item-response model

    def role_fit(self, role: Role, domain: str) -> float:
        """Logit shift of a role on a domain: specialists help a little, roles from another domain hurt."""
        if not role.domains:
            return 0.0
        p = self.parameters
        if domain in role.domains:
            return p.specialist_bonus if role.kind is RoleKind.SOLVER else 0.0
        return -p.mismatch_penalty * (1.0 if role.kind is RoleKind.SOLVER else 0.5)

    def solve_probability(self, backbone: Backbone, role: Role, domain: str, difficulty: float) -> float:
        """P(an agent of this backbone and role solves an item alone)."""
        logit = self.discrimination(backbone, domain) * (self.abilities[(backbone.name, domain)] - difficulty)
        return _sigmoid(logit + self.role_fit(role, domain))

    def profile(self, query: Query) -> QueryProfile:
        """Synthetic queries carry their difficulty; for other text it is inferred (see the docs)."""
        domain = query.domain if query.domain in DOMAINS else _infer_domain(query)
        meta = query.metadata
        difficulty = float(meta["difficulty"]) if "difficulty" in meta else 1.2 * self._normal("difficulty", query.id)
        letters = query.letters
        if query.answer is not None:
            gold = query.answer
        elif letters:
            gold = letters[int(self._uniform("gold", query.id) * len(letters))]
        else:
            gold = "simulated-correct-answer"
        distractors = tuple(str(d) for d in meta.get("distractors", ()) if str(d) != gold)
        if not distractors:  # every other option of a multiple-choice query is a wrong answer (MMLU-Pro has 9)
            distractors = tuple(x for x in letters if x != gold) or tuple(
                f"simulated-wrong-answer-{i}" for i in (1, 2, 3)
            )
        return QueryProfile(domain, difficulty, gold, distractors, query.answer is not None, bool(letters))

    def appeal(self, query_id: str, count: int) -> np.ndarray:
        """How much each of a query's `count` wrong answers draws a considered error (sums to 1): a property of
        the item, the same for every backbone, so wrong answers coincide. Dirichlet = normalised gamma draws."""
        draws = self._generator("appeal", query_id).standard_gamma(self.parameters.distractor_concentration, count)
        return draws / draws.sum() if draws.sum() > 0 else np.full(count, 1.0 / count)

    # ---- one agent call

    async def complete(self, call: AgentCall) -> Completion:
        """The World protocol; the work is CPU-only, so it is `answer` run inline."""
        return self.answer(call)

    def answer(self, call: AgentCall) -> Completion:
        """Answer one call synchronously (training rollouts use this path, no event loop)."""
        profile = self.profile(call.query)
        backbone, role = call.backbone, call.role
        key = (call.query.id, backbone.name, role.name)
        p_own, own, completion_tokens = self._alone(profile, backbone, role, key)
        answer = self._combine(profile, role, p_own, own, call.inputs, key) if call.inputs else own
        prompt_tokens = estimate_prompt_tokens(call)
        decode_speed = backbone.decode_speed(self.catalog.assumptions)
        ttft = backbone.ttft_s if backbone.ttft_s is not None else self.catalog.assumptions.ttft_s
        latency = (
            ttft + prompt_tokens / (decode_speed * self.parameters.prefill_speedup) + completion_tokens / decode_speed
        )
        return Completion(
            text=_render(profile.domain, backbone.name, role.name, answer),
            answer=answer,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            reasoning_tokens=int(completion_tokens * 0.8) if backbone.reasoning else 0,
            cost_usd=backbone.call_cost_usd(prompt_tokens, completion_tokens),
            latency_s=latency,
            score=float(answer == profile.gold) if profile.gold_known else None,
        )

    def _alone(
        self, profile: QueryProfile, backbone: Backbone, role: Role, key: tuple[str, ...]
    ) -> tuple[float, str | None, int]:
        """What an agent does before it reads its inputs: its chance to solve alone, its own answer and its length in
        tokens. They are a pure function of the seed, the query, the backbone and the role, so they are kept (up to
        `ALONE_KEPT`, then all forgotten at once): training asks for the same ones in every epoch and sample, and
        computing them was about two thirds of the simulator's time in a build."""
        kept_key = (profile, *key, role.kind, role.domains)
        kept = self._kept_alone.get(kept_key)
        if kept is None:
            p_own = self.solve_probability(backbone, role, profile.domain, profile.difficulty)
            own = self._own_answer(profile, backbone, p_own, key)
            kept = (p_own, own, self._completion_tokens(backbone, role, profile, key))
            if len(self._kept_alone) >= ALONE_KEPT:
                self._kept_alone.clear()
            self._kept_alone[kept_key] = kept
        return kept

    def _own_answer(self, profile: QueryProfile, backbone: Backbone, p_own: float, key: tuple[str, ...]) -> str | None:
        """Solve alone. The noise is mostly per (query, backbone): at temperature 0 a backbone repeats
        itself, and only a share depends on the role's prompt (a small share is its family's). A wrong answer is a
        considered one (drawn by the item's appeal, which every backbone shares: so wrong answers coincide) with
        probability the backbone's competence, else a guess among the wrong answers (on some items its family's
        draws decide); a share of wrong answers (the backbone's own, when the catalog gives it) gives no readable
        answer."""
        if self._solve_noise(backbone, key) < _NORMAL.inv_cdf(min(max(p_own, 1e-9), 1 - 1e-9)):
            return profile.gold
        if profile.multiple_choice and self._uniform("unanswered", *key) < self.unanswered_share(backbone):
            return None
        source = self._wrong_answer_source(backbone, key)
        count, draw = len(profile.distractors), self._uniform("wrong", *source)
        if self._uniform("considered", *source) < self.competence(backbone, profile.domain):
            pick = int(np.searchsorted(np.cumsum(self.appeal(key[0], count)), draw, side="right"))
        else:
            pick = int(draw * count)
        return profile.distractors[min(pick, count - 1)]

    def _solve_noise(self, backbone: Backbone, key: tuple[str, ...]) -> float:
        """The standard normal an agent's solve draw is compared with: a sum of independent parts, specific to the
        role (its prompt), to the backbone, shared by its family, and by its checkpoint's backbones (one size of one
        family or of its point releases) in proportion to its inheritance. Related backbones err on the same items
        beyond difficulty (measured on the recordings: docs, "Why answers agree"); each backbone's own accuracy is
        unchanged, its noise is standard normal whatever the shares."""
        p = self.parameters
        checkpoint = self.checkpoints[backbone.name]
        inherited = p.checkpoint_noise_share * self.inheritances[backbone.name] ** 2 if checkpoint else 0.0
        z = math.sqrt(1 - p.role_noise_share - p.family_noise_share - inherited) * self._normal("solve", *key[:2])
        z += math.sqrt(p.role_noise_share) * self._normal("solve", *key)
        if p.family_noise_share > 0:
            z += math.sqrt(p.family_noise_share) * self._normal("solve-family", key[0], backbone.family)
        if inherited > 0:
            z += math.sqrt(inherited) * self._normal("solve-checkpoint", key[0], *checkpoint)
        return z

    def _wrong_answer_source(self, backbone: Backbone, key: tuple[str, ...]) -> tuple[str, ...]:
        """Whose draws pick a wrong answer: on a share of the items a family has one misconception (one coin per item
        and family, so every member sees the same), so its failing backbones give the same wrong answer; else, with
        probability its inheritance times sqrt(checkpoint share) (one coin per item and backbone), its checkpoint's
        misconception, so two backbones of one checkpoint share it on the product of their chances; else the agent's
        own draws. Each backbone's wrong answers keep their distribution."""
        p = self.parameters
        checkpoint = self.checkpoints[backbone.name]
        if self._uniform("wrong-lineage", key[0], backbone.family) < p.family_wrong_share:
            return (key[0], "family", backbone.family, None)  # four keys: never an agent's own three
        chance = self.inheritances[backbone.name] * math.sqrt(p.checkpoint_wrong_share)
        if checkpoint and self._uniform("wrong-checkpoint", key[0], backbone.name) < chance:
            return (key[0], "checkpoint", *checkpoint)
        return key

    def _combine(
        self,
        profile: QueryProfile,
        role: Role,
        p_own: float,
        own: str | None,
        inputs: Sequence[Upstream],
        key: tuple[str, ...],
    ) -> str | None:
        """Weigh the own answer against incoming ones; stronger agents trust themselves more and
        recognise the right answer more often (critics most), weak agents follow a wrong majority.
        An agent that reached no answer of its own chooses among its inputs' answers (none if none gave one)."""
        p = self.parameters
        scores: dict[str, float] = {} if own is None else {own: p.self_weight_base + p.self_weight_skill * p_own}
        for upstream in inputs:
            if upstream.completion.answer is not None:
                scores[upstream.completion.answer] = scores.get(upstream.completion.answer, 0.0) + p.input_weight
        if not scores:
            return None
        if profile.gold in scores:
            scores[profile.gold] += p.verify_strength.get(str(role.kind), 1.0) * p_own
        candidates = sorted(scores)
        logits = np.array([scores[c] for c in candidates]) / p.choice_temperature
        probabilities = np.exp(logits - logits.max())
        probabilities /= probabilities.sum()
        seen = "|".join(sorted(str(u.completion.answer) for u in inputs))
        pick = np.searchsorted(np.cumsum(probabilities), self._uniform("combine", *key, seen), side="right")
        return candidates[min(int(pick), len(candidates) - 1)]

    def _completion_tokens(self, backbone: Backbone, role: Role, profile: QueryProfile, key: tuple[str, ...]) -> int:
        p = self.parameters
        slope = p.reasoning_difficulty_token_slope if backbone.reasoning else p.difficulty_token_slope
        mean = (
            p.base_completion_tokens[profile.domain]
            * p.role_token_factor.get(str(role.kind), 1.0)
            * (p.reasoning_token_multiplier if backbone.reasoning else 1.0)
            * math.exp(slope * profile.difficulty)
        )
        return max(1, round(mean * math.exp(p.token_noise_sd * self._normal("tokens", *key))))

    # ---- deterministic randomness: a pure function of the seed and the keys

    def _uniform(self, *keys: object) -> float:
        digest = hashlib.blake2b(repr((self.seed, *keys)).encode(), digest_size=8).digest()
        return (int.from_bytes(digest, "big") + 0.5) / 2**64

    def _normal(self, *keys: object) -> float:
        return _NORMAL.inv_cdf(self._uniform(*keys))

    def _generator(self, *keys: object) -> np.random.Generator:
        """A numpy generator seeded by the same hash, for draws that need more than one number."""
        digest = hashlib.blake2b(repr((self.seed, *keys)).encode(), digest_size=16).digest()
        return np.random.default_rng(int.from_bytes(digest, "big"))


SHIPPED_CALIBRATION = Path(__file__).resolve().parent / "calibration.npz"
"""The difficulties of the default reference sample (`SimulationParameters.calibration_items` items of each domain
at CALIBRATION_SEED), generated once and shipped: generating them took 3-8 s in every process that opened the
simulator. A test checks that they equal `generated_difficulties`; `write_shipped_calibration()` writes them anew."""


@functools.lru_cache(maxsize=8)
def calibration_difficulties(domain: str, count: int) -> np.ndarray:
    """Difficulties of a fixed reference sample of the domain's synthetic items: the shipped ones for the default
    sample size, else generated (memoised: a pure function of its arguments)."""
    difficulties = _shipped_difficulties(domain, count)
    if difficulties is None:
        difficulties = generated_difficulties(domain, count)
    difficulties.setflags(write=False)
    return difficulties


def generated_difficulties(domain: str, count: int) -> np.ndarray:
    items = generate_synthetic(domain, count, seed=CALIBRATION_SEED)
    return np.array([item.metadata["difficulty"] for item in items], dtype=np.float64)


def _shipped_difficulties(domain: str, count: int) -> np.ndarray | None:
    if not SHIPPED_CALIBRATION.is_file():
        return None
    with np.load(SHIPPED_CALIBRATION, allow_pickle=False) as shipped:
        if domain not in shipped.files or len(shipped[domain]) != count:
            return None
        return np.array(shipped[domain], dtype=np.float64)


def write_shipped_calibration() -> None:
    """Write SHIPPED_CALIBRATION from the generator (after a change to the synthetic items or their count)."""
    count = SimulationParameters().calibration_items
    arrays = {domain: generated_difficulties(domain, count) for domain in DOMAINS}
    np.savez_compressed(SHIPPED_CALIBRATION, **arrays)  # type: ignore[arg-type]


def relation(first: Backbone, second: Backbone) -> str:
    """How two backbones are related by catalog facts alone: "checkpoint" (one published total size, one family or
    two point releases of one: in all likelihood one pretrained model, e.g. a base model and its chat tuning, two
    releases, a thinking and a non-thinking mode), "family" (one family, another or an unknown size) or "different"."""
    checkpoint = _checkpoint(first)
    if checkpoint is not None and checkpoint == _checkpoint(second):
        return "checkpoint"
    return "family" if first.family == second.family else "different"


def series(family: str) -> str:
    """A family's series: the name without a point release ("llama-3.1" -> "llama-3", "qwen2.5" -> "qwen2"), so a
    later release of one major version and size counts as the same pretrained model trained further (measured: Llama
    3 and 3.1 at 8B and 70B share errors as two base releases of one family do; at other sizes nothing)."""
    return re.sub(r"(\d+)[._]\d+$", r"\1", family)


def _checkpoint(backbone: Backbone) -> tuple[str, str] | None:
    """(family series, total size) when the catalog gives the size, else None (no size: no checkpoint to share)."""
    return None if backbone.params_total_b is None else (series(backbone.family), repr(backbone.params_total_b))


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def _solve_ability(difficulties: np.ndarray, discrimination: float, target: float) -> float:
    """Bisection for theta: mean(sigmoid(a (theta - b))) = target (monotone in theta)."""
    low, high = -15.0, 15.0
    for _ in range(60):
        middle = (low + high) / 2
        mean = float(np.mean(1.0 / (1.0 + np.exp(-discrimination * (middle - difficulties)))))
        low, high = (middle, high) if mean < target else (low, middle)
    return (low + high) / 2


_CODE_HINTS = re.compile(r"\bdef \w+\(|\bfunction\b|\bpython\b|\bimplement\b|\breturns?\b", re.IGNORECASE)
_MATH_HINTS = re.compile(r"\d|\bsolve\b|\bequation\b|\bcompute\b|\bcalculate\b|\bhow many\b", re.IGNORECASE)


def _infer_domain(query: Query) -> str:
    """For text that is not a synthetic item: choices mean knowledge MCQ, then code words, then numbers."""
    if query.choices:
        return "general"
    if _CODE_HINTS.search(query.question):
        return "code"
    if _MATH_HINTS.search(query.question):
        return "math"
    return "general"


def _render(domain: str, backbone: str, role: str, answer: str | None) -> str:
    """A short completion text in the domain's answer format, marked as simulated (no answer line when the
    simulated response reached none, as a real one that rambles or is cut off)."""
    header = f"[simulated {backbone} as {role}]"
    if answer is None:
        return f"{header}\n(the response ends without a final answer)"
    if domain == "code":
        return f"{header}\n```python\n# simulated solution, behaviour: {answer}\n```"
    if domain == "math":
        return f"{header} Final answer: \\boxed{{{answer}}}"
    return f"{header}\nAnswer: {answer}"

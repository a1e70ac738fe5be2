"""The anchored start: imitate, per target budget, the best MAS template that fits it, before REINFORCE begins.

It must never measure a template on the test split nor imitate a MAS the controller cannot construct:
templates are ranked on training and validation questions and cloned through `Controller.decisions_of`.
Besides one template for every query, a target may imitate a mixture of two (`AnchorPlan`): the cheaper
one for most queries, the dearer one for those the difficulty head ranks hardest.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import torch

from agentbalance.budgets import Budget
from agentbalance.mas import MAS
from agentbalance.measuring import Evaluation, summarise
from agentbalance.policy.budget_input import conditions
from agentbalance.policy.controller import Controller, Decisions
from agentbalance.pooling import pareto_front
from agentbalance.query import Query
from agentbalance.runtime.execution import Outcome
from agentbalance.templates import answerer_roles, cascade_backbones, cascade_mas, topology_mas
from agentbalance.train.budget_targeting import Snapshot, budget_preference, budget_score
from agentbalance.train.training_run import TrainingRun

# the templates an anchored start may imitate besides a backbone alone: those the controller can construct
ANCHOR_TOPOLOGIES = ("chain", "star", "layered")


# the shares of queries a mixture may send to its dearer template: every 5%, neither template alone
MIXTURE_SHARES = tuple(k / 20 for k in range(1, 20))


@dataclass(frozen=True)
class AnchorPlan:
    """What one target imitates: `easy` for every query whose difficulty is at most `threshold`, `hard`
    for the others (one template alone: the same template twice and no threshold).

    A mixture is what a single template cannot be: where the best fitting template leaves part of the
    budget unspent and the next dearer one does not fit, sending only the hardest queries to the dearer
    one spends it (the single-LLM frontier is exactly such a mix between two backbones, which one MAS
    for every query stayed 2 to 7 points below at some budgets: routerbench-mbpp, mmlu-pro-dev)."""

    easy: MAS
    hard: MAS
    measured: Evaluation  # on the training and validation questions (`mixtures` says how a mixture is split)
    threshold: float = math.inf
    hard_share: float = 0.0  # the share of the training and validation questions above the threshold

    @property
    def mixed(self) -> bool:
        return math.isfinite(self.threshold)


@dataclass(frozen=True)
class PlanMenu:
    """Every plan measured for an anchored start: each template alone, and the mixtures of two (`mixtures`),
    with the trade-off fixed by hand (none under budget targeting) they are ranked by."""

    alone: list[AnchorPlan]
    mixed: list[AnchorPlan]
    penalties: tuple[float, float] = (0.0, 0.0)
    # every template's outcome on every training, then validation question, template by template (the menu guard
    # scores its plans from them instead of running them again)
    outcomes: list[Outcome] = field(default_factory=list)

    def best(self, budget: Budget, with_mixtures: bool = True) -> AnchorPlan:
        """The plan of the best `budget_preference` under `budget` on the measured questions.

        A mixture is imitated stage by stage and only mostly built (a query near its threshold may get a
        blend of its two templates): where one template alone fits, a mixture must beat it by one standard
        error of its Perf (mbpp, seed 1: 95% mixes tying gpt-4 alone on the measured questions, 1.2 points
        below it on validation as built)."""

        def preference(plan: AnchorPlan) -> tuple[bool, float]:
            met, value = budget_preference(plan.measured, budget, self.penalties)
            return met, value - (plan.measured.perf_standard_error() if plan.mixed and met else 0.0)

        return max([*self.alone, *self.mixed] if with_mixtures else self.alone, key=preference)


def tightened(budget: Budget, planned: Evaluation, built: Evaluation) -> Budget:
    """`budget` shrunk on each axis by how far the built policy's upper cost bound went over its plan's: the
    budget a plan must fit so that, built as faithfully, it fits `budget`."""
    tok, lat = budget.tok, budget.lat
    if tok is not None and built.tok_upper > planned.tok_upper > 0:
        tok *= planned.tok_upper / built.tok_upper
    if lat is not None and built.lat_upper > planned.lat_upper > 0:
        lat *= planned.lat_upper / built.lat_upper
    return replace(budget, tok=tok, lat=lat)


@dataclass(frozen=True)
class ImitationTargets:
    """The decisions each target's plan asks for, one row per target: those of `easy`, those of `hard`
    and the difficulty threshold between them (+inf: `easy` alone)."""

    easy: Decisions
    hard: Decisions
    thresholds: torch.Tensor  # [T]

    @classmethod
    def of(cls, controller: Controller, plans: Sequence[AnchorPlan]) -> ImitationTargets:
        return cls(
            controller.decisions_of([plan.easy for plan in plans]),
            controller.decisions_of([plan.hard for plan in plans]),
            torch.tensor([plan.threshold for plan in plans]),
        )

    def decisions_for(self, difficulty: torch.Tensor, targets: torch.Tensor) -> Decisions:
        """Per query, the decisions its target's plan gives a query of that `difficulty` [B]."""
        return self.easy.take(targets).where(difficulty > self.thresholds[targets], self.hard.take(targets))


@dataclass(frozen=True)
class AnchoredStart:
    """What `anchor` cloned: the plan per target, its decisions and the weights it left."""

    plans: list[AnchorPlan]  # the plan imitated per target (the user's budget last)
    imitated: ImitationTargets  # their decisions
    difficulty: dict[str, float]  # of each training query as the plans split them (the frozen head's)
    snapshot: Snapshot  # the weights after imitation with their validation results: always a final candidate
    margin: float  # one standard error of its validation Perf (x anchor_margin_z): what training must win by
    menu: PlanMenu  # every plan it chose among, as measured

    def imitation_log_prob(
        self,
        controller: Controller,
        queries: Sequence[Query],
        embeddings: torch.Tensor,
        condition: torch.Tensor,
        targets: Sequence[int],
    ) -> torch.Tensor:
        """The mean exact log-probability of each training query's target plan under its target's
        `condition`: the pull towards the anchored start that REINFORCE keeps while it trains. A query keeps
        the side of a mixture it was imitated on, however training moves the difficulty head."""
        difficulty = torch.tensor([self.difficulty[query.id] for query in queries])
        given = self.imitated.decisions_for(difficulty, torch.as_tensor(targets))
        return controller(embeddings, condition, mode="given", given=given).log_prob.mean()


def anchor_templates(run: TrainingRun) -> list[MAS]:
    """Every kept backbone alone; the role library on one backbone wired as a chain, a star or layers
    (`ANCHOR_TOPOLOGIES`); and every agreement cascade: each pair of backbones (a backbone twice is two of
    its samples) answering, and a decision agent on each other backbone, called only when they disagree
    (when the library has two answering roles). The escalation need not be stronger than both answerers
    on paper: where two backbones that err differently agree they are usually right, so a cascade can beat
    its own escalation alone (mmlu-pro-dev: DeepSeek-Coder-V2 and a small Llama escalating to
    gemini-1.5-flash-002). Only those the controller can construct
    under its configuration are kept (`constructible`: the pool cap, an ablation)."""
    roles, names = run.experiment.roles, list(run.controller.context.backbone_names)
    distinct_roles = len(set(answerer_roles(roles, 2))) == 2  # the controller uses one agent per role
    cascades = [cascade_mas(roles, pair, escalation) for pair, escalation in cascade_backbones(names) if distinct_roles]
    templates = (
        [MAS.single(roles.decision.name, name) for name in names]
        + [topology_mas(kind, roles, name) for kind in ANCHOR_TOPOLOGIES for name in names]
        + cascades
    )
    return constructible(run, templates)


def constructible(run: TrainingRun, templates: Sequence[MAS]) -> list[MAS]:
    """The templates whose decisions have a finite log-probability under the controller: a backbone above
    `--max-pool`, or a cascade under the "one-pool" or "no-escalation" ablation, is impossible to build."""
    decisions = run.controller.decisions_of(templates)
    probe = run.embed(run.experiment.splits.train[:1]).expand(len(templates), -1)
    with torch.no_grad():
        log_prob = run.controller(probe, mode="given", given=decisions).log_prob
    return [template for template, value in zip(templates, log_prob.tolist(), strict=True) if math.isfinite(value)]


def plan_menu(run: TrainingRun, train: Sequence[Query], val: Sequence[Query]) -> PlanMenu:
    """Every template alone and every mixture of two, measured on the training and validation questions."""
    templates = anchor_templates(run)
    # the templates learn nothing from the training split: measured on it too, they are told apart
    # by 3-4x the questions (validation alone often ranks two close backbones the wrong way round)
    measured = [*train, *val]
    outcomes = run.execute([(template, query) for template in templates for query in measured])
    n = len(measured)
    per_template = [outcomes[i * n : (i + 1) * n] for i in range(len(templates))]
    alone = [
        AnchorPlan(template, template, summarise([template] * n, per_template[i], run.config.confidence_z))
        for i, template in enumerate(templates)
    ]
    mixed = mixtures(run, templates, per_template, [plan.measured for plan in alone], train, val)
    return PlanMenu(alone, mixed, run.config.fixed_penalties, outcomes)


def mixtures(
    run: TrainingRun,
    templates: Sequence[MAS],
    outcomes: Sequence[Sequence[Outcome]],
    evaluations: Sequence[Evaluation],
    train: Sequence[Query],
    val: Sequence[Query],
) -> list[AnchorPlan]:
    """Every mixture of two Pareto-optimal templates (on Perf, Tok, Lat over the measured questions): the
    dearer one for the hardest share (of `MIXTURE_SHARES`) of the training and validation questions by the
    frozen, pretrained difficulty head, the cheaper one for the rest, with what that measures on them
    (`outcomes[t]`: template t's outcomes on the training questions, then the validation ones).

    Its cost is what the split by the head spends. Its validation answers are the split's too; but the
    head was fitted to the training questions' labels, so its ranking there would flatter a mixture: their
    answers come from as many training questions drawn at random (seeded by the run), which measures what
    an uninformative head would give."""
    frontier = np.flatnonzero(
        pareto_front(*(np.array([getattr(e, axis) for e in evaluations]) for axis in ("perf", "tok", "lat")))
    )
    with torch.no_grad():
        difficulty = run.controller.difficulty(run.embed([*train, *val])).numpy()
    hardest_first = np.sort(difficulty)[::-1]
    random_order = np.random.default_rng(run.seed).permutation(len(train))
    found = []
    for share in MIXTURE_SHARES:
        sent = round(share * len(difficulty))
        if not 0 < sent < len(difficulty):  # a handful of questions: no query, or every one, would be sent
            continue
        threshold = float((hardest_first[sent - 1] + hardest_first[sent]) / 2)
        harder = difficulty > threshold
        answered_harder = harder.copy()  # whose answers count as the dearer template's
        answered_harder[: len(train)] = False
        answered_harder[random_order[: int(harder[: len(train)].sum())]] = True
        for easy in frontier:
            for hard in frontier:
                if evaluations[easy].tok >= evaluations[hard].tok:
                    continue
                pick = [
                    (hard if h else easy, hard if a else easy) for h, a in zip(harder, answered_harder, strict=True)
                ]
                mixed = [
                    replace(outcomes[spent][j], answer=outcomes[answered][j].answer, score=outcomes[answered][j].score)
                    for j, (spent, answered) in enumerate(pick)
                ]
                measured = summarise([templates[spent] for spent, _ in pick], mixed, run.config.confidence_z)
                found.append(AnchorPlan(templates[easy], templates[hard], measured, threshold, sent / len(difficulty)))
    return found


def anchor(run: TrainingRun, train: Sequence[Query], val: Sequence[Query]) -> AnchoredStart | None:
    """An anchored start: imitate, under each target budget's condition, the best plan (a MAS template, or
    a mixture of two by difficulty) that fits that budget on the training and validation questions
    (`plan_menu`).

    REINFORCE then starts from a policy that already meets the budget with a good Perf, and this
    start stays a candidate of the final choice on validation, so training replaces it only with
    something better there (by the margin of `selection_key`). Without it a run sometimes ends below
    the best single backbone that fits: reward noise spreads queries over weaker backbones. With no
    budget (fixed lambdas, the paper's mode) nothing fits or misses and nothing is imitated: None."""
    if all(budget.tok is None and budget.lat is None for budget in run.targets):
        return None
    menu = plan_menu(run, train, val)
    with torch.no_grad():
        difficulty = dict(zip((q.id for q in train), run.controller.difficulty(run.embed(train)).tolist(), strict=True))
    before = copy.deepcopy(run.controller.state_dict())
    plans = [menu.best(budget) for budget in run.targets]
    imitated, evaluations, judged = imitate_and_judge(run, train, val, plans, difficulty)
    # a mixture is imitated stage by stage; where what was built misses a budget the mixture met, the target
    # plans again under its budget tightened by the overshoot, compounded over up to `anchor_replans` rounds
    # (routerbench-mbpp, seed 2: a 75% mix planned at 99% of its budget was built 5% dearer, and the mix
    # re-planned under the tightened budget 10% dearer again; falling back to the cheap template alone
    # after one round cost 14 points on validation), and where the last round is built over budget too,
    # falls back to its best template alone; each round imitates every target afresh from the pretrained
    # weights (one policy serves them all)
    planned_under = list(run.targets)
    for replan in range(run.config.anchor_replans + 1):
        missed = [
            target
            for target, (plan, budget) in enumerate(zip(plans, run.targets, strict=True))
            if plan.mixed and plan.measured.meets(budget) and not judged[target].meets(budget)
        ]
        if not missed:
            break
        for target in missed:
            if replan < run.config.anchor_replans:
                planned_under[target] = tightened(planned_under[target], plans[target].measured, judged[target])
                plans[target] = menu.best(planned_under[target])
            else:
                plans[target] = menu.best(run.targets[target], with_mixtures=False)
        run.controller.load_state_dict(before)
        imitated, evaluations, judged = imitate_and_judge(run, train, val, plans, difficulty)
    snapshot = Snapshot(
        budget_score(judged, run.targets, run.config.fixed_penalties),
        copy.deepcopy(run.controller.state_dict()),
        evaluations,
        judged,
    )
    margin = run.config.anchor_margin_z * float(np.mean([e.perf_standard_error() for e in evaluations]))
    return AnchoredStart(plans, imitated, difficulty, snapshot, margin, menu)


def imitate_and_judge(
    run: TrainingRun,
    train: Sequence[Query],
    val: Sequence[Query],
    plans: Sequence[AnchorPlan],
    difficulty: dict[str, float],
) -> tuple[ImitationTargets, list[Evaluation], list[Evaluation]]:
    """Imitate `plans`; the imitated policy's validation results per target, and the same judged with its
    cost on the training and validation questions (`judged_with_known_cost`)."""
    imitated = ImitationTargets.of(run.controller, plans)
    imitate(run, train, imitated, difficulty)
    evaluations = [run.evaluate(val, target) for target in range(len(run.targets))]
    judged = [judged_with_known_cost(run, e, [*train, *val], target) for target, e in enumerate(evaluations)]
    return imitated, evaluations, judged


def judged_with_known_cost(run: TrainingRun, on_val: Evaluation, known: Sequence[Query], target: int) -> Evaluation:
    """The imitated policy under one target as the final choice judges it: its Perf on validation (where
    every candidate is compared, question by question) and its cost on `known`, the training and
    validation questions.

    Its templates were chosen as fitting on both splits, and it learned nothing from either, so both tell
    its cost; validation alone (fewer questions) gives a wider upper bound, which put an anchored start
    that fits over budgets (gsm8k-reasoning-dev, 70 validation questions: over at 2 to 3 of 8 grid
    budgets) and let any trained policy whose delta sweep found a fitting setting win on the count of
    budgets met, whatever its Perf."""
    cost = run.evaluate(known, target)
    return replace(on_val, tok=cost.tok, lat=cost.lat, tok_upper=cost.tok_upper, lat_upper=cost.lat_upper)


def imitate(run: TrainingRun, train: Sequence[Query], imitated: ImitationTargets, difficulty: dict[str, float]) -> None:
    """Maximise the exact log-probability of each target's decisions under its condition, for every
    training query, until every target is built as planned (`built_as_planned`) on at least
    `anchor_faithful_share` of them or `anchor_faithful_rounds` more rounds of steps are spent. The
    difficulty head stays frozen: its ranking is what delta calibration later spends the budget with, and
    what splits a mixture.

    One policy serves every target and neighbouring targets' conditions are close, so a round sometimes
    leaves a target built as its neighbour's plan on a tenth of the queries (mmlu-pro-dev, seed 0: a
    cascade target built 91% as planned, 1.4% over the budget its plan met; another round builds it 99%).
    A round takes at most `anchor_max_passes` passes over the (training query, target) pairs: on a few
    dozen questions more steps only memorise, and the rounds go on where the imitation falls short."""
    c = run.config
    steps = c.anchor_mixture_steps if bool(torch.isfinite(imitated.thresholds).any()) else c.anchor_steps
    batch = min(c.batch_queries, len(train))
    steps = min(steps, math.ceil(c.anchor_max_passes * len(train) * len(run.targets) / batch))
    generator = np.random.default_rng(run.seed)
    parameters = [p for n, p in run.controller.named_parameters() if not n.startswith("difficulty.")]
    optimiser = torch.optim.Adam(parameters, lr=c.anchor_learning_rate)
    for round_ in range(c.anchor_faithful_rounds + 1):
        if round_ > 0 and min(built_as_planned(run, train, imitated, difficulty)) >= c.anchor_faithful_share:
            return
        imitation_steps(run, train, imitated, difficulty, steps, generator, optimiser, batch)


def imitation_steps(
    run: TrainingRun,
    train: Sequence[Query],
    imitated: ImitationTargets,
    difficulty: dict[str, float],
    steps: int,
    generator: np.random.Generator,
    optimiser: torch.optim.Optimizer,
    batch: int,
) -> None:
    """`steps` behaviour-cloning steps on batches of `batch` training queries, each with a random target."""
    controller = run.controller
    for _ in range(steps):
        rows = generator.choice(len(train), size=batch, replace=False)
        targets = generator.integers(len(run.targets), size=len(rows))
        queries = [train[i] for i in rows]
        given = imitated.decisions_for(torch.tensor([difficulty[q.id] for q in queries]), torch.as_tensor(targets))
        condition = conditions([run.targets[t] for t in targets])
        step = controller(run.embed(queries), condition, mode="given", given=given)
        loss = -step.log_prob.mean()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()


def built_as_planned(
    run: TrainingRun, train: Sequence[Query], imitated: ImitationTargets, difficulty: dict[str, float]
) -> list[float]:
    """Per target, the share of the training queries whose greedy MAS under its condition (and delta) is
    the one its plan asks for: same agents, backbones, conditions and wiring."""
    embeddings = run.embed(train)
    levels = torch.tensor([difficulty[q.id] for q in train])
    shares = []
    for target, budget in enumerate(run.targets):
        planned = run.controller.to_masses(imitated.decisions_for(levels, torch.full((len(train),), target)))
        built = run.controller.construct(embeddings, conditions([budget] * len(train)), delta=run.deltas[target])
        shares.append(sum(a == b for a, b in zip(planned, built, strict=True)) / len(train))
    return shares

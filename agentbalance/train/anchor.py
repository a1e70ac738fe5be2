"""The anchored start: imitate, per target budget, the best MAS template that fits it, before REINFORCE begins.

It must never measure a template on the test split nor imitate a MAS the controller cannot construct:
templates are ranked on training and validation questions and cloned through `Controller.decisions_of`.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch

from agentbalance.budgets import Budget
from agentbalance.evaluation.measure import Evaluation, summarise
from agentbalance.mas import MAS
from agentbalance.policy.condition import conditions
from agentbalance.policy.controller import Controller, Decisions
from agentbalance.query import Query
from agentbalance.templates import answerer_roles, cascade_backbones, cascade_mas, topology_mas
from agentbalance.train.budget_targeting import Snapshot, budget_preference, budget_score
from agentbalance.train.training_run import TrainingRun

# the templates an anchored start may imitate besides a backbone alone: those the controller can construct
ANCHOR_TOPOLOGIES = ("chain", "star", "layered")


@dataclass(frozen=True)
class AnchoredStart:
    """What `anchor` cloned: the template per target, its decisions and the weights it left."""

    templates: list[MAS]  # the template imitated per target (the user's budget last)
    imitated: Decisions  # their decisions, one row per target
    snapshot: Snapshot  # the weights after imitation with their validation results: always a final candidate
    margin: float  # one standard error of its validation Perf (x anchor_margin_z): what training must win by

    def imitation_log_prob(
        self, controller: Controller, embeddings: torch.Tensor, condition: torch.Tensor, targets: Sequence[int]
    ) -> torch.Tensor:
        """The mean exact log-probability of each query's target template under its target's `condition`:
        the pull towards the anchored start that REINFORCE keeps while it trains."""
        given = self.imitated.take(torch.as_tensor(targets))
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


def best_fitting_templates(run: TrainingRun, train: Sequence[Query], val: Sequence[Query]) -> list[MAS]:
    """Per target, the template of the best `budget_preference` on the training and validation questions."""
    templates = anchor_templates(run)
    # the templates learn nothing from the training split: measured on it too, they are told apart
    # by 3-4x the questions (validation alone often ranks two close backbones the wrong way round)
    measured = [*train, *val]
    outcomes = run.execute([(template, query) for template in templates for query in measured])
    n = len(measured)
    evaluations = [
        summarise([template] * n, outcomes[i * n : (i + 1) * n], run.config.confidence_z)
        for i, template in enumerate(templates)
    ]
    penalties = run.config.fixed_penalties

    def best_for(budget: Budget) -> MAS:
        return templates[max(range(len(templates)), key=lambda i: budget_preference(evaluations[i], budget, penalties))]

    return [best_for(budget) for budget in run.targets]


def anchor(run: TrainingRun, train: Sequence[Query], val: Sequence[Query]) -> AnchoredStart | None:
    """An anchored start: imitate, under each target budget's condition, the best MAS template that fits
    that budget on the training and validation questions (`best_fitting_templates`).

    REINFORCE then starts from a policy that already meets the budget with a good Perf, and this
    start stays a candidate of the final choice on validation, so training replaces it only with
    something better there (by the margin of `selection_key`). Without it a run sometimes ends below
    the best single backbone that fits: reward noise spreads queries over weaker backbones. With no
    budget (fixed lambdas, the paper's mode) nothing fits or misses and nothing is imitated: None."""
    if all(budget.tok is None and budget.lat is None for budget in run.targets):
        return None
    chosen = best_fitting_templates(run, train, val)
    imitated = run.controller.decisions_of(chosen)
    imitate(run, train, imitated)
    evaluations = [run.evaluate(val, target) for target in range(len(run.targets))]
    judged = [judged_with_known_cost(run, e, [*train, *val], target) for target, e in enumerate(evaluations)]
    snapshot = Snapshot(
        budget_score(judged, run.targets, run.config.fixed_penalties),
        copy.deepcopy(run.controller.state_dict()),
        evaluations,
        judged,
    )
    margin = run.config.anchor_margin_z * float(np.mean([e.perf_standard_error() for e in evaluations]))
    return AnchoredStart(chosen, imitated, snapshot, margin)


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


def imitate(run: TrainingRun, train: Sequence[Query], decisions_of_target: Decisions) -> None:
    """Maximise the exact log-probability of each target's decisions under its condition, for every
    training query. The difficulty head stays frozen: its ranking is what delta calibration later
    spends the budget with."""
    c, controller = run.config, run.controller
    generator = np.random.default_rng(run.seed)
    parameters = [p for n, p in controller.named_parameters() if not n.startswith("difficulty.")]
    optimiser = torch.optim.Adam(parameters, lr=c.anchor_learning_rate)
    for _ in range(c.anchor_steps):
        rows = generator.choice(len(train), size=min(c.batch_queries, len(train)), replace=False)
        targets = generator.integers(len(run.targets), size=len(rows))
        given = decisions_of_target.take(torch.as_tensor(targets))
        condition = conditions([run.targets[t] for t in targets])
        step = controller(run.embed([train[i] for i in rows]), condition, mode="given", given=given)
        loss = -step.log_prob.mean()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()

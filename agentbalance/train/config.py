"""What one training run is told (`TrainConfig`) and what it reports (`TrainResult`), as plain data.

It must never train, measure or import another part of training: every part reads it, it reads none of them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from agentbalance.budgets import BudgetRange
from agentbalance.measuring import CONFIDENCE_Z, Evaluation
from agentbalance.train.policy_gradient import PolicyGradientConfig


@dataclass(frozen=True)
class TrainConfig(PolicyGradientConfig):
    """Knobs of training; the defaults finish `build` on the simulated world in a few minutes on 2 cores."""

    epochs: int = 25
    samples_per_query: int = 6
    length_penalty: float = 0.02  # lambda_len on L_max
    dual_step: float = 0.3  # step of the dual ascent on the dimensionless penalties kappa
    initial_kappa: float = 0.3  # lambda = kappa / budget: a penalty of kappa at exactly the budget
    confidence_z: float = CONFIDENCE_Z  # the safety margin: one-sided 95% upper bound of the validation mean
    lambda_tok: float | None = None  # fixed lambdas (the paper's mode): no dual ascent on that axis
    lambda_lat: float | None = None
    pretrain_steps: int = 400
    calibrated_candidates: int = 3  # epochs whose delta is calibrated before the final choice
    anchor_steps: int = 300  # behaviour-cloning steps of an anchored start (see `train.anchor`)
    # ... when a plan mixes two templates: each stage must learn the same split (routerbench-arc-challenge,
    # seed 0: after 300 steps 147 of 200 validation questions built as planned, after 1000 steps 181 to 194)
    anchor_mixture_steps: int = 1000
    anchor_max_passes: float = 60.0  # ... at most this many passes over the (query, target) pairs a round
    anchor_faithful_share: float = 0.95  # imitation goes on while a target is built as planned on fewer queries
    anchor_faithful_rounds: int = 2  # ... for at most this many more rounds of its steps
    anchor_replans: int = 3  # a mixture built over its budget is planned again under a tighter one, at most this often
    anchor_learning_rate: float = 1e-2
    anchor_margin_z: float = 1.0  # a trained policy replaces the anchored start if it wins by this many SEs
    slack_z: float = 1.0  # delta spends the budget: the most generous one within this many SEs of the best Perf
    anchor_weight: float = 0.1  # weight of imitating the anchored start during REINFORCE (0: none)
    difficulty_lr_scale: float = 0.1  # the difficulty head's end-to-end learning rate, relative
    # per budget, the trained policy serves only where it beats the menu's best plan on held-out folds; else the
    # plan serves (train.menu_guard). Opt-in until it is measured on every world
    menu_guard: bool = False

    @property
    def fixed_penalties(self) -> tuple[float, float]:
        """The lambdas fixed by hand (0 on an axis under budget targeting): part of the objective that
        ranks templates, epochs, deltas and restarts on validation."""
        return self.lambda_tok or 0.0, self.lambda_lat or 0.0


@dataclass
class TrainResult:
    feasible: bool
    val: Evaluation
    test: Evaluation
    history: list[dict[str, float]]
    lambdas: dict[str, float]
    cheapest: Evaluation
    difficulty: dict[str, object] = field(default_factory=dict)  # rank correlation on the test split
    budget_range: BudgetRange | None = None  # budget-conditioned: the range served, with calibrated deltas
    points: list[dict[str, object]] = field(default_factory=list)  # budget-conditioned: each grid budget
    score: tuple[int, float] = (0, 0.0)  # `budget_score` on validation at the best deltas: restarts compare it
    anchored: bool = False  # the weights kept are the anchored start itself (no REINFORCE epoch beat it)
    kept_epoch: int | None = None  # the epoch whose weights are kept (1-based; 0: the anchored start; None: unknown)
    kept_run: int = 1  # the training run (restart, 1-based) kept, the best of the build's runs on validation
    anchor_margin: float = 0.0  # what a trained policy must win by on validation to replace the anchored start
    # the anchored start kept: what its budget was judged by (Perf on validation, cost on the training and
    # validation questions, `anchor.judged_with_known_cost`); `val` is then what it does on validation alone
    judged: Evaluation | None = None
    # the menu guard (`train.menu_guard`), per target budget (the user's last): the plan serving it in place of the
    # policy (a MAS's JSON; None: the policy), and what the choice stood on
    plans: list[dict[str, Any] | None] = field(default_factory=list)
    guard: list[dict[str, Any]] = field(default_factory=list)

    def describe_kept(self, runs: int) -> str:
        """Which weights the controller holds, in words: the run (of `runs`) and the epoch kept."""
        if self.kept_epoch == 0:
            return f"kept: the anchored start of run {self.kept_run} of {runs} (no trained epoch beat it on validation)"
        epoch = f", epoch {self.kept_epoch} of {len(self.history)}" if self.kept_epoch is not None else ""
        return f"kept: run {self.kept_run} of {runs}{epoch} (the best on validation)"

    def to_json(self) -> dict[str, object]:
        document = asdict(self)
        document["budget_range"] = self.budget_range.to_json() if self.budget_range is not None else None
        return document

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> TrainResult:
        """The inverse of `to_json` (a restart checkpoint); malformed input raises KeyError/TypeError."""
        saved_range = document["budget_range"]
        return cls(
            feasible=bool(document["feasible"]),
            val=Evaluation(**document["val"]),
            test=Evaluation(**document["test"]),
            history=list(document["history"]),
            lambdas=dict(document["lambdas"]),
            cheapest=Evaluation(**document["cheapest"]),
            difficulty=dict(document["difficulty"]),
            budget_range=BudgetRange.from_json(saved_range) if saved_range is not None else None,
            points=list(document["points"]),
            score=(int(document["score"][0]), float(document["score"][1])),
            anchored=bool(document["anchored"]),
            kept_epoch=document.get("kept_epoch"),
            kept_run=int(document.get("kept_run", 1)),
            anchor_margin=float(document["anchor_margin"]),
            judged=Evaluation(**document["judged"]) if document.get("judged") is not None else None,
            plans=list(document.get("plans", [])),
            guard=list(document.get("guard", [])),
        )

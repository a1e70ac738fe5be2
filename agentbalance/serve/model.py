"""The served model: a trained controller over a world, as the server uses it (the query and budget of a request,
the operating point the budget governor asks for, the MAS of a batch of queries, the runner that executes them).

It never trains and never reads a run folder itself (TrainedController does); it never runs HTTP.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentbalance.agreement import FREE_TEXT_THRESHOLD
from agentbalance.budgets import Budget
from agentbalance.encoders import TextEncoder
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS
from agentbalance.query import Query
from agentbalance.roles import RoleSet
from agentbalance.runtime.execution import Caps
from agentbalance.runtime.runner import Runner
from agentbalance.serve.governor import DEFAULT_MIN_SCALE, OperatingPoint
from agentbalance.serve.protocol import Asked, ProtocolError
from agentbalance.task_rules import TaskRules
from agentbalance.templates import single_mas
from agentbalance.trained import TrainedController
from agentbalance.worlds.base import AgentCall, AgentCallFailed, QueryRefused, Refusal, World, query_for
from agentbalance.worlds.live import LiveWorld

ENCODER_MEMORY = 20_000  # query embeddings kept in memory (about 30 MB)
# texts per encoder batch: a batch pads to its longest text, and on the CPU a batch of 64 of the simulator's
# questions cost 2.4x the time per text of batches of 1-8 (measured: 120 vs 46-51 ms of CPU per text, one
# thread); the embeddings do not depend on it (float64), and the controller's own pass still takes the lot
ENCODER_BATCH = 8
FLOOR_LOG = math.log(1 / DEFAULT_MIN_SCALE)  # the governor's floor, in log units of tightening
# the part of the governor's range past a budget range that shifts the difficulty offset; the rest hands a growing
# share of queries to the cheapest backbone alone (all of them at the floor)
OFFSET_PART = 0.5


@dataclass(frozen=True)
class ConstructionPoint:
    """Where the controller builds a request's MAS: the budget it is conditioned on (None: its own), a shift of
    its difficulty offset (< 0: cheaper pools), and the share of queries (chosen by their id, so a question is
    always treated alike) that a single backbone answers alone instead: the last resort past the offset's span."""

    budget: Budget | None = None
    delta_shift: float = 0.0
    fallback: str | None = None  # the backbone that answers alone
    fallback_share: float = 0.0

    def falls_back(self, query: Query) -> bool:
        """Whether `query` is answered by the fallback backbone alone at this point."""
        if self.fallback is None or self.fallback_share <= 0:
            return False
        digest = hashlib.sha256(query.id.encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2**64 < self.fallback_share

    def describe(self) -> dict[str, Any]:
        budget = dataclasses.asdict(self.budget) if self.budget is not None else None
        described: dict[str, Any] = {"budget": budget, "delta_shift": self.delta_shift}
        if self.fallback is not None:
            described |= {"fallback": self.fallback, "fallback_share": self.fallback_share}
        return described


class ServedModel:
    """A trained controller over a world, as the server uses it: the budget and query of a request, the runner
    that executes its MAS. One model may back several apps (each builds MAS with its own batcher)."""

    def __init__(self, controller: TrainedController, world: World) -> None:
        self.controller = controller.over(world)
        self.world = world
        self._spans: dict[Budget | None, float] = {}  # the governor knob's span per budget (it does not change)

    @classmethod
    def load(cls, run_dir: str | Path, world: World, roles: RoleSet | None = None) -> ServedModel:
        """The run folder's controller over `world`. Its encoder keeps no disk cache (users' questions are not
        written to disk by it) and a bounded memory cache, so a long-running server does not grow."""
        encoder = TextEncoder(use_disk_cache=False, batch_size=ENCODER_BATCH, memory_limit=ENCODER_MEMORY)
        return cls(TrainedController.load(run_dir, world=world, roles=roles, encoder=encoder), world)

    def serving(self, budget: Budget | None) -> Budget:
        """The budget a request is served with, or a 400 naming the budgets this model serves."""
        try:
            served, _ = self.controller.serving(budget)
        except AgentBalanceError as error:
            known = self.controller.budget_range
            also = f" (this model serves {known.describe()}; a looser budget is served as the loosest)" if known else ""
            raise ProtocolError(400, f"budget: {error}{also}", param="budget") from None
        return served

    def query(self, asked: Asked) -> Query:
        """The query of a request: its last user message (same text, same id: the controller builds the same MAS
        and the simulator answers it the same way) with the conversation before it as context, or in a replay
        world the recorded question `query_id` names, with that context (`query_for`; a refusal is a 400 in the
        client's terms, never naming the server's files)."""
        try:
            return query_for(self.world, asked.question, query_id=asked.query_id, context=asked.context)
        except QueryRefused as refused:
            raise ProtocolError(400, f"query_id: {_client_wording(refused)}", param="query_id") from None

    def check_fits(self, mas: MAS, query: Query) -> None:
        """A 400 when the question alone cannot fit the context window of one of the MAS's backbones (with its
        role prompt and completion limit): the client must shorten it; no call is sent or paid for."""
        if not isinstance(self.world, LiveWorld):  # only a live world fits prompts to context windows
            return
        roles, catalog = self.controller.roles, self.world.catalog
        for agent in mas.agents:
            try:
                self.world.fitted_prompt(AgentCall(agent, roles[agent.role], catalog[agent.backbone], query))
            except AgentCallFailed as error:
                too_long = f"messages: the question is too long for backbone {agent.backbone!r}: {error}"
                raise ProtocolError(400, too_long, param="messages") from None

    def construction_point(self, budget: Budget | None, governed: OperatingPoint | None = None) -> ConstructionPoint:
        """Where a request asking `budget` is built when the governor tightens each axis of its budget by the factors
        of `governed` (never looser).

        A budget-conditioned controller takes the tightened budget within its range. What its range cannot give,
        and everything for a controller built for one budget, is `remaining` tightening, a fraction of the
        governor's floor in log scale. Its first part (`OFFSET_PART`) shifts the difficulty offset up to the shift
        that builds every query in the cheapest pool (`TrainedController.cheapest_shift`, measured on this
        controller: its learned thresholds and offsets, not a constant), so queries move to cheaper pools smoothly.
        The rest hands a growing share of queries to the cheapest backbone answering alone (the fastest one when Lat
        is the tighter axis), all of them at the floor: the cheapest pool's MAS may still cost more than the budget
        (measured: 1.5x at twice the prices a controller was built for), a single call is the cheapest point there is.
        The pool cap is not used: capping the pools of a controller trained without a cap changed what it built
        (2 agents became 8, and a MAS twice as dear), so the spend would not fall as the knob moves.
        """
        if governed is None or min(governed.tok_scale, governed.lat_scale) >= 1.0:
            return ConstructionPoint(budget)
        remaining = -math.log(min(governed.tok_scale, governed.lat_scale))  # log units the offset must give
        point_budget = budget
        known = self.controller.budget_range
        served = self.serving(budget)
        if known is not None and (served.tok is not None or served.lat is not None):
            floor_scale = 1 / known.ratio
            wanted = known.requested_scale(governed.scaled(served))
            point_budget = known.at(max(wanted, floor_scale))
            remaining = max(0.0, math.log(floor_scale / wanted))  # beyond the range's tightest budget
        if remaining <= 0:
            return ConstructionPoint(point_budget)
        span = self._cheapest_shift(point_budget)
        part = OFFSET_PART if span < 0 else 0.0  # one pool: the whole range hands queries to the fallback
        reached = min(1.0, remaining / FLOOR_LOG)
        shift = span * min(1.0, reached / part) if part > 0 else 0.0
        share = max(0.0, (reached - part) / (1 - part))
        if share <= 0:
            return ConstructionPoint(point_budget, shift)
        fallback = self._fallback(by_latency=governed.lat_scale < governed.tok_scale)
        return ConstructionPoint(point_budget, shift, fallback, share)

    def _fallback(self, by_latency: bool) -> str:
        """The controller's backbone that is cheapest (fastest, `by_latency`) alone, at the catalog's assumptions."""
        catalog = self.world.catalog
        assumptions = catalog.assumptions

        def cost(name: str) -> tuple[float, float]:
            backbone = catalog[name]
            tok, lat = backbone.tok_cost(assumptions), backbone.latency(assumptions)
            return (lat, tok) if by_latency else (tok, lat)

        return min(self.controller.backbones, key=cost)

    def _cheapest_shift(self, budget: Budget | None) -> float:
        if budget not in self._spans:
            self._spans[budget] = self.controller.cheapest_shift(budget)
        return self._spans[budget]

    def construct_many(self, queries: list[Query], point: ConstructionPoint) -> list[MAS]:
        """The MAS of queries served at one operating point (one forward pass; the fallback's share answered alone)."""
        built = self.controller.construct_many(queries, point.budget, delta_shift=point.delta_shift)
        if point.fallback is None:
            return built
        alone = single_mas(self.controller.roles, point.fallback)
        return [alone if point.falls_back(query) else mas for query, mas in zip(queries, built, strict=True)]

    def runner(self, caps: Caps, concurrency: int, agreement_threshold: float = FREE_TEXT_THRESHOLD) -> Runner:
        """The runner of every request; free-text replies agree from `agreement_threshold` (agentbalance.agreement)."""
        rules = TaskRules.of(None, self.world, self.controller.encoder, agreement_threshold)
        return self.controller.runner(self.world, rules, caps=caps, concurrency=concurrency)

    def describe(self) -> dict[str, Any]:
        """What /v1/models says about the model beyond its name."""
        controller = self.controller
        budget_range = controller.budget_range
        return {
            "run": controller.run_dir.name,
            "world": self.world.name,
            "simulated": self.world.simulated,
            "budget": dataclasses.asdict(controller.budget),
            "budget_range": budget_range.describe() if budget_range is not None else None,
            "backbones": list(controller.backbones),
        }


def _client_wording(refused: QueryRefused) -> str:
    """Why a request's question was refused, in a client's terms (its body field `query_id`)."""
    if refused.why is Refusal.TEXT:
        return (
            f"the {refused.world!r} world replays recorded answers, so it answers only its recorded questions: "
            'name one with the body field "query_id"'
        )
    if refused.why is Refusal.UNKNOWN_ID:
        return f"{refused.query_id!r} is not a recorded question of {refused.world!r}"
    return "only a replay world looks questions up by id"

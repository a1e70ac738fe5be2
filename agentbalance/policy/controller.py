"""The controller F_theta: composes the stages in the paper's order and is the only module that knows it.

difficulty -> pool selection -> agent pools -> role-backbone matching -> agent representation -> gating
-> topology -> escalation flags. It returns decisions and their exact log-probability; it never executes
anything.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields

import torch
from torch import nn

from agentbalance.encoders import TextEncoder
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS, Agent
from agentbalance.policy.agent_pools import AgentPoolChoice
from agentbalance.policy.budget_input import CONDITION_DIM
from agentbalance.policy.context import ControllerContext, log_costs
from agentbalance.policy.difficulty import DifficultyEstimator
from agentbalance.policy.escalation import EscalationFlags
from agentbalance.policy.gating import AgentGating
from agentbalance.policy.matching import RoleBackboneMatching
from agentbalance.policy.representation import AgentRepresentation
from agentbalance.policy.sampling import (
    GREEDY,
    SAMPLE,
    bernoulli_entropy,
    bernoulli_log_prob,
    categorical,
    categorical_entropy,
    flags,
)
from agentbalance.policy.selection import PoolSelection
from agentbalance.policy.topology import LatencyAwareTopology, TopologyChoice, dense_topology

# the paper's Table 3 variants, each replacing one learned stage (random-pools acts on the pools instead),
# then the two stages beyond the paper switched off: every agent in the query's pool, no conditional agent
ABLATIONS = (
    "random-pools",
    "random-selection",
    "random-matching",
    "role-only",
    "no-gating",
    "dense-topology",
    "one-pool",
    "no-escalation",
)
DEPLOYMENT_SEED = 0  # a random ablation's greedy draws without a generator: seeded afresh each call


@dataclass(frozen=True)
class Ablation:
    """What one ablation changes in the controller's stages, as the stages ask it (none: every stage learned)."""

    random_selection: bool = False  # the query's pool drawn uniformly
    random_matching: bool = False  # each role's backbone drawn uniformly
    role_only: bool = False  # agents represented by their role alone (no query, no backbone)
    no_gating: bool = False  # every agent of the pool stays
    dense_topology: bool = False  # every edge the order allows
    one_pool: bool = False  # every agent in the query's own pool
    no_escalation: bool = False  # no conditional agent

    @classmethod
    def named(cls, name: str | None) -> Ablation:
        """The ablation of `name` (one of ABLATIONS; None and "random-pools", which acts on the pools, change no
        stage)."""
        if name is None or name == "random-pools":
            return cls()
        return cls(**{name.replace("-", "_"): True})

    @property
    def random_at_deployment(self) -> bool:
        """A random stage stays random when the controller constructs greedily (see `_random_if`)."""
        return self.random_selection or self.random_matching


@dataclass(frozen=True)
class ControllerConfig:
    """Sizes and fixed knobs of the controller (saved with every checkpoint)."""

    embed_dim: int = 384
    hidden: int = 64
    selection_temperature: float = 0.15
    delta: float = 0.0  # the paper's difficulty offset: > 0 pushes queries to costlier pools
    max_pool: int | None = None  # the user's cap on the highest pool
    ablation: str | None = None  # one of ABLATIONS, for the ablation study only

    def __post_init__(self) -> None:
        if self.ablation is not None and self.ablation not in ABLATIONS:
            raise AgentBalanceError(f"unknown ablation {self.ablation!r}; known: {', '.join(ABLATIONS)}")

    @property
    def ablated(self) -> Ablation:
        return Ablation.named(self.ablation)


@dataclass(frozen=True)
class Decisions:
    """Every sampled choice for a batch of queries (role-index space)."""

    pool: torch.Tensor  # [B] the query's pool: the decision agent's (each other role's is its backbone's)
    backbones: torch.Tensor  # [B, R] backbone index per role
    keep: torch.Tensor  # [B, R] bool; the decision agent is always kept
    topology: TopologyChoice
    conditional: torch.Tensor  # [B, R] bool: runs only when its inputs disagree (kept, >= 2 inputs)

    def row(self, index: int) -> Decisions:
        """Decisions of one query, still batched (B = 1)."""
        return self.take(slice(index, index + 1))

    def take(self, rows: slice | torch.Tensor) -> Decisions:
        """The decisions of some queries of the batch (a slice or a tensor of row indices)."""
        return self._map(lambda tensor: tensor[rows])

    def where(self, mask: torch.Tensor, other: Decisions) -> Decisions:
        """Row by row, `other`'s decisions where `mask` [B] is true and these elsewhere (same batch size)."""
        return self._map(lambda mine, theirs: torch.where(mask.view(-1, *[1] * (mine.dim() - 1)), theirs, mine), other)

    def _map(self, function: Callable[..., torch.Tensor], *others: Decisions) -> Decisions:
        """Apply `function` to each tensor of these decisions, with the same tensor of each of `others`."""
        every = (self, *others)

        def over(read: Callable[[Decisions], torch.Tensor]) -> torch.Tensor:
            return function(*(read(decisions) for decisions in every))

        topology = TopologyChoice(
            *(over(lambda d, name=f.name: getattr(d.topology, name)) for f in fields(TopologyChoice))
        )
        return Decisions(
            over(lambda d: d.pool),
            over(lambda d: d.backbones),
            over(lambda d: d.keep),
            topology,
            over(lambda d: d.conditional),
        )


@dataclass(frozen=True)
class Step:
    """One pass of the controller over a batch."""

    decisions: Decisions
    log_prob: torch.Tensor  # [B] log p_sel + log p_pools + log p_match + log p_gate + log p_topo + log p_esc
    parts: dict[str, torch.Tensor] = field(default_factory=dict)  # each term, [B]
    entropy: torch.Tensor = field(default_factory=lambda: torch.zeros(0))  # [B]
    expected_length: torch.Tensor = field(default_factory=lambda: torch.zeros(0))  # [B] L_max
    difficulty: torch.Tensor = field(default_factory=lambda: torch.zeros(0))  # [B]


class Controller(nn.Module):
    """F_theta over a ControllerContext; the context can be swapped for another catalog (inductive use)."""

    def __init__(self, context: ControllerContext, config: ControllerConfig | None = None) -> None:
        super().__init__()
        self.config = config or ControllerConfig()
        self.context = context
        c = self.config
        self.difficulty = DifficultyEstimator(c.embed_dim, c.hidden)
        self.selection = PoolSelection(context.pool_count, CONDITION_DIM, c.selection_temperature)
        self.matching = RoleBackboneMatching(c.embed_dim, c.hidden, CONDITION_DIM)
        self.representation = AgentRepresentation(c.embed_dim, c.hidden)
        self.gating = AgentGating(c.hidden, CONDITION_DIM)
        self.topology = LatencyAwareTopology(c.hidden, context.role_count, CONDITION_DIM)
        # the stages beyond the paper come last, so the paper's stages start from the same weights as before
        self.agent_pools = AgentPoolChoice(c.hidden)
        self.escalation = EscalationFlags(c.hidden, CONDITION_DIM)

    def forward(
        self,
        query_embeddings: torch.Tensor,
        condition: torch.Tensor | None = None,
        mode: str = "sample",
        given: Decisions | None = None,
        delta: float | None = None,
        generator: torch.Generator | None = None,
    ) -> Step:
        """`mode`: "sample" (training: every draw from `generator`, required), "greedy" (deployment) or
        "given" (score `given` decisions); `delta` overrides the configured difficulty offset (a
        budget-conditioned model's calibrated one). A random ablation samples in greedy mode too: from
        `generator`, or else from one seeded with DEPLOYMENT_SEED for this call (reproducible constructions)."""
        ctx, c, ablated = self.context, self.config, self.config.ablated
        if generator is None and mode == GREEDY and ablated.random_at_deployment:
            generator = torch.Generator().manual_seed(DEPLOYMENT_SEED)
        batch = query_embeddings.shape[0]
        condition = condition if condition is not None else torch.zeros(batch, CONDITION_DIM)
        difficulty = self.difficulty(query_embeddings)

        offset = c.delta if delta is None else delta
        pool_log_probs = self.selection(difficulty, condition, delta=offset, max_pool=c.max_pool)
        pool_log_probs, pool = self._stage_choice(
            pool_log_probs, ablated.random_selection, mode, generator, given.pool if given else None
        )
        log_p_sel = pool_log_probs.gather(1, pool.unsqueeze(1)).squeeze(1)

        role_vectors = self.matching.role_vectors(query_embeddings, difficulty, condition, ctx)
        agent_pool_log_probs = self.agent_pools(
            role_vectors, pool, ctx, max_pool=c.max_pool, query_pool_only=ablated.one_pool
        )  # [B, R, P]
        given_pools = None
        if given is not None:
            given_pools = ctx.pool_of_backbone[given.backbones]
            given_pools[:, ctx.decision_index] = given.pool  # a decision backbone outside it: matching says -inf
        role_pools = categorical(agent_pool_log_probs, mode, generator, given_pools)
        log_p_pools = agent_pool_log_probs.gather(2, role_pools.unsqueeze(2)).squeeze(2).sum(1)

        vectors = self.matching.backbone_vectors(ctx)
        match_log_probs = self.matching(role_vectors, vectors, role_pools, ctx)  # [B, R, M]
        match_log_probs, backbones = self._stage_choice(
            match_log_probs, ablated.random_matching, mode, generator, given.backbones if given else None
        )
        log_p_match = match_log_probs.gather(2, backbones.unsqueeze(2)).squeeze(2).sum(1)

        if ablated.role_only:
            agents = self.representation.roles_only(ctx.role_embeddings, batch)
        else:
            agents = self.representation(ctx.role_embeddings, query_embeddings, vectors[backbones])
        log_cost, log_latency = log_costs(ctx.backbone_tok_cost[backbones], ctx.backbone_latency_s[backbones])
        keep_logits = self.gating(agents, log_latency, log_cost, condition)
        gated = torch.ones_like(keep_logits, dtype=torch.bool)
        gated[:, ctx.decision_index] = False  # the decision agent carries no gate
        if ablated.no_gating:
            gated[:] = False  # every agent stays
        keep = flags(keep_logits, mode, generator, given.keep if given is not None else None) | ~gated
        gate_terms = bernoulli_log_prob(keep, keep_logits)
        log_p_gate = torch.where(gated, gate_terms, torch.zeros_like(gate_terms)).sum(1)

        if ablated.dense_topology:
            topology = dense_topology(keep, ctx.decision_index)
        else:
            topology = self.topology(
                agents,
                log_latency,
                keep,
                ctx.decision_index,
                condition,
                mode,
                given.topology if given is not None else None,
                generator,
            )
        escalation = self.escalation(
            agents,
            log_latency,
            log_cost,
            keep,
            topology.edges,
            condition,
            mode,
            given.conditional if given is not None else None,
            generator,
            enabled=not ablated.no_escalation,
        )
        parts = {
            "selection": log_p_sel,
            "agent_pools": log_p_pools,
            "matching": log_p_match,
            "gating": log_p_gate,
            "topology": topology.log_prob,
            "escalation": escalation.log_prob,
        }
        entropy = (
            categorical_entropy(pool_log_probs)
            + categorical_entropy(agent_pool_log_probs).sum(1)
            + categorical_entropy(match_log_probs).sum(1)
            + torch.where(gated, bernoulli_entropy(keep_logits), torch.zeros_like(keep_logits)).sum(1)
            + topology.entropy
            + escalation.entropy
        )
        return Step(
            decisions=Decisions(pool, backbones, keep, topology, escalation.conditional),
            log_prob=torch.stack(list(parts.values())).sum(0),
            parts=parts,
            entropy=entropy,
            expected_length=topology.expected_length,
            difficulty=difficulty,
        )

    def _stage_choice(
        self,
        log_probs: torch.Tensor,
        random: bool,
        mode: str,
        generator: torch.Generator | None,
        given: torch.Tensor | None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """A categorical stage's distribution (uniform when its ablation makes it `random`) and its choice."""
        if random:
            log_probs = _uniform(log_probs)
        return log_probs, categorical(log_probs, _random_if(random, mode), generator, given)

    def construct(
        self,
        query_embeddings: torch.Tensor,
        condition: torch.Tensor | None = None,
        query_ids: Sequence[str | None] | None = None,
        delta: float | None = None,
    ) -> list[MAS]:
        """Greedy deployment: the most likely MAS for each query of a batch."""
        with torch.no_grad():
            step = self(query_embeddings, condition, mode=GREEDY, delta=delta)
        return self.to_masses(step.decisions, query_ids)

    def construct_texts(
        self,
        texts: Sequence[str],
        encoder: TextEncoder,
        condition: torch.Tensor | None = None,
        delta: float | None = None,
    ) -> list[MAS]:
        """`construct` from query texts (question and choices as the agents will see them)."""
        embeddings = torch.from_numpy(encoder.encode(list(texts)).copy())
        return self.construct(embeddings, condition, delta=delta)

    def decisions_of(self, systems: Sequence[MAS]) -> Decisions:
        """The decisions that construct each MAS (the inverse of `to_masses`), to score or imitate them.

        A MAS is representable when it uses each role of the library at most once, the decision agent
        last, no vote agent (`when="never"`), and the controller's wiring rule: exactly the agents that
        feed no other agent feed the decision agent (so chains, stars, layered graphs and cascades are; a
        complete graph is not). Any backbone may serve any role (the query's pool is the decision
        agent's). Anything else raises AgentBalanceError saying why."""
        ctx = self.context
        roles, decision = ctx.role_count, ctx.decision_index
        pools, backbones, keeps, orders, hops, conditionals = [], [], [], [], [], []
        edges = torch.zeros(len(systems), roles, roles, dtype=torch.bool)
        for row, mas in enumerate(systems):
            role_of = {agent.id: _index_of(ctx.role_names, agent.role, "role") for agent in mas.agents}
            if len(set(role_of.values())) != len(role_of) or role_of[mas.decision] != decision:
                raise AgentBalanceError(f"{mas!r}: not one agent per role with the decision role deciding")
            if any(agent.when == "never" for agent in mas.agents):
                raise AgentBalanceError(f"{mas!r}: a vote agent (when=never) is not a decision the controller makes")
            chosen = [_index_of(ctx.backbone_names, agent.backbone, "backbone") for agent in mas.agents]
            backbone_row = [chosen[-1]] * roles
            conditional_row = [False] * roles
            for agent, m in zip(mas.agents, chosen, strict=True):
                backbone_row[role_of[agent.id]] = m
                conditional_row[role_of[agent.id]] = agent.conditional
            layer: dict[str, int] = {}
            for agent_id in mas.topological_order():
                layer[agent_id] = 1 + max((layer[p] for p in mas.predecessors(agent_id)), default=0)
                for source in mas.predecessors(agent_id):
                    edges[row, role_of[source], role_of[agent_id]] = True
            sinks = {a for a in role_of if a != mas.decision and not set(mas.successors(a)) - {mas.decision}}
            if sinks != set(mas.predecessors(mas.decision)):
                raise AgentBalanceError(f"{mas!r}: agents other than the sinks feed the decision agent")
            kept = [role_of[a] for a in mas.topological_order() if a != mas.decision]
            pools.append(int(ctx.pool_of_backbone[backbone_row[decision]]))
            backbones.append(backbone_row)
            keeps.append([r in kept or r == decision for r in range(roles)])
            orders.append(kept + [r for r in range(roles) if r not in kept])
            hops.append(max([layer[a] for a in role_of if a != mas.decision], default=1))
            conditionals.append(conditional_row)
        count = len(systems)
        zeros = torch.zeros(count)
        return Decisions(
            torch.tensor(pools),
            torch.tensor(backbones),
            torch.tensor(keeps),
            TopologyChoice(torch.tensor(orders), torch.tensor(hops), edges, zeros, zeros, zeros),
            torch.tensor(conditionals, dtype=torch.bool).view(count, roles),
        )

    def to_mas(self, decisions: Decisions, index: int, query_id: str | None = None) -> MAS:
        """The MAS of query `index` of a batch."""
        return self.to_masses(decisions.row(index), [query_id])[0]

    def to_masses(self, decisions: Decisions, query_ids: Sequence[str | None] | None = None) -> list[MAS]:
        """One MAS per query of a batch: kept agents in topological order, the decision agent last.

        The tensors are read once as Python lists and agents are shared between MAS (they are
        immutable), so building thousands of MAS costs little next to the forward pass."""
        ctx = self.context
        decision = ctx.decision_index
        pools, keeps = decisions.pool.tolist(), decisions.keep.tolist()
        orders, backbones = decisions.topology.order.tolist(), decisions.backbones.tolist()
        edge_rows, conditional_rows = decisions.topology.edges.tolist(), decisions.conditional.tolist()
        ids = query_ids if query_ids is not None else [None] * len(pools)
        agents: dict[tuple[int, int, bool], Agent] = {}
        systems = []
        for index, pool in enumerate(pools):
            keep, chosen, edge_matrix = keeps[index], backbones[index], edge_rows[index]
            conditional = conditional_rows[index]
            order = [r for r in orders[index] if keep[r] and r != decision]
            order.append(decision)
            members = []
            for r in order:
                key = (r, chosen[r], conditional[r])
                if key not in agents:
                    agents[key] = Agent(
                        id=f"a{r}",
                        role=ctx.role_names[r],
                        backbone=ctx.backbone_names[chosen[r]],
                        when="disagree" if conditional[r] else "always",
                    )
                members.append(agents[key])
            edges = [(f"a{i}", f"a{j}") for i in order for j in order if edge_matrix[i][j]]
            systems.append(
                MAS.trusted(
                    members, edges, f"a{decision}", order=[f"a{r}" for r in order], query_id=ids[index], pool=pool
                )
            )
        return systems


def _index_of(names: Sequence[str], name: str, kind: str) -> int:
    if name not in names:
        raise AgentBalanceError(f"{kind} {name!r} is not one of the controller's: {', '.join(names)}")
    return names.index(name)


def _uniform(log_probs: torch.Tensor) -> torch.Tensor:
    """A uniform distribution over the entries `log_probs` allows (finite, not masked)."""
    allowed = log_probs > -1e8
    return torch.log(allowed.float() / allowed.sum(dim=-1, keepdim=True))


def _random_if(random: bool, mode: str) -> str:
    """A random ablation stays random at deployment: its greedy mode samples."""
    return SAMPLE if random and mode == GREEDY else mode

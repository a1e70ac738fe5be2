"""The compared methods by name (`curve --methods a,b,...`); each module loads only when named."""

from __future__ import annotations

import importlib

from agentbalance.errors import AgentBalanceError
from agentbalance.evaluation.baselines.base import Method
from agentbalance.policy.controller import ABLATIONS
from agentbalance.train.config import TrainConfig

# name -> (module, factory, argument); fixed topologies share one class
METHODS: dict[str, tuple[str, str, str | None]] = {
    "agentbalance": ("agentbalance.evaluation.ours", "AgentBalanceMethod", None),
    "single": ("agentbalance.evaluation.baselines.single", "SingleLLM", None),
    "complete": ("agentbalance.evaluation.baselines.fixed", "FixedTopology", "complete"),
    "chain": ("agentbalance.evaluation.baselines.fixed", "FixedTopology", "chain"),
    "star": ("agentbalance.evaluation.baselines.fixed", "FixedTopology", "star"),
    "layered": ("agentbalance.evaluation.baselines.fixed", "FixedTopology", "layered"),
    "debate": ("agentbalance.evaluation.baselines.fixed", "FixedTopology", "debate"),
    "random": ("agentbalance.evaluation.baselines.random_mas", "RandomMAS", None),
    "agentprune-style": ("agentbalance.evaluation.baselines.agentprune", "AgentPruneStyle", None),
    "agentdropout-style": ("agentbalance.evaluation.baselines.agentdropout", "AgentDropoutStyle", None),
    "gdesigner-style": ("agentbalance.evaluation.baselines.gdesigner", "GDesignerStyle", None),
    "masrouter-style": ("agentbalance.evaluation.baselines.masrouter", "MasRouterStyle", None),
    "corl-style": ("agentbalance.evaluation.baselines.corl", "CoRLStyle", None),
    "rlfocal-style": ("agentbalance.evaluation.baselines.rlfocal", "RLFocalStyle", None),
    "single-val": ("agentbalance.evaluation.baselines.menu", "SingleOnValidation", None),
    "plan-menu": ("agentbalance.evaluation.baselines.menu", "ValidatedPlans", None),
    "self-consistency": ("agentbalance.evaluation.baselines.self_consistency", "SelfConsistency", None),
}
# the ablation study (paper Table 3): agentbalance with one stage replaced; not part of `all`
ABLATION_METHODS = {f"agentbalance-{name}": name for name in ABLATIONS}


def load_method(name: str, train: TrainConfig | None = None) -> Method:
    """A fresh method object by its public name; `train` sets agentbalance's own training knobs (the
    baselines train with their shared `PolicyGradientConfig`)."""
    if name == "agentbalance" or name in ABLATION_METHODS:
        from agentbalance.evaluation.ours import AgentBalanceMethod

        return AgentBalanceMethod(ablation=ABLATION_METHODS.get(name), train=train)
    if name not in METHODS:
        raise AgentBalanceError(f"unknown method {name!r}; known: {', '.join(_known())}")
    module_name, factory, argument = METHODS[name]
    factory_object = getattr(importlib.import_module(module_name), factory)
    return factory_object(argument) if argument is not None else factory_object()


def parse_methods(text: str) -> list[str]:
    """`a,b,c` -> names, checked and de-duplicated in order; the groups `all` (every method) and `ablations`
    (agentbalance and its ablations) stand for their members, alone or in a list (`all,ablations`)."""
    groups = {"all": list(METHODS), "ablations": ["agentbalance", *ABLATION_METHODS]}
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise AgentBalanceError("--methods names no method; use a comma-separated list or 'all'")
    unknown = [n for n in names if n not in METHODS and n not in ABLATION_METHODS and n not in groups]
    if unknown:
        raise AgentBalanceError(f"unknown method(s) {', '.join(unknown)}; known: {', '.join(_known())}")
    return list(dict.fromkeys(member for name in names for member in groups.get(name, [name])))


def _known() -> list[str]:
    return [*METHODS, *ABLATION_METHODS, "all", "ablations"]

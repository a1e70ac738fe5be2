"""The run folder of `agentbalance build`: written once by training, read into a typed `RunConfig` by every user.

Everything a later `run`/`evaluate`/`export` needs is in the folder; nothing depends on the process that built it.
It never trains: it saves and loads.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentbalance.budgets import Budget, BudgetRange
from agentbalance.catalog import Catalog
from agentbalance.encoders import TextEncoder
from agentbalance.errors import AgentBalanceError
from agentbalance.experiment import world_catalogs
from agentbalance.files import atomic_write
from agentbalance.policy.context import ControllerCatalogs, ControllerContext
from agentbalance.policy.controller import Controller, ControllerConfig
from agentbalance.policy.sampling import seeded
from agentbalance.pooling import build_pools
from agentbalance.roles import Role, RoleSet
from agentbalance.worlds import open_world

CHECKPOINT_VERSION = 1


class SavedTask(BaseModel):
    """The task a run's questions came from (`build --task`)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    data: str | None = None
    limit: int | None = None


class RunConfig(BaseModel):
    """config.json of a run folder, validated: what was trained, on what, for which budget."""

    model_config = ConfigDict(extra="allow")

    version: int
    world: str
    catalog: str | None
    roles: str | None
    role_names: list[str]
    role_library: dict[str, Any] | None = None  # the library itself (runs of older versions: only its name)
    catalogs: dict[str, Any] | None = None  # the catalogs trained on (older versions: re-derived from the world)
    pools: list[list[str]]
    pool_count: int = Field(ge=1)
    complements: list[str] = []  # dominated backbones pooled for their cascades (measured on the training split)
    budget: dict[str, float | None]
    controller: dict[str, Any]
    train: dict[str, Any]
    sizes: list[int]
    task: SavedTask | None = None
    lambdas: dict[str, float] = Field(default_factory=dict)
    budget_range: dict[str, Any] | None = None
    seed: int | None = None  # older versions kept it in train.seed
    plans: list[dict[str, Any] | None] = []  # per target budget, the plan serving it instead of the policy (menu guard)
    judge: dict[str, str | None] | None = None  # the LLM judge that graded its live answers (`JudgeSpec`), if any

    @property
    def run_seed(self) -> int:
        """The seed the run was built with: it also drew the world's split, so its test split is this seed's."""
        return int(self.seed if self.seed is not None else self.train.get("seed", 0))

    def catalog_for(self, world: str | None) -> str | None:
        """The catalog a world opened for this run takes when none is named: the run's own world's, and a
        replay world's own `models.yaml`; the simulator and a live endpoint, which have none, the run's."""
        if world is None or not world.startswith("replay:"):
            return self.catalog
        return None

    @property
    def trained_budget(self) -> Budget:
        return Budget(**self.budget)

    @property
    def split_sizes(self) -> tuple[int, int, int]:
        train, val, test = self.sizes
        return train, val, test

    def controller_config(self, source: Path) -> ControllerConfig:
        try:
            return ControllerConfig(**self.controller)
        except TypeError as error:
            raise AgentBalanceError(f"{source}: the saved controller settings are damaged: {error}") from None

    def saved_range(self) -> BudgetRange | None:
        """The budget range of a budget-conditioned run, with its calibrated deltas (None: one budget)."""
        if self.budget_range is None:
            return None
        try:
            return BudgetRange.from_json(self.budget_range)
        except (KeyError, TypeError, ValueError, AssertionError) as error:
            raise AgentBalanceError(f"the run's budget range is damaged: {error}") from None


def save_run(out: Path, controller: Controller, config: dict[str, Any], metrics: dict[str, Any]) -> None:
    """controller.pt, config.json and metrics.json; written to temporary names, then renamed."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        atomic_write(out / "config.json", json.dumps({"version": CHECKPOINT_VERSION, **config}, indent=2))
        atomic_write(out / "metrics.json", json.dumps(metrics, indent=2))
        temporary = out / "controller.pt.tmp"
        torch.save(controller.state_dict(), temporary)
        temporary.replace(out / "controller.pt")
    except OSError as error:
        raise AgentBalanceError(f"cannot write the run folder {out}: {error}") from None


def read_run_config(folder: Path) -> RunConfig:
    """The config.json of a run folder, checked for its version and its fields."""
    config_path = folder / "config.json"
    if not config_path.is_file():
        raise AgentBalanceError(f"{folder} is not a run folder of `agentbalance build` (no config.json)")
    try:
        document = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise AgentBalanceError(f"{config_path}: unreadable run configuration: {error}") from None
    if not isinstance(document, dict) or document.get("version") != CHECKPOINT_VERSION:
        found = document.get("version") if isinstance(document, dict) else None
        raise AgentBalanceError(
            f"{folder}: checkpoint version {found!r} is not supported by this agentbalance "
            f"(expects {CHECKPOINT_VERSION}); rebuild it with `agentbalance build`"
        )
    try:
        return RunConfig.model_validate(document)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors()[:6])
        raise AgentBalanceError(f"{config_path}: the run configuration is damaged ({problems})") from None


def run_roles(folder: Path, config: RunConfig) -> RoleSet:
    """The role library a run was trained with, as saved in its config.json."""
    library = config.role_library
    if library is None:
        return RoleSet.load(config.roles)
    try:
        roles = [Role.model_validate(role) for role in library["roles"]]
    except (KeyError, TypeError, ValidationError) as error:
        raise AgentBalanceError(f"{folder / 'config.json'}: the saved role library is damaged: {error}") from None
    return RoleSet(roles, library.get("domain"), source=str(folder / "config.json"))


def run_catalogs(folder: Path, config: RunConfig) -> ControllerCatalogs:
    """The catalogs a run was trained on: saved in its config.json (runs of older versions re-derive
    them from the world they name, with the run's own seed)."""
    saved = config.catalogs
    source = str(folder / "config.json")
    if saved is not None:
        return ControllerCatalogs(
            Catalog.from_json(saved.get("described"), f"{source} (catalogs.described)"),
            Catalog.from_json(saved.get("pooled"), f"{source} (catalogs.pooled)"),
        )
    named = Catalog.load(config.catalog) if config.catalog else None
    if config.world.startswith("replay:"):  # its pools come from the recording's accuracies
        return world_catalogs(open_world(config.world, named, seed=config.run_seed))
    catalog = named or Catalog.load()
    return ControllerCatalogs(catalog, catalog)


def load_controller(
    folder: Path,
    catalogs: ControllerCatalogs | None = None,
    roles: RoleSet | None = None,
    encoder: TextEncoder | None = None,
) -> tuple[Controller, RunConfig]:
    """A saved controller with the pools and backbone features it was trained on. Over `catalogs` with
    other backbones (inductive use), the pools and features are built afresh from them; catalogs with the
    run's backbones (the same world, say with another seed or today's prices) keep the trained ones."""
    config = read_run_config(folder)
    roles = roles or run_roles(folder, config)
    if list(roles.names) != config.role_names:
        raise AgentBalanceError(
            f"{folder}: the controller was trained on roles {config.role_names}, not {list(roles.names)}"
        )
    trained = run_catalogs(folder, config)
    if catalogs is None or set(catalogs.described.names) == set(trained.described.names):
        catalogs = trained
    complements = config.complements if catalogs is trained else []  # measured on the run's own world only
    try:
        pools = build_pools(catalogs.pooled, k=config.pool_count, seed=config.run_seed, complements=complements)
    except AgentBalanceError as error:
        if catalogs is trained:
            raise
        raise AgentBalanceError(
            f"{folder}: this controller chooses among {config.pool_count} pools, so it needs a catalog that can make "
            f"as many, and {catalogs.pooled.source} cannot ({error}); use a catalog with more backbones on its Pareto "
            f"front, or build a controller with fewer pools (`build --pools N`)"
        ) from None
    if catalogs is trained and pools.pools != config.pools:
        raise AgentBalanceError(
            f"{folder}: its saved catalogs no longer give the pools it was trained with; rebuild it with "
            "`agentbalance build`"
        )
    context = ControllerContext.build(catalogs.described, pools, roles, encoder or TextEncoder())
    with seeded(config.run_seed):  # any initial weights: the saved ones replace them; the global RNG is left alone
        controller = Controller(context, config.controller_config(folder / "config.json"))
    try:
        state = torch.load(folder / "controller.pt", map_location="cpu", weights_only=True)
        controller.load_state_dict(state)
    except Exception as error:  # a damaged file can fail torch.load in any way: each means "damaged"
        detail = (str(error).splitlines() or [type(error).__name__])[0][:160]
        raise AgentBalanceError(
            f"{folder / 'controller.pt'}: cannot load the controller (damaged, built by another version, or "
            f"not a checkpoint of agentbalance build: rebuild it): {detail}"
        ) from None
    controller.eval()
    return controller, config

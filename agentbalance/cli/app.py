"""The typer app, its shared options and the rule that a user's mistake is one `error:` line (exit code 2).

It holds no command: each command lives in its own module of this package.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, ParamSpec, TypeVar

import typer
from rich.console import Console

from agentbalance.errors import AgentBalanceError
from agentbalance.executors import ADDRESS_HELP, EXECUTOR_HELP

if TYPE_CHECKING:
    from agentbalance.budgets import Budget

app = typer.Typer(
    name="agentbalance",
    help="Cost-effective LLM multi-agent systems under token-cost and latency budgets.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    # click's plain help wraps long option names and defaults; rich's tables cut them at 80 columns
    # ("--concurrency-per-bac…"), and a user cannot type an option they cannot read
    rich_markup_mode=None,
)


@app.callback()
def _main_options() -> None:
    """Cost-effective LLM multi-agent systems under token-cost and latency budgets.

    Units everywhere: Tok = USD per 100 queries, Lat = seconds per query.
    """


TaskOption = Annotated[str | None, typer.Option(help="Take the queries from a task (mmlu, math, ...), scored by it.")]
DataOption = Annotated[Path | None, typer.Option(help="The task's local data file or folder.")]
LimitOption = Annotated[int | None, typer.Option(help="The first N items of the task.")]
BaseUrlOption = Annotated[str | None, typer.Option(help="Live world endpoint (else $AGENTBALANCE_BASE_URL).")]
CacheDirOption = Annotated[Path | None, typer.Option(help="Live world response cache folder.")]
NoCacheOption = Annotated[bool, typer.Option("--no-cache", help="Live world: do not read or write the cache.")]
TimeoutOption = Annotated[float, typer.Option(help="Live world: seconds per call before it is retried.")]
ConcurrencyOption = Annotated[int, typer.Option(min=1, help="LLM calls in flight at once.")]
ConcurrencyPerBackboneOption = Annotated[
    int | None, typer.Option(min=1, help="Live world: calls in flight per backbone (default: no own limit).")
]
MaxTokensOption = Annotated[
    int | None,
    typer.Option(
        min=1,
        help="Live world: completion-token limit of backbones whose catalog sets no max_tokens "
        "(default 4096, 16384 for reasoning backbones).",
    ),
]
ApiKeyFileOption = Annotated[
    Path | None,
    typer.Option("--api-key-file", help="Live world: a file holding only the API key (else $AGENTBALANCE_API_KEY)."),
]
JudgeOption = Annotated[
    str | None,
    typer.Option(
        help="Live world: grade every answer with this backbone as an LLM judge (a quality in [0, 1]; its calls "
        "and cost are counted apart), for questions without gold answers.",
    ),
]
JudgeCatalogOption = Annotated[
    Path | None,
    typer.Option(help="The catalog YAML holding the --judge backbone (default: the answering world's catalog)."),
]
JudgeRubricOption = Annotated[
    Path | None,
    typer.Option(help="A rubric YAML for the judge (system, prompt, scale; default: MT-Bench-style 1-10 rating)."),
]
ServeBudgetTokOption = Annotated[
    float | None, typer.Option("--budget-tok", help="A --budget-conditioned model: serve this Tok budget.")
]
ServeBudgetLatOption = Annotated[
    float | None, typer.Option("--budget-lat", help="A --budget-conditioned model: serve this Lat budget.")
]
AgreementThresholdOption = Annotated[
    float,
    typer.Option(
        min=0.0,
        max=1.0,
        help="Free-text replies agree (a conditional agent is skipped) from this cosine of the shipped encoder "
        "(1: only the same text; docs/mas.md).",
    ),
]
ExecutorOption = Annotated[str, typer.Option(help=EXECUTOR_HELP)]
AddressOption = Annotated[str | None, typer.Option(help=ADDRESS_HELP)]

P = ParamSpec("P")
R = TypeVar("R")

LIVE_FLAGS = ("base_url", "cache_dir", "no_cache", "timeout", "concurrency_per_backbone", "max_tokens", "api_key_file")


def live_world_options(
    per_backbone: int | None = None, per_backbone_help: str | None = None, key_flag: str = "--api-key-file"
) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """Give a command the live world's flags (`LIVE_FLAGS`: endpoint, cache, timeout, limits, key file), handed to it
    as one `live: LiveOptions` with the command's own `concurrency`: every command reaches a live world alike.
    `per_backbone` is the default of --concurrency-per-backbone (`per_backbone_help` says why, when it is not None);
    `key_flag` names the key-file flag (`serve` has a key of its own, so its world's is --world-api-key-file)."""
    key_help = "Live world: a file holding only the endpoint's API key (else $AGENTBALANCE_API_KEY)."
    added = {
        "base_url": (BaseUrlOption, None),
        "cache_dir": (CacheDirOption, None),
        "no_cache": (NoCacheOption, False),
        "timeout": (TimeoutOption, 60.0),
        "concurrency_per_backbone": (
            Annotated[int | None, typer.Option(min=1, help=per_backbone_help)]
            if per_backbone_help
            else ConcurrencyPerBackboneOption,
            per_backbone,
        ),
        "max_tokens": (MaxTokensOption, None),
        "api_key_file": (Annotated[Path | None, typer.Option(key_flag, help=key_help)], None),
    }

    def decorate(command: Callable[..., R]) -> Callable[..., R]:
        signature = inspect.signature(command, eval_str=True)
        own = [parameter for name, parameter in signature.parameters.items() if name != "live"]
        flags = [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
            for name, (annotation, default) in added.items()
        ]

        @functools.wraps(command)
        def wrapper(**kwargs: object) -> R:
            from agentbalance.worlds import LiveOptions

            given = {name: kwargs.pop(name) for name in LIVE_FLAGS}
            live = LiveOptions(
                base_url=given["base_url"],  # type: ignore[arg-type]
                cache_dir=given["cache_dir"],  # type: ignore[arg-type]
                use_cache=not given["no_cache"],
                timeout_s=given["timeout"],  # type: ignore[arg-type]
                concurrency=kwargs.get("concurrency", LiveOptions.concurrency),  # type: ignore[arg-type]
                api_key_file=given["api_key_file"],  # type: ignore[arg-type]
                max_tokens=given["max_tokens"],  # type: ignore[arg-type]
                concurrency_per_backbone=given["concurrency_per_backbone"],  # type: ignore[arg-type]
            )
            return command(live=live, **kwargs)

        wrapper.__signature__ = signature.replace(parameters=[*own, *flags])  # type: ignore[attr-defined]
        return wrapper

    return decorate


def reports_user_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Print an AgentBalanceError as one `error:` line on stderr and exit with code 2."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except AgentBalanceError as error:
            Console(stderr=True, highlight=False, soft_wrap=True).print(f"error: {error}", markup=False)
            raise typer.Exit(2) from None

    return wrapper


def write_json(path: Path, payload: object) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    except OSError as error:
        raise AgentBalanceError(f"cannot write {path}: {error}") from None


def parse_seeds(text: str) -> list[int]:
    """`--seeds 0,1,2` -> [0, 1, 2], in order, without repeats; anything else is one clear error."""
    parts = [part.strip() for part in text.split(",") if part.strip()]
    try:
        seeds = [int(part) for part in parts]
    except ValueError:
        raise AgentBalanceError(f"--seeds must be comma-separated integers (0,1,2), got {text!r}") from None
    if not seeds:
        raise AgentBalanceError("--seeds names no seed: give comma-separated integers (0,1,2)")
    return list(dict.fromkeys(seeds))


def serve_budget(tok: float | None, lat: float | None) -> Budget | None:
    """The budget a user asks a budget-conditioned model for (None: the one it was built for)."""
    from agentbalance.budgets import Budget

    return Budget(tok, lat) if tok is not None or lat is not None else None


def run_world(model: Path, world: str | None, catalog: Path | None) -> tuple[str, Path | None]:
    """`--world` and `--catalog` for a `--model`: by default the world it was trained in, and in a world with no
    catalog of its own (the simulator, a live endpoint) the catalog it was built with: its own backbones, never
    silently the shipped ones (`RunConfig.catalog_for`)."""
    from agentbalance.run_folder import read_run_config

    config = read_run_config(model)
    world = world or config.world
    if catalog is None and (named := config.catalog_for(world)) is not None:
        catalog = Path(named)
    return world, catalog

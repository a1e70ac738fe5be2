"""`agentbalance serve`: a run folder's controller as an OpenAI-compatible model, until SIGTERM.

Thin: it opens the world as `run` does, loads the model and starts the server; every rule lives in
`agentbalance.serve`. It never prints or logs a key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from agentbalance.agreement import FREE_TEXT_THRESHOLD
from agentbalance.catalog import Catalog
from agentbalance.cli.app import (
    AgreementThresholdOption,
    ConcurrencyOption,
    ServeBudgetLatOption,
    ServeBudgetTokOption,
    live_world_options,
    reports_user_errors,
    run_world,
    serve_budget,
)
from agentbalance.encoders import default_cache_dir
from agentbalance.errors import AgentBalanceError
from agentbalance.roles import RoleSet
from agentbalance.runtime.execution import Caps
from agentbalance.serve.governor import DEFAULT_WINDOW
from agentbalance.serve.traffic_log import REQUESTS_FILE
from agentbalance.worlds import WORLD_HELP, LiveOptions, open_world

LOG_LEVELS = ("critical", "error", "warning", "info", "debug")
SPEND_FILE = "serve-spend.sqlite"


@reports_user_errors
@live_world_options(key_flag="--world-api-key-file")
def serve(
    model: Annotated[Path, typer.Option(help="A run folder of `agentbalance build`.")],
    host: Annotated[str, typer.Option(help="Address to bind; off loopback, --api-key-file is required.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on.")] = 8000,
    world_spec: Annotated[
        str | None, typer.Option("--world", help=f"{WORLD_HELP} (default: the world it was trained in)")
    ] = None,
    catalog: Annotated[Path | None, typer.Option(help="Backbone catalog YAML (default: the world's).")] = None,
    roles: Annotated[str | None, typer.Option(help="Role library: a path or general|math|code|mixed.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the world.")] = 0,
    api_key_files: Annotated[
        list[Path] | None,
        typer.Option(
            "--api-key-file",
            help="A file holding only a key clients must send (Authorization: Bearer KEY); repeat it to give each "
            "client its own key (and its own --max-usd-per-day). Off by default on loopback, required on any other "
            "--host.",
        ),
    ] = None,
    max_requests: Annotated[int, typer.Option(min=1, help="Requests executing at once.")] = 64,
    max_waiting: Annotated[
        int, typer.Option(min=0, help="Requests waiting for a slot; one more is answered 503 at once.")
    ] = 256,
    grace: Annotated[
        float, typer.Option(min=0, help="After SIGTERM: seconds in-flight requests get to finish before a 503.")
    ] = 30.0,
    concurrency: ConcurrencyOption = 32,
    budget_tok: ServeBudgetTokOption = None,
    budget_lat: ServeBudgetLatOption = None,
    govern: Annotated[
        bool,
        typer.Option(
            "--govern",
            help=f"Keep the mean Tok and Lat of the last {DEFAULT_WINDOW} served requests at or under the budget on "
            "live traffic (the budget governor; see docs/serve.md).",
        ),
    ] = False,
    budget_window: Annotated[
        int | None,
        typer.Option(min=2, help="The governor's window in requests (turns it on; default with --govern: 200)."),
    ] = None,
    max_usd_per_day: Annotated[
        float | None,
        typer.Option(help="Hard limit per server key and UTC day, in USD: past it a 429 with Retry-After."),
    ] = None,
    spend_db: Annotated[
        Path | None,
        typer.Option(help="The sqlite file keeping each key's daily spend across restarts (default: in the cache)."),
    ] = None,
    max_usd: Annotated[float | None, typer.Option(help="Hard per-request USD cap (> 0).")] = None,
    max_seconds: Annotated[float | None, typer.Option(help="Hard per-request seconds cap (> 0).")] = None,
    log_level: Annotated[str, typer.Option(help=" | ".join(LOG_LEVELS))] = "info",
    log_dir: Annotated[
        Path | None,
        typer.Option(
            help="Write every answered request (conversation, MAS, each agent's answer, cost, latency; never a key) to "
            "DIR/requests.jsonl, for `record --task served --data DIR` to grade and `build` to train on later."
        ),
    ] = None,
    agreement_threshold: AgreementThresholdOption = FREE_TEXT_THRESHOLD,
    *,
    live: LiveOptions,
) -> None:
    """Serve a trained controller's MAS as an OpenAI-compatible model: POST /v1/chat/completions (plain or streamed),
    GET /v1/models, GET /health, GET /metrics.

    Ask for model `agentbalance`, or `agentbalance:tok=0.2,lat=10` for a budget (a --budget-conditioned model).
    """
    from agentbalance.serve import ServedModel, ServeOptions, Server, create_app, server_keys

    if log_level not in LOG_LEVELS:
        raise AgentBalanceError(f"unknown --log-level {log_level!r}; use {' | '.join(LOG_LEVELS)}")
    if max_usd_per_day is not None and not max_usd_per_day > 0:
        raise AgentBalanceError(f"--max-usd-per-day must be a positive number of USD, got {max_usd_per_day}")
    keys = server_keys(host, api_key_files or ())  # before anything slow: a missing key is the first error
    options = ServeOptions(
        max_requests=max_requests,
        max_waiting=max_waiting,
        concurrency=concurrency,
        caps=Caps(max_usd, max_seconds),
        budget=serve_budget(budget_tok, budget_lat),
        api_keys=keys,
        grace_s=grace,
        budget_window=budget_window or (DEFAULT_WINDOW if govern else None),
        max_usd_per_day=max_usd_per_day,
        spend_db=(spend_db or default_cache_dir() / SPEND_FILE) if max_usd_per_day is not None else None,
        log_dir=log_dir,
        agreement_threshold=agreement_threshold,
    )
    world_spec, catalog = run_world(model, world_spec, catalog)
    world = open_world(world_spec, Catalog.load(catalog) if catalog is not None else None, seed=seed, live=live)
    served = ServedModel.load(model, world, RoleSet.load(roles) if roles is not None else None)
    if options.budget is not None:
        served.controller.serving(options.budget)  # out of range: an error now, not on every request
    console = Console(stderr=True, highlight=False, soft_wrap=True)
    kind = "simulated (a calibrated simulator, not real LLM calls)" if world.simulated else world.name
    auth = f"bearer token required ({len(keys)} key(s))" if keys else "off (loopback only)"
    governor = f"on, a window of {options.budget_window} requests" if options.budget_window else "off"
    limit = f"; {options.max_usd_per_day:g} USD per key per UTC day ({options.spend_db})" if options.spend_db else ""
    logged = f"; answered requests logged to {log_dir / REQUESTS_FILE}" if log_dir is not None else ""
    console.print(
        f"serving {model} as model {options.name!r} on http://{host}:{port}/v1\nworld: {kind}; auth: {auth}; "
        f"budget governor: {governor}{limit}{logged}",
        markup=False,
    )
    Server(create_app(served, options), host, port, log_level).run()

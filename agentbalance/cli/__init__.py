"""The `agentbalance` command line: thin, it parses flags, calls the API, prints tables and writes files.

It must never hold logic the Python API lacks, and never show a user a traceback for their own mistake.
Nothing outside this package imports it.
"""

from __future__ import annotations

from agentbalance.cli import build, curve, pools, record, run, serve
from agentbalance.cli.app import app

# in the order `agentbalance --help` lists them: the pipeline's order
for command in (
    pools.pools,
    run.run,
    build.build,
    run.evaluate,
    run.export,
    curve.curve,
    record.record,
    serve.serve,
):
    app.command()(command)

__all__ = ["app", "main"]


def main() -> None:
    app()

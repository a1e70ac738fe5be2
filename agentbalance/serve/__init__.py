"""`agentbalance serve`: a trained controller's MAS as one OpenAI-compatible model (FastAPI + uvicorn).

`create_app(ServedModel.load(run_dir, world), ServeOptions(...))` is the ASGI app; `Server` runs it with a
draining shutdown, `ServerThread` in a background thread. Nothing here trains, and no key is ever logged.

Modules: `protocol` (requests and responses), `model` (the controller as served), `chat` (one request's life,
streamed or not), `lifecycle` (slots, drain, body limit, disconnects), `governor` (the budget over a window of
live traffic), `spending` (daily limits per key), `metrics` (Prometheus), `batching`, `server` (uvicorn).
"""

from agentbalance.serve.app import ServeOptions, create_app
from agentbalance.serve.governor import BudgetGovernor
from agentbalance.serve.model import ServedModel
from agentbalance.serve.protocol import SERVED_MODEL, ProtocolError, budget_of_model
from agentbalance.serve.server import Server, ServerThread, is_loopback, server_keys

__all__ = [
    "SERVED_MODEL",
    "BudgetGovernor",
    "ProtocolError",
    "ServeOptions",
    "ServedModel",
    "Server",
    "ServerThread",
    "budget_of_model",
    "create_app",
    "is_loopback",
    "server_keys",
]

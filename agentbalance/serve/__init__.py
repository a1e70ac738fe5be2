"""`agentbalance serve`: a trained controller's MAS as one OpenAI-compatible model (FastAPI + uvicorn).

`create_app(ServedModel.load(run_dir, world), ServeOptions(...))` is the ASGI app; `Server` runs it with a
draining shutdown, `ServerThread` in a background thread. Nothing here trains, and no key is ever logged.
"""

from agentbalance.serve.app import ServedModel, ServeOptions, create_app
from agentbalance.serve.protocol import SERVED_MODEL, ProtocolError, budget_of_model
from agentbalance.serve.server import Server, ServerThread, is_loopback, server_key

__all__ = [
    "SERVED_MODEL",
    "ProtocolError",
    "ServeOptions",
    "ServedModel",
    "Server",
    "ServerThread",
    "budget_of_model",
    "create_app",
    "is_loopback",
    "server_key",
]

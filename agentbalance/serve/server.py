"""Running the app with uvicorn: the bind address and its auth rule, logging, and a shutdown that drains.

On SIGTERM (or SIGINT) uvicorn stops accepting connections and waits for the ones open; the app's drain gives
in-flight requests their grace period and then answers them with a 503, so none is dropped without a word.
It never serves a non-loopback address without a key, and never logs one.
"""

from __future__ import annotations

import copy
import ipaddress
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

import uvicorn
from fastapi import FastAPI

from agentbalance.errors import AgentBalanceError
from agentbalance.serve.app import Drain
from agentbalance.worlds.endpoints import read_api_key_file

SHUTDOWN_MARGIN_S = 5.0  # past the grace period, uvicorn's own limit: time to write the 503s


def is_loopback(host: str) -> bool:
    """Whether `host` is reachable only from this machine (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def server_keys(host: str, api_key_files: Sequence[Path] = ()) -> tuple[str, ...]:
    """The bearer tokens clients may send: one per key file (a server with several clients gives each its own key,
    and each key its own spend limit); at least one is required off loopback."""
    keys = tuple(read_api_key_file(path) for path in api_key_files)
    if len(set(keys)) < len(keys):
        raise AgentBalanceError("two --api-key-file files hold the same key; give each client its own")
    if not keys and not is_loopback(host):
        raise AgentBalanceError(
            f"--host {host} is not a loopback address: anyone who can reach it could spend your budget; give "
            "--api-key-file FILE (a file holding only the key clients must send as a bearer token)"
        )
    return keys


def log_config(level: str = "info") -> dict[str, Any]:
    """uvicorn's logging plus agentbalance's own loggers, split so that a machine can read stdout: on stdout one
    JSON object per chat completion request (`agentbalance.serve.access`), on stderr what people read (start and
    shutdown, uvicorn's request lines, warnings and errors)."""
    config = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    config["handlers"]["access"]["stream"] = "ext://sys.stderr"  # uvicorn's request lines: for people
    config["formatters"]["json_lines"] = {"format": "%(message)s"}
    config["handlers"]["json_lines"] = {
        "formatter": "json_lines",
        "class": "logging.StreamHandler",
        "stream": "ext://sys.stdout",
    }
    config["loggers"]["agentbalance"] = {"handlers": ["default"], "level": level.upper(), "propagate": False}
    access = {"handlers": ["json_lines"], "level": level.upper(), "propagate": False}  # at info: one line a request
    config["loggers"]["agentbalance.serve.access"] = access
    return config


class Server(uvicorn.Server):
    """uvicorn's server whose exit (a signal, or `stop`) first starts the app's drain."""

    def __init__(self, app: FastAPI, host: str, port: int, log_level: str = "info") -> None:
        self.drain: Drain = app.state.drain
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            log_config=log_config(log_level),
            log_level=log_level,
            lifespan="on",
            timeout_graceful_shutdown=int(self.drain.grace_s + SHUTDOWN_MARGIN_S + 0.999),
        )
        super().__init__(config)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self.drain.begin()
        super().handle_exit(sig, frame)

    def stop(self) -> None:
        """What SIGTERM does, from any thread."""
        self.drain.begin()
        self.should_exit = True

    @property
    def port(self) -> int:
        """The bound port (the real one when asked for port 0)."""
        for server in self.servers:
            for sock in server.sockets:
                return int(sock.getsockname()[1])
        return self.config.port


class ServerThread:
    """The server in a background thread (tests, benchmarks, embedding in a program): `with ServerThread(app) as
    url:` gives the base URL (`http://127.0.0.1:PORT/v1`); leaving the block drains and stops it."""

    def __init__(self, app: FastAPI, host: str = "127.0.0.1", port: int = 0, log_level: str = "warning") -> None:
        self.server = Server(app, host, port, log_level)
        self._thread = threading.Thread(target=self.server.run, name="agentbalance-serve", daemon=True)

    def __enter__(self) -> str:
        self._thread.start()
        deadline = time.monotonic() + 60
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise AgentBalanceError("serve: the server did not start (is the port free?)")
            time.sleep(0.01)
        return f"http://{self.server.config.host}:{self.server.port}/v1"

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.server.stop()
        self._thread.join(timeout=self.server.drain.grace_s + SHUTDOWN_MARGIN_S + 10)

"""Helpers of the serve tests: a served model on 127.0.0.1 in a thread, real clients for it, and a live world on the
loopback fake. Nothing here is a mock of a client: each helper drives the real library over HTTP."""

from __future__ import annotations

import contextlib
import http.client
import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import openai
import pytest

from agentbalance.catalog import Catalog
from agentbalance.encoders import TextEncoder
from agentbalance.serve import ServedModel, ServeOptions, ServerThread, create_app
from agentbalance.trained import TrainedController
from agentbalance.worlds.live import LiveWorld
from tests.loopback_server import LoopbackServer, unused_port

QUESTION = "What is 17 * 23?"
UPSTREAM_KEY = "sk-upstream-secret-0123456789"
SERVER_KEY = "ab-server-secret-9876543210"
USER = {"role": "user", "content": QUESTION}
SYSTEM = "You are a careful assistant. Answer in one line."
CONVERSATION = [  # a system message and three turns, as chat clients send them
    {"role": "system", "content": SYSTEM},
    {"role": "user", "content": "What is 3 * 4?"},
    {"role": "assistant", "content": "12"},
    {"role": "user", "content": QUESTION},
]


def served(run: Path, world: Any, encoder: TextEncoder) -> ServedModel:
    return ServedModel(TrainedController.load(run, world=world, encoder=encoder), world)


@contextlib.contextmanager
def serving(model: ServedModel, **options: Any) -> Iterator[str]:
    """The app on 127.0.0.1 (a free port) in a thread; yields its base URL."""
    with ServerThread(create_app(model, ServeOptions(**options))) as url:
        yield url


def client(url: str, key: str = "unused", **kwargs: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=url, api_key=key, max_retries=0, timeout=30, **kwargs)


def ask(url: str, question: str = QUESTION, model: str = "agentbalance", **kwargs: Any) -> Any:
    return client(url).chat.completions.create(model=model, messages=[{"role": "user", "content": question}], **kwargs)


def post(url: str, body: bytes | dict[str, Any], headers: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    """A raw POST to /v1/chat/completions (status, JSON body): for what a well-behaved client never sends."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    try:
        connection.request(
            "POST", "/v1/chat/completions", data, {"Content-Type": "application/json", **(headers or {})}
        )
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def live_world(server: LoopbackServer | None, **kwargs: Any) -> LiveWorld:
    """A live world over the shipped catalog on the loopback fake (or a closed port), with test-sized retries."""
    base_url = server.base_url if server is not None else f"http://127.0.0.1:{unused_port()}/v1"
    options = {"timeout_s": 5.0, "max_retries": 0, "use_cache": False, "backoff_base_s": 0.01, **kwargs}
    return LiveWorld(Catalog.load(), base_url=base_url, api_key=UPSTREAM_KEY, **options)


def in_background(work: Callable[[], Any]) -> Callable[[], Any]:
    """Start `work` in a thread; the returned function waits for it and returns its result (or raises its error)."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = work()
        except BaseException as error:
            box["error"] = error

    thread = threading.Thread(target=target, daemon=True)
    thread.start()

    def result() -> Any:
        thread.join(timeout=60)
        assert not thread.is_alive(), "the request never finished"
        if "error" in box:
            raise box["error"]
        return box["result"]

    return result


def wait_for(condition: Callable[[], bool], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.01)


def autogen_client(url: str) -> Any:
    """AutoGen's OpenAI client for the served model (a name OpenAI does not know needs its model_info)."""
    pytest.importorskip("autogen_ext", reason='AutoGen is an optional extra: pip install "agentbalance[autogen]"')
    from autogen_core.models import ModelFamily, ModelInfo
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    info = ModelInfo(
        vision=False, function_calling=False, json_output=False, family=ModelFamily.UNKNOWN, structured_output=False
    )
    return OpenAIChatCompletionClient(model="agentbalance", base_url=url, api_key="unused", model_info=info)

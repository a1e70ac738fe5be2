"""The endpoint client of a live world: one request to a backbone's OpenAI-compatible endpoint, plain or streamed,
read into a response or a failure in our own words; the endpoints, keys and HTTP clients of a catalog's backbones.

It must never retry, wait or count calls (the call policy and the world do), and never put an SDK error's text, which
may quote a key, or a key itself in a message. Its rules are listed in `worlds.live`'s docstring.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import inspect
import json
import re
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import openai

from agentbalance.catalog import LIMIT_PARAMETERS, Backbone, Catalog
from agentbalance.errors import AgentBalanceError
from agentbalance.worlds.base import CHARS_PER_TOKEN, AgentCall, estimate_prompt_tokens
from agentbalance.worlds.cache import CachedResponse
from agentbalance.worlds.call_policy import AttemptFailure
from agentbalance.worlds.chat_responses import connection_refused, message_text, read_usage, retry_after_s
from agentbalance.worlds.endpoints import Endpoint, read_api_key_file, resolve_endpoint

RETRYABLE_STATUS = frozenset({408, 409, 429})  # plus every 5xx
# Arguments of chat.completions.create that a backbone's `request` may not set: the world owns them.
RESERVED_REQUEST_KEYS = frozenset(
    {"messages", "model", "stream", "stream_options", "extra_headers", "extra_query", "extra_body", "timeout", "n"}
)
_LIMIT_REJECTED = re.compile(
    r"\b(max_tokens|max_completion_tokens)\b.{0,120}\b(unsupported|not supported|instead)", re.I
)
_MODEL_NOT_FOUND = re.compile(r"model.{0,80}\b(not exist|does not exist|not found|unknown|invalid model)", re.I)
_KEY_LIKE = re.compile(r"\b(sk|key|token)-[A-Za-z0-9_\-*.]{4,}", re.I)


@dataclass
class _Streamed:
    """What a streamed attempt received so far: the answer's pieces (already passed on) and the usage."""

    parts: list[str] = field(default_factory=list)
    usage: tuple[int, int, int] | None = None


@dataclass
class _LoopClients:
    """One event loop's HTTP clients (an async client is bound to the loop that first used it)."""

    clients: dict[tuple[str, str], openai.AsyncOpenAI] = field(default_factory=dict)
    closer: asyncio.Task[None] | None = None

    async def close_clients(self) -> None:
        clients, self.clients = list(self.clients.values()), {}
        for client in clients:
            with contextlib.suppress(Exception):  # closing must never hide the run's own outcome
                await client.close()

    async def close_at_loop_end(self) -> None:
        """Wait until the loop's end cancels this task (asyncio.run does), then close the HTTP clients
        gracefully, so no connection outlives its loop."""
        try:
            await asyncio.Event().wait()
        finally:
            await self.close_clients()


class EndpointClient:
    """Sends one request for an agent call to its backbone's endpoint and reads what comes back."""

    def __init__(
        self,
        catalog: Catalog,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        api_key_file: Path | None = None,
        timeout_s: float = 60.0,
    ) -> None:
        if api_key is not None and api_key_file is not None:
            raise AgentBalanceError("live world: give an API key or an API key file, not both")
        self.timeout_s = float(timeout_s)  # the SDK clients' default; every request passes its own
        self._base_url = base_url
        self._api_key = api_key
        self._api_key_source = "the api_key argument"
        if api_key_file is not None:
            self._api_key, self._api_key_source = read_api_key_file(Path(api_key_file)), f"the key file {api_key_file}"
        self._answering_urls: set[str] = set()  # endpoints that answered this client at least once
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopClients] = weakref.WeakKeyDictionary()
        self._endpoints = {backbone.name: self._resolve(backbone) for backbone in catalog}

    def __repr__(self) -> str:
        return f"EndpointClient(backbones={len(self._endpoints)})"

    def _resolve(self, backbone: Backbone) -> Endpoint:
        return resolve_endpoint(backbone, self._base_url, self._api_key, self._api_key_source)

    def endpoint(self, backbone: Backbone) -> Endpoint:
        """Where this backbone's calls go (resolved when the client was built, or now for a new backbone)."""
        endpoint = self._endpoints.get(backbone.name)
        if endpoint is None:
            endpoint = self._endpoints[backbone.name] = self._resolve(backbone)
        return endpoint

    def has_answered(self, endpoint: Endpoint) -> bool:
        """Whether this endpoint answered a request of this client at least once (it exists, even if it refuses
        now)."""
        return endpoint.base_url in self._answering_urls

    async def request(
        self, call: AgentCall, messages: list[dict[str, str]], params: Mapping[str, Any], timeout_s: float
    ) -> CachedResponse | AttemptFailure:
        """One HTTP request for `call` with these messages and parameters, cut off after `timeout_s`; never raises
        an SDK error, and its latency is the request's alone (from sending to reading the whole response).

        Failures are turned into our own messages inside the `except` blocks and returned outside them, so no SDK
        exception (whose text or request may carry a key) is chained to anything the caller raises.
        """
        endpoint = self.endpoint(call.backbone)
        client = self._client(endpoint)
        sdk_arguments = _sdk_arguments()
        kwargs = {k: v for k, v in params.items() if k in sdk_arguments}
        extra_body = {k: v for k, v in params.items() if k not in sdk_arguments}
        failure: AttemptFailure | None = None
        content = b""
        streamed = _Streamed() if call.stream is not None else None
        started = time.perf_counter()
        try:
            async with asyncio.timeout(timeout_s):
                if streamed is not None:
                    await self._stream(client, call, messages, timeout_s, extra_body, kwargs, streamed)
                else:
                    raw = await client.chat.completions.with_raw_response.create(
                        model=call.backbone.model_id,
                        messages=messages,  # type: ignore[arg-type]  # plain role/content dicts
                        timeout=timeout_s,
                        extra_body=extra_body or None,
                        **kwargs,
                    )
                    content = raw.http_response.content
        except openai.APIStatusError as error:
            failure = self._status_failure(call, endpoint, error.status_code, error.response.headers, error.body)
        except (openai.APITimeoutError, TimeoutError):
            failure = AttemptFailure("retry", f"timed out after {timeout_s:.3g} s")
        except openai.APIConnectionError as error:
            refused = connection_refused(error)
            failure = AttemptFailure(
                "retry", "connection refused" if refused else "connection lost", unreachable=refused
            )
        except openai.OpenAIError as error:
            failure = AttemptFailure("fail", f"client error ({type(error).__name__})")
        latency_s = time.perf_counter() - started
        if failure is not None and streamed is not None and streamed.parts:  # the caller has part of an answer
            reason = f"{failure.reason} after {len(streamed.parts)} streamed pieces (not asked again)"
            return dataclasses.replace(failure, kind="fail", reason=reason)
        if failure is not None:
            return failure
        self._answering_urls.add(endpoint.base_url)
        if streamed is not None:
            return _streamed_response(call, streamed, latency_s)
        return _read_response(call, content, latency_s)

    async def _stream(
        self,
        client: openai.AsyncOpenAI,
        call: AgentCall,
        messages: list[dict[str, str]],
        timeout_s: float,
        extra_body: dict[str, Any],
        kwargs: dict[str, Any],
        streamed: _Streamed,
    ) -> None:
        """One streamed request: each piece of the answer's text goes to the call's sink as it arrives, and into
        `streamed` with the usage of the last chunk (asked for with `include_usage`)."""
        assert call.stream is not None
        stream = await client.chat.completions.create(
            model=call.backbone.model_id,
            messages=messages,  # type: ignore[arg-type]  # plain role/content dicts
            timeout=timeout_s,
            extra_body=extra_body or None,
            stream=True,
            stream_options={"include_usage": True},
            **kwargs,
        )
        async with stream:
            async for chunk in stream:
                if chunk.usage is not None:
                    streamed.usage = read_usage(chunk.usage.model_dump())
                for choice in chunk.choices[:1]:
                    piece = choice.delta.content if choice.delta is not None else None
                    if piece:
                        streamed.parts.append(piece)
                        call.stream(piece)

    def _status_failure(
        self, call: AgentCall, endpoint: Endpoint, status: int, headers: Mapping[str, str], body: object
    ) -> AttemptFailure:
        backbone = call.backbone
        where = f"the endpoint {endpoint.display_url}"
        detail = self.server_message(body)
        if status in (401, 403):
            return AttemptFailure(
                "user",
                f"live world: {where} rejected the API key (HTTP {status}) for backbone {backbone.name!r} "
                f"(key from {endpoint.key_source})",
            )
        if status == 404 or (status == 400 and _MODEL_NOT_FOUND.search(detail)):
            return AttemptFailure(
                "user",
                f"live world: {where} does not know model {backbone.model_id!r} (HTTP {status}) of backbone "
                f"{backbone.name!r}; check the catalog's `model` and the base URL",
            )
        if status == 400 and _LIMIT_REJECTED.search(detail):
            other = next(key for key in LIMIT_PARAMETERS if key != backbone.max_tokens_parameter)
            return AttemptFailure(
                "user",
                f"live world: {where} rejects the completion-token limit as {backbone.max_tokens_parameter!r} "
                f"for backbone {backbone.name!r} ({detail}); set `max_tokens_parameter: {other}` in the catalog",
            )
        if status == 402:
            return AttemptFailure("user", f"live world: {where} refused the call: payment required (HTTP 402)")
        if status in RETRYABLE_STATUS or status >= 500:
            return AttemptFailure("retry", f"HTTP {status}", retry_after_s=retry_after_s(headers))
        return AttemptFailure("fail", f"HTTP {status}" + (f": {detail}" if detail else ""))

    def server_message(self, body: object) -> str:
        """The endpoint's error message, one line, at most 200 characters, with this client's keys and anything
        key-like masked."""
        message: object = None
        if isinstance(body, Mapping):
            inner = body.get("error", body)
            message = inner.get("message") if isinstance(inner, Mapping) else inner
        text = " ".join(str(message).split())[:200] if message else ""
        for endpoint in self._endpoints.values():
            text = text.replace(endpoint.api_key, "***")
        return _KEY_LIKE.sub("***", text)

    def _client(self, endpoint: Endpoint) -> openai.AsyncOpenAI:
        """The running loop's HTTP client for this endpoint and key, made on first use."""
        loop = asyncio.get_running_loop()
        state = self._loops.get(loop)
        if state is None:
            state = self._loops[loop] = _LoopClients()
            state.closer = loop.create_task(state.close_at_loop_end(), name="agentbalance-live-close-clients")
        client_key = (endpoint.base_url, endpoint.key_source)
        client = state.clients.get(client_key)
        if client is None:
            client = state.clients[client_key] = openai.AsyncOpenAI(
                api_key=endpoint.api_key,
                base_url=endpoint.base_url,
                max_retries=0,  # the call policy's are the only retries, so each one is counted and backed off
                timeout=self.timeout_s,
            )
        return client

    async def aclose(self) -> None:
        """Close this event loop's HTTP clients now (they also close when the loop ends under asyncio.run)."""
        state = self._loops.pop(asyncio.get_running_loop(), None)
        if state is not None:
            if state.closer is not None:
                state.closer.cancel()
            await state.close_clients()


def _streamed_response(call: AgentCall, streamed: _Streamed, latency_s: float) -> CachedResponse:
    """The answer and usage of a streamed call (estimated when the endpoint sent no usage)."""
    text = "".join(streamed.parts)
    if streamed.usage is None:
        return _estimated(call, text, latency_s)
    prompt_tokens, completion_tokens, reasoning_tokens = streamed.usage
    return CachedResponse(text, prompt_tokens, completion_tokens, reasoning_tokens, latency_s)


def _read_response(call: AgentCall, content: bytes, latency_s: float) -> CachedResponse | AttemptFailure:
    """The answer and usage from a 200 response body; malformed bodies and empty choices are failures."""
    try:
        data = json.loads(content)
    except (ValueError, RecursionError):  # RecursionError: absurdly deep nesting, still not a completion
        return AttemptFailure("fail", "the endpoint answered with malformed JSON")
    if not isinstance(data, dict):
        return AttemptFailure("fail", "the endpoint answered with JSON that is not a chat completion")
    usage = read_usage(data.get("usage"))
    billed = {"prompt_tokens": usage[0], "completion_tokens": usage[1]} if usage else {}
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return AttemptFailure("fail", "the endpoint answered with no choices", **billed)
    message = choices[0].get("message")
    text = message_text(message.get("content") if isinstance(message, Mapping) else None)
    if usage is None:
        return _estimated(call, text, latency_s)
    return CachedResponse(text, usage[0], usage[1], usage[2], latency_s)


def _estimated(call: AgentCall, text: str, latency_s: float) -> CachedResponse:
    """A response without usage: its tokens estimated, and marked so (the world counts and reports it)."""
    return CachedResponse(
        text=text,
        prompt_tokens=estimate_prompt_tokens(call),
        completion_tokens=-(-len(text) // CHARS_PER_TOKEN),
        reasoning_tokens=0,
        latency_s=latency_s,
        usage_estimated=True,
    )


@functools.cache
def _sdk_arguments() -> frozenset[str]:
    """The request keys `chat.completions.create` takes as arguments; any other goes in `extra_body`."""
    from openai.resources.chat.completions import AsyncCompletions

    parameters = inspect.signature(AsyncCompletions.create).parameters
    return frozenset(parameters) - RESERVED_REQUEST_KEYS - {"self"}

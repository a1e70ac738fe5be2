"""The live world: any OpenAI-compatible chat-completions endpoint, with retries, a concurrency limit and a cache.

It must never log, store or repeat an API key, and never pay twice for a call its cache holds.

How a call is answered:

* Endpoint and key: the backbone's `base_url` / `api_key_env` (catalog), else the world's `base_url` /
  `api_key` (or `api_key_file`: a file the user names, holding only the key) arguments, else
  `$AGENTBALANCE_BASE_URL` / `$AGENTBALANCE_API_KEY`. Keys come from nowhere else (never a catalog value,
  never a flag's text). Checked when the world is built: a backbone without an endpoint or a key is a user
  error then, not in the middle of a sweep.
* Request: `model` = the backbone's model id, temperature 0 (overridable), a completion-token limit
  (`completion_limit`: the backbone's `max_tokens`, else the world's, else 4096, 16384 for reasoning
  backbones; at most half the backbone's `context_tokens` when only a default applies), sent as the
  backbone's `max_tokens_parameter` so no call is unbounded, `seed` = the call's sample k when k > 0
  (the k-th agent of a MAS on this backbone: a distinct call), then the
  backbone's `request` mapping: keys the SDK knows (reasoning_effort, temperature, top_p, ...) as
  arguments, the others (enable_thinking, ...) in the JSON body via `extra_body`; a `null` value drops
  a default (e.g. `temperature: null` for models that reject it). Non-streaming, except for a call with a
  `stream` sink (serve's streamed answer: the decision agent): then `stream: true` with `include_usage`, each
  piece of text passed on as it arrives and the usage read from the last chunk; an attempt that fails after a
  piece was passed on is not retried (the client has part of an answer); a cached answer goes to the sink whole.
* Context: a backbone with `context_tokens` gets its upstream messages cut to fit the window with the limit
  (`context_window.fit_prompt`; the cut is noted in the completion); a prompt whose own text cannot fit
  fails at once, recorded, with no request sent.
* Cache: keyed by SHA-256 of (base_url, model, messages, parameters, the sample when > 0), never a key or
  a header: K samples are K calls, and a rerun K hits. An entry cached before calls carried a default limit
  still answers when its completion stayed below the limit. A hit
  makes no HTTP call and returns the original call's usage, its cost at the catalog's prices (the same
  number under the same catalog) and its measured latency, with `cached=True`.
* Retries (ours only; the SDK's are off so every attempt is counted): HTTP 408/409/429/5xx, timeouts
  and dropped connections, up to `max_retries` more attempts. Wait: the server's Retry-After (seconds
  or a date; `retry-after-ms` too) when given, capped at 120 s, plus up to `backoff_base_s` of jitter;
  else full jitter, uniform(0, min(backoff_max_s, backoff_base_s * 2^retry)). Then AgentCallFailed (the
  runner records it) carrying the elapsed seconds, waits included.
  Not retried, recorded: other 4xx (400 context too long, ...), malformed JSON, empty `choices`
  (nothing is paid twice for an answer that might have been billed).
* Deadline: a call ends within `deadline_s` of its first request (default: every attempt's timeout plus
  the longest backoffs). Each attempt's timeout is cut to what is left; a wait that would end past the
  deadline (a long Retry-After) is not waited: the call fails at once, recorded, with the reason.
* User errors (AgentBalanceError, the run stops, one line without a key): no endpoint or key
  configured; HTTP 401/403 (key rejected); HTTP 404 or a "model not found" 400 (unknown model);
  HTTP 402 (payment required); connection refused on every attempt by an endpoint that never answered
  (unreachable: a wrong URL, a server not started). An endpoint that answered before and then refuses (a
  server stopped mid-run) fails the call, recorded like any failure: the run goes on, nothing is lost,
  and a rerun pays only for what failed.
* Usage: `usage.prompt_tokens`, `completion_tokens` (reasoning included, as the APIs count it) and
  `completion_tokens_details.reasoning_tokens`. An endpoint that reports no usage gets estimated
  tokens (prompt: `estimate_prompt_tokens`; completion: characters / 4) and the completion says so:
  `LiveCompletion.usage_estimated` is True, `stats.usage_estimated` counts it, and a warning is logged
  (once per model and world, not once per call).
* Latency: the measured wall seconds of the successful HTTP attempt, from sending the request to reading
  the whole response (not the retries' waits, which are the endpoint's rate limits, not the backbone's
  speed, nor the wait for our own concurrency limits). It includes the server's own queue: with more calls
  in flight than a server serves at once, it is queueing plus service; `concurrency_per_backbone=1`
  (what `record` uses) makes it service time. Cost: `backbone.call_cost_usd(usage)`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import json
import logging
import math
import os
import random
import re
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import openai

from agentbalance.catalog import LIMIT_PARAMETERS, Backbone, Catalog
from agentbalance.encoders import default_cache_dir
from agentbalance.errors import AgentBalanceError
from agentbalance.query import Query
from agentbalance.worlds.base import CHARS_PER_TOKEN, AgentCall, AgentCallFailed, Completion, estimate_prompt_tokens
from agentbalance.worlds.cache import CachedResponse, ResponseCache, cache_key
from agentbalance.worlds.chat_responses import connection_refused, message_text, read_usage, retry_after_s
from agentbalance.worlds.context_window import FittedPrompt, fit_prompt
from agentbalance.worlds.endpoints import Endpoint, display_url, read_api_key_file

log = logging.getLogger(__name__)

ENV_BASE_URL = "AGENTBALANCE_BASE_URL"
ENV_API_KEY = "AGENTBALANCE_API_KEY"
CACHE_FILE = "responses.sqlite"
MAX_RETRY_AFTER_S = 120.0  # a longer Retry-After is waited this long, then the call is tried again
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

Parse = Callable[[str, Query], "str | None"]


def default_parse(text: str, query: Query) -> str | None:
    """The answer of a completion without a task: an option letter for multiple choice, else a stated final
    math answer (boxed, "The answer is X"), else the whole reply (free text, compared by meaning:
    agentbalance.agreement)."""
    from agentbalance.tasks.formats import read_whole_text
    from agentbalance.tasks.scoring import extract_choice, extract_math_answer

    if query.choices:
        return extract_choice(text, query.letters)
    return extract_math_answer(text) or read_whole_text(text, query)


@dataclass(frozen=True)
class LiveCompletion(Completion):
    """A Completion from a live endpoint; `usage_estimated` says its tokens are characters / 4, not the API's."""

    usage_estimated: bool = False


@dataclass
class LiveStats:
    """What one LiveWorld did (per instance, never global): for tests, reports and the user's bill."""

    calls: int = 0  # complete() calls
    cache_hits: int = 0  # answered from the cache, no HTTP request
    requests: int = 0  # HTTP attempts sent (first tries and retries)
    retries: int = 0  # attempts after a retryable failure
    failures: int = 0  # calls that ended in AgentCallFailed
    usage_estimated: int = 0  # successful responses without usage


@dataclass(frozen=True)
class _Failure:
    """One failed attempt, described in our own words (never the SDK's, which may quote a key)."""

    kind: Literal["retry", "fail", "user"]
    reason: str
    retry_after_s: float | None = None
    unreachable: bool = False  # nothing listens there (connection refused), as opposed to a dropped link
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass
class _Streamed:
    """What a streamed attempt received so far: the answer's pieces (already passed on) and the usage."""

    parts: list[str] = field(default_factory=list)
    usage: tuple[int, int, int] | None = None


@dataclass
class _LoopState:
    """Per event loop: async clients and semaphores are bound to the loop that first used them."""

    limit: asyncio.Semaphore
    backbone_limits: dict[str, asyncio.Semaphore] = field(default_factory=dict)
    clients: dict[tuple[str, str], openai.AsyncOpenAI] = field(default_factory=dict)
    key_locks: dict[str, asyncio.Lock] = field(default_factory=dict)
    key_users: dict[str, int] = field(default_factory=dict)
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


@dataclass
class _Deadline:
    """One call's deadline: it starts with the first request and covers every attempt and wait after it."""

    seconds: float
    started: float | None = None

    def start(self) -> None:
        if self.started is None:
            self.started = time.perf_counter()

    def remaining_s(self) -> float:
        if self.started is None:
            return self.seconds
        return self.seconds - (time.perf_counter() - self.started)


class LiveWorld:
    """Answers agent calls with real completions from OpenAI-compatible endpoints."""

    name = "live"
    simulated = False

    def __init__(
        self,
        catalog: Catalog,
        base_url: str | None = None,
        api_key: str | None = None,
        concurrency: int = 16,
        timeout_s: float = 60.0,
        max_retries: int = 4,
        cache_dir: Path | None = None,
        use_cache: bool = True,
        parse: Parse | None = None,
        seed: int = 0,
        *,
        max_tokens: int | None = None,
        temperature: float | None = 0.0,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 30.0,
        deadline_s: float | None = None,
        api_key_file: Path | None = None,
        concurrency_per_backbone: int | None = None,
    ) -> None:
        if concurrency < 1:
            raise AgentBalanceError(f"live world: concurrency must be at least 1, got {concurrency}")
        if concurrency_per_backbone is not None and concurrency_per_backbone < 1:
            raise AgentBalanceError(
                f"live world: concurrency_per_backbone must be at least 1, got {concurrency_per_backbone}"
            )
        if not (math.isfinite(timeout_s) and timeout_s > 0):
            raise AgentBalanceError(f"live world: timeout_s must be positive, got {timeout_s}")
        if max_retries < 0:
            raise AgentBalanceError(f"live world: max_retries must be 0 or more, got {max_retries}")
        if max_tokens is not None and max_tokens < 1:
            raise AgentBalanceError(f"live world: max_tokens must be at least 1, got {max_tokens}")
        if temperature is not None and not (math.isfinite(temperature) and temperature >= 0):
            raise AgentBalanceError(f"live world: temperature must be a finite number >= 0, got {temperature}")
        for name, value in (("backoff_base_s", backoff_base_s), ("backoff_max_s", backoff_max_s)):
            if not (math.isfinite(value) and value >= 0):
                raise AgentBalanceError(f"live world: {name} must be a finite number >= 0, got {value}")
        if deadline_s is None:  # room for every attempt to time out and every backoff to be its longest
            deadline_s = timeout_s * (max_retries + 1) + backoff_max_s * max_retries
        if not (math.isfinite(deadline_s) and deadline_s > 0):
            raise AgentBalanceError(f"live world: deadline_s must be a positive number, got {deadline_s}")
        if api_key is not None and api_key_file is not None:
            raise AgentBalanceError("live world: give an API key or an API key file, not both")
        self.catalog = catalog
        self.concurrency = concurrency
        self.concurrency_per_backbone = concurrency_per_backbone
        self.timeout_s = float(timeout_s)
        self.max_retries = max_retries
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.deadline_s = float(deadline_s)
        self.parse: Parse = parse or default_parse
        self.seed = seed
        self.stats = LiveStats()
        self._base_url = base_url
        self._api_key = api_key
        self._api_key_source = "the api_key argument"
        if api_key_file is not None:
            self._api_key, self._api_key_source = read_api_key_file(Path(api_key_file)), f"the key file {api_key_file}"
        self._estimated_models: set[str] = set()  # models already warned about for missing usage
        self._answering_urls: set[str] = set()  # endpoints that answered this world at least once
        self._rng = random.Random(seed)  # backoff jitter only; answers never depend on it
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState] = weakref.WeakKeyDictionary()
        self._sdk_arguments = _sdk_arguments()
        self._endpoints = {backbone.name: self._resolve_endpoint(backbone) for backbone in catalog}
        for backbone in catalog:
            self._request_parameters(backbone)  # reserved keys are an error now, not at the first call
        self.cache: ResponseCache | None = None
        if use_cache:
            self.cache = ResponseCache((cache_dir if cache_dir is not None else default_cache_dir()) / CACHE_FILE)

    def __repr__(self) -> str:
        cache = self.cache.path if self.cache is not None else None
        return f"LiveWorld(backbones={len(self.catalog)}, concurrency={self.concurrency}, cache={cache})"

    # ---- configuration

    def _resolve_endpoint(self, backbone: Backbone) -> Endpoint:
        base_url = backbone.base_url or self._base_url or os.environ.get(ENV_BASE_URL)
        if not base_url:
            raise AgentBalanceError(
                f"live world: no endpoint for backbone {backbone.name!r}: set ${ENV_BASE_URL} "
                "(e.g. https://api.openai.com/v1 or http://localhost:8000/v1), pass a base URL, "
                "or give the backbone a `base_url` in the catalog"
            )
        if not base_url.startswith(("http://", "https://")):
            raise AgentBalanceError(f"live world: the base URL {display_url(base_url)!r} is not an http(s) URL")
        if backbone.api_key_env:
            key, source = os.environ.get(backbone.api_key_env), f"${backbone.api_key_env}"
            if not key:
                raise AgentBalanceError(
                    f"live world: backbone {backbone.name!r} takes its API key from {source}, which is not set"
                )
        elif self._api_key:
            key, source = self._api_key, self._api_key_source
        else:
            key, source = os.environ.get(ENV_API_KEY), f"${ENV_API_KEY}"
            if not key:
                raise AgentBalanceError(
                    f"live world: no API key for backbone {backbone.name!r}: set ${ENV_API_KEY} (any non-empty value "
                    "for an endpoint without authentication, e.g. a local vLLM or Ollama) or name a variable "
                    "in the backbone's `api_key_env`"
                )
        return Endpoint(base_url.rstrip("/"), key, source)

    def endpoint(self, backbone: Backbone) -> Endpoint:
        """Where this backbone's calls go (resolved when the world was built, or now for a new backbone)."""
        endpoint = self._endpoints.get(backbone.name)
        if endpoint is None:
            endpoint = self._endpoints[backbone.name] = self._resolve_endpoint(backbone)
        return endpoint

    def _request_parameters(self, backbone: Backbone, sample: int = 0) -> dict[str, Any]:
        """Every parameter of this backbone's requests besides model and messages (the cache key uses them);
        sample k > 0 is sent as the seed, unless the backbone's `request` sets or drops (null) the seed."""
        reserved = sorted(RESERVED_REQUEST_KEYS & set(backbone.request))
        if reserved:
            raise AgentBalanceError(
                f"{self.catalog.source}: backbone {backbone.name!r}: `request` may not set {', '.join(reserved)} "
                "(the live world sets them)"
            )
        params = backbone.call_parameters(self.temperature, self.max_tokens)
        if sample and "seed" not in backbone.request:
            params["seed"] = sample
        return params

    def completion_limit(self, backbone: Backbone) -> int | None:
        """The completion tokens a call to this backbone may use (None only when its `request` drops the limit)."""
        return backbone.completion_limit(self.max_tokens)

    def fitted_prompt(self, call: AgentCall) -> FittedPrompt:
        """The call's messages, cut to the backbone's context window when the catalog gives one."""
        context_tokens, limit = call.backbone.context_tokens, self.completion_limit(call.backbone)
        if context_tokens is None:
            return FittedPrompt(call.messages)
        return fit_prompt(call, context_tokens, limit or 0)

    # ---- answering calls

    async def complete(self, call: AgentCall) -> Completion:
        """One chat completion: from the cache when this exact request was answered before, else over HTTP."""
        self.stats.calls += 1
        backbone = call.backbone
        endpoint = self.endpoint(backbone)
        params = self._request_parameters(backbone, call.sample)
        try:
            prompt = self.fitted_prompt(call)
        except AgentCallFailed:
            self.stats.failures += 1
            raise
        if self.cache is None:
            return self._completion(call, prompt, await self._fetch(call, prompt, endpoint, params), cached=False)

        key = cache_key(endpoint.base_url, backbone.model_id, prompt.messages, params, call.sample)
        state = self._state()
        lock = state.key_locks.setdefault(key, asyncio.Lock())
        state.key_users[key] = state.key_users.get(key, 0) + 1
        try:
            async with lock:  # the same request in flight twice is paid once; the second reads the cache
                hit = self.cache.get(key) or self._unlimited_hit(endpoint, backbone, prompt, params, call.sample)
                if hit is not None:
                    self.stats.cache_hits += 1
                    if call.stream is not None and hit.text:
                        call.stream(hit.text)
                    return self._completion(call, prompt, hit, cached=True)
                response = await self._fetch(call, prompt, endpoint, params)
                self.cache.put(key, response)
                return self._completion(call, prompt, response, cached=False)
        finally:
            state.key_users[key] -= 1
            if state.key_users[key] == 0:
                del state.key_users[key], state.key_locks[key]

    def _unlimited_hit(
        self, endpoint: Endpoint, backbone: Backbone, prompt: FittedPrompt, params: dict[str, Any], sample: int
    ) -> CachedResponse | None:
        """A response cached before every call carried a completion limit (its key has none): it answers this
        request too when it stopped short of the limit, since then the limit never cut it."""
        parameter = backbone.max_tokens_parameter
        if self.cache is None or parameter not in params or parameter in backbone.request:
            return None
        unlimited = {name: value for name, value in params.items() if name != parameter}
        hit = self.cache.get(cache_key(endpoint.base_url, backbone.model_id, prompt.messages, unlimited, sample))
        return hit if hit is not None and hit.completion_tokens < params[parameter] else None

    def _completion(
        self, call: AgentCall, prompt: FittedPrompt, response: CachedResponse, cached: bool
    ) -> LiveCompletion:
        return LiveCompletion(
            text=response.text,
            answer=self.parse(response.text, call.query),
            prompt_tokens=response.prompt_tokens,
            completion_tokens=response.completion_tokens,
            cost_usd=call.backbone.call_cost_usd(response.prompt_tokens, response.completion_tokens),
            latency_s=response.latency_s,
            reasoning_tokens=response.reasoning_tokens,
            score=None,
            cached=cached,
            context_cut=prompt.cut,
            usage_estimated=response.usage_estimated,
        )

    async def _fetch(
        self, call: AgentCall, prompt: FittedPrompt, endpoint: Endpoint, params: dict[str, Any]
    ) -> CachedResponse:
        """Attempts with backoff until one succeeds, a user error stops the run, or the retries or the deadline
        run out; then AgentCallFailed, which the runner records."""
        started = time.perf_counter()
        clock = _Deadline(self.deadline_s)
        attempts = 0
        refused = 0
        while True:
            attempts += 1
            outcome = await self._attempt(call, prompt, endpoint, params, clock)
            if isinstance(outcome, CachedResponse):
                return outcome
            if outcome.kind == "user":
                raise AgentBalanceError(outcome.reason)
            refused += outcome.unreachable
            if outcome.kind == "retry" and attempts <= self.max_retries:
                wait_s = self._backoff_s(attempts - 1, outcome.retry_after_s)
                if clock.remaining_s() <= wait_s:
                    outcome = dataclasses.replace(
                        outcome,
                        reason=f"{outcome.reason}; a retry in {wait_s:.3g} s would pass the call's "
                        f"{self.deadline_s:g} s deadline",
                    )
                    break
                self.stats.retries += 1
                await asyncio.sleep(wait_s)
                continue
            break
        if refused == attempts and endpoint.base_url not in self._answering_urls:
            raise AgentBalanceError(
                f"live world: cannot reach the endpoint {endpoint.display_url} (connection failed on all "
                f"{attempts} attempts); is it running, and is the base URL right?"
            )
        self.stats.failures += 1
        retries = f" ({attempts - 1} retries)" if attempts > 1 else ""
        raise AgentCallFailed(
            f"{call.backbone.name}: {outcome.reason} after {attempts} attempt(s){retries}",
            latency_s=time.perf_counter() - started,
            cost_usd=call.backbone.call_cost_usd(outcome.prompt_tokens, outcome.completion_tokens),
            prompt_tokens=outcome.prompt_tokens,
        )

    def _backoff_s(self, retry: int, retry_after_s: float | None) -> float:
        """Seconds before retry number `retry` (0-based): the server's Retry-After, else full jitter."""
        if retry_after_s is not None:
            return min(retry_after_s, MAX_RETRY_AFTER_S) + self._rng.uniform(0, self.backoff_base_s)
        return self._rng.uniform(0, min(self.backoff_max_s, self.backoff_base_s * 2**retry))

    async def _attempt(
        self, call: AgentCall, prompt: FittedPrompt, endpoint: Endpoint, params: dict[str, Any], clock: _Deadline
    ) -> CachedResponse | _Failure:
        """One HTTP request under the concurrency limits (the backbone's, then the world's) and a hard timeout
        (cut to the call's deadline); never raises an SDK error.

        Failures are turned into our own messages inside the `except` blocks and raised by the caller
        outside them, so no SDK exception (whose text or request may carry a key) is chained to ours.
        """
        state = self._state()
        client = self._client(state, endpoint)
        kwargs = {k: v for k, v in params.items() if k in self._sdk_arguments}
        extra_body = {k: v for k, v in params.items() if k not in self._sdk_arguments}
        failure: _Failure | None = None
        content = b""
        streamed = _Streamed() if call.stream is not None else None
        async with self._backbone_limit(state, call.backbone), state.limit:
            clock.start()  # the deadline runs from the first request, not from queueing behind our own limit
            timeout_s = min(self.timeout_s, clock.remaining_s())
            if timeout_s <= 0:
                return _Failure("fail", f"the call's {self.deadline_s:g} s deadline passed")
            self.stats.requests += 1
            started = time.perf_counter()
            try:
                async with asyncio.timeout(timeout_s):
                    if streamed is not None:
                        await self._stream(client, call, prompt, timeout_s, extra_body, kwargs, streamed)
                    else:
                        raw = await client.chat.completions.with_raw_response.create(
                            model=call.backbone.model_id,
                            messages=prompt.messages,  # type: ignore[arg-type]  # plain role/content dicts
                            timeout=timeout_s,
                            extra_body=extra_body or None,
                            **kwargs,
                        )
                        content = raw.http_response.content
            except openai.APIStatusError as error:
                failure = self._status_failure(call, endpoint, error.status_code, error.response.headers, error.body)
            except (openai.APITimeoutError, TimeoutError):
                failure = _Failure("retry", f"timed out after {timeout_s:.3g} s")
            except openai.APIConnectionError as error:
                refused = connection_refused(error)
                failure = _Failure("retry", "connection refused" if refused else "connection lost", unreachable=refused)
            except openai.OpenAIError as error:
                failure = _Failure("fail", f"client error ({type(error).__name__})")
            latency_s = time.perf_counter() - started
        if failure is not None and streamed is not None and streamed.parts:  # the caller has part of an answer
            reason = f"{failure.reason} after {len(streamed.parts)} streamed pieces (not asked again)"
            return dataclasses.replace(failure, kind="fail", reason=reason)
        if failure is not None:
            return failure
        self._answering_urls.add(endpoint.base_url)
        if streamed is not None:
            return self._streamed_response(call, streamed, latency_s)
        return self._read_response(call, content, latency_s)

    async def _stream(
        self,
        client: openai.AsyncOpenAI,
        call: AgentCall,
        prompt: FittedPrompt,
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
            messages=prompt.messages,  # type: ignore[arg-type]  # plain role/content dicts
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

    def _streamed_response(self, call: AgentCall, streamed: _Streamed, latency_s: float) -> CachedResponse:
        """The answer and usage of a streamed call (estimated, and said once per model, when the endpoint sent no
        usage)."""
        text = "".join(streamed.parts)
        if streamed.usage is None:
            return self._estimated(call, text, latency_s)
        prompt_tokens, completion_tokens, reasoning_tokens = streamed.usage
        return CachedResponse(text, prompt_tokens, completion_tokens, reasoning_tokens, latency_s)

    def _status_failure(
        self, call: AgentCall, endpoint: Endpoint, status: int, headers: Mapping[str, str], body: object
    ) -> _Failure:
        backbone = call.backbone
        where = f"the endpoint {endpoint.display_url}"
        detail = self._server_message(body)
        if status in (401, 403):
            return _Failure(
                "user",
                f"live world: {where} rejected the API key (HTTP {status}) for backbone {backbone.name!r} "
                f"(key from {endpoint.key_source})",
            )
        if status == 404 or (status == 400 and _MODEL_NOT_FOUND.search(detail)):
            return _Failure(
                "user",
                f"live world: {where} does not know model {backbone.model_id!r} (HTTP {status}) of backbone "
                f"{backbone.name!r}; check the catalog's `model` and the base URL",
            )
        if status == 400 and _LIMIT_REJECTED.search(detail):
            other = next(key for key in LIMIT_PARAMETERS if key != backbone.max_tokens_parameter)
            return _Failure(
                "user",
                f"live world: {where} rejects the completion-token limit as {backbone.max_tokens_parameter!r} "
                f"for backbone {backbone.name!r} ({detail}); set `max_tokens_parameter: {other}` in the catalog",
            )
        if status == 402:
            return _Failure("user", f"live world: {where} refused the call: payment required (HTTP 402)")
        if status in RETRYABLE_STATUS or status >= 500:
            return _Failure("retry", f"HTTP {status}", retry_after_s=retry_after_s(headers))
        return _Failure("fail", f"HTTP {status}" + (f": {detail}" if detail else ""))

    def _server_message(self, body: object) -> str:
        """The endpoint's error message, one line, at most 200 characters, with anything key-like masked."""
        message: object = None
        if isinstance(body, Mapping):
            inner = body.get("error", body)
            message = inner.get("message") if isinstance(inner, Mapping) else inner
        text = " ".join(str(message).split())[:200] if message else ""
        for endpoint in self._endpoints.values():
            text = text.replace(endpoint.api_key, "***")
        return _KEY_LIKE.sub("***", text)

    def _read_response(self, call: AgentCall, content: bytes, latency_s: float) -> CachedResponse | _Failure:
        """The answer and usage from a 200 response body; malformed bodies and empty choices are failures."""
        try:
            data = json.loads(content)
        except (ValueError, RecursionError):  # RecursionError: absurdly deep nesting, still not a completion
            return _Failure("fail", "the endpoint answered with malformed JSON")
        if not isinstance(data, dict):
            return _Failure("fail", "the endpoint answered with JSON that is not a chat completion")
        usage = read_usage(data.get("usage"))
        billed = {"prompt_tokens": usage[0], "completion_tokens": usage[1]} if usage else {}
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return _Failure("fail", "the endpoint answered with no choices", **billed)
        message = choices[0].get("message")
        text = message_text(message.get("content") if isinstance(message, Mapping) else None)
        if usage is None:
            return self._estimated(call, text, latency_s)
        return CachedResponse(text, usage[0], usage[1], usage[2], latency_s)

    def _estimated(self, call: AgentCall, text: str, latency_s: float) -> CachedResponse:
        """A response without usage: tokens estimated, counted, and a warning once per model and world."""
        self.stats.usage_estimated += 1
        if call.backbone.model_id not in self._estimated_models:
            self._estimated_models.add(call.backbone.model_id)
            log.warning(
                "live world: the endpoint reported no usage for model %r; tokens estimated as characters / %d "
                "(said once per model)",
                call.backbone.model_id,
                CHARS_PER_TOKEN,
            )
        return CachedResponse(
            text=text,
            prompt_tokens=estimate_prompt_tokens(call),
            completion_tokens=-(-len(text) // CHARS_PER_TOKEN),
            reasoning_tokens=0,
            latency_s=latency_s,
            usage_estimated=True,
        )

    # ---- per-loop state

    def _state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        state = self._loops.get(loop)
        if state is None:
            state = self._loops[loop] = _LoopState(asyncio.Semaphore(self.concurrency))
            state.closer = loop.create_task(state.close_at_loop_end(), name="agentbalance-live-close-clients")
        return state

    def _backbone_limit(
        self, state: _LoopState, backbone: Backbone
    ) -> asyncio.Semaphore | contextlib.nullcontext[None]:
        """The semaphore bounding this backbone's calls in flight, when the world has a per-backbone limit."""
        if self.concurrency_per_backbone is None:
            return contextlib.nullcontext()
        limit = state.backbone_limits.get(backbone.name)
        if limit is None:
            limit = state.backbone_limits[backbone.name] = asyncio.Semaphore(self.concurrency_per_backbone)
        return limit

    def _client(self, state: _LoopState, endpoint: Endpoint) -> openai.AsyncOpenAI:
        client_key = (endpoint.base_url, endpoint.key_source)
        client = state.clients.get(client_key)
        if client is None:
            client = state.clients[client_key] = openai.AsyncOpenAI(
                api_key=endpoint.api_key,
                base_url=endpoint.base_url,
                max_retries=0,  # ours are the only retries, so each one is counted and backed off
                timeout=self.timeout_s,
            )
        return client

    async def aclose(self) -> None:
        """Close this event loop's HTTP clients now (they also close when the loop ends under asyncio.run).

        The cache stays open: a later call, in this loop or another, must still never pay twice.
        """
        state = self._loops.pop(asyncio.get_running_loop(), None)
        if state is not None:
            if state.closer is not None:
                state.closer.cancel()
            await state.close_clients()

    async def __aenter__(self) -> LiveWorld:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _sdk_arguments() -> frozenset[str]:
    """The request keys `chat.completions.create` takes as arguments; any other goes in `extra_body`."""
    from openai.resources.chat.completions import AsyncCompletions

    parameters = inspect.signature(AsyncCompletions.create).parameters
    return frozenset(parameters) - RESERVED_REQUEST_KEYS - {"self"}

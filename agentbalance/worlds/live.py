"""The live world: any OpenAI-compatible chat-completions endpoint, with retries, a concurrency limit and a cache.

It must never log, store or repeat an API key, and never pay twice for a call its cache holds.

Three parts, each usable alone: `endpoint_client.EndpointClient` (where a backbone's calls go, one request, plain or
streamed, read into a response or a failure), `call_policy.CallPolicy` (retries, backoff, the deadline, the
concurrency limits) and `LiveWorld` here, which composes them with the response cache, the context-window cut and the
parse, and counts what happened (`LiveStats`).

How a call is answered (the part that owns each rule in brackets):

* Endpoint and key [`endpoints.resolve_endpoint`, held by the client]: the backbone's `base_url` / `api_key_env`
  (catalog), else the world's `base_url` / `api_key` (or `api_key_file`: a file the user names, holding only the key)
  arguments, else `$AGENTBALANCE_BASE_URL` / `$AGENTBALANCE_API_KEY`. Keys come from nowhere else (never a catalog
  value, never a flag's text). Checked when the world is built: a backbone without an endpoint or a key is a user error
  then, not in the middle of a sweep.
* Request [the world's parameters, the client's request]: `model` = the backbone's model id, temperature 0
  (overridable), a completion-token limit (`completion_limit`: the backbone's `max_tokens`, else the world's, else 4096,
  16384 for reasoning backbones; at most half the backbone's `context_tokens` when only a default applies), sent as the
  backbone's `max_tokens_parameter` so no call is unbounded, `seed` = the call's sample k when k > 0 (the k-th agent of
  a MAS on this backbone: a distinct call), then the backbone's `request` mapping: keys the SDK knows (reasoning_effort,
  temperature, top_p, ...) as arguments, the others (enable_thinking, ...) in the JSON body via `extra_body`; a `null`
  value drops a default (e.g. `temperature: null` for models that reject it). Non-streaming, except for a call with a
  `stream` sink (serve's streamed answer: the decision agent): then `stream: true` with `include_usage`, each piece of
  text passed on as it arrives and the usage read from the last chunk; an attempt that fails after a piece was passed on
  is not retried (the client has part of an answer); a cached answer goes to the sink whole.
* Context [world]: a backbone with `context_tokens` gets its upstream messages cut to fit the window with the limit
  (`context_window.fit_prompt`; the cut is noted in the completion); a prompt whose own text cannot fit fails at once,
  recorded, with no request sent.
* Cache [world]: keyed by SHA-256 of (base_url, model, messages, parameters, the sample when > 0), never a key or a
  header: K samples are K calls, and a rerun K hits. An entry cached before calls carried a default limit still answers
  when its completion stayed below the limit. A hit makes no HTTP call and returns the original call's usage, its cost
  at the catalog's prices (the same number under the same catalog) and its measured latency, with `cached=True`.
* Retries [policy; the client says which failures]: ours only (the SDK's are off so every attempt is counted): HTTP
  408/409/429/5xx, timeouts and dropped connections, up to `max_retries` more attempts. Wait: the server's Retry-After
  (seconds or a date; `retry-after-ms` too) when given, capped at 120 s, plus up to `backoff_base_s` of jitter; else
  full jitter, uniform(0, min(backoff_max_s, backoff_base_s * 2^retry)). Then AgentCallFailed (the runner records it)
  carrying the elapsed seconds, waits included. Not retried, recorded: other 4xx (400 context too long, ...), malformed
  JSON, empty `choices` (nothing is paid twice for an answer that might have been billed).
* Deadline and concurrency [policy]: a call ends within `deadline_s` of its first request (default: every attempt's
  timeout plus the longest backoffs). Each attempt's timeout is cut to what is left; a wait that would end past the
  deadline (a long Retry-After) is not waited: the call fails at once, recorded, with the reason. An attempt runs under
  its backbone's limit (`concurrency_per_backbone`) and the world's (`concurrency`); the deadline starts once both are
  held.
* User errors [client; unreachable: world] (AgentBalanceError, the run stops, one line without a key): no endpoint or
  key configured; HTTP 401/403 (key rejected); HTTP 404 or a "model not found" 400 (unknown model); HTTP 402 (payment
  required); connection refused on every attempt by an endpoint that never answered (unreachable: a wrong URL, a server
  not started). An endpoint that answered before and then refuses (a server stopped mid-run) fails the call, recorded
  like any failure: the run goes on, nothing is lost, and a rerun pays only for what failed.
* Usage [client; counted and warned by the world]: `usage.prompt_tokens`, `completion_tokens` (reasoning included, as
  the APIs count it) and `completion_tokens_details.reasoning_tokens`. An endpoint that reports no usage gets estimated
  tokens (prompt: `estimate_prompt_tokens`; completion: characters / 4) and the completion says so:
  `LiveCompletion.usage_estimated` is True, `stats.usage_estimated` counts it, and a warning is logged (once per model
  and world, not once per call).
* Latency [client]: the measured wall seconds of the successful HTTP attempt, from sending the request to reading the
  whole response (not the retries' waits, which are the endpoint's rate limits, not the backbone's speed, nor the wait
  for our own concurrency limits). It includes the server's own queue: with more calls in flight than a server serves at
  once, it is queueing plus service; `concurrency_per_backbone=1` (what `record` uses) makes it service time. Cost:
  `backbone.call_cost_usd(usage)`.
"""

from __future__ import annotations

import asyncio
import logging
import math
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentbalance.catalog import Backbone, Catalog
from agentbalance.encoders import default_cache_dir
from agentbalance.errors import AgentBalanceError
from agentbalance.query import Query
from agentbalance.worlds.base import CHARS_PER_TOKEN, AgentCall, AgentCallFailed, Completion
from agentbalance.worlds.cache import CachedResponse, ResponseCache, cache_key
from agentbalance.worlds.call_policy import AttemptFailure, CallPolicy, GaveUp
from agentbalance.worlds.context_window import FittedPrompt, fit_prompt
from agentbalance.worlds.endpoint_client import RESERVED_REQUEST_KEYS, EndpointClient
from agentbalance.worlds.endpoints import Endpoint

log = logging.getLogger(__name__)

CACHE_FILE = "responses.sqlite"

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


def _call_policy_setting(name: str) -> Any:
    """A read-only attribute of the world that is its call policy's setting `name` (typed where it is declared)."""
    return property(lambda world: getattr(world.call_policy, name), doc=f"The call policy's `{name}`.")


@dataclass
class _InFlight:
    """Per event loop: the cache keys being fetched now, so the same request in flight twice is paid once."""

    locks: dict[str, asyncio.Lock] = field(default_factory=dict)
    users: dict[str, int] = field(default_factory=dict)


class LiveWorld:
    """Answers agent calls with real completions from OpenAI-compatible endpoints.

    It composes an EndpointClient (where calls go, one request and its reading) and a CallPolicy (retries, deadline,
    concurrency) with the response cache, the context-window cut and the parse, and keeps the accounting (`stats`).
    """

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
        self.call_policy = CallPolicy(
            concurrency,
            timeout_s,
            max_retries,
            backoff_base_s=backoff_base_s,
            backoff_max_s=backoff_max_s,
            deadline_s=deadline_s,
            concurrency_per_backbone=concurrency_per_backbone,
            seed=seed,
        )
        if max_tokens is not None and max_tokens < 1:
            raise AgentBalanceError(f"live world: max_tokens must be at least 1, got {max_tokens}")
        if temperature is not None and not (math.isfinite(temperature) and temperature >= 0):
            raise AgentBalanceError(f"live world: temperature must be a finite number >= 0, got {temperature}")
        self.catalog = catalog
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.parse: Parse = parse or default_parse
        self.seed = seed
        self.stats = LiveStats()
        self.endpoint_client = EndpointClient(
            catalog, base_url, api_key, api_key_file=api_key_file, timeout_s=self.call_policy.timeout_s
        )
        self._estimated_models: set[str] = set()  # models already warned about for missing usage
        self._in_flight: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _InFlight] = weakref.WeakKeyDictionary()
        for backbone in catalog:
            self._request_parameters(backbone)  # reserved keys are an error now, not at the first call
        self.cache: ResponseCache | None = None
        if use_cache:
            self.cache = ResponseCache((cache_dir if cache_dir is not None else default_cache_dir()) / CACHE_FILE)

    def __repr__(self) -> str:
        cache = self.cache.path if self.cache is not None else None
        return f"LiveWorld(backbones={len(self.catalog)}, concurrency={self.concurrency}, cache={cache})"

    # ---- configuration

    # the call policy's settings, read-only on the world (set them when building it)
    concurrency: int = _call_policy_setting("concurrency")
    concurrency_per_backbone: int | None = _call_policy_setting("concurrency_per_backbone")
    timeout_s: float = _call_policy_setting("timeout_s")
    max_retries: int = _call_policy_setting("max_retries")
    backoff_base_s: float = _call_policy_setting("backoff_base_s")
    backoff_max_s: float = _call_policy_setting("backoff_max_s")
    deadline_s: float = _call_policy_setting("deadline_s")

    def endpoint(self, backbone: Backbone) -> Endpoint:
        """Where this backbone's calls go (resolved when the world was built, or now for a new backbone)."""
        return self.endpoint_client.endpoint(backbone)

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
        in_flight = self._in_flight_here()
        lock = in_flight.locks.setdefault(key, asyncio.Lock())
        in_flight.users[key] = in_flight.users.get(key, 0) + 1
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
            in_flight.users[key] -= 1
            if in_flight.users[key] == 0:
                del in_flight.users[key], in_flight.locks[key]

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
        """The call over HTTP under the call policy; a call the policy gave up on is AgentCallFailed (the runner
        records it), or a user error when its endpoint never answered and refused every attempt."""

        async def attempt(timeout_s: float) -> CachedResponse | AttemptFailure:
            return await self.endpoint_client.request(call, prompt.messages, params, timeout_s)

        outcome = await self.call_policy.run(call.backbone.name, attempt, self.stats)
        if not isinstance(outcome, GaveUp):
            if outcome.usage_estimated:
                self._note_estimated(call.backbone)
            return outcome
        failure, attempts = outcome.failure, outcome.attempts
        if outcome.never_connected and not self.endpoint_client.has_answered(endpoint):
            raise AgentBalanceError(
                f"live world: cannot reach the endpoint {endpoint.display_url} (connection failed on all "
                f"{attempts} attempts); is it running, and is the base URL right?"
            )
        self.stats.failures += 1
        retries = f" ({attempts - 1} retries)" if attempts > 1 else ""
        raise AgentCallFailed(
            f"{call.backbone.name}: {failure.reason} after {attempts} attempt(s){retries}",
            latency_s=outcome.elapsed_s,
            cost_usd=call.backbone.call_cost_usd(failure.prompt_tokens, failure.completion_tokens),
            prompt_tokens=failure.prompt_tokens,
        )

    def _note_estimated(self, backbone: Backbone) -> None:
        """A response without usage: counted, and a warning once per model and world."""
        self.stats.usage_estimated += 1
        if backbone.model_id not in self._estimated_models:
            self._estimated_models.add(backbone.model_id)
            log.warning(
                "live world: the endpoint reported no usage for model %r; tokens estimated as characters / %d "
                "(said once per model)",
                backbone.model_id,
                CHARS_PER_TOKEN,
            )

    def _in_flight_here(self) -> _InFlight:
        """This event loop's in-flight keys (its locks are bound to it)."""
        loop = asyncio.get_running_loop()
        in_flight = self._in_flight.get(loop)
        if in_flight is None:
            in_flight = self._in_flight[loop] = _InFlight()
        return in_flight

    async def aclose(self) -> None:
        """Close this event loop's HTTP clients now (they also close when the loop ends under asyncio.run).

        The cache stays open: a later call, in this loop or another, must still never pay twice.
        """
        await self.endpoint_client.aclose()

    async def __aenter__(self) -> LiveWorld:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

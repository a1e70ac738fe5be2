"""The live world's endpoint client alone, against the loopback fake over real HTTP: one request, and what it makes of
the answer (a response, or a failure the call policy can act on), with no retry, no wait and no cache."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import openai
import pytest

from agentbalance.catalog import Catalog
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import Agent
from agentbalance.worlds.base import AgentCall, estimate_prompt_tokens
from agentbalance.worlds.cache import CachedResponse
from agentbalance.worlds.call_policy import AttemptFailure
from agentbalance.worlds.endpoint_client import EndpointClient
from agentbalance.worlds.endpoints import ENV_API_KEY, ENV_BASE_URL
from tests import test_live_world
from tests.loopback_server import Fault, LoopbackServer, unused_port
from tests.test_live_world import KEY, QUERY, ROLES

PARAMS = {"temperature": 0.0, "max_tokens": 256}


server = test_live_world.server  # the loopback endpoint, keyed with KEY
catalog = test_live_world.catalog  # its three backbones: tiny, think, mid


def call_to(catalog: Catalog, backbone: str = "tiny") -> AgentCall:
    agent = Agent(id="a0", role="Mathematician", backbone=backbone)
    return AgentCall(agent, ROLES["Mathematician"], catalog[backbone], QUERY)


def request(
    client: EndpointClient, call: AgentCall, params: Mapping[str, Any] = PARAMS, timeout_s: float = 2.0
) -> CachedResponse | AttemptFailure:
    return asyncio.run(client.request(call, call.messages, params, timeout_s))


# ----------------------------------------------------------------------------- answers


def test_a_plain_request_reads_the_answer_and_the_endpoints_usage(server: LoopbackServer, catalog: Catalog) -> None:
    server.reasoning_tokens["tiny-model"] = 30
    response = request(EndpointClient(catalog, server.base_url, KEY), call_to(catalog))
    (sent,) = server.requests
    answer = sent.response
    assert answer is not None and isinstance(response, CachedResponse)
    assert response.text == answer["choices"][0]["message"]["content"]
    usage = answer["usage"]
    assert (response.prompt_tokens, response.completion_tokens, response.reasoning_tokens) == (
        usage["prompt_tokens"],
        usage["completion_tokens"],
        30,
    )
    assert response.latency_s > 0 and not response.usage_estimated


def test_parameters_the_sdk_does_not_know_travel_in_the_json_body(server: LoopbackServer, catalog: Catalog) -> None:
    request(EndpointClient(catalog, server.base_url, KEY), call_to(catalog), {**PARAMS, "enable_thinking": True})
    (sent,) = server.requests
    assert sent.body is not None
    assert sent.body["model"] == "tiny-model" and sent.body["enable_thinking"] is True
    assert sent.body["temperature"] == 0.0 and sent.body["max_tokens"] == 256 and "stream" not in sent.body


def test_a_streamed_request_passes_each_piece_on_and_reads_the_usage_of_the_last_chunk(
    server: LoopbackServer, catalog: Catalog
) -> None:
    pieces: list[str] = []
    call = dataclasses.replace(call_to(catalog), stream=pieces.append)
    response = request(EndpointClient(catalog, server.base_url, KEY), call)
    (sent,) = server.requests
    assert sent.body is not None and sent.body["stream"] is True and sent.response is not None
    assert isinstance(response, CachedResponse) and len(pieces) > 2 and "".join(pieces) == response.text
    assert response.prompt_tokens == sent.response["usage"]["prompt_tokens"] and not response.usage_estimated


def test_a_response_without_usage_has_estimated_tokens_and_says_so(server: LoopbackServer, catalog: Catalog) -> None:
    server.fail(Fault(kind="no_usage"))
    call = call_to(catalog)
    response = request(EndpointClient(catalog, server.base_url, KEY), call)
    assert isinstance(response, CachedResponse) and response.usage_estimated
    assert response.prompt_tokens == estimate_prompt_tokens(call)
    assert response.completion_tokens == -(-len(response.text) // 4)


# ----------------------------------------------------------------------------- failures, in the policy's terms


@pytest.mark.parametrize(
    ("fault", "kind", "reason"),
    [
        (Fault(status=503), "retry", "HTTP 503"),
        (Fault(status=408), "retry", "HTTP 408"),
        (Fault(kind="reset"), "retry", "connection lost"),
        (Fault(kind="slow", delay_s=1.0), "retry", "timed out after 0.3 s"),
        (Fault(status=422, message="bad field"), "fail", "HTTP 422: bad field"),
        (Fault(kind="malformed"), "fail", "the endpoint answered with malformed JSON"),
        (Fault(kind="empty_choices"), "fail", "the endpoint answered with no choices"),
    ],
)
def test_each_fault_is_a_failure_in_our_own_words_and_is_asked_once(
    server: LoopbackServer, catalog: Catalog, fault: Fault, kind: str, reason: str
) -> None:
    server.fail(fault)
    failure = request(EndpointClient(catalog, server.base_url, KEY), call_to(catalog), timeout_s=0.3)
    assert failure == AttemptFailure(kind, reason, **billed(server))  # type: ignore[arg-type]
    assert server.count() == 1


def billed(server: LoopbackServer) -> dict[str, int]:
    """The tokens a failed answer still reports (empty choices come with usage): what the failure must carry."""
    response = server.requests[0].response
    usage = response.get("usage") if response and not response.get("choices") else None
    return {"prompt_tokens": usage["prompt_tokens"], "completion_tokens": usage["completion_tokens"]} if usage else {}


def test_retry_after_header_sets_the_failures_wait(server: LoopbackServer, catalog: Catalog) -> None:
    server.fail(Fault(status=429, retry_after="7"))
    failure = request(EndpointClient(catalog, server.base_url, KEY), call_to(catalog))
    assert failure == AttemptFailure("retry", "HTTP 429", retry_after_s=7.0)


def test_a_rejected_key_is_a_user_error_that_names_the_keys_source_never_the_key(
    server: LoopbackServer, catalog: Catalog
) -> None:
    wrong = "sk-wrong-0123456789abcdef"
    failure = request(EndpointClient(catalog, server.base_url, wrong), call_to(catalog))
    assert isinstance(failure, AttemptFailure) and failure.kind == "user"
    assert "rejected the API key (HTTP 401)" in failure.reason and "key from the api_key argument" in failure.reason
    assert wrong not in failure.reason


def test_a_model_the_endpoint_does_not_know_is_a_user_error(catalog: Catalog) -> None:
    with LoopbackServer(api_keys={KEY}, models={"mid-model"}) as server:
        failure = request(EndpointClient(catalog, server.base_url, KEY), call_to(catalog))
    assert isinstance(failure, AttemptFailure) and failure.kind == "user"
    assert "does not know model 'tiny-model' (HTTP 404)" in failure.reason


def test_a_stream_that_breaks_after_pieces_were_passed_on_is_not_asked_again(
    server: LoopbackServer, catalog: Catalog
) -> None:
    server.fail(Fault(kind="broken_stream"))
    pieces: list[str] = []
    call = dataclasses.replace(call_to(catalog), stream=pieces.append)
    failure = request(EndpointClient(catalog, server.base_url, KEY), call)
    assert isinstance(failure, AttemptFailure) and failure.kind == "fail"
    assert failure.reason.endswith("after 2 streamed pieces (not asked again)") and len(pieces) == 2


def test_nothing_listening_is_an_unreachable_retry_and_an_answer_is_remembered(
    server: LoopbackServer, catalog: Catalog
) -> None:
    nowhere = EndpointClient(catalog, f"http://127.0.0.1:{unused_port()}/v1", KEY)
    failure = request(nowhere, call_to(catalog))
    assert failure == AttemptFailure("retry", "connection refused", unreachable=True)
    assert not nowhere.has_answered(nowhere.endpoint(catalog["tiny"]))
    client = EndpointClient(catalog, server.base_url, KEY)
    assert not client.has_answered(client.endpoint(catalog["tiny"]))
    request(client, call_to(catalog))
    assert client.has_answered(client.endpoint(catalog["tiny"]))


def test_the_servers_message_is_one_short_line_with_every_key_masked(catalog: Catalog) -> None:
    client = EndpointClient(catalog, "http://127.0.0.1:9/v1", KEY)
    body = {"error": {"message": f"Incorrect key {KEY}\n and also token-abcdef99 " + "x" * 300}}
    message = client.server_message(body)
    assert KEY not in message and "token-abcdef99" not in message and "\n" not in message
    assert message.startswith("Incorrect key *** and also ***") and len(message) <= 200


# ----------------------------------------------------------------------------- endpoints and keys


def test_every_backbone_gets_its_endpoint_when_the_client_is_built(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV_BASE_URL, raising=False)
    with pytest.raises(AgentBalanceError, match="no endpoint for backbone 'tiny'"):
        EndpointClient(catalog, api_key=KEY)
    monkeypatch.setenv(ENV_BASE_URL, "http://127.0.0.1:9/v1/")
    monkeypatch.setenv(ENV_API_KEY, "sk-from-the-environment")
    endpoint = EndpointClient(catalog).endpoint(catalog["think"])
    assert (endpoint.base_url, endpoint.api_key, endpoint.key_source) == (
        "http://127.0.0.1:9/v1",
        "sk-from-the-environment",
        f"${ENV_API_KEY}",
    )


def test_a_key_and_a_key_file_together_are_refused(catalog: Catalog, tmp_path: Path) -> None:
    (tmp_path / "key").write_text(KEY)
    with pytest.raises(AgentBalanceError, match="give an API key or an API key file, not both"):
        EndpointClient(catalog, "http://127.0.0.1:9/v1", KEY, api_key_file=tmp_path / "key")


def test_each_event_loop_has_its_own_http_client_and_aclose_closes_it(server: LoopbackServer, catalog: Catalog) -> None:
    client, call = EndpointClient(catalog, server.base_url, KEY), call_to(catalog)

    async def use_then_close() -> openai.AsyncOpenAI:
        await client.request(call, call.messages, PARAMS, 2.0)
        http = client._client(client.endpoint(call.backbone))
        await client.request(call, call.messages, PARAMS, 2.0)
        assert client._client(client.endpoint(call.backbone)) is http  # one client for the loop's calls
        await client.aclose()
        return http

    first, second = asyncio.run(use_then_close()), asyncio.run(use_then_close())
    assert first is not second and first.is_closed() and second.is_closed()
    assert server.count() == 4

"""`agentbalance serve`: a trained controller's MAS as one OpenAI-compatible model, spoken to by the real `openai`
client and AutoGen's OpenAI client over HTTP on 127.0.0.1, in front of the simulated world and of live worlds on
the loopback fake (refusing, failing, slow). The test against a real llama.cpp server is not here yet."""

from __future__ import annotations

import asyncio
import http.client
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import openai
import pytest
from fastapi import FastAPI

from agentbalance.budgets import Budget
from agentbalance.catalog import Catalog
from agentbalance.encoders import TextEncoder
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS
from agentbalance.query import as_query
from agentbalance.runtime.execution import Caps
from agentbalance.serve import ServedModel, ServeOptions, ServerThread, create_app, is_loopback, server_keys
from agentbalance.serve.protocol import ProtocolError, budget_of_model
from agentbalance.serve.spending import key_id
from agentbalance.worlds.live import LiveWorld
from agentbalance.worlds.simulated import SimulatedWorld
from tests.conftest import REPO, cli
from tests.loopback_server import Fault, LoopbackServer, unused_port
from tests.serving import (
    QUESTION,
    SERVER_KEY,
    UPSTREAM_KEY,
    USER,
    ask,
    autogen_client,
    client,
    in_background,
    live_world,
    post,
    served,
    serving,
    wait_for,
)

# ----------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def conditioned_run(trained_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's run folder as a budget-conditioned one (its range: Tok 0.0625 to 0.5, Lat 7.5 to 60). Only the
    range is added: what is under test is how the server reads and checks budgets, not conditioned training
    (tests/test_budgets.py builds a real one)."""
    import shutil

    folder = tmp_path_factory.mktemp("conditioned") / "run"
    shutil.copytree(trained_run, folder)
    config = json.loads((folder / "config.json").read_text())
    config["budget_range"] = {"loosest": config["budget"], "ratio": 8.0, "steps": 2, "deltas": [0.0, 0.0]}
    (folder / "config.json").write_text(json.dumps(config))
    return folder


@pytest.fixture(scope="module")
def sim_model(trained_run: Path, encoder: TextEncoder) -> ServedModel:
    return served(trained_run, SimulatedWorld(Catalog.load(), seed=0), encoder)


@pytest.fixture(scope="module")
def sim_app(sim_model: ServedModel) -> FastAPI:
    return create_app(sim_model)


@pytest.fixture(scope="module")
def sim_url(sim_app: FastAPI) -> Iterator[str]:
    with ServerThread(sim_app) as url:
        yield url


@pytest.fixture(scope="module")
def conditioned_url(conditioned_run: Path, encoder: TextEncoder) -> Iterator[str]:
    with serving(served(conditioned_run, SimulatedWorld(Catalog.load(), seed=0), encoder)) as url:
        yield url


# ----------------------------------------------------------------------------- the openai client, the simulator


def test_the_openai_client_gets_what_run_gets_as_a_chat_completion(sim_url: str, sim_model: ServedModel) -> None:
    completion = ask(sim_url)
    (trace,) = sim_model.controller.run([as_query(QUESTION)])  # in the world it was trained in
    extra = completion.model_extra["agentbalance"]
    assert completion.object == "chat.completion" and completion.model == "agentbalance"
    assert completion.id == f"chatcmpl-{extra['trace_id']}"
    (choice,) = completion.choices
    assert choice.message.role == "assistant" and choice.finish_reason == "stop"
    assert choice.message.content == trace.text and trace.text  # what the decision agent passed on
    assert extra["answer"] == trace.answer
    assert extra["cost_usd"] == pytest.approx(trace.cost_usd) and extra["latency_s"] == pytest.approx(trace.latency_s)
    assert extra["mas"] == sim_model.controller.construct(as_query(QUESTION)).to_json()  # the MAS's JSON form
    assert [a["id"] for a in extra["agents"]] == [a.id for a in trace.agents]
    assert extra["skipped"] == [{"id": a.id, "reason": a.skipped} for a in trace.agents if a.skipped]
    assert extra["escalated"] == [a.id for a in trace.agents if a.escalated] and extra["failed"] == []
    assert extra["world"] == "simulated" and extra["budget"] == {"tok": 0.5, "lat": 60.0}
    usage = completion.usage
    assert usage.prompt_tokens == sum(a.prompt_tokens for a in trace.agents) > 0
    assert usage.completion_tokens == sum(a.completion_tokens for a in trace.agents) > 0
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert usage.completion_tokens_details.reasoning_tokens == sum(a.reasoning_tokens for a in trace.agents)


def test_the_same_question_gets_the_same_mas_and_answer_and_a_new_trace_id(sim_url: str) -> None:
    first, second = ask(sim_url), ask(sim_url)
    one, two = first.model_extra["agentbalance"], second.model_extra["agentbalance"]
    assert one["mas"] == two["mas"] and first.choices[0].message.content == second.choices[0].message.content
    assert one["trace_id"] != two["trace_id"]


def test_models_lists_the_one_served_model(sim_url: str) -> None:
    (card,) = client(sim_url).models.list().data
    assert card.id == "agentbalance" and card.object == "model"
    about = card.model_extra["agentbalance"]
    assert about["world"] == "simulated" and about["budget_range"] is None and about["backbones"]


def test_autogens_openai_client_talks_to_the_server(sim_url: str) -> None:
    model_client = autogen_client(sim_url)
    from autogen_core.models import UserMessage

    async def create() -> Any:
        try:
            return await model_client.create([UserMessage(content=QUESTION, source="user")])
        finally:
            await model_client.close()

    result = asyncio.run(create())
    expected = ask(sim_url)
    assert result.content == expected.choices[0].message.content and result.finish_reason == "stop"
    assert result.usage.prompt_tokens == expected.usage.prompt_tokens
    assert result.usage.completion_tokens == expected.usage.completion_tokens


def test_an_autogen_assistant_with_its_default_system_message_uses_the_served_mas(sim_url: str) -> None:
    """AutoGen's AssistantAgent sends its default system message before the task: the served MAS answers the task
    with the same MAS as the task alone (the controller reads the last user message), the system message reaching
    every agent as context."""
    model_client = autogen_client(sim_url)
    from autogen_agentchat.agents import AssistantAgent

    async def run() -> Any:
        try:
            return await AssistantAgent("solver", model_client=model_client).run(task=QUESTION)
        finally:
            await model_client.close()

    result = asyncio.run(run())
    assert result.messages[-1].content == ask(sim_url).choices[0].message.content


def test_concurrent_requests_are_all_answered_and_built_in_shared_passes(
    sim_url: str, sim_app: FastAPI, sim_model: ServedModel
) -> None:
    questions = [f"What is {i} * 7 + 3?" for i in range(24)]

    async def all_at_once() -> list[Any]:
        async with openai.AsyncOpenAI(base_url=sim_url, api_key="unused", max_retries=0) as async_client:
            asked = [{"role": "user", "content": q} for q in questions]
            create = async_client.chat.completions.create
            return await asyncio.gather(*(create(model="agentbalance", messages=[message]) for message in asked))

    before = sim_app.state.batcher.passes
    completions = asyncio.run(all_at_once())
    expected = sim_model.controller.construct_many([as_query(q) for q in questions])
    assert [c.model_extra["agentbalance"]["mas"] for c in completions] == [m.to_json() for m in expected]
    assert sim_app.state.batcher.passes - before < len(questions)  # batched: fewer forward passes than requests


def test_the_batcher_builds_what_arrives_together_in_one_pass(sim_model: ServedModel) -> None:
    queries = [as_query(f"Which river flows through city {i}?") for i in range(8)]

    async def together() -> list[Any]:
        try:
            return await asyncio.gather(*(batcher.construct(q, ConstructionPoint()) for q in queries))
        finally:
            await batcher.aclose()

    from agentbalance.serve.batching import ConstructionBatcher
    from agentbalance.serve.model import ConstructionPoint

    batcher = ConstructionBatcher(sim_model.construct_many)
    systems = asyncio.run(together())
    assert batcher.passes == 1
    assert [m.to_json() for m in systems] == [sim_model.controller.construct(q).to_json() for q in queries]


def test_a_per_request_cap_stops_launching_agents_and_says_so(sim_model: ServedModel) -> None:
    """The first agents launch at once, the decision agent after them is stopped by the cap. What the reply
    says follows docs/serve.md whichever MAS the trained controller built: a conditional decision agent
    passes on its inputs' vote (an answer, `stop`); any other stopped before an answer leaves the message
    empty with `finish_reason` `length`."""
    with serving(sim_model, caps=Caps(max_seconds=0.5)) as url:
        completion = ask(url)
    extra = completion.model_extra["agentbalance"]
    assert extra["capped"] == "max_seconds 0.5 reached"
    mas = MAS.from_json(extra["mas"])
    assert len(mas) > 1, "the test needs a MAS whose decision agent waits for others"
    assert {"id": mas.decision, "reason": "max_seconds 0.5 reached"} in extra["skipped"]
    choice = completion.choices[0]
    if mas.agent(mas.decision).conditional:
        assert choice.message.content and choice.finish_reason == "stop"
    else:
        assert choice.message.content == "" and choice.finish_reason == "length"


def test_in_a_replay_world_a_request_names_the_recorded_question_by_its_id(tmp_path: Path) -> None:
    """A replay world answers only what it recorded: the request's `query_id` picks the question (the controller
    over the world is not needed for that, so none is built: the tiny world has too few backbones for its pools)."""
    from agentbalance.serve.protocol import Asked
    from agentbalance.worlds.replay import ReplayWorld
    from tests.test_replay_world import mcq_tables, write_world

    model = ServedModel.__new__(ServedModel)
    model.world = ReplayWorld.load(write_world(tmp_path / "tiny-mcq", *mcq_tables()))
    recorded = model.query(Asked("(the recorded question)", (), None, "q03"))
    assert recorded == model.world.resolve_query(recorded) and recorded.id == "q03" and recorded.choices
    with pytest.raises(ProtocolError, match='recorded questions: name one with the body field "query_id"'):
        model.query(Asked(QUESTION, (), None, None))
    with pytest.raises(ProtocolError, match="'q99' is not a recorded question"):
        model.query(Asked(QUESTION, (), None, "q99"))


# ----------------------------------------------------------------------------- budgets


def test_the_budget_comes_from_the_model_name_or_the_body(conditioned_url: str) -> None:
    named = ask(conditioned_url, model="agentbalance:tok=0.25").model_extra["agentbalance"]
    assert named["budget"] == {"tok": 0.25, "lat": 30.0}  # served by the scale of its tightest axis
    given = ask(conditioned_url, extra_body={"budget": {"tok": 0.25}}).model_extra["agentbalance"]
    assert given["budget"] == named["budget"] and given["mas"] == named["mas"]
    both = ask(conditioned_url, model="agentbalance:tok=0.1,lat=10").model_extra["agentbalance"]
    assert both["budget"]["tok"] == pytest.approx(0.5 / 6) and both["budget"]["lat"] == pytest.approx(10.0)
    loosest = ask(conditioned_url).model_extra["agentbalance"]
    assert loosest["budget"] == {"tok": 0.5, "lat": 60.0}


def test_a_budget_outside_the_range_is_a_400_naming_the_range(conditioned_url: str) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        ask(conditioned_url, model="agentbalance:tok=0.01")
    message = refused.value.body["message"]  # type: ignore[index]
    assert "tighter than this controller was trained for" in message
    assert "Tok 0.0625 to 0.5 USD/100 queries, Lat 7.5 to 60 s/query" in message
    with pytest.raises(openai.BadRequestError, match="one way"):
        ask(conditioned_url, model="agentbalance:tok=0.2", extra_body={"budget": {"lat": 10}})


def test_a_single_budget_model_refuses_another_budget(sim_url: str) -> None:
    with pytest.raises(openai.BadRequestError, match="--budget-conditioned"):
        ask(sim_url, model="agentbalance:tok=0.2,lat=10")
    assert ask(sim_url, model="agentbalance:tok=0.5,lat=60").model_extra["agentbalance"]["budget"]["tok"] == 0.5


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("agentbalance", None),
        ("agentbalance:tok=0.2,lat=10", Budget(0.2, 10.0)),
        ("agentbalance:lat=5", Budget(None, 5.0)),
        ("agentbalance: tok = 1e-1 ", Budget(0.1, None)),
    ],
)
def test_model_names_carry_budgets(name: str, expected: Budget | None) -> None:
    assert budget_of_model(name) == expected


@pytest.mark.parametrize(
    ("name", "status", "fragment"),
    [
        ("gpt-4o", 404, "does not exist"),
        ("agentbalance:", 400, "cannot read ''"),
        ("agentbalance:tok=0.2,cost=3", 400, "cannot read 'cost=3'"),
        ("agentbalance:tok=0.2,tok=0.3", 400, "'tok' is given twice"),
        ("agentbalance:tok=cheap", 400, "not a number"),
        ("agentbalance:tok=-1", 400, "positive number"),
        ("agentbalance:lat=inf", 400, "positive number"),
    ],
)
def test_unreadable_model_names_are_refused_with_the_syntax(name: str, status: int, fragment: str) -> None:
    with pytest.raises(ProtocolError) as refused:
        budget_of_model(name)
    assert refused.value.status == status and fragment in refused.value.message


def test_an_unknown_model_is_told_the_budget_form_only_where_the_model_takes_one() -> None:
    """A controller trained for one budget refuses a budget in the model name, so its 404 must not offer one."""
    for budgeted in (True, False):
        with pytest.raises(ProtocolError) as refused:
            budget_of_model("gpt-4o", budgeted=budgeted)
        assert refused.value.status == 404 and ("tok=0.2" in refused.value.message) is budgeted


# ----------------------------------------------------------------------------- what a request may not ask


@pytest.mark.parametrize(
    ("body", "status", "fragment"),
    [
        (b"{not json", 400, "not valid JSON"),
        (b"[1, 2]", 400, "valid dictionary"),
        ({"model": "agentbalance"}, 400, "messages: Field required"),
        ({"messages": [USER]}, 400, "model: Field required"),
        ({"model": "agentbalance", "messages": []}, 400, "messages: List should have at least 1 item"),
        ({"model": "agentbalance", "messages": "hi"}, 400, "messages"),
        ({"model": "agentbalance", "messages": [USER], "n": 3}, 400, "n must be 1"),
        ({"model": "agentbalance", "messages": [USER], "tools": [{"type": "function"}]}, 400, "call no tools"),
        ({"model": "agentbalance", "messages": [USER], "response_format": {"type": "json_object"}}, 400, "text"),
        ({"model": "agentbalance", "messages": [USER, {"role": "assistant", "content": "391"}]}, 400,
         "messages[1]: the last message is the assistant's; it must be the user's question"),
        ({"model": "agentbalance", "messages": [{"role": "assistant", "content": "hi"}]}, 400, "the user's question"),
        ({"model": "agentbalance", "messages": [{"role": "tool", "content": "42", "tool_call_id": "c1"}, USER]}, 400,
         "messages[0]: tool calls and tool results are not supported"),
        ({"model": "agentbalance", "messages": [{"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}, USER]}, 400,
         "tool calls"),
        ({"model": "agentbalance", "messages": [{"role": "critic", "content": "hm"}, USER]}, 400,
         "unknown role 'critic'"),
        ({"model": "agentbalance", "messages": [{"role": "user", "content": "  "}]}, 400, "empty"),
        ({"model": "agentbalance", "messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "data:,"}}]}]}, 400, "only text content"),
        ({"model": "agentbalance", "messages": [USER], "budget": {"tok": 0.2, "usd": 1}}, 400, "budget.usd"),
        ({"model": "agentbalance", "messages": [USER], "budget": {"tok": 0}}, 400, "positive number"),
        ({"model": "agentbalance", "messages": [USER], "query_id": "q1"}, 400, "only a replay world"),
        ({"model": "gpt-4o", "messages": [USER]}, 404, "does not exist"),
    ],
)  # fmt: skip
def test_a_bad_request_is_refused_with_a_reason_never_a_traceback(
    sim_url: str, body: bytes | dict[str, Any], status: int, fragment: str
) -> None:
    got, answer = post(sim_url, body)
    assert got == status, answer
    error = answer["error"]
    assert fragment in error["message"] and error["type"] == "invalid_request_error"
    assert "Traceback" not in json.dumps(answer)


def test_text_content_parts_are_read_and_unknown_fields_are_ignored(sim_url: str) -> None:
    parts = [{"type": "text", "text": QUESTION}]
    body = {"model": "agentbalance", "messages": [{"role": "user", "content": parts}], "temperature": 0.7}
    status, answer = post(sim_url, body | {"max_tokens": 5, "user": "me"})
    assert status == 200 and answer["choices"][0]["message"]["content"] == ask(sim_url).choices[0].message.content


def test_a_body_not_sent_as_json_is_told_the_content_type(sim_url: str) -> None:
    body = json.dumps({"model": "agentbalance", "messages": [USER]}).encode()
    status, answer = post(sim_url, body, {"Content-Type": "text/plain"})
    assert status == 400 and "Content-Type: application/json" in answer["error"]["message"]


def test_a_body_over_a_mebibyte_is_refused_before_it_is_read(sim_url: str) -> None:
    question = "Why? " * 250_000
    status, answer = post(sim_url, {"model": "agentbalance", "messages": [{"role": "user", "content": question}]})
    assert status == 413 and "more than this server reads" in answer["error"]["message"]


def test_unknown_routes_and_methods_answer_in_openais_error_shape(sim_url: str) -> None:
    parts = urlsplit(sim_url)
    for method, path, status in (("GET", "/v1/nothing", 404), ("GET", "/v1/chat/completions", 405)):
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
        connection.request(method, path)
        response = connection.getresponse()
        assert response.status == status and "message" in json.loads(response.read())["error"]
        connection.close()


# ----------------------------------------------------------------------------- auth


def test_with_a_key_every_model_route_needs_the_bearer_token(sim_model: ServedModel) -> None:
    with serving(sim_model, api_keys=(SERVER_KEY,)) as url:
        assert ask_with(url, SERVER_KEY).choices[0].message.content
        assert client(url, SERVER_KEY).models.list().data[0].id == "agentbalance"
        for wrong in ("nope", SERVER_KEY + "x"):
            with pytest.raises(openai.AuthenticationError) as refused:
                ask_with(url, wrong)
            assert wrong not in json.dumps(refused.value.body) and refused.value.status_code == 401
        with pytest.raises(openai.AuthenticationError):
            client(url, "nope").models.list()
        status, answer = post(url, {"model": "agentbalance"})  # no header: 401 before the body is judged
        assert status == 401 and "Bearer" in answer["error"]["message"]


def ask_with(url: str, key: str) -> Any:
    return client(url, key).chat.completions.create(model="agentbalance", messages=[USER])


def test_a_key_is_required_off_loopback_and_read_from_its_file(tmp_path: Path) -> None:
    assert all(is_loopback(host) for host in ("127.0.0.1", "127.8.0.1", "::1", "[::1]", "localhost"))
    assert not any(is_loopback(host) for host in ("0.0.0.0", "::", "192.168.1.4", "example.org"))
    assert server_keys("127.0.0.1") == ()
    with pytest.raises(AgentBalanceError, match="not a loopback address"):
        server_keys("0.0.0.0")
    key_file, other_file = tmp_path / "key", tmp_path / "other"
    key_file.write_text(SERVER_KEY + "\n")
    other_file.write_text("ab-another-client-key\n")
    assert server_keys("0.0.0.0", [key_file]) == (SERVER_KEY,)
    assert server_keys("0.0.0.0", [key_file, other_file]) == (SERVER_KEY, "ab-another-client-key")
    with pytest.raises(AgentBalanceError, match="the same key"):
        server_keys("0.0.0.0", [key_file, key_file])


def test_the_cli_refuses_a_public_address_without_a_key(trained_run: Path, tmp_path: Path) -> None:
    code, _, err = cli("serve", "--model", trained_run, "--host", "0.0.0.0")
    assert code == 2 and "not a loopback address" in err and "Traceback" not in err
    code, _, err = cli("serve", "--model", trained_run, "--api-key-file", tmp_path / "absent")
    assert code == 2 and "API key file not found" in err


# ----------------------------------------------------------------------------- upstream failures, concurrency


def test_an_unreachable_endpoint_is_a_502_with_the_reason(trained_run: Path, encoder: TextEncoder) -> None:
    with serving(served(trained_run, live_world(None), encoder)) as url:
        status, answer = post(url, {"model": "agentbalance", "messages": [USER]})
    assert status == 502 and answer["error"]["type"] == "upstream_error"
    assert "upstream: live world: cannot reach the endpoint" in answer["error"]["message"]


def test_a_refused_key_is_a_502_that_never_repeats_it(
    trained_run: Path, encoder: TextEncoder, caplog: pytest.LogCaptureFixture
) -> None:
    with LoopbackServer(api_keys={"another-key"}) as upstream:
        model = served(trained_run, live_world(upstream), encoder)
        with serving(model) as url, caplog.at_level(logging.DEBUG):
            status, answer = post(url, {"model": "agentbalance", "messages": [USER]})
    assert status == 502 and "401" in answer["error"]["message"]
    assert UPSTREAM_KEY in upstream.requests[0].headers["authorization"]  # it was sent, and echoed back
    assert UPSTREAM_KEY not in json.dumps(answer) and UPSTREAM_KEY not in caplog.text


def test_when_every_call_fails_the_request_is_a_502_listing_the_agents_errors(
    trained_run: Path, encoder: TextEncoder
) -> None:
    with LoopbackServer() as upstream, serving(served(trained_run, live_world(upstream), encoder)) as url:
        upstream.schedule(lambda number, body: Fault(status=500, message="the GPU caught fire"))
        status, answer = post(url, {"model": "agentbalance", "messages": [USER]})
    assert status == 502 and answer["error"]["message"].startswith("upstream: no agent's call gave an answer")
    assert "HTTP 500" in answer["error"]["message"] or "500" in answer["error"]["message"]


def test_a_question_longer_than_a_backbones_window_is_a_400_and_no_call(
    trained_run: Path, encoder: TextEncoder
) -> None:
    """The client's text cannot fit (only upstream answers are ever cut): the client must shorten it, so it is
    the client's error (400), not the upstream's (502), and nothing is sent or paid for."""
    shipped = Catalog.load()
    small = Catalog([b.model_copy(update={"context_tokens": 2048}) for b in shipped], shipped.assumptions)
    with LoopbackServer(api_keys={UPSTREAM_KEY}) as upstream:
        world = LiveWorld(small, base_url=upstream.base_url, api_key=UPSTREAM_KEY, use_cache=False, max_retries=0)
        with serving(served(trained_run, world, encoder)) as url:
            long = {"role": "user", "content": "Why? " * 8000}  # about 13,000 tokens
            status, answer = post(url, {"model": "agentbalance", "messages": [long]})
            fits = ask(url)  # a question that fits is answered as ever
    assert status == 400 and answer["error"]["param"] == "messages" and "too long for backbone" in str(answer)
    assert fits.choices[0].message.content and all("Why? Why?" not in str(r.body) for r in upstream.requests)


def test_the_live_world_answers_through_the_server(trained_run: Path, encoder: TextEncoder) -> None:
    with LoopbackServer(api_keys={UPSTREAM_KEY}) as upstream:
        model = served(trained_run, live_world(upstream), encoder)
        with serving(model) as url:
            completion = ask(url)
    extra = completion.model_extra["agentbalance"]
    ran = [a for a in extra["agents"] if a["skipped"] is None]
    assert len(upstream.requests) == len(ran) and extra["world"] == "live"
    assert completion.usage.prompt_tokens == sum(r.response["usage"]["prompt_tokens"] for r in upstream.requests)
    assert "\\boxed{4}" in completion.choices[0].message.content


def test_past_the_running_and_waiting_slots_a_request_is_a_503(trained_run: Path, encoder: TextEncoder) -> None:
    with LoopbackServer() as upstream:
        upstream.schedule(lambda number, body: Fault(kind="slow", delay_s=0.6))
        model = served(trained_run, live_world(upstream), encoder)
        app_options = ServeOptions(max_requests=1, max_waiting=1)
        app = create_app(model, app_options)
        with ServerThread(app) as url:
            first = in_background(lambda: ask(url))
            wait_for(lambda: upstream.count() >= 1)  # the first holds the slot
            second = in_background(lambda: ask(url, "What is 2 + 2?"))
            wait_for(lambda: app.state.admission.admitted == 2)  # the second waits for it
            status, answer = post(url, {"model": "agentbalance", "messages": [USER]})
            assert status == 503 and answer["error"]["type"] == "server_busy"
            assert "1 requests running, 1 waiting" in answer["error"]["message"]
            assert first().choices[0].message.content and second().choices[0].message.content


def test_stopping_fails_a_request_past_the_grace_period_with_a_503(trained_run: Path, encoder: TextEncoder) -> None:
    with LoopbackServer() as upstream:
        upstream.schedule(lambda number, body: Fault(kind="slow", delay_s=5.0))
        thread = ServerThread(create_app(served(trained_run, live_world(upstream), encoder), ServeOptions(grace_s=0.3)))
        with thread as url:
            pending = in_background(lambda: post(url, {"model": "agentbalance", "messages": [USER]}))
            wait_for(lambda: upstream.count() >= 1)
            started = time.monotonic()
            thread.server.stop()  # what SIGTERM does
            status, answer = pending()
            assert time.monotonic() - started < 4.0  # not the upstream's 5 s
        assert status == 503 and answer["error"]["type"] == "server_shutting_down"
        assert "0.3 s grace period" in answer["error"]["message"]
        with pytest.raises(OSError):
            post(url, {"model": "agentbalance", "messages": [USER]})  # nothing listens any more


@pytest.mark.slow
def test_sigterm_lets_an_in_flight_request_finish_and_logs_no_key(trained_run: Path, tmp_path: Path) -> None:
    """The real command in its own process: SIGTERM while a request waits on a slow upstream; the request is
    answered, the process exits cleanly, and neither key is in its output."""
    key_file = tmp_path / "server-key"
    key_file.write_text(SERVER_KEY)
    port = unused_port()
    with LoopbackServer(api_keys={UPSTREAM_KEY}) as upstream:
        upstream.schedule(lambda number, body: Fault(kind="slow", delay_s=1.0))
        process = subprocess.Popen(
            [sys.executable, "-m", "agentbalance.cli", "serve", "--model", str(trained_run), "--world", "live",
             "--base-url", upstream.base_url, "--port", str(port), "--api-key-file", str(key_file), "--grace", "20",
             "--no-cache"],
            cwd=REPO, env={**os.environ, "AGENTBALANCE_API_KEY": UPSTREAM_KEY, "COLUMNS": "160"},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            url = f"http://127.0.0.1:{port}/v1"
            wait_for(lambda: healthy(url) or process.poll() is not None, timeout_s=120)
            assert process.poll() is None, process.communicate()
            pending = in_background(lambda: ask_with(url, SERVER_KEY))
            wait_for(lambda: upstream.count() >= 1)
            process.send_signal(signal.SIGTERM)
            completion = pending()  # answered after the signal
            out, err = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
    assert completion.choices[0].message.content and completion.model_extra["agentbalance"]["world"] == "live"
    assert process.returncode in (0, -signal.SIGTERM), err
    assert "Shutting down" in err and "Finished server process" in err and "Traceback" not in err
    for key in (UPSTREAM_KEY, SERVER_KEY):
        assert key not in out and key not in err
    assert 'POST /v1/chat/completions HTTP/1.1" 200' in err  # uvicorn's request line: status, no headers
    (record,) = [json.loads(line) for line in out.splitlines()]  # stdout: one JSON object per request
    assert record["status"] == 200 and record["trace_id"] == completion.model_extra["agentbalance"]["trace_id"]
    assert record["key"] == key_id(SERVER_KEY) and QUESTION not in out


def healthy(url: str) -> bool:
    parts = urlsplit(url)
    try:
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=2)
        connection.request("GET", "/health")
        return connection.getresponse().status == 200
    except OSError:
        return False

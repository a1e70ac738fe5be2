"""Conversations and streaming through `agentbalance serve`: a system message and earlier turns reach every agent
as context while the controller builds the MAS for the last user message; `stream: true` answers in OpenAI's
chunk format. Spoken to by the real `openai` client over HTTP on 127.0.0.1, in front of the simulator and of a
live world on the loopback fake; what is served is checked against `run --input` and the Python API offline."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import openai
import pytest

from agentbalance.catalog import Catalog
from agentbalance.encoders import TextEncoder
from agentbalance.errors import AgentBalanceError
from agentbalance.query import as_query, read_queries
from agentbalance.serve import ServedModel, ServerThread, create_app
from agentbalance.worlds.base import CONVERSATION_HEADER
from agentbalance.worlds.live import LiveWorld
from agentbalance.worlds.simulated import SimulatedWorld
from tests.conftest import cli
from tests.loopback_server import Fault, LoopbackServer
from tests.serving import CONVERSATION, QUESTION, SYSTEM, UPSTREAM_KEY, ask, client, live_world, served, serving


@pytest.fixture(scope="module")
def sim_model(trained_run: Path, encoder: TextEncoder) -> ServedModel:
    return served(trained_run, SimulatedWorld(Catalog.load(), seed=0), encoder)


@pytest.fixture(scope="module")
def sim_url(sim_model: ServedModel) -> Iterator[str]:
    with ServerThread(create_app(sim_model)) as url:
        yield url


def chat(url: str, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
    return client(url).chat.completions.create(model="agentbalance", messages=messages, **kwargs)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- conversations


def test_a_conversation_is_answered_by_the_mas_of_its_last_user_message(sim_url: str) -> None:
    """The controller reads the last user message, so the MAS is the question's own; the conversation adds what
    the agents read (more prompt tokens, paid), not another MAS."""
    alone = ask(sim_url)
    talked = chat(sim_url, CONVERSATION)
    extra, extra_alone = talked.model_extra["agentbalance"], alone.model_extra["agentbalance"]
    assert extra["mas"] == extra_alone["mas"]
    assert talked.usage.prompt_tokens > alone.usage.prompt_tokens
    assert extra["cost_usd"] > extra_alone["cost_usd"]


def test_every_agent_reads_the_conversation_before_the_question_under_its_own_role_prompt(
    trained_run: Path, encoder: TextEncoder
) -> None:
    with (
        LoopbackServer(api_keys={UPSTREAM_KEY}) as upstream,
        serving(served(trained_run, live_world(upstream), encoder)) as url,
    ):
        completion = chat(url, CONVERSATION)
    ran = [a for a in completion.model_extra["agentbalance"]["agents"] if a["skipped"] is None]
    assert len(upstream.requests) == len(ran) >= 1
    for request in upstream.requests:
        system, user = request.body["messages"]
        assert system["role"] == "system" and SYSTEM not in system["content"]  # the role's own prompt stays
        text = user["content"]
        assert text.index(CONVERSATION_HEADER) < text.index(SYSTEM) < text.index("What is 3 * 4?")
        assert text.index("What is 3 * 4?") < text.index("[assistant]\n12") < text.index(f"Question:\n{QUESTION}")


def test_a_conversation_too_long_for_a_backbones_window_is_cut_oldest_first_and_the_cut_is_in_the_trace(
    trained_run: Path, encoder: TextEncoder
) -> None:
    shipped = Catalog.load()
    small = Catalog(
        [b.model_copy(update={"context_tokens": 1024, "max_tokens": 64}) for b in shipped], shipped.assumptions
    )
    old_turns = [
        {"role": role, "content": f"turn {number}: " + "blah " * 300}
        for number, role in enumerate(["user", "assistant"] * 4)
    ]
    messages = [{"role": "system", "content": SYSTEM}, *old_turns, {"role": "user", "content": QUESTION}]
    with LoopbackServer(api_keys={UPSTREAM_KEY}) as upstream:
        world = LiveWorld(small, base_url=upstream.base_url, api_key=UPSTREAM_KEY, use_cache=False, max_retries=0)
        with serving(served(trained_run, world, encoder)) as url:
            completion = chat(url, messages)
    extra = completion.model_extra["agentbalance"]
    assert extra["context_cut"] and all("the conversation" in cut["cut"] for cut in extra["context_cut"])
    first = upstream.requests[0].body["messages"][1]["content"]
    assert SYSTEM in first and "turn 7:" in first and "turn 0:" not in first  # instructions and newest turns kept
    assert "earlier message(s) of the conversation were cut" in first and first.endswith(QUESTION)


def test_what_is_served_is_what_run_input_and_the_python_api_give_offline(
    sim_url: str, sim_model: ServedModel, trained_run: Path, tmp_path: Path
) -> None:
    completion = chat(sim_url, CONVERSATION)
    extra = completion.model_extra["agentbalance"]
    (trace,) = sim_model.controller.run([CONVERSATION])
    assert trace.text == completion.choices[0].message.content and trace.cost_usd == extra["cost_usd"]
    queries = tmp_path / "conversation.jsonl"
    same_id = as_query(QUESTION).id  # the simulator's outcomes follow the query's id: the served one's
    queries.write_text(json.dumps({"id": same_id, "messages": CONVERSATION}) + "\n")
    code, out, err = cli("run", "--model", trained_run, "--input", queries, "--json")
    assert code == 0, err
    ran = json.loads(out.splitlines()[0])
    assert (ran["answer"], ran["cost_usd"], ran["prompt_tokens"]) == (
        extra["answer"],
        extra["cost_usd"],
        completion.usage.prompt_tokens,
    )


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ({"id": "c1", "messages": CONVERSATION, "question": QUESTION}, "not both"),
        ({"id": "c1", "messages": "hi"}, "a list of chat messages"),
        ({"id": "c1", "messages": [{"role": "assistant", "content": "hi"}]}, "messages[0]: the last message is"),
        ({"id": "c1", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, "only text content"),
    ],
)
def test_a_bad_conversation_line_in_a_query_file_names_its_line_and_message(
    tmp_path: Path, line: dict[str, Any], fragment: str
) -> None:
    path = tmp_path / "queries.jsonl"
    path.write_text(json.dumps({"id": "ok", "question": QUESTION}) + "\n" + json.dumps(line) + "\n")
    with pytest.raises(AgentBalanceError, match="line 2") as error:
        read_queries(path)
    assert fragment in str(error.value)


def test_a_conversations_question_is_its_last_user_message_and_developer_reads_as_system() -> None:
    query = as_query([{"role": "developer", "content": "Be brief."}, {"role": "user", "content": QUESTION}])
    assert query.question == QUESTION and query.id == as_query(QUESTION).id
    assert [(turn.role, turn.content) for turn in query.context] == [("system", "Be brief.")]


# ----------------------------------------------------------------------------- streaming


def test_a_streamed_answer_is_the_plain_answer_in_openais_chunk_format(sim_url: str) -> None:
    plain = chat(sim_url, CONVERSATION)
    chunks = list(chat(sim_url, CONVERSATION, stream=True))
    assert chunks[0].choices[0].delta.role == "assistant"
    assert all(chunk.object == "chat.completion.chunk" and chunk.model == "agentbalance" for chunk in chunks)
    assert len({chunk.id for chunk in chunks}) == 1 and chunks[0].id.startswith("chatcmpl-")
    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks)
    assert text == plain.choices[0].message.content and len(chunks) > 3
    assert [c.choices[0].finish_reason for c in chunks][-1] == "stop"
    assert chunks[-1].model_extra["agentbalance"]["mas"] == plain.model_extra["agentbalance"]["mas"]


def test_a_stream_with_include_usage_ends_with_the_usage_and_the_agentbalance_object(sim_url: str) -> None:
    plain = chat(sim_url, CONVERSATION)
    chunks = list(chat(sim_url, CONVERSATION, stream=True, stream_options={"include_usage": True}))
    last = chunks[-1]
    assert last.choices == [] and last.usage is not None
    assert last.usage.prompt_tokens == plain.usage.prompt_tokens
    assert last.usage.completion_tokens == plain.usage.completion_tokens
    assert last.model_extra["agentbalance"]["cost_usd"] == plain.model_extra["agentbalance"]["cost_usd"]
    assert chunks[-2].choices[0].finish_reason == "stop" and all(c.usage is None for c in chunks[:-1])


def raw_stream(url: str, body: dict[str, Any]) -> tuple[int, list[str]]:
    """The status and the `data:` lines of a streamed request, read off the wire."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    try:
        connection.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
        response = connection.getresponse()
        lines = response.read().decode().splitlines()
        return response.status, [line.removeprefix("data: ") for line in lines if line.startswith("data: ")]
    finally:
        connection.close()


def test_an_error_after_the_stream_began_is_an_error_event_then_done_never_a_hang(
    trained_run: Path, encoder: TextEncoder
) -> None:
    body = {"model": "agentbalance", "messages": CONVERSATION, "stream": True}
    with LoopbackServer() as upstream, serving(served(trained_run, live_world(upstream), encoder)) as url:
        upstream.schedule(lambda number, request: Fault(status=500, message="the GPU caught fire"))
        status, events = raw_stream(url, body)
        with pytest.raises(openai.APIError, match="no agent's call gave an answer"):
            list(chat(url, CONVERSATION, stream=True))
    assert status == 200 and events[-1] == "[DONE]"
    assert json.loads(events[0])["choices"][0]["delta"]["role"] == "assistant"
    error = json.loads(events[-2])["error"]
    assert error["type"] == "upstream_error" and "no agent's call gave an answer" in error["message"]


def test_a_refused_stream_is_refused_with_its_status_before_any_event(sim_url: str) -> None:
    body = {"model": "agentbalance", "messages": [{"role": "tool", "content": "x"}], "stream": True}
    status, events = raw_stream(sim_url, body)
    assert status == 400 and events == []


def test_in_a_live_world_the_decision_agents_words_are_streamed_as_they_arrive(
    trained_run: Path, encoder: TextEncoder
) -> None:
    """The decision agent's call is streamed from the endpoint and each piece passed on at once: the client has the
    first words while the endpoint is still sending (0.1 s between words), and they join to the plain answer."""
    import time

    with (
        LoopbackServer(api_keys={UPSTREAM_KEY}, stream_gap_s=0.1) as upstream,
        serving(served(trained_run, live_world(upstream), encoder)) as url,
    ):
        plain = chat(url, CONVERSATION)
        arrivals: list[tuple[float, str]] = []
        with chat(url, CONVERSATION, stream=True, stream_options={"include_usage": True}) as stream:
            for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content:
                    arrivals.append((time.perf_counter(), chunk.choices[0].delta.content))
                last = chunk
        streamed = [r for r in upstream.requests if r.body.get("stream")]
    extra = last.model_extra["agentbalance"]
    decision = next(a for a in extra["agents"] if a["id"] == extra["mas"]["decision"])
    assert [r.body["model"] for r in streamed] == [Catalog.load()[decision["backbone"]].model_id]  # it, and only it
    assert len(arrivals) > 2 and arrivals[-1][0] - arrivals[0][0] >= 0.1 * (len(arrivals) - 2)  # apart, as sent
    assert "".join(piece for _, piece in arrivals) == plain.choices[0].message.content
    assert last.usage is not None and last.usage.completion_tokens == plain.usage.completion_tokens


# ----------------------------------------------------------------------------- the traffic log


def test_the_log_dir_keeps_every_answered_request_with_its_conversation_mas_and_answers_and_no_key(
    sim_model: ServedModel, tmp_path: Path
) -> None:
    """`serve --log-dir`: one line per answered request (plain or streamed), what the client sent and what every
    agent answered, as the response reported it; a refused request and the keys are not in it."""
    from tests.serving import SERVER_KEY

    with serving(sim_model, log_dir=tmp_path / "traffic", api_keys=(SERVER_KEY,)) as url:
        talked = client(url, SERVER_KEY).chat.completions.create(model="agentbalance", messages=CONVERSATION)  # type: ignore[arg-type]
        streamed = list(
            client(url, SERVER_KEY).chat.completions.create(
                model="agentbalance", messages=[{"role": "user", "content": QUESTION}], stream=True
            )
        )
        with pytest.raises(openai.BadRequestError):
            client(url, SERVER_KEY).chat.completions.create(model="agentbalance", messages=[])
    text = (tmp_path / "traffic" / "requests.jsonl").read_text(encoding="utf-8")
    assert SERVER_KEY not in text and UPSTREAM_KEY not in text
    first, second = (json.loads(line) for line in text.splitlines())
    extra = talked.model_extra["agentbalance"]
    assert first["id"] == extra["trace_id"] and first["messages"] == CONVERSATION
    assert first["mas"] == extra["mas"] and first["text"] == talked.choices[0].message.content
    assert first["cost_usd"] == pytest.approx(extra["cost_usd"]) and first["model"] == "agentbalance"
    ran = [agent for agent in first["agents"] if agent["skipped"] is None]
    assert ran and all(agent["text"] and agent["backbone"] for agent in ran)
    assert {agent["id"] for agent in first["agents"]} == {agent["id"] for agent in extra["mas"]["agents"]}
    assert second["messages"] == [{"role": "user", "content": QUESTION}] and second["id"] == streamed[
        0
    ].id.removeprefix("chatcmpl-")

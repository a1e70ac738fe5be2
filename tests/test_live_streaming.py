"""A streamed live call (serve's streamed answer: its decision agent): each piece of text reaches the sink as the
endpoint sends it, usage comes from the stream, a cached answer goes whole, and a stream that breaks off after a
piece was passed on is never asked again. Against the loopback fake over real HTTP."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from pathlib import Path

import pytest

from agentbalance.catalog import Catalog
from agentbalance.mas import MAS
from agentbalance.runtime.runner import Runner
from agentbalance.worlds.live import LiveWorld
from tests.loopback_server import Fault, LoopbackServer
from tests.test_live_world import KEY, QUERY, ROLES, live, single_call, three_agent_mas, write_catalog


def streamed_call(world: LiveWorld, backbone: str = "tiny") -> tuple[list[tuple[float, str]], object]:
    """One call with a sink: the pieces with the time each arrived, and the completion."""
    pieces: list[tuple[float, str]] = []
    call = dataclasses.replace(
        single_call(world, backbone), stream=lambda piece: pieces.append((time.perf_counter(), piece))
    )
    completion = asyncio.run(world.complete(call))
    return pieces, completion


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    return write_catalog(tmp_path)


def test_a_streamed_call_passes_each_piece_on_as_it_arrives_with_the_streams_usage(
    catalog: Catalog, tmp_path: Path
) -> None:
    with LoopbackServer(api_keys={KEY}, stream_gap_s=0.05) as server:
        world = live(catalog, server, tmp_path / "cache")
        started = time.perf_counter()
        pieces, completion = streamed_call(world)
        finished = time.perf_counter()
        (request,) = server.requests
    assert request.body["stream"] is True and request.body["stream_options"] == {"include_usage": True}
    assert len(pieces) > 2 and "".join(piece for _, piece in pieces) == completion.text  # type: ignore[attr-defined]
    assert pieces[0][0] - started < finished - started - 0.05 * (len(pieces) - 2)  # the first long before the end
    usage = request.response["usage"]  # type: ignore[index]
    assert (completion.prompt_tokens, completion.completion_tokens) == (
        usage["prompt_tokens"],
        usage["completion_tokens"],
    )  # type: ignore[attr-defined]
    assert not completion.usage_estimated  # type: ignore[attr-defined]


def test_a_cached_answer_goes_to_the_sink_whole_and_asks_nothing(catalog: Catalog, tmp_path: Path) -> None:
    with LoopbackServer(api_keys={KEY}) as server:
        world = live(catalog, server, tmp_path / "cache")
        _, completion = streamed_call(world)
        again, cached = streamed_call(live(catalog, server, tmp_path / "cache"))
        assert server.count() == 1
    assert [piece for _, piece in again] == [completion.text] and cached.cached  # type: ignore[attr-defined]


def test_a_failure_before_any_piece_is_retried_and_the_pieces_come_once(catalog: Catalog, tmp_path: Path) -> None:
    with LoopbackServer(api_keys={KEY}) as server:
        server.fail(Fault(status=503))
        pieces, completion = streamed_call(live(catalog, server, tmp_path / "cache"))
        assert server.count() == 2
    assert "".join(piece for _, piece in pieces) == completion.text  # type: ignore[attr-defined]


def test_a_stream_that_breaks_off_after_a_piece_is_a_failure_never_asked_again(
    catalog: Catalog, tmp_path: Path
) -> None:
    from agentbalance.worlds.base import AgentCallFailed

    with LoopbackServer(api_keys={KEY}) as server:
        server.fail(Fault(kind="broken_stream"))
        world = live(catalog, server, tmp_path / "cache")
        pieces: list[str] = []
        call = dataclasses.replace(single_call(world, "tiny"), stream=pieces.append)
        with pytest.raises(AgentCallFailed, match="not asked again"):
            asyncio.run(world.complete(call))
        assert server.count() == 1 and len(pieces) == 2


def test_the_runner_streams_only_the_decision_agent(catalog: Catalog, tmp_path: Path) -> None:
    with LoopbackServer(api_keys={KEY}) as server:
        world = live(catalog, server, tmp_path / "cache")
        mas: MAS = three_agent_mas()
        pieces: list[str] = []
        trace = asyncio.run(Runner(world, ROLES).run(mas, QUERY, stream=pieces.append))
        streamed = [r for r in server.requests if r.body.get("stream")]
    assert [r.model for r in streamed] == [world.catalog[mas.agent(mas.decision).backbone].model_id]
    assert "".join(pieces) == trace.text

"""The clients people put in front of an OpenAI-compatible server, each the real library over HTTP, speaking to
`agentbalance serve` in front of the simulator: a conversation gets the answer and usage the openai SDK gets, a
stream joins to the plain answer. No client is mocked; a missing one skips, naming the extra that installs it."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from agentbalance.catalog import Catalog
from agentbalance.encoders import TextEncoder
from agentbalance.serve import ServedModel
from agentbalance.worlds.simulated import SimulatedWorld
from tests.serving import CONVERSATION, QUESTION, SYSTEM, autogen_client, client, served, serving

AUTOGEN = 'AutoGen is an optional extra: pip install "agentbalance[autogen]"'


def in_the_clients_extra(name: str) -> str:
    """Why a client's tests skip when it is not installed, and what installs it."""
    return f'{name} is not installed; the optional extra `clients` has it: pip install "agentbalance[clients]"'


@pytest.fixture(scope="module")
def sim_model(trained_run: Path, encoder: TextEncoder) -> ServedModel:
    return served(trained_run, SimulatedWorld(Catalog.load(), seed=0), encoder)


@pytest.fixture(scope="module")
def sim_url(sim_model: ServedModel) -> Iterator[str]:
    with serving(sim_model) as url:
        yield url


def chat(url: str, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
    return client(url).chat.completions.create(model="agentbalance", messages=messages, **kwargs)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def reference(sim_url: str) -> Any:
    """What the openai SDK gets for the conversation: the answer and usage every other client must get."""
    return chat(sim_url, CONVERSATION)


def answer_of(completion: Any) -> str:
    return completion.choices[0].message.content


def tokens(usage: Any) -> tuple[int, int, int]:
    return usage.prompt_tokens, usage.completion_tokens, usage.total_tokens


# ----------------------------------------------------------------------------- openai SDK


def test_the_same_conversation_gets_the_same_answer_usage_and_cost_every_time(sim_url: str, reference: Any) -> None:
    """The premise of every comparison below: the simulator is deterministic, so a client that sends the same
    conversation must get the same answer, usage and cost as the openai SDK."""
    again = chat(sim_url, CONVERSATION)
    assert answer_of(again) == answer_of(reference) and reference.choices[0].finish_reason == "stop"
    assert tokens(again.usage) == tokens(reference.usage)
    assert reference.usage.total_tokens == reference.usage.prompt_tokens + reference.usage.completion_tokens
    cost = reference.model_extra["agentbalance"]["cost_usd"]
    assert again.model_extra["agentbalance"]["cost_usd"] == cost > 0


def test_the_openai_sdks_stream_joins_to_the_plain_answer_and_ends_with_the_plain_usage_and_cost(
    sim_url: str, reference: Any
) -> None:
    with chat(sim_url, CONVERSATION, stream=True, stream_options={"include_usage": True}) as stream:
        chunks = list(stream)
    assert "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices) == answer_of(reference)
    last = chunks[-1]
    assert last.choices == [] and tokens(last.usage) == tokens(reference.usage)
    assert last.model_extra["agentbalance"]["cost_usd"] == reference.model_extra["agentbalance"]["cost_usd"]
    assert last.model_extra["agentbalance"]["mas"] == reference.model_extra["agentbalance"]["mas"]


def test_the_async_openai_sdk_gets_the_same_answer_plain_and_streamed(sim_url: str, reference: Any) -> None:
    async def both() -> tuple[Any, str]:
        async with openai.AsyncOpenAI(base_url=sim_url, api_key="unused", max_retries=0, timeout=30) as sdk:
            plain = await sdk.chat.completions.create(model="agentbalance", messages=CONVERSATION)  # type: ignore[arg-type]
            stream = await sdk.chat.completions.create(model="agentbalance", messages=CONVERSATION, stream=True)  # type: ignore[arg-type]
            streamed = "".join([chunk.choices[0].delta.content or "" async for chunk in stream if chunk.choices])
            return plain, streamed

    plain, streamed = asyncio.run(both())
    assert answer_of(plain) == streamed == answer_of(reference)
    assert tokens(plain.usage) == tokens(reference.usage)


# ----------------------------------------------------------------------------- LangChain


@pytest.fixture(scope="module")
def chat_openai(sim_url: str) -> Any:
    """LangChain's ChatOpenAI for the served model, reading usage from a stream (`stream_usage=True` sends
    `stream_options.include_usage`; LangChain turns it on by itself only for api.openai.com)."""
    langchain_openai = pytest.importorskip(
        "langchain_openai", reason=in_the_clients_extra("LangChain (langchain-openai)")
    )
    return langchain_openai.ChatOpenAI(
        model="agentbalance", base_url=sim_url, api_key="unused", timeout=30, max_retries=0, stream_usage=True
    )


def langchain_conversation() -> list[tuple[str, str]]:
    return [(message["role"], message["content"]) for message in CONVERSATION]


def langchain_tokens(usage: dict[str, Any]) -> tuple[int, int, int]:
    return usage["input_tokens"], usage["output_tokens"], usage["total_tokens"]


def test_langchains_chat_openai_gets_the_openai_sdks_answer_and_usage(chat_openai: Any, reference: Any) -> None:
    message = chat_openai.invoke(langchain_conversation())
    assert message.content == answer_of(reference) and message.response_metadata["finish_reason"] == "stop"
    assert langchain_tokens(message.usage_metadata) == tokens(reference.usage)


def test_langchains_stream_joins_to_the_plain_answer_and_carries_the_plain_usage(
    chat_openai: Any, reference: Any
) -> None:
    chunks = list(chat_openai.stream(langchain_conversation()))
    whole = sum(chunks[1:], chunks[0])
    assert len(chunks) > 3 and whole.content == answer_of(reference)
    assert langchain_tokens(whole.usage_metadata) == tokens(reference.usage)


# ----------------------------------------------------------------------------- LiteLLM


@pytest.fixture(scope="module")
def litellm() -> Iterator[Any]:
    """LiteLLM, told to read its price map from its own package (at import it would fetch it from GitHub)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        yield pytest.importorskip("litellm", reason=in_the_clients_extra("LiteLLM"))


def through_litellm(litellm: Any, url: str, **kwargs: Any) -> Any:
    return litellm.completion(
        model="openai/agentbalance", api_base=url, api_key="unused", timeout=30, max_retries=0, **kwargs
    )


def test_litellm_gets_the_openai_sdks_answer_and_usage(litellm: Any, sim_url: str, reference: Any) -> None:
    response = through_litellm(litellm, sim_url, messages=CONVERSATION)
    assert answer_of(response) == answer_of(reference) and response.choices[0].finish_reason == "stop"
    assert tokens(response.usage) == tokens(reference.usage)


# LiteLLM 1.83's stream wrapper reads pydantic's `model_fields` off instances (deprecated since pydantic 2.11)
@pytest.mark.filterwarnings("ignore:Accessing the 'model_.*' attribute on the instance is deprecated")
def test_litellms_stream_with_include_usage_joins_to_the_plain_answer_and_ends_with_the_plain_usage(
    litellm: Any, sim_url: str, reference: Any
) -> None:
    stream = through_litellm(
        litellm, sim_url, messages=CONVERSATION, stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    assert "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices) == answer_of(reference)
    assert tokens(chunks[-1].usage) == tokens(reference.usage)


# ----------------------------------------------------------------------------- Microsoft Agent Framework


@pytest.fixture(scope="module")
def agent_framework() -> Any:
    pytest.importorskip(
        "agent_framework.openai", reason=in_the_clients_extra("Microsoft Agent Framework (agent-framework-openai)")
    )
    import agent_framework

    return agent_framework


def run_framework_agent(agent_framework: Any, url: str, stream: bool) -> tuple[list[str], Any]:
    """An Agent with the conversation's system message as its instructions, run on the three turns after it over
    the Chat Completions client (`OpenAIChatClient` is the Responses API's): the updates' texts (streamed) and the
    final response."""
    from agent_framework.openai import OpenAIChatCompletionClient

    turns = [agent_framework.Message(role=m["role"], contents=[m["content"]]) for m in CONVERSATION[1:]]

    async def run() -> tuple[list[str], Any]:
        async with openai.AsyncOpenAI(base_url=url, api_key="unused", max_retries=0, timeout=30) as sdk:
            chat_client = OpenAIChatCompletionClient(model="agentbalance", async_client=sdk)
            agent = agent_framework.Agent(client=chat_client, instructions=SYSTEM)
            if not stream:
                return [], await agent.run(turns)
            updates = agent.run(turns, stream=True)
            texts = [update.text or "" async for update in updates]
            return texts, await updates.get_final_response()

    return asyncio.run(run())


def framework_tokens(usage: dict[str, Any]) -> tuple[int, int, int]:
    return usage["input_token_count"], usage["output_token_count"], usage["total_token_count"]


def test_the_agent_frameworks_agent_gets_the_openai_sdks_answer_and_usage(
    agent_framework: Any, sim_url: str, reference: Any
) -> None:
    _, response = run_framework_agent(agent_framework, sim_url, stream=False)
    assert response.text == answer_of(reference)
    assert framework_tokens(response.usage_details) == tokens(reference.usage)


def test_the_agent_frameworks_stream_joins_to_the_plain_answer_and_carries_the_plain_usage(
    agent_framework: Any, sim_url: str, reference: Any
) -> None:
    """The framework always streams with `include_usage`: the usage of its final response is the server's."""
    texts, response = run_framework_agent(agent_framework, sim_url, stream=True)
    assert len(texts) > 3 and "".join(texts) == response.text == answer_of(reference)
    assert framework_tokens(response.usage_details) == tokens(reference.usage)


# ----------------------------------------------------------------------------- AutoGen


def autogen_conversation() -> list[Any]:
    from autogen_core.models import AssistantMessage, SystemMessage, UserMessage

    kinds = {
        "system": lambda text: SystemMessage(content=text),
        "user": lambda text: UserMessage(content=text, source="user"),  # sent with "name": "user"
        "assistant": lambda text: AssistantMessage(content=text, source="assistant"),
    }
    return [kinds[message["role"]](message["content"]) for message in CONVERSATION]


def closing(model_client: Any, work: Any) -> Any:
    async def run() -> Any:
        try:
            return await work()
        finally:
            await model_client.close()

    return asyncio.run(run())


def test_autogens_model_client_gets_the_openai_sdks_answer_and_usage(sim_url: str, reference: Any) -> None:
    model_client = autogen_client(sim_url)
    result = closing(model_client, lambda: model_client.create(autogen_conversation()))
    assert result.content == answer_of(reference) and result.finish_reason == "stop"
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == tokens(reference.usage)[:2]


def test_autogens_model_client_stream_with_include_usage_joins_to_the_plain_answer_and_usage(
    sim_url: str, reference: Any
) -> None:
    model_client = autogen_client(sim_url)

    async def streamed() -> list[Any]:
        return [item async for item in model_client.create_stream(autogen_conversation(), include_usage=True)]

    *pieces, result = closing(model_client, streamed)
    assert len(pieces) > 3 and "".join(pieces) == result.content == answer_of(reference)
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == tokens(reference.usage)[:2]


def autogen_client_with_stream_usage(url: str) -> Any:
    """AutoGen's client set up as its docs say for usage in streams: `stream_options` in the constructor, which it
    then sends with its non-streaming requests too (`"stream": false`), where the server ignores it."""
    pytest.importorskip("autogen_ext", reason=AUTOGEN)
    from autogen_core.models import ModelFamily, ModelInfo
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    info = ModelInfo(
        vision=False, function_calling=False, json_output=False, family=ModelFamily.UNKNOWN, structured_output=False
    )
    return OpenAIChatCompletionClient(
        model="agentbalance",
        base_url=url,
        api_key="unused",
        model_info=info,
        max_retries=0,
        timeout=30,
        stream_options={"include_usage": True},
    )


def assistant_reference(url: str) -> Any:
    """What the openai SDK gets for what AssistantAgent sends: its default system message, then the task."""
    from autogen_agentchat.agents import AssistantAgent

    default = inspect.signature(AssistantAgent).parameters["system_message"].default
    assert isinstance(default, str) and default
    return chat(url, [{"role": "system", "content": default}, {"role": "user", "content": QUESTION}])


def test_autogens_assistant_agent_with_its_default_system_message_gets_the_openai_sdks_answer_and_usage(
    sim_url: str,
) -> None:
    model_client = autogen_client_with_stream_usage(sim_url)
    from autogen_agentchat.agents import AssistantAgent

    result = closing(model_client, lambda: AssistantAgent("solver", model_client=model_client).run(task=QUESTION))
    expected, alone = assistant_reference(sim_url), chat(sim_url, [{"role": "user", "content": QUESTION}])
    reply = result.messages[-1]
    assert reply.content == answer_of(expected)
    assert (reply.models_usage.prompt_tokens, reply.models_usage.completion_tokens) == tokens(expected.usage)[:2]
    assert expected.usage.prompt_tokens > alone.usage.prompt_tokens  # the system message was read, not dropped


def test_autogens_assistant_agent_streams_the_plain_answer_with_its_usage(sim_url: str) -> None:
    """`model_client_stream=True`: the agent's streaming chunk events join to its final reply, which is the plain
    answer, with the usage of the stream's last chunk."""
    model_client = autogen_client_with_stream_usage(sim_url)
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.base import TaskResult
    from autogen_agentchat.messages import ModelClientStreamingChunkEvent

    agent = AssistantAgent("solver", model_client=model_client, model_client_stream=True)

    async def streamed() -> list[Any]:
        return [event async for event in agent.run_stream(task=QUESTION)]

    events = closing(model_client, streamed)
    pieces = [event.content for event in events if isinstance(event, ModelClientStreamingChunkEvent)]
    result, expected = events[-1], assistant_reference(sim_url)
    assert isinstance(result, TaskResult)
    reply = result.messages[-1]
    assert len(pieces) > 3 and "".join(pieces) == reply.content == answer_of(expected)
    assert (reply.models_usage.prompt_tokens, reply.models_usage.completion_tokens) == tokens(expected.usage)[:2]

"""A trained controller as one Agent Framework agent: its `run` builds the query's MAS and runs it as a workflow,
and answers with the decision agent's text, the MAS's usage and the `agentbalance` details (MAS, trace).

Usable wherever the framework takes an agent (a workflow node, an orchestration's participant). It never trains
nor reads trainer internals (TrainedController does), and never accounts on its own (WorkflowRunner does).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_framework import (
    AgentResponse,
    AgentResponseUpdate,
    BaseAgent,
    Content,
    Message,
    ResponseStream,
)

from agentbalance.adapters.agent_framework.workflow import WorkflowRunner
from agentbalance.adapters.driving import FrameworkRun
from agentbalance.catalog import Catalog
from agentbalance.errors import AgentBalanceError
from agentbalance.query import Query, as_query
from agentbalance.worlds.base import World

if TYPE_CHECKING:
    from agentbalance.budgets import Budget
    from agentbalance.trained import TrainedController


def query_of(messages: Any) -> Query:
    """The query of an agent run's input: a text, a Message, or a conversation whose last user message is the
    question (the messages before it are its context)."""
    if messages is None:
        raise AgentBalanceError("AgentBalanceAgent.run needs a question (a text or messages), got none")
    if isinstance(messages, str | Query):
        return as_query(messages)
    listed = [messages] if isinstance(messages, Message | Mapping) else list(messages)
    conversation = []
    for message in listed:
        if isinstance(message, str):
            conversation.append({"role": "user", "content": message})
        elif isinstance(message, Message):
            conversation.append({"role": str(message.role), "content": message.text})
        elif isinstance(message, Mapping):
            conversation.append(dict(message))
        else:
            raise AgentBalanceError(
                f"AgentBalanceAgent.run takes texts and Messages, got a {type(message).__name__}: {message!r:.80}"
            )
    return as_query(conversation)


class AgentBalanceAgent(BaseAgent):
    """A trained controller as one agent. Per run it builds the question's MAS (at `budget`: None is the one it
    was built for; a budget-conditioned controller serves any budget of its range) and runs it as a fresh
    workflow, with every call answered by `world` or by the chat clients of `clients` (backbone name -> chat
    client, or a factory per agent). The response's text is the MAS's answer; its `usage_details` sum the MAS's
    calls; `additional_properties["agentbalance"]` holds the MAS, the trace, cost and latency."""

    def __init__(
        self,
        controller: TrainedController,
        *,
        world: World | None = None,
        clients: Any = None,
        catalog: Catalog | None = None,
        budget: Budget | None = None,
        name: str = "agentbalance",
        description: str | None = None,
        **settings: Any,
    ) -> None:
        super().__init__(
            name=name,
            description=description or "Answers with a multi-agent system built for each question under a budget.",
        )
        if catalog is None and world is None:
            catalog = controller.catalog()  # prices the usage of the given clients
        self.controller = controller
        self.budget = budget
        self.runner = WorkflowRunner(controller.roles, world=world, clients=clients, catalog=catalog, **settings)
        controller.serving(budget)  # a budget it cannot serve is an error now, not at the first run

    @classmethod
    def from_run(
        cls, folder: str | Path, *, world: World | None = None, catalog: Catalog | None = None, **agent: Any
    ) -> AgentBalanceAgent:
        """The agent over a controller saved by `agentbalance build` (over the world's or catalog's backbones);
        `agent`: the other keywords of AgentBalanceAgent."""
        from agentbalance.trained import TrainedController

        controller = TrainedController.load(folder, world=world, catalog=catalog)
        return cls(controller, world=world, catalog=catalog, **agent)

    async def answer(self, messages: Any) -> FrameworkRun[Any]:
        """Build the question's MAS and run it: the workflow's result, the trace, the MAS."""
        query = query_of(messages)
        mas = self.controller.construct(query, self.budget)
        return await self.runner.run(mas, query)

    def run(  # type: ignore[override]
        self, messages: Any = None, *, stream: bool = False, session: Any = None, **kwargs: Any
    ) -> Any:
        """The answer as an AgentResponse (awaitable), or with `stream=True` a ResponseStream of one update (the
        MAS answers once its decision agent has) whose final response is the same."""
        if not stream:
            return self._respond(messages)
        done: list[AgentResponse[Any]] = []

        async def updates() -> AsyncIterator[AgentResponseUpdate]:
            response = await self._respond(messages)
            done.append(response)
            yield AgentResponseUpdate(
                contents=[Content.from_text(response.text)],
                role="assistant",
                author_name=self.name,
                agent_id=self.id,
                additional_properties=response.additional_properties,
            )

        def final(_: Sequence[AgentResponseUpdate]) -> AgentResponse[Any]:
            return done[0]

        return ResponseStream(updates(), finalizer=final)

    async def _respond(self, messages: Any) -> AgentResponse[Any]:
        run = await self.answer(messages)
        trace = run.trace
        prompt = sum(agent.prompt_tokens for agent in trace.agents)
        completion = sum(agent.completion_tokens for agent in trace.agents)
        text = trace.text or (trace.answer or "")
        details = {
            "mas": run.mas.to_json(),
            "trace": trace.to_json(),
            "answer": trace.answer,
            "cost_usd": trace.cost_usd,
            "latency_s": trace.latency_s,
        }
        return AgentResponse(
            messages=[Message(role="assistant", contents=[text], author_name=self.name)],
            agent_id=self.id,
            usage_details={
                "input_token_count": prompt,
                "output_token_count": completion,
                "total_token_count": prompt + completion,
            },
            additional_properties={"agentbalance": details},
        )

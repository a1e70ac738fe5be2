"""How an agent's prompt is assembled: its role's system prompt, the query, its predecessors' messages.

Upstream text is quoted as data under a header; nothing in it changes what the runner does.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentbalance.query import Query
from agentbalance.roles import Role
from agentbalance.worlds.base import Upstream


def agent_messages(role: Role, query: Query, inputs: Sequence[Upstream]) -> list[dict[str, str]]:
    """Chat messages for one agent call (OpenAI chat format)."""
    user = f"Question:\n{query.render()}"
    if inputs:
        quoted = "\n\n".join(
            f"[{upstream.agent_id} | {upstream.role.name}]\n{upstream.completion.text}" for upstream in inputs
        )
        user += f"\n\nMessages from other agents:\n\n{quoted}"
    return [{"role": "system", "content": role.prompt}, {"role": "user", "content": user}]

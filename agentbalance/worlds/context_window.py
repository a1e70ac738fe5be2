"""Fit one agent's prompt into its backbone's context window, so a long upstream answer never makes a call fail.

A live call needs prompt + max_tokens <= context_tokens. The role prompt, the question and the execution's
note are the agent's own and are never cut: when they alone do not fit, the call fails with a clear reason
(before any request is sent, so nothing is retried or paid). What gets cut are the messages from other
agents, longest first, each to its last tokens (where an answer states its conclusion), and the conversation
before the question (oldest turns first; its system messages kept while they take at most half of its share),
behind markers that say what was cut.

Token counts, deterministic so that a rerun builds the same prompt and hits the response cache:

* an upstream message: its call's completion tokens as the server reported them (reasoning tokens, which
  the text does not contain, excluded); characters / 3 when the server reported none;
* the agent's own text (role prompt, question, note, message headers): characters / 3, more than the
  usual English estimate of 4, because the own text is never cut and must not overflow;
* a safety margin of max(32, 5% of the context window) for the chat template's tokens and estimation error.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from agentbalance.query import Turn
from agentbalance.worlds.base import AgentCall, AgentCallFailed, Upstream, agent_messages

CONSERVATIVE_CHARS_PER_TOKEN = 3
MARGIN_FRACTION = 0.05
MIN_MARGIN_TOKENS = 32
MARKER_TOKENS = 24  # the cut marker's own tokens, counted generously


@dataclass(frozen=True)
class FittedPrompt:
    """The messages of one call and, when upstream text was cut to fit, a note for the agent's trace."""

    messages: list[dict[str, str]]
    cut: str | None = None


def margin_tokens(context_tokens: int) -> int:
    """Tokens kept free in the window for the chat template and the estimates' error."""
    return max(MIN_MARGIN_TOKENS, math.ceil(MARGIN_FRACTION * context_tokens))


def text_tokens(text: str) -> int:
    """The conservative estimate of a text's tokens when no server counted them."""
    return -(-len(text) // CONSERVATIVE_CHARS_PER_TOKEN)


def upstream_tokens(upstream: Upstream) -> int:
    """An upstream message's tokens: the server's count of its visible completion, else the estimate."""
    completion = upstream.completion
    counted = completion.completion_tokens - completion.reasoning_tokens
    if counted > 0 and completion.text:
        return counted
    return text_tokens(completion.text)


def fit_prompt(call: AgentCall, context_tokens: int, max_tokens: int) -> FittedPrompt:
    """The call's messages, with the conversation and upstream messages cut so that the prompt plus `max_tokens`
    fits the window.

    The conversation before the question (if any) is cut like one more input: what is left is shared between the
    inputs, the shortest staying whole. Raises AgentCallFailed when the agent's own text and `max_tokens` leave no
    room (a per-agent error).
    """
    emptied = [replace(u, completion=replace(u.completion, text="")) for u in call.inputs]
    own = sum(text_tokens(m["content"]) for m in agent_messages(call.role, call.query, emptied, call.note, ()))
    available = context_tokens - margin_tokens(context_tokens) - max_tokens - own
    where = f"{call.backbone.name}'s context window of {context_tokens} tokens"
    turns = call.query.context
    sizes = [upstream_tokens(upstream) for upstream in call.inputs] + ([conversation_tokens(turns)] if turns else [])
    if sum(sizes) <= available:
        return FittedPrompt(call.messages)
    if available < len(sizes) * MARKER_TOKENS:
        raise AgentCallFailed(
            f"the prompt (about {own} tokens of role prompt and question) and "
            f"max_tokens {max_tokens} do not fit {where} (a margin of {margin_tokens(context_tokens)} kept); "
            "lower the backbone's max_tokens or give it a larger context_tokens"
        )
    caps = _water_fill(sizes, available - len(sizes) * MARKER_TOKENS)
    inputs = [
        _cut(upstream, size, cap) if size > cap else upstream
        for upstream, size, cap in zip(call.inputs, sizes, caps, strict=False)
    ]
    kept = cut_conversation(turns, caps[-1]) if turns and sizes[-1] > caps[-1] else turns
    cut_tokens = sum(max(size - cap, 0) for size, cap in zip(sizes, caps, strict=True))
    cut_inputs = sum(size > cap for size, cap in zip(sizes[: len(inputs)], caps, strict=False))
    parts = [f"{cut_inputs} input(s)"] if cut_inputs else []
    parts += ["the conversation"] if kept is not turns else []
    note = f"cut {cut_tokens} tokens from {' and '.join(parts)} to fit {where} with max_tokens {max_tokens}"
    return FittedPrompt(agent_messages(call.role, call.query, inputs, call.note, kept), note)


def conversation_tokens(turns: Sequence[Turn]) -> int:
    """The conservative estimate of a conversation's tokens, as it is written into the prompt."""
    return sum(text_tokens(turn.render()) + 1 for turn in turns)


def cut_conversation(turns: Sequence[Turn], keep_tokens: int) -> tuple[Turn, ...]:
    """The conversation in at most about `keep_tokens` tokens: its system messages when they take at most half
    of it (an application's instructions matter more than old turns), then the newest turns that fit, the oldest
    of them cut to its last tokens behind a marker; older turns are dropped and a marker says how many."""
    system = [turn for turn in turns if turn.role == "system"]
    if conversation_tokens(system) > keep_tokens // 2:
        system = []
    room = keep_tokens - conversation_tokens(system)
    kept: list[Turn] = []
    for turn in reversed([turn for turn in turns if turn not in system]):
        size = conversation_tokens([turn])
        if size <= room:
            kept.insert(0, turn)
            room -= size
            continue
        keep_chars = max(room, 0) * CONSERVATIVE_CHARS_PER_TOKEN - len(turn.role) - 4
        if keep_chars > 0:
            tail = turn.content[len(turn.content) - keep_chars :]
            kept.insert(0, turn.model_copy(update={"content": f"[... the start of this message was cut ...]{tail}"}))
        break
    dropped = len(turns) - len(system) - len(kept)
    marker = (
        [Turn(role="system", content=f"[... {dropped} earlier message(s) of the conversation were cut ...]")]
        if dropped
        else []
    )
    return (*system, *marker, *kept)


def _water_fill(sizes: list[int], budget: int) -> list[int]:
    """Per-input token caps summing to at most `budget`: the shortest inputs stay whole, the longest share
    what is left equally."""
    caps = list(sizes)
    remaining, open_inputs = budget, sorted(range(len(sizes)), key=lambda i: sizes[i])
    while open_inputs:
        share = remaining // len(open_inputs)
        shortest = open_inputs[0]
        if sizes[shortest] <= share:
            remaining -= sizes[shortest]
            open_inputs.pop(0)
            continue
        for index in open_inputs:
            caps[index] = max(share, 0)
        break
    return caps


def _cut(upstream: Upstream, tokens: int, keep_tokens: int) -> Upstream:
    """The upstream message with only its last `keep_tokens` tokens (by its own characters per token)."""
    text = upstream.completion.text
    keep_chars = math.floor(len(text) * keep_tokens / tokens) if tokens else 0
    kept = text[len(text) - keep_chars :] if keep_chars > 0 else ""
    marker = f"[... the first {tokens - keep_tokens} tokens of this message were cut to fit the context window ...]\n"
    return replace(upstream, completion=replace(upstream.completion, text=marker + kept))

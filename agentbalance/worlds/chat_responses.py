"""Reading what an OpenAI-compatible endpoint sent back: usage, message text, Retry-After, refused connections.

It must never raise on a malformed response: an absent or unusable field reads as None or empty.
"""

from __future__ import annotations

import email.utils
import math
from collections.abc import Mapping
from datetime import UTC, datetime


def read_usage(usage: object) -> tuple[int, int, int] | None:
    """(prompt, completion, reasoning) tokens from an OpenAI `usage` object; None when absent or unusable."""
    if not isinstance(usage, Mapping):
        return None
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if not _is_count(prompt) or not _is_count(completion):
        return None
    details = usage.get("completion_tokens_details")
    reasoning = details.get("reasoning_tokens") if isinstance(details, Mapping) else None
    return int(prompt), int(completion), int(reasoning) if _is_count(reasoning) else 0  # type: ignore[arg-type]


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def message_text(content: object) -> str:
    """A message's text: a string, or the text parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping) and p.get("type") == "text")
    return ""


def retry_after_s(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asks us to wait: `retry-after-ms`, `retry-after` in seconds or as an HTTP date."""
    milliseconds = headers.get("retry-after-ms")
    if milliseconds:
        try:
            value = float(milliseconds) / 1000
            return value if math.isfinite(value) and value >= 0 else None
        except ValueError:
            pass
    header = headers.get("retry-after")
    if not header:
        return None
    try:
        value = float(header)
        return value if math.isfinite(value) and value >= 0 else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(header)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def connection_refused(error: BaseException) -> bool:
    """Whether a connection error means nothing listens there (refused, unknown host), not a dropped link."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, ConnectionRefusedError) or type(cause).__name__ == "ConnectError":
            return True
        cause = cause.__cause__ or cause.__context__
    return False

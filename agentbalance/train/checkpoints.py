"""Restart checkpoints: a killed `build` rerun with the same command resumes after its last finished restart.

Each finished training restart is saved as `restart-K.pt` (the controller's weights) and `restart-K.json`
(its configuration, result, a SHA-256 of the weights and the fingerprint of the build's options), both
written atomically. A checkpoint of other options, or one whose weights do not match their checksum (a
torn or damaged write), is ignored and that restart is trained again; nothing is silently trusted.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
from pathlib import Path
from typing import Any

import torch

from agentbalance.files import atomic_write
from agentbalance.policy.controller import Controller, ControllerConfig
from agentbalance.train.config import TrainResult

# 2: results carry their validation score; 3: and whether they are the anchored start; 4: the pool selection's
# budget input is bumps over the log budgets (a shift and a scale), not a linear shift
CHECKPOINT_FORMAT = 4


@dataclasses.dataclass(frozen=True)
class RestartCheckpoint:
    state: dict[str, torch.Tensor]
    controller: ControllerConfig
    result: TrainResult


class RestartCheckpoints:
    """The checkpoints of one build's restarts in `folder`, valid only for builds of `fingerprint`."""

    def __init__(self, folder: Path, fingerprint: str) -> None:
        self.folder = folder
        self.fingerprint = fingerprint
        self.restored: list[int] = []  # restarts this build took from a checkpoint instead of training
        self._trained_elsewhere: set[int] = set()  # saved by this build from a worker: trained, not resumed

    def save(self, restart: int, controller: Controller, result: TrainResult) -> None:
        self.save_state(restart, RestartCheckpoint(controller.state_dict(), controller.config, result))

    def save_state(self, restart: int, checkpoint: RestartCheckpoint) -> None:
        """A restart's checkpoint from its parts (a Ray worker's result, or `save`)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        buffer = io.BytesIO()
        torch.save(checkpoint.state, buffer)
        weights = buffer.getvalue()
        atomic_write(self.folder / f"restart-{restart}.pt", weights)
        document = {
            "format": CHECKPOINT_FORMAT,
            "fingerprint": self.fingerprint,
            "sha256": hashlib.sha256(weights).hexdigest(),
            "controller": dataclasses.asdict(checkpoint.controller),
            "result": checkpoint.result.to_json(),
        }
        atomic_write(self.folder / f"restart-{restart}.json", json.dumps(document))

    def save_trained_elsewhere(self, restart: int, checkpoint: RestartCheckpoint) -> None:
        """A restart this build trained in a worker: loading it later is not a resume."""
        self.save_state(restart, checkpoint)
        self._trained_elsewhere.add(restart)

    def exists(self, restart: int) -> bool:
        """Whether a valid checkpoint of `restart` is there (it is not loaded for use)."""
        return self._read(restart) is not None

    def load(self, restart: int) -> RestartCheckpoint | None:
        """The checkpoint of a finished restart, or None when absent, of other options, or damaged."""
        checkpoint = self._read(restart)
        if checkpoint is not None and restart not in self._trained_elsewhere:
            self.restored.append(restart)
        return checkpoint

    def _read(self, restart: int) -> RestartCheckpoint | None:
        meta_path, weights_path = self.folder / f"restart-{restart}.json", self.folder / f"restart-{restart}.pt"
        if not (meta_path.is_file() and weights_path.is_file()):
            return None
        try:
            document: dict[str, Any] = json.loads(meta_path.read_text(encoding="utf-8"))
            weights = weights_path.read_bytes()
            if (
                document.get("format") != CHECKPOINT_FORMAT
                or document.get("fingerprint") != self.fingerprint
                or document.get("sha256") != hashlib.sha256(weights).hexdigest()
            ):
                return None
            state = torch.load(io.BytesIO(weights), map_location="cpu", weights_only=True)
            checkpoint = RestartCheckpoint(
                state, ControllerConfig(**document["controller"]), TrainResult.from_json(document["result"])
            )
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, RuntimeError):
            return None  # unreadable: train this restart again (the checkpoint is never trusted half-way)
        return checkpoint

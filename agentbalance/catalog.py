"""Backbone catalogs: load and validate pools/*.yaml, and derive each backbone's triple (Perf, TokCost, Lat).

A price or a score lives here and nowhere else; this module never calls an LLM.

The derived triple follows the paper's §3.1.1, with these documented proxies:

* Perf    = mean of the backbone's published scores over the benchmarks in use (0-100).
* TokCost = USD per 100 single-agent queries = 100 * (price_in * P + price_out * C * m) / 1e6, with
            P typical prompt tokens, C typical completion tokens and m the reasoning multiplier
            (1 for non-reasoning backbones). Default m = 4.0: the median completion length of the
            reasoning models in the GSM8K reasoning recordings is 510 tokens against 128 for the
            non-reasoning ones.
* Lat     = seconds per single-agent call = TTFT + C * m / decode_tps, where decode_tps is the
            catalog's figure when given, else the memory-bandwidth proxy tps_at_1b / active params
            (billions), capped at tps_cap.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agentbalance.errors import AgentBalanceError
from agentbalance.files import describe_validation_error, load_validated
from agentbalance.named import NamedCollection
from agentbalance.shipped import default_catalog_path

DEFAULT_MAX_TOKENS = 4096  # completion-token limit of a live call whose backbone and world set none
DEFAULT_REASONING_MAX_TOKENS = 16384  # the same for reasoning backbones, whose thinking is part of the completion
LIMIT_PARAMETERS = ("max_tokens", "max_completion_tokens")  # the request fields endpoints take the limit in


class CostAssumptions(BaseModel):
    """Typical token counts and speed constants behind TokCost and Lat; a catalog may override them."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    prompt_tokens: float = Field(600.0, gt=0, description="typical prompt tokens of one agent call")
    completion_tokens: float = Field(300.0, gt=0, description="typical completion tokens, non-reasoning")
    reasoning_multiplier: float = Field(4.0, ge=1, description="completion-token multiplier of reasoning models")
    ttft_s: float = Field(0.5, ge=0, description="time to first token when the backbone gives none")
    tps_at_1b: float = Field(1600.0, gt=0, description="decode tokens/s of a 1B-active model; scales as 1/params")
    tps_cap: float = Field(250.0, gt=0, description="upper bound of the decode-speed proxy, tokens/s")


class Backbone(BaseModel):
    """One candidate LLM backbone; a thinking and a non-thinking variant of one model are two backbones.

    Numbers must be finite (`.inf` in a price would make every cost infinite, `.nan` every comparison false).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    name: str = Field(min_length=1)
    model: str | None = Field(None, min_length=1, description="model id for live calls; defaults to name")
    family: str = Field(min_length=1)
    reasoning: bool
    instruct: bool | None = None
    params_active_b: float | None = Field(None, gt=0)
    params_total_b: float | None = Field(None, gt=0)
    price_in: float = Field(ge=0, description="USD per 1M input tokens")
    price_out: float = Field(ge=0, description="USD per 1M output tokens")
    decode_tps: float | None = Field(None, gt=0)
    ttft_s: float | None = Field(None, ge=0)
    typical_completion_tokens: float | None = Field(
        None, gt=0, description="measured typical completion length; replaces the assumed length and multiplier"
    )
    scores: dict[str, float] = Field(default_factory=dict)
    unanswered_share: float | None = Field(
        None,
        ge=0,
        le=1,
        description="measured share of its wrong answers to a multiple-choice question that carry no readable option "
        "letter (how its outputs parse); the simulated world's pooled 0.17 when not given",
    )
    source: str | None = None
    request: dict[str, Any] = Field(default_factory=dict, description="extra parameters of every live call")
    base_url: str | None = Field(
        None, min_length=1, description="OpenAI-compatible endpoint of this backbone's live calls; else the world's"
    )
    api_key_env: str | None = Field(
        None, description="NAME of the environment variable holding this backbone's API key (never the key)"
    )
    max_tokens: int | None = Field(
        None, ge=1, description="completion-token limit sent with every live call; else the live world's default"
    )
    max_tokens_parameter: Literal["max_tokens", "max_completion_tokens"] = Field(
        "max_tokens", description="the request field the endpoint takes the limit in (OpenAI o-series: the second)"
    )
    context_tokens: int | None = Field(
        None, ge=1, description="the backbone's context window: live prompts are cut to fit it with max_tokens"
    )

    @field_validator("scores")
    @classmethod
    def _scores_are_percentages(cls, scores: dict[str, float]) -> dict[str, float]:
        for benchmark, value in scores.items():
            if not 0 <= value <= 100:
                raise ValueError(f"score {benchmark}={value} is outside 0-100")
        return scores

    @field_validator("request")
    @classmethod
    def _json_request(cls, request: dict[str, Any]) -> dict[str, Any]:
        # every value goes into a JSON request body and the cache key: a YAML date or .nan would fail every call
        try:
            json.dumps(request, allow_nan=False)
        except (TypeError, ValueError) as error:
            raise ValueError(
                f"must hold JSON values only (strings, finite numbers, true/false, null, lists, maps): {error}"
            ) from None
        return request

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, url: str | None) -> str | None:
        if url is not None and not url.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL, e.g. https://api.deepseek.com/v1")
        return url

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, name: str | None) -> str | None:
        # the value is never echoed: a key pasted here by mistake must not reach an error message
        if name is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ValueError(
                "must name an environment variable (letters, digits, _), e.g. DEEPSEEK_API_KEY, not hold a key"
            )
        return name

    @model_validator(mode="after")
    def _consistent(self) -> Backbone:
        if (
            self.params_active_b is not None
            and self.params_total_b is not None
            and self.params_active_b > self.params_total_b * (1 + 1e-9)
        ):
            raise ValueError(f"params_active_b ({self.params_active_b}) exceeds params_total_b ({self.params_total_b})")
        if self.params_active_b is None and self.decode_tps is None:
            raise ValueError("needs params_active_b or decode_tps (the latency proxy uses one of them)")
        if self.context_tokens is not None and self.max_tokens is not None and self.max_tokens >= self.context_tokens:
            raise ValueError(
                f"max_tokens ({self.max_tokens}) must be below context_tokens ({self.context_tokens}): "
                "the prompt needs room in the context window too"
            )
        return self

    @property
    def model_id(self) -> str:
        return self.model or self.name

    def call_parameters(self, temperature: float | None, default_max_tokens: int | None = None) -> dict[str, Any]:
        """The parameters of a live call besides model and messages: the temperature, the completion limit
        (in `max_tokens_parameter`), then the backbone's `request` mapping, whose null values drop a default."""
        params: dict[str, Any] = {"temperature": temperature}
        if not any(key in self.request for key in LIMIT_PARAMETERS):
            params[self.max_tokens_parameter] = self.completion_limit(default_max_tokens)
        params.update(self.request)
        return {key: value for key, value in params.items() if value is not None}

    def completion_limit(self, default: int | None = None) -> int | None:
        """The completion tokens a live call to this backbone may use: its `request`'s own limit field if it
        sets one (None when it drops it with null), else `max_tokens`, else `default` (a world's), else
        4096 (16384 for reasoning backbones); a default never takes more than half of `context_tokens`."""
        for key in LIMIT_PARAMETERS:
            if key in self.request:
                value = self.request[key]
                return value if isinstance(value, int) else None
        if self.max_tokens is not None:
            return self.max_tokens
        limit = default or (DEFAULT_REASONING_MAX_TOKENS if self.reasoning else DEFAULT_MAX_TOKENS)
        if self.context_tokens is not None:  # a default must leave the prompt room
            limit = min(limit, self.context_tokens // 2)
        return limit

    def perf(self, benchmarks: Sequence[str]) -> float:
        """Mean published score over `benchmarks` (0-100)."""
        missing = [b for b in benchmarks if b not in self.scores]
        if missing or not benchmarks:
            raise AgentBalanceError(
                f"backbone {self.name!r} has no score for {', '.join(missing) or '(no benchmark given)'}; "
                f"it has: {', '.join(sorted(self.scores)) or 'none'}"
            )
        return sum(self.scores[b] for b in benchmarks) / len(benchmarks)

    def completion_tokens(self, assumptions: CostAssumptions) -> float:
        """Typical completion tokens of one call: the measured length when known, else the assumption."""
        if self.typical_completion_tokens is not None:
            return self.typical_completion_tokens
        multiplier = assumptions.reasoning_multiplier if self.reasoning else 1.0
        return assumptions.completion_tokens * multiplier

    def tok_cost(self, assumptions: CostAssumptions) -> float:
        """USD per 100 single-agent queries at the typical token counts."""
        usd = self.price_in * assumptions.prompt_tokens + self.price_out * self.completion_tokens(assumptions)
        return 100 * usd / 1e6

    def call_cost_usd(self, prompt_tokens: int, completion_tokens: int) -> float:
        """USD of one call with this usage at this backbone's prices (USD per 1M tokens)."""
        return (prompt_tokens * self.price_in + completion_tokens * self.price_out) / 1e6

    def decode_speed(self, assumptions: CostAssumptions) -> float:
        """Decode tokens/s: the catalog's figure, else the active-parameter proxy."""
        if self.decode_tps is not None:
            return self.decode_tps
        assert self.params_active_b is not None  # guaranteed by _consistent
        return min(assumptions.tps_cap, assumptions.tps_at_1b / self.params_active_b)

    def latency(self, assumptions: CostAssumptions) -> float:
        """Seconds for one call at the typical completion length."""
        ttft = self.ttft_s if self.ttft_s is not None else assumptions.ttft_s
        return ttft + self.completion_tokens(assumptions) / self.decode_speed(assumptions)


class _CatalogFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    backbones: list[Backbone] = Field(min_length=1)
    assumptions: CostAssumptions = Field(default_factory=CostAssumptions)


class Catalog(NamedCollection[Backbone]):
    """An ordered, validated set of backbones with unique names."""

    item_kind, collection_kind, section = "backbone", "catalog", "backbones"

    def __init__(
        self,
        backbones: Iterable[Backbone],
        assumptions: CostAssumptions | None = None,
        source: str = "<memory>",
    ) -> None:
        super().__init__(backbones, source)
        self.assumptions = assumptions or CostAssumptions()

    @classmethod
    def load(cls, path: str | Path | None = None) -> Catalog:
        """Load and validate a catalog YAML; the default is the shipped qwen3-deepseek catalog."""
        path = Path(path) if path is not None else default_catalog_path()
        parsed = load_validated(path, "catalog", _CatalogFile, "backbones")
        return cls(parsed.backbones, parsed.assumptions, source=str(path))

    @classmethod
    def from_json(cls, data: object, source: str) -> Catalog:
        """A catalog saved by `to_json` (in a run folder), validated like a catalog file."""
        entries = data.get("backbones") if isinstance(data, dict) else None
        try:
            parsed = _CatalogFile.model_validate(data)
        except ValidationError as error:
            raise AgentBalanceError(describe_validation_error(error, source, entries, section="backbones")) from None
        return cls(parsed.backbones, parsed.assumptions, source=source)

    def to_json(self) -> dict[str, Any]:
        """The catalog as a catalog file's content (JSON-ready): `from_json` gives it back unchanged."""
        return _CatalogFile(backbones=list(self.backbones), assumptions=self.assumptions).model_dump(mode="json")

    @property
    def backbones(self) -> tuple[Backbone, ...]:
        return self._items

    @cached_property
    def reliabilities(self) -> Mapping[str, float]:
        """Each backbone's chance of a right answer as the catalog states it (mean score over the benchmarks
        every backbone has, as a fraction, kept inside [0.01, 0.99]); 0.5 for all when no benchmark is common,
        so that weighing by it is a plain majority. Execution weighs votes by it; it never sees a test split."""
        common = self.common_benchmarks()
        if not common:
            return {b.name: 0.5 for b in self.backbones}
        return {b.name: min(0.99, max(0.01, b.perf(common) / 100)) for b in self.backbones}

    def subset(self, names: Iterable[str]) -> Catalog:
        """A catalog of the named backbones, in this catalog's order."""
        wanted = set(names)
        for name in wanted:
            self[name]  # raises a clear error for an unknown name
        return Catalog([b for b in self.backbones if b.name in wanted], self.assumptions, self.source)

    def common_benchmarks(self) -> list[str]:
        """Benchmarks every backbone has a score for, in first-seen order."""
        common = set(self.backbones[0].scores)
        for backbone in self.backbones[1:]:
            common &= set(backbone.scores)
        return [b for b in self.backbones[0].scores if b in common]

    def resolve_benchmarks(self, benchmarks: Sequence[str] | None) -> list[str]:
        """The benchmarks Perf averages over: the ones asked for, or all that every backbone has."""
        if benchmarks:
            return list(benchmarks)
        common = self.common_benchmarks()
        if not common:
            unscored = [b.name for b in self.backbones if not b.scores]
            verb = "has" if len(unscored) == 1 else "have"
            missing = f" ({', '.join(unscored)} {verb} no scores)" if unscored else ""
            raise AgentBalanceError(
                f"{self.source}: no benchmark is scored for every backbone{missing}, so Perf cannot be compared; "
                "give every backbone a score on one common benchmark (a replay world measures Perf itself)"
            )
        return common

    def triples(self, benchmarks: Sequence[str] | None = None) -> pd.DataFrame:
        """One row per backbone: perf (0-100), tok_cost (USD / 100 queries), lat (s), reasoning."""
        used = self.resolve_benchmarks(benchmarks)
        try:
            rows = self._triple_rows(used)
        except AgentBalanceError as error:
            raise AgentBalanceError(f"{self.source}: {error}") from None
        return pd.DataFrame(rows).set_index("name")

    def _triple_rows(self, used: Sequence[str]) -> list[dict[str, Any]]:
        return [
            {
                "name": b.name,
                "perf": b.perf(used),
                "tok_cost": b.tok_cost(self.assumptions),
                "lat": b.latency(self.assumptions),
                "reasoning": b.reasoning,
            }
            for b in self.backbones
        ]

"""Scenario YAML: pydantic models, loading, and one-line errors that name the file, line and key.

A scenario names the trace, the model and GPU, the step-time profile, the precision tiers, the
router, the SLOs and the seed (DESIGN.md §7). :func:`load_scenario` reads a YAML file and turns
every problem (YAML syntax, unknown key, wrong type, a tier whose weights do not fit in memory)
into a single :class:`~tiersim.errors.ScenarioError` line such as::

    scenarios/x.yaml: line 7: tiers[0].replica: unknown key (did you mean 'replicas'?)

Line numbers come from ``yaml.compose``: the node tree keeps each key's position, and a
pydantic error location (``("tiers", 0, "replica")``) is walked down that tree.

A scenario file is read defensively (docs/security.md): at most :data:`MAX_FILE_BYTES`, UTF-8
text only, YAML nested at most :data:`MAX_DEPTH` deep and at most :data:`MAX_NODES` values once
aliases are expanded (an alias bomb or a recursive alias is refused before anything walks it),
and every number finite and within its physical range.
The engine never sees these models; :mod:`tiersim.runner` turns them into plain engine objects.
"""

from __future__ import annotations

import datetime
import difflib
import functools
import math
import types
import typing
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictBool,
    ValidationError,
    field_validator,
    model_validator,
)

from tiersim.errors import KeyedError, ScenarioError, TiersimError, unprintable
from tiersim.numbers import (
    NumberError,
    misspelt,
    read_number,
)
from tiersim.routing.config import AccuracySpec, RouterConfig, WorkloadQualityConfig
from tiersim.scenario_checks import (
    READ_ONLY_WITH,
    UNLIKELY_AT,
    _cache_text,  # noqa: F401 - re-exported for tests
    _note_empty_levels,
    _note_linked_files,
    _short_kv_note,  # noqa: F401 - re-exported for tests
    check_layouts,
    check_scenario,
    keys_given_as,
    shown_name,
    unread_scheduler_keys,
)
from tiersim.scenario_where import (
    Loc,
    _child,
    _node_at,
    _short,
    _where,
    format_loc,
    key_path,
    line_of,
)
from tiersim.scenario_yaml import (
    _INT,
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_NODES,
    MODEL_KEYS,
    YAML_FIXES,
    TooManyValues,
    _BoundedLoader,
    _compose,
    _construct_int,
    _is_quoted,
    _read_text,
    _reading,
    _reject_non_finite,
    _yaml_reading,
    check_size,
    dump_yaml,
    read_yaml,
    read_yaml_value,
    without_quotes,
)

__all__ = [
    "DEFAULT_MAX_REPLICAS", "DEFAULT_MAX_SWEEP_POINTS", "MAX_DEPTH", "MAX_FILE_BYTES",
    "MAX_GPUS_PER_REPLICA", "MAX_GRID_POINTS", "MAX_NODES", "MAX_REPLICAS_CEILING",
    "MAX_SIZED_GPU_OPTIONS", "MODEL_KEYS", "NAMES_A_FILE", "READ_ONLY_WITH",
    "SIZED_GPUS_PER_REPLICA", "UNLIKELY_AT", "VLLM_BLOCK_SIZES", "YAML_FIXES", "DisaggConfig",
    "KVLevelConfig", "LimitsConfig", "Loc", "Name", "Scenario", "SchedulerConfig", "SloConfig",
    "SpeculativeConfig", "TierConfig", "TooManyValues", "TraceConfig", "boolean_problem",
    "check_layouts", "check_scenario", "check_size", "dump_yaml", "explain_errors", "file_keys",
    "file_places", "format_loc", "key_path", "keys_given_as", "line_in", "line_of",
    "load_scenario", "located", "misspelt_number", "model_places", "read_yaml", "read_yaml_value",
    "refuse_non_map", "refuse_text_numbers", "resolve_file_ref", "resolve_model_ref",
    "scenario_from_dict", "shown_name", "unread_scheduler_keys", "without_quotes",
]
"""The names callers import from here: this module's, and those of the modules the scenario
code is split into (:mod:`tiersim.scenario_where`, :mod:`tiersim.scenario_yaml` ...),
re-exported."""

DEFAULT_MAX_REPLICAS = 1024
"""Default of ``limits.max_replicas``: the most replicas one tier may have."""
MAX_REPLICAS_CEILING = 100_000
"""Highest ``limits.max_replicas`` a scenario may set (10^5 replicas: 13 s and 360 MB for the
tiny trace; 10^7 took 10 GB)."""
MAX_GRID_POINTS = 1_000_000
"""The most points any grid may expand to, whatever ``max_points`` allows: each point is held in
memory (and listed in ``sweep.json``) before the first runs."""
DEFAULT_MAX_SWEEP_POINTS = 10_000
"""Default of ``limits.max_sweep_points``: the most points a sweep grid may expand to."""
SIZED_GPUS_PER_REPLICA = (1, 2, 4, 8)
"""Default of ``limits.gpus_per_replica``: the GPUs per replica a sized fleet may use."""
MAX_GPUS_PER_REPLICA = 4096
"""Most GPUs one replica may have (a tier's ``gpus_per_replica``, each sized value)."""
MAX_SIZED_GPU_OPTIONS = 16
"""Most values ``limits.gpus_per_replica`` may list (each is a search of its own)."""


def _printable(name: str) -> str:
    """A name shown in tables and reports: no control or format characters (a terminal escape,
    a right-to-left override, a zero-width space would change what the reader sees), and not
    blank (spaces only: its rows and labels would read as nothing)."""
    if not name.strip():
        raise ValueError("is blank; give a name a reader can see")
    bad = unprintable(name)
    if bad is not None:
        raise ValueError(f"contains the control or format character U+{ord(bad):04X}; use "
                         "printable characters")
    return name


Name = Annotated[str, AfterValidator(_printable)]
"""A scenario, tier or offload level name (printable text)."""


def _not_blank(what: str):
    """A validator refusing an empty or all-blank file path (it would read as the working
    folder, or a file named by spaces), saying what to give instead."""
    def check(path: str) -> str:
        if not path.strip():
            raise ValueError(f"is empty; give {what}")
        return path
    return AfterValidator(check)


def _default_profile() -> str | None:
    """The shipped H200 profile's name (the default GPU's), or None (roofline) when no profile
    ships; :func:`_default_profile_for_gpu` swaps it for the scenario's GPU's."""
    try:
        from tiersim.perf import default_profile_name
    except ImportError:
        return None
    return default_profile_name()


class _Strict(BaseModel):
    """Base of every scenario model: unknown keys are errors, and so are NaN and infinities."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class TraceConfig(_Strict):
    """Which logged traffic to replay, and how (window, time scaling)."""

    path: Annotated[str, _not_blank("the trace file's path (from the scenario's folder) or a "
                                    "bundled trace's name")] = Field(
        description="trace file; relative to the scenario's folder, then traces/")
    format: Literal["auto", "azure", "burstgpt", "mooncake", "canonical"] = "auto"
    window: tuple[float, float] | None = Field(
        default=None, description="(start_s, end_s) relative to trace start, then re-zeroed"
    )
    time_scale: float = Field(default=1.0, ge=1e-3, le=1e3,
                              description="2.0 = arrivals twice as fast (0.001 to 1000)")

    @model_validator(mode="after")
    def _window_ordered(self) -> TraceConfig:
        if self.window is not None and not 0 <= self.window[0] < self.window[1]:
            raise ValueError(f"window must be [start_s, end_s] with 0 <= start < end "
                             f"(got {list(self.window)})")
        return self


class KVLevelConfig(_Strict):
    """One KV offload level beneath the GPU prefix cache (host DRAM or local SSD), per GPU of a
    replica: each GPU holds its share of the KV and moves it over its own link
    (:mod:`tiersim.engine.kv_levels`)."""

    name: Name = Field(min_length=1, max_length=32, description="e.g. host or ssd")
    capacity_gb: float = Field(ge=0, le=1e6, description="GB per GPU")
    read_gb_s: float = Field(ge=0.01, le=1e5, description="GB/s per GPU into GPU memory")
    write_gb_s: float = Field(ge=0.01, le=1e5, description="GB/s per GPU out of GPU memory")


#: The KV block sizes (tokens) vLLM's ``CacheConfig.block_size`` accepts (its ``BlockSize``
#: literal, ``vllm/config/cache.py``); a scenario naming another describes no vLLM server.
VLLM_BLOCK_SIZES = (1, 8, 16, 32, 64, 128, 256)


class SchedulerConfig(_Strict):
    """Per-replica continuous-batching limits (vLLM's names)."""

    max_num_seqs: int = Field(default=256, ge=1, le=1_000_000)
    max_num_batched_tokens: int = Field(default=8192, ge=1, le=100_000_000)
    block_size: int = Field(default=16, description="KV block size in tokens, one of "
                            "vLLM's: 1, 8, 16, 32, 64, 128 or 256")
    watermark: float = Field(default=0.01, ge=0, lt=1)
    enable_prefix_caching: StrictBool = False
    prefix_cache_fraction: float = Field(default=1.0, gt=0, le=1)
    kv_offload: list[KVLevelConfig] = Field(
        default_factory=list, max_length=4, description="offload levels beneath the prefix "
        "cache, top first (needs enable_prefix_caching)")
    kv_offload_overlap: StrictBool = Field(default=True, description="load offloaded KV layer by "
                                     "layer beneath the step's compute")
    kv_offload_recompute: StrictBool = Field(
        default=True, description="recompute a prefix found in an offload level instead of "
        "loading it when its prefill is modelled faster than the load; false: always load (a "
        "connector that always loads)")
    max_model_len: int | None = Field(
        default=None, ge=1, le=100_000_000, description="longest prompt + output a request may "
        "have, as vLLM's --max-model-len (a longer one is dropped); default: the model's context "
        "(its config's max_position_embeddings, stretched by its rope scaling as vLLM does), never "
        "above it")

    @field_validator("block_size")
    @classmethod
    def _vllm_block_size(cls, value: int) -> int:
        """Refuse a block size vLLM's server would refuse at start-up."""
        if value not in VLLM_BLOCK_SIZES:
            raise ValueError(f"must be one of vLLM's block sizes {_or(list(VLLM_BLOCK_SIZES))} "
                             f"tokens (got {value})")
        return value

    @model_validator(mode="after")
    def _offload_needs_caching(self) -> SchedulerConfig:
        names = [level.name for level in self.kv_offload]
        if "gpu" in names:  # the GPU cache's own level is named gpu in every hit figure
            raise KeyedError(("kv_offload", names.index("gpu"), "name"),
                             "'gpu' is the GPU cache's own level (its hits are reported under "
                             "that name); name the offload level otherwise, e.g. host")
        twice = next((n for i, n in enumerate(names) if n in names[:i]), None)
        if twice is not None:
            raise ValueError(f"kv_offload names the level {twice!r} twice (its hits would be "
                             "counted as one level's); name each level once")
        if self.kv_offload and not self.enable_prefix_caching:
            raise ValueError("kv_offload needs enable_prefix_caching: true (the levels hold "
                             "evicted prefix-cache blocks)")
        return self

    @model_validator(mode="after")
    def _budget_covers_batch(self) -> SchedulerConfig:
        if self.max_num_batched_tokens < self.max_num_seqs:
            raise ValueError(
                f"max_num_batched_tokens ({self.max_num_batched_tokens}) must be >= max_num_seqs "
                f"({self.max_num_seqs}) so every running request can decode each step"
            )
        return self


class SpeculativeConfig(_Strict):
    """Speculative decoding on a tier (:mod:`tiersim.engine.spec_decode`): a draft model (its own
    step times) or a draft head proposes ``k`` tokens, the target verifies them in one step."""

    k: int = Field(ge=1, le=16, description="draft tokens per step")
    acceptance: float | list[float] = Field(
        description="acceptance rate, or one per draft position (a trace column "
        "spec_acceptance overrides it per request)")
    draft_model: str | None = Field(default=None, description="draft model (bf16, the tier's "
                                    "GPUs); none: a draft head (EAGLE, MTP)")
    head_cost: float = Field(default=0.05, ge=0, le=10, description="a draft head's cost per "
                             "drafted token, as a fraction of one target decode step")

    @model_validator(mode="after")
    def _rates(self) -> SpeculativeConfig:
        rates = self.acceptance if isinstance(self.acceptance, list) else [self.acceptance]
        if len(rates) not in (1, self.k) or not all(0 <= a <= 1 for a in rates):
            raise ValueError(f"speculative acceptance must be one rate or k={self.k} rates, "
                             f"each in [0, 1] (got {self.acceptance})")
        if self.draft_model is not None and "head_cost" in self.model_fields_set:
            raise KeyedError(("head_cost",), "head_cost prices a draft head, and this block "
                             "names a draft_model (timed on its own step model); keep one")
        return self


class DisaggConfig(_Strict):
    """Prefill/decode disaggregation of a tier (:mod:`tiersim.engine.disagg`): its replicas split
    into prefill and decode pools, the prompt's KV moved between them over a link (per GPU)."""

    prefill_replicas: int = Field(ge=1, le=1_000_000)
    decode_replicas: int = Field(ge=1, le=1_000_000)
    link_gb_s: float = Field(default=50.0, ge=0.01, le=1e5, description="GB/s per GPU (400 Gb/s "
                             "InfiniBand: 50; NVLink: several hundred)")
    latency_us: float = Field(default=10.0, ge=0, le=1e7, description="per transfer")


class TierConfig(_Strict):
    """One precision tier: N identical replicas of the checkpoint at one numeric format (the
    scenario's model, or the tier's own ``model``: a cascade across different models)."""

    name: Name = Field(min_length=1, max_length=64)
    model: str | None = Field(default=None, description="this tier's model (catalogue name or "
                              "config.json); default: the scenario's")
    precision: str = Field(description="bf16, fp8, fp8_block, w4a16, nvfp4, mxfp4, or "
                           "checkpoint (the formats its config.json declares)")
    replicas: int = Field(ge=1, description="at most limits.max_replicas (default 1024)")
    gpus_per_replica: int = Field(default=1, ge=1, le=MAX_GPUS_PER_REPLICA,
                                  description="GPUs one replica "
                                  "uses in all (tensor parallel x data_parallel)")
    data_parallel: int = Field(default=1, ge=1, description="attention data-parallel ranks per "
                               "replica (vLLM --data-parallel-size); tensor parallel is "
                               "gpus_per_replica / data_parallel")
    expert_parallel: StrictBool = Field(
        default=False, description="spread MoE experts over all the replica's GPUs (vLLM "
        "--enable-expert-parallel)")
    moe_backend: Literal["auto", "deepgemm"] = Field(
        default="auto", description="routed experts' kernel: auto (the profile's MoE table, "
        "today's vLLM) or deepgemm (vLLM 0.12's image: DeepGEMM's grouped GEMM sized for every "
        "expert; block-FP8 experts tensor-parallel over fewer than 8 GPUs)")
    cost_per_gpu_hour: float = Field(ge=0, le=1e4, description="USD per GPU-hour")
    kv_dtype: str = Field(default="auto", description="KV-cache format: bf16, fp8, or auto "
                          "(vLLM's default: the format the checkpoint declares where the tier "
                          "serves the checkpoint's own formats, else bf16)")
    gpu_memory_utilization: float = Field(default=0.9, gt=0, description="share of each GPU's "
                                          "memory vLLM may use, below 1")
    scheduler: SchedulerConfig = Field(default_factory=SchedulerConfig)
    balancer: Literal["least_tokens", "round_robin", "prefix_aware"] = "least_tokens"
    accuracy: AccuracySpec = Field(
        default=None, description="mean accuracy, a table per difficulty class, or None for the "
        "per-precision prior (see tiersim.routing.config)"
    )
    output_length_multiplier: float = Field(
        default=1.0, gt=0, le=100,
        description="scales the output tokens a request emits on this tier (at most 100)"
    )
    cost_per_request_usd: float | None = Field(
        default=None, ge=0, le=1e4, description="price per request, used when cost_model is "
        "fixed_per_request"
    )


    speculative: SpeculativeConfig | None = Field(default=None, description="speculative "
                                                  "decoding (k, acceptance, draft)")
    disaggregation: DisaggConfig | None = Field(default=None, description="prefill/decode "
                                                "split of the replicas")

    @field_validator("precision", "kv_dtype")
    @classmethod
    def _format_name(cls, value: str) -> str:
        """A format's name as every reader looks it up, without case or surrounding blanks
        (``" FP8"`` is ``fp8``), so summary.json, the report and each check see one spelling
        (one check once compared the raw text and sized an FP8-KV checkpoint's cache in
        BF16)."""
        return value.strip().lower()

    @field_validator("gpu_memory_utilization")
    @classmethod
    def _below_whole_gpu(cls, value: float) -> float:
        """Refuse a share vLLM refuses at start-up: it needs the GPU's free memory to be at least
        ``gpu_memory_utilization`` of its total (``Free memory on device ... on startup is less
        than desired GPU memory utilization``), and its CUDA context already holds some, so 1
        never starts; a value above 1 is told as a share (90 is 0.9)."""
        if value < 1:
            return value
        if value == 1:
            raise ValueError("must be below 1 (got 1): vLLM refuses to start where the GPU's "
                             "free memory is less than that share of its total, and its own "
                             "CUDA context is already there; use at most 0.99")
        share = f"{value / 100:.10g} for {value:.10g} %" if 10 <= value <= 100 else "such as 0.9"
        raise ValueError(f"must be below 1 (got {value:.10g}): it is a share of the GPU's "
                         f"memory, {share}")

    @model_validator(mode="after")
    def _split_covers_replicas(self) -> TierConfig:
        split = self.disaggregation
        if split is None:
            return self
        if split.prefill_replicas + split.decode_replicas != self.replicas:
            raise ValueError(f"disaggregation: prefill_replicas + decode_replicas "
                             f"({split.prefill_replicas} + {split.decode_replicas}) must equal "
                             f"replicas ({self.replicas})")
        if self.data_parallel != 1:
            raise KeyedError(("data_parallel",), f"a disaggregated tier's data-parallel ranks "
                             f"(data_parallel {self.data_parallel}) are not modelled; set "
                             "data_parallel: 1, or remove disaggregation")
        if self.speculative is not None:
            raise KeyedError(("speculative",), "speculative decoding on a disaggregated tier "
                             "is not modelled; remove speculative, or disaggregation")
        return self

    @model_validator(mode="after")
    def _spec_budget(self) -> TierConfig:
        spec, sched = self.speculative, self.scheduler
        if spec is not None and sched.max_num_batched_tokens < sched.max_num_seqs * (spec.k + 1):
            raise ValueError(f"speculative k={spec.k} needs scheduler.max_num_batched_tokens >= "
                             f"max_num_seqs x (k + 1) = {sched.max_num_seqs * (spec.k + 1)}")
        return self

    @model_validator(mode="after")
    def _dp_divides_gpus(self) -> TierConfig:
        if self.gpus_per_replica % self.data_parallel:
            raise KeyedError(("data_parallel",),
                             f"data_parallel ({self.data_parallel}) must divide "
                             f"gpus_per_replica ({self.gpus_per_replica}); with "
                             f"{self.gpus_per_replica} GPUs it may be "
                             f"{_or(_divisors(self.gpus_per_replica))}")
        return self

    @property
    def tensor_parallel(self) -> int:
        """GPUs per data-parallel rank (tensor parallel size)."""
        return self.gpus_per_replica // self.data_parallel


class SloConfig(_Strict):
    """Latency objectives; a request meets the SLO when both of its latencies are within them."""

    ttft_p99_s: float = Field(default=2.0, gt=0, le=1e6)
    tpot_p99_s: float = Field(default=0.1, gt=0, le=1e6)


class LimitsConfig(_Strict):
    """Resource bounds a scenario may raise on purpose (docs/security.md)."""

    max_replicas: int = Field(default=DEFAULT_MAX_REPLICAS, ge=1, le=MAX_REPLICAS_CEILING,
                              description="most replicas one tier may have")
    max_sweep_points: int = Field(default=DEFAULT_MAX_SWEEP_POINTS, ge=1, le=MAX_GRID_POINTS,
                                  description="most points the sweep grid may expand to (no "
                                  "sweep holds more than 1,000,000)")
    gpus_per_replica: tuple[Annotated[int, Field(ge=1, le=MAX_GPUS_PER_REPLICA)], ...] = Field(
        default=SIZED_GPUS_PER_REPLICA, min_length=1, max_length=MAX_SIZED_GPU_OPTIONS,
        description="GPUs per replica a sized fleet may use: a plan's designs and a run's "
        "uniform baselines (each tier's own value is added)")

    @field_validator("gpus_per_replica")
    @classmethod
    def _as_set(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        """The counts ascending, each once: a set of sizes, so ``[2, 1]`` and ``[1, 2, 2]``
        are the setting ``[1, 2]`` is (a sweep refuses them as one setting under two
        labels, where it ran the same sizing twice)."""
        return tuple(sorted(set(value)))


class Scenario(_Strict):
    """A whole scenario YAML (DESIGN.md §7)."""

    name: Name = Field(default="scenario", max_length=200)
    seed: int = Field(default=0, ge=0, le=2**63 - 1)
    model: str = "Qwen3-Coder-30B-A3B"
    gpu: str = "H200"
    profile: Annotated[str, _not_blank("a profile JSON file or a bundled profile's name, or "
                                       "null for the roofline")] | None = Field(
        default_factory=_default_profile)
    trace: TraceConfig
    workload: WorkloadQualityConfig = Field(default_factory=WorkloadQualityConfig)
    tiers: list[TierConfig] = Field(min_length=1, max_length=64)
    baselines: list[TierConfig] = Field(
        default_factory=list, max_length=64, description="tiers sized and simulated only as "
        "uniform baselines for the saving (the keys of a tier; names differ from the tiers'): "
        "never routed to, never in the routed fleet or its cost")
    router: RouterConfig = Field(default_factory=RouterConfig)
    slo: SloConfig = Field(default_factory=SloConfig)
    accuracy_floor: float | None = Field(default=None, ge=0, le=1)
    accuracy_values: Literal["illustrative", "measured"] | None = Field(
        default=None, description="what the tiers' accuracy numbers are: illustrative (made up "
        "to show the tool) or measured (on your own evaluation); the accuracy source then "
        "reads 'scenario (illustrative)'")
    sweep: dict[str, Any] = Field(
        default_factory=dict, description="dotted path -> values (kept raw; tiersim.sweep "
        "expands and checks it)"
    )
    cost_model: Literal["attributed", "provisioned", "fixed_per_request"] = Field(
        default="provisioned", description="what the headline cost is: provisioned GPUs x "
        "duration x price (what you pay), busy GPU time x price (attributed), or the tiers' "
        "prices per request")
    limits: LimitsConfig = Field(default_factory=LimitsConfig)

    _source: str = PrivateAttr(default="scenario")

    @field_validator("gpu")
    @classmethod
    def _gpu_name(cls, value: str) -> str:
        """The catalogue's own name for a GPU written in another case, spacing or alias
        (``" h200 "``, ``H200_SXM``: ``H200``), so summary.json, the report and the planned
        scenario see one spelling, as a tier's precision is kept; an unknown name is kept as
        written for :func:`check_scenario` to name."""
        from tiersim.hardware import get_gpu

        try:
            return get_gpu(value).name
        except TiersimError:
            return value

    @field_validator("accuracy_floor")
    @classmethod
    def _unsigned_floor(cls, value: float | None) -> float | None:
        """``-0.0`` as 0 (a plan printed "vs floor -0.00%"); adding 0.0 leaves every other
        floor as it is."""
        return None if value is None else value + 0.0

    @field_validator("baselines", mode="before")
    @classmethod
    def _empty_baselines(cls, value: Any) -> Any:
        """``baselines:`` with every item commented out (YAML null) is no baselines; a
        baseline needs no ``replicas`` (it is sized by simulation, so the count is unused):
        left out, it is its ``disaggregation`` split's replicas, else 1."""
        if value is None:
            return []
        if isinstance(value, list):
            return [{"replicas": _split_replicas(item), **item} if isinstance(item, dict)
                    else item for item in value]
        return value

    @field_validator("sweep", mode="before")
    @classmethod
    def _empty_sweep(cls, value: Any) -> Any:
        """``sweep:`` with every axis commented out (YAML null) is no axes, as `tiersim sweep`
        reads it (its one point is the scenario)."""
        return {} if value is None else value

    @field_validator("workload", mode="before")
    @classmethod
    def _sessions_off(cls, value: Any) -> Any:
        """``workload.sessions.source: off`` as written unquoted (YAML 1.1 reads off, no and
        false as False) is ``'off'``; True (on, yes, true) names no source and is refused."""
        sessions = value.get("sessions") if isinstance(value, dict) else None
        source = sessions.get("source") if isinstance(sessions, dict) else None
        if source is False:
            return {**value, "sessions": {**sessions, "source": "off"}}
        if source is True:
            raise KeyedError(("sessions", "source"), "true (YAML reads unquoted on, yes and "
                             "true as true) names no source; write one of 'auto', 'trace', "
                             "'generate' or 'off'")
        return value

    @model_validator(mode="after")
    def _prices_for_the_cost_model(self) -> Scenario:
        unpriced = [t.name for t in self.all_tiers if t.cost_per_request_usd is None]
        if self.cost_model == "fixed_per_request" and unpriced:
            raise KeyedError(("cost_model",),
                             f"cost_model fixed_per_request needs cost_per_request_usd on every "
                             f"tier (missing on {', '.join(unpriced)})")
        return self

    @property
    def all_tiers(self) -> list[TierConfig]:
        """The routed tiers, then the baseline-only tiers (``baselines``)."""
        return [*self.tiers, *self.baselines]

    def tier_entries(self) -> list[tuple[Loc, TierConfig]]:
        """Each tier with its place in the scenario: ``("tiers", i)``, then the baseline-only
        tiers' ``("baselines", j)``."""
        return ([(("tiers", i), t) for i, t in enumerate(self.tiers)]
                + [(("baselines", j), t) for j, t in enumerate(self.baselines)])

    def with_baselines(self) -> Scenario:
        """This scenario with its baseline-only tiers listed after its tiers, as one tier list:
        what each tier's correctness is drawn over and its uniform fleets sized over."""
        return self.model_copy(update={"tiers": self.all_tiers, "baselines": []})

    @property
    def source(self) -> str:
        """The file (or name) this scenario was read from; relative trace paths start there."""
        return self._source

    @property
    def model_ref(self) -> str:
        """The model to build: a catalogue name, or a Hugging Face config.json (or its folder);
        a relative path is looked up beside the scenario file first, then from the working
        folder."""
        return self._resolve(self.model)

    def draft_model_ref(self, tier: TierConfig) -> str | None:
        """A tier's speculative draft model (resolved as ``model`` is), or None."""
        spec = tier.speculative
        return None if spec is None or spec.draft_model is None else self._resolve(
            spec.draft_model)

    def tier_model_ref(self, tier: TierConfig) -> str:
        """The model a tier serves: its own ``model`` (resolved as ``model`` is), else the
        scenario's."""
        return self._resolve(tier.model) if tier.model else self.model_ref

    def _resolve(self, model: str) -> str:
        """A catalogue name as it is; a relative config.json path beside the scenario first."""
        return resolve_model_ref(model, self._source)


def _split_replicas(tier: dict) -> int:
    """The replicas a tier map's ``disaggregation`` block splits (prefill + decode, where both
    are whole numbers), else 1: what a baseline that leaves out ``replicas`` counts."""
    split = tier.get("disaggregation")
    counts = [split.get(key) for key in ("prefill_replicas", "decode_replicas")] if isinstance(
        split, dict) else []
    if counts and all(isinstance(c, int) and not isinstance(c, bool) for c in counts):
        return sum(counts)
    return 1


def resolve_file_ref(name: str, source: str) -> str:
    """A relative file path ``name`` beside the scenario file ``source`` when a file, or a link
    that leads to none (refused as such by its reader), is there; else as given (read from the
    working folder, or a bundled name)."""
    from tiersim.paths import leads_nowhere

    path = Path(name)
    if path.is_absolute() or not Path(source).is_file() or name.startswith("~"):
        return name
    beside = Path(source).parent / path
    return str(beside) if beside.is_file() or leads_nowhere(beside) else name


def resolve_model_ref(model: str, source: str) -> str:
    """A scenario's model text as :func:`tiersim.hardware.get_model` should read it: a catalogue
    name as it is; a relative config path beside the scenario file ``source`` first (a link
    there that leads to no file too: :func:`tiersim.hardware.get_model` refuses it as such)."""
    from tiersim.paths import leads_nowhere

    path = Path(model)
    looks_like_path = (path.suffix == ".json" or len(path.parts) > 1
                       or model.startswith(("./", "../")) or model.endswith("/"))
    if looks_like_path and not path.is_absolute() and Path(source).is_file():
        beside = Path(source).parent / path
        if beside.exists() or leads_nowhere(beside):
            return str(beside)
    return model


# ---------------------------------------------------------------------------------------------
# Loading


def load_scenario(path: str | Path, fit: bool = True) -> Scenario:
    """Read, validate and memory-check a scenario YAML; any problem is one ScenarioError line.
    ``fit=False`` leaves out the check that each tier fits its GPUs per replica (the planner,
    which tries other GPU counts itself)."""
    data, root = read_yaml(path)
    return _validate(data, str(path), root, fit)


def _wants_number(annotation: Any) -> bool:
    """Whether a field's type takes numbers (int or float, also inside lists, tuples and dict
    values) and never a boolean or a nested model (which checks its own fields)."""
    seen: list[Any] = []
    stack = [annotation]
    while stack:
        kind = stack.pop()
        if kind is bool or kind is Any or (isinstance(kind, type) and issubclass(kind, BaseModel)):
            return False
        if getattr(kind, "__origin__", None) is Literal:
            if any(isinstance(arg, bool) for arg in kind.__args__):
                return False
            continue
        seen.append(kind)
        stack.extend(getattr(kind, "__args__", ()))
    return any(kind in (int, float) for kind in seen)


def _has_bool(value: Any) -> bool:
    """Whether ``value`` is a boolean or holds one in its lists, tuples or mapping values."""
    if isinstance(value, bool):
        return True
    if isinstance(value, list | tuple):
        return any(_has_bool(v) for v in value)
    if isinstance(value, dict):
        return any(_has_bool(v) for v in value.values())
    return False


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic model classes named in a field's type (``X | None``, ``list[X]``)."""
    found, stack = [], [annotation]
    while stack:
        kind = stack.pop()
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            found.append(kind)
        else:
            stack.extend(getattr(kind, "__args__", ()))
    return found


def boolean_problem(data: Any, root: yaml.Node | None = None) -> tuple[Loc, str] | None:
    """Where the raw scenario ``data`` holds a YAML boolean for a number (pydantic would read
    ``replicas: true`` as 1, ``router.tier: no`` as tier 0; walked by the fields' types), and
    why that is refused; a field that takes a name too (``router.tier``: a tier's name or
    index) says so, and names an unquoted word YAML read as a boolean (``yes``) with the
    quotes it needs (any such word, where no node tree ``root`` tells which was written)."""
    annotations: list[Any] = []

    def test(annotation: Any, value: Any, _: Loc) -> Loc | None:
        if _wants_number(annotation) and _has_bool(value):
            annotations.append(annotation)
            return ()
        return None

    where = _walk_fields(data, Scenario, (), test)
    if where is None:
        return None
    if not any(kind is str for kind in _members(annotations[0])):
        return where, "a number is expected here, not a YAML boolean (true/false)"
    reading = _yaml_reading(root, where) if root is not None else (
        "; YAML reads unquoted yes, no, on and off as booleans: quote a name ('no')")
    return where, f"a name or a number is expected here, not a YAML boolean (true/false){reading}"


def _text_number(data: Any, model: type[BaseModel], root: yaml.Node | None) -> Loc | None:
    """Where the raw ``data`` of ``model`` holds quoted text for a number (pydantic would read
    ``replicas: "2"`` as 2), or None: a field, list item or mapping value whose type takes a
    number and no text, written in quotes (or as a block scalar) in the file whose node tree is
    ``root``. A plain scalar YAML 1.1 reads as text (``010``, ``1e-3``) is a number as written
    (see :data:`_PLAIN_NUMBER`); without a node tree nothing is refused."""
    if root is None:
        return None

    def quoted(annotation: Any, value: Any, at: Loc) -> Loc | None:
        return _number_as_text(annotation, value, lambda sub: _is_quoted(root, at + sub))

    return _walk_fields(data, model, (), quoted)


def _text_for_number(data: Any, loc: Loc, root: yaml.Node | None = None) -> str:
    """Why the text at ``loc`` in the raw ``data`` is refused, with the fix when it reads as a
    number (quotes, or a ``!!str`` tag, around one)."""
    text = _value_at(data, loc)
    try:
        fix = f"; write it {without_quotes(root, loc)}" if math.isfinite(read_number(text)) else ""
    except NumberError:
        why = misspelt(text.strip())
        fix = f"; {why}" if why is not None else ""
    return f"must be a number, not a string ({text[:40]!r}){fix}"


def _value_at(data: Any, loc: Loc) -> Any:
    """The value at ``loc`` in the raw ``data``."""
    for key in loc:
        data = data[key]
    return data


def misspelt_number(data: Any) -> tuple[Loc, str] | None:
    """Where the raw scenario ``data`` holds, for a field that takes only a number, text that
    reads as a number some other way (``1__0``, ``010``, ``1:30``, ``0x10``), and why, with
    the number to write (:func:`tiersim.numbers.misspelt`); None if nowhere."""

    def misspelling(annotation: Any, value: Any, _: Loc) -> Loc | None:
        return _number_as_text(annotation, value, lambda sub: misspelt(
            _value_at(value, sub).strip()) is not None)

    where = _walk_fields(data, Scenario, (), misspelling)
    return None if where is None else (where, misspelt(_value_at(data, where).strip()))


def _walk_fields(data: Any, model: type[BaseModel], loc: Loc, test) -> Loc | None:
    """The first place in the raw ``data`` of ``model`` where ``test(annotation, value,
    place)`` finds a problem (it returns the place under the field's, or None); walks nested
    models."""
    if not isinstance(data, dict):
        return None
    fields = {name: f for name, f in model.model_fields.items()}
    fields.update({f.alias: f for f in model.model_fields.values() if f.alias})
    for key, value in data.items():
        field = fields.get(key)
        if field is None:
            continue
        found = test(field.annotation, value, loc + (key,))
        if found is not None:
            return loc + (key, *found)
        models = _models_in(field.annotation)
        if len(models) != 1:
            continue
        items = enumerate(value) if isinstance(value, list) else [(None, value)]
        for i, item in items:
            at = loc + (key,) if i is None else loc + (key, i)
            found = _walk_fields(item, models[0], at, test)
            if found is not None:
                return found
    return None


def _members(annotation: Any) -> list[Any]:
    """The types a union (or ``Annotated``) type is made of, itself otherwise."""
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return _members(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [m for arg in typing.get_args(annotation) for m in _members(arg)]
    return [annotation]


def _number_as_text(annotation: Any, value: Any, counts, sub: Loc = ()) -> Loc | None:
    """Where ``value`` holds text that ``annotation`` can only take as a number and that
    ``counts(place)`` (the place under ``value``) says to refuse: ``()`` for ``value`` itself,
    else the list index or mapping key under it; None if nowhere."""
    kinds = _members(annotation)
    if isinstance(value, str):
        text = any(k is str or k is Any or (typing.get_origin(k) is Literal and any(
            isinstance(a, str) for a in typing.get_args(k))) for k in kinds)
        wanted = not text and any(k in (int, float) for k in kinds)
        return sub if wanted and counts(sub) else None
    items = (enumerate(value) if isinstance(value, list)
             else value.items() if isinstance(value, dict) else ())
    for i, item in items:
        for kind in kinds:
            found = _number_as_text(_item_type(kind, value, i), item, counts, (*sub, i))
            if found is not None:
                return found
    return None


def _item_type(kind: Any, value: list | dict, i: Any) -> Any:
    """The type ``kind`` (a list, tuple or dict type) gives item ``i`` of ``value``; ``Any``
    where it holds no such items."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if isinstance(value, dict):
        return args[1] if origin is dict and len(args) == 2 else Any
    if origin in (list, set, frozenset) and args:
        return args[0]
    if origin is tuple and args:
        return args[0] if len(args) == 2 and args[1] is Ellipsis else (
            args[i] if i < len(args) else Any)
    return Any


def refuse_non_map(data: Any, source: str, root: yaml.Node | None) -> None:
    """Refuse a scenario file that is not a map of keys, saying what it is: an empty file (or
    only comments), ``null``, a list... (``root``: the file's node tree, none when empty)."""
    if isinstance(data, dict):
        return
    got = type(data).__name__
    if data is None:
        got = "null" if isinstance(root, yaml.Node) else "an empty file"
    raise ScenarioError(source, "", f"top level must be a mapping of keys (got {got})")


def refuse_text_numbers(data: Any, source: str, root: yaml.Node | None) -> None:
    """Refuse, at its line, quoted text where the scenario takes a number (``replicas: "2"``,
    which pydantic would read as 2), as :func:`load_scenario` does; ``root``: the file's node
    tree (:func:`read_yaml`). For a reader that validates the data later without it (a sweep
    validates each point from a dict)."""
    where = _text_number(data, Scenario, root)
    if where is not None:
        raise ScenarioError(source, _where(where, root), _text_for_number(data, where, root))
    problem = misspelt_number(data)
    if problem is not None:
        raise ScenarioError(source, _where(problem[0], root), problem[1])


def scenario_from_dict(data: dict, source_name: str) -> Scenario:
    """Validate a scenario given as a dict (e.g. one sweep point); errors name ``source_name``."""
    return _validate(data, source_name, None)


def _validate(data: Any, source: str, root: yaml.Node | None, fit: bool = True) -> Scenario:
    """Build the Scenario, then run the checks that need the hardware catalogue."""
    refuse_non_map(data, source, root)
    boolean = boolean_problem(data, root)
    if boolean is not None:
        raise ScenarioError(source, _where(boolean[0], root), boolean[1])
    refuse_text_numbers(data, source, root)
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as err:
        first, loc = _most_telling(err.errors(), data)
        if tuple(first["loc"])[-1:] == ("[key]",) and isinstance(first["input"], int) and loc:
            raise ScenarioError(source, *_number_key(loc, root)) from None
        raise ScenarioError(source, _where(loc, root), _explain(first, loc)
                            + _reading(first["type"], root, loc),
                            refused_as=None if root is not None else first["type"]) from None
    scenario._source = source
    _reject_non_finite(scenario.model_dump(by_alias=True), source, root, ())
    _check_limits(scenario, source, root)
    _default_profile_for_gpu(scenario)
    if scenario.profile is not None:  # a profile file beside the scenario, as models are found
        scenario.profile = resolve_file_ref(scenario.profile, source)
    problem = check_scenario(scenario, fit)
    if problem is not None:
        loc, message = problem
        raise ScenarioError(source, _where(loc, root), message)
    _note_empty_levels(scenario, source, root)
    _note_linked_files(data, source)
    return scenario


def _number_key(loc: Loc, root: yaml.Node | None) -> tuple[str, str]:
    """Where and why a whole number key ``loc[-1]`` of a map keyed by names (``fractions:
    {0: 0.5}``) is refused: named at the map, the key as the file writes it (``0x1``, not 1)
    on its own line; pydantic's location read as a list index (``fractions[0]``), where a
    list is often accepted too."""
    key, written, line = loc[-1], str(loc[-1]), None
    holder = None if root is None else _node_at(root, loc[:-1])
    if isinstance(holder, yaml.MappingNode):
        loader = _BoundedLoader("")
        for node, _ in holder.value:
            if isinstance(node, yaml.ScalarNode) and node.tag == _INT and (
                    _construct_int(loader, node) == key):
                written, line = node.value, node.start_mark.line + 1
                break
    path = format_loc(loc[:-1])
    where = f"line {line}: {path}" if line is not None else _where(loc[:-1], root)
    return where, (f"key {_short(written, 40)} is a number, where the keys are names; write "
                   f"the name, or quote it ({_short(written, 40)!r}) if it is one")


def _check_limits(scenario: Scenario, source: str, root: yaml.Node | None) -> None:
    """Refuse a tier larger than ``limits.max_replicas`` (a typo like 100000000 would take
    all memory), or whose replicas' data-parallel ranks, each an engine replica of its own,
    number more than :data:`MAX_REPLICAS_CEILING` (1,024 replicas of 4,096 ranks ran out of
    memory building them)."""
    limit = scenario.limits.max_replicas
    for at, tier in scenario.tier_entries():
        if tier.replicas > limit:
            raise ScenarioError(source, _where((*at, "replicas"), root),
                                f"{tier.replicas} replicas is above limits.max_replicas "
                                f"({limit}); set limits: {{max_replicas: N}} to allow more")
        engines = tier.replicas * tier.data_parallel
        if engines > MAX_REPLICAS_CEILING:  # each data-parallel rank is a scheduler of its own
            raise ScenarioError(source, _where((*at, "data_parallel"), root),
                                f"{tier.replicas:,} replicas x data_parallel "
                                f"{tier.data_parallel:,} make {engines:,} engine replicas, "
                                f"above the {MAX_REPLICAS_CEILING:,} tiersim simulates in one "
                                "tier (each data-parallel rank schedules on its own); lower "
                                "replicas or data_parallel")


def _default_profile_for_gpu(scenario: Scenario) -> None:
    """A scenario that names no profile gets the one shipped for its GPU (H200, H100, B200:
    NVIDIA's measured tables); a GPU with none runs on the roofline (and says so), rather than
    failing on a profile the user never asked for."""
    if "profile" in scenario.model_fields_set or scenario.profile is None:
        return
    from tiersim.perf import default_profile_name

    try:
        scenario.profile = default_profile_name(scenario.gpu)
    except TiersimError:
        return  # check_scenario reports the unknown GPU


def explain_errors(errors: list[dict], data: Any, prefix: Loc = ()) -> tuple[Loc, str]:
    """The one pydantic error of ``errors`` (validating ``data``, found at ``prefix`` inside a
    scenario) to show, as its location from the scenario's top and a short instruction, the
    way scenario files are told (an unknown key with the nearest known one ...)."""
    first, loc = _most_telling(errors, data)
    return prefix + loc, _explain(first, prefix + loc)


def _most_telling(errors: list[dict], data: Any) -> tuple[dict, Loc]:
    """The one error to show: an unknown key first (it often explains a missing one), else the
    deepest location (inside a union, the member that matches the input's shape)."""
    located = [(e, _clean_loc(tuple(e["loc"]) + _key_of(e), data, e["type"])) for e in errors]
    unknown = [pair for pair in located if pair[0]["type"] == "extra_forbidden"]
    if unknown:
        return unknown[0]
    return max(located, key=lambda pair: len(pair[1]))


def _key_of(error: dict) -> Loc:
    """The key a :class:`KeyedError` names (empty for any other error)."""
    return tuple(getattr((error.get("ctx") or {}).get("error"), "key", ()))


def _divisors(n: int) -> list[int]:
    """The divisors of ``n``, ascending."""
    return [d for d in range(1, n + 1) if n % d == 0]


def _or(values: list[int]) -> str:
    """``1, 2 or 4``."""
    text = [str(v) for v in values]
    return text[0] if len(text) == 1 else ", ".join(text[:-1]) + " or " + text[-1]


def _clean_loc(loc: Loc, data: Any, kind: str) -> Loc:
    """Drop location parts that are not in the data (pydantic's union-member tags).

    A missing key is the one part kept although absent: it is the key to add.
    """
    kept: list[str | int] = []
    node = data
    for i, part in enumerate(loc):
        if _has(node, part):
            node = node[part]
        elif not (kind == "missing" and i == len(loc) - 1):
            continue
        kept.append(part)
    return tuple(kept)


def _has(node: Any, part: str | int) -> bool:
    """Whether ``node[part]`` exists in plain YAML data (a dict key or a list index)."""
    if isinstance(node, dict):
        return part in node
    return isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)


def located(err: ScenarioError) -> ScenarioError:
    """``err`` with the line of its key path in its scenario file, where it names none (checks
    run after loading, such as a tier's accuracy prior, know the path but not the line, and so
    does a scenario read from a dict: a sweep's base or point), and, for a value read from a
    dict, how YAML read what the file writes there (:func:`_reading`), as a run of the file
    says it; the error itself where the file cannot be read again or does not hold the
    path's first key."""
    where = err.where
    loc = key_path(where)
    root = None if loc is None else _file_root(err.path, loc)
    if root is None:
        return err
    reading = "" if err.refused_as is None else _reading(err.refused_as, root, loc)
    return ScenarioError(err.path, f"line {line_of(root, loc)}: {where}", err.message + reading)


def line_in(source: str, loc: Loc) -> int | None:
    """The line of ``loc`` (its deepest existing part) in the scenario file ``source``; None
    where the file is no YAML file that can be read again or lacks ``loc``'s first key."""
    root = _file_root(source, loc)
    return None if root is None else line_of(root, loc)


def _file_root(source: str, loc: Loc) -> yaml.Node | None:
    """The node tree of the scenario file ``source``, read again; None where it is no YAML
    file that can be read again or lacks ``loc``'s first key."""
    if not loc or not source.endswith((".yaml", ".yml")):
        return None
    try:
        root = _compose(_read_text(Path(source), source), source)
    except (TiersimError, OSError):
        return None
    return None if _child(root, loc[0]) is None else root


# ---------------------------------------------------------------------------------------------
# Error wording


def _explain(error: dict, loc: Loc) -> str:
    """A pydantic error as a short instruction: what is wrong and what is accepted."""
    kind, ctx, got = error["type"], error.get("ctx") or {}, error.get("input")
    if kind == "extra_forbidden":
        return "unknown key" + _suggest(loc)
    if kind == "missing":
        if loc and isinstance(loc[-1], int):
            return "value missing: the list is too short"
        return "required key is missing"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return f"must be a mapping of keys (got {_got(got)})"
    if kind in ("list_type", "tuple_type"):
        return f"must be a list (got {_got(got)})"
    bounds = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<=",
              "less_than": "<"}
    if kind in bounds:
        limit = next(iter(ctx.values()))
        return f"must be {bounds[kind]} {limit} (got {_got(got)})"
    if kind == "finite_number":
        return f"must be a finite number (got {_got(got)})"
    if kind == "int_parsing_size" and isinstance(got, float):
        return _beyond_int(got, loc)
    if kind in ("bool_type", "bool_parsing"):
        return f"must be true or false (got {_got(got)})"
    if kind == "literal_error":
        return f"must be one of {ctx['expected']} (got {_got(got)})"
    if kind == "too_short":
        return f"must have at least {ctx['min_length']} item(s)"
    if kind == "value_error":
        return _short(" ".join(str(ctx.get("error", error["msg"])).split()), 300)
    message = error["msg"]
    return f"{message[:1].lower()}{message[1:]} (got {_got(got)})"


def _beyond_int(got: float, loc: Loc) -> str:
    """Why a whole number written with an exponent beyond 2**63 (``max_replicas: 1e30``, which
    pydantic reads as no integer, "exceeded maximum size") is refused: as the same number in
    digits is, by the key's bound (``must be <= 100000``), or, where the key has none, with
    the number to write."""
    low, high = _int_bounds(loc)
    if high is not None and got > high:
        return f"must be <= {high} (got {_got(got)})"
    if low is not None and got < low:
        return f"must be >= {low} (got {_got(got)})"
    return (f"must be a whole number (got {_got(got)}: written with an exponent, one must be "
            "below 2**63); write it in digits")


def _int_bounds(loc: Loc) -> tuple[Any, Any]:
    """The ``ge`` and ``le`` bounds of the whole-number key at ``loc`` (a list's item: its
    items'), each None where the key sets none or is no scenario key."""
    model, info = Scenario, None
    for part in loc:
        if isinstance(part, int):
            continue
        fields = _keys_of(model) if _is_model(model) else {}
        if part not in fields:
            return None, None
        info = fields[part]
        model = _model_in(info.annotation)
    if info is None:
        return None, None
    marks = list(info.metadata)
    if isinstance(loc[-1], int):  # limits.gpus_per_replica[0]: tuple[Annotated[int, ...]]
        marks = [mark for kind in typing.get_args(info.annotation)
                 if typing.get_origin(kind) is Annotated
                 for extra in typing.get_args(kind)[1:]
                 for mark in getattr(extra, "metadata", [extra])]
    low = next((mark.ge for mark in marks if hasattr(mark, "ge")), None)
    high = next((mark.le for mark in marks if hasattr(mark, "le")), None)
    return low, high


def _got(value) -> str:
    """A value a key was given, as an error line quotes it: its ``repr`` cut short, but a date
    or time YAML read from an unquoted ``2024-01-01`` as written, saying so (a ``repr`` such as
    ``datetime.date(2024, 1, 1)`` names no YAML the user wrote)."""
    if isinstance(value, (datetime.date, datetime.time)):
        return f"{value.isoformat()}, which YAML reads unquoted as a date or time"
    return _short(repr(value))


def _suggest(loc: Loc) -> str:
    """`` (did you mean 'x'?)`` for a misspelt key, from the fields of the model at ``loc``; a
    known key with white space at either end is told so."""
    fields = _fields_at(loc[:-1])
    bare = str(loc[-1]).strip()
    if bare != str(loc[-1]) and bare in fields:
        return f" ({bare!r} with white space at its start or end; remove the space)"
    close = difflib.get_close_matches(str(loc[-1]), fields, n=1, cutoff=0.6)
    if close:
        return f" (did you mean {close[0]!r}?)"
    return f" (known keys: {', '.join(sorted(fields))})" if fields else ""


def _fields_at(loc: Loc) -> list[str]:
    """Field names of the pydantic model reached by following ``loc`` from Scenario."""
    model: Any = Scenario
    for part in loc:
        if isinstance(part, int):
            continue
        fields = _keys_of(model) if _is_model(model) else {}
        if part not in fields:
            return []
        model = _model_in(fields[part].annotation)
    return list(_keys_of(model)) if _is_model(model) else []


def _keys_of(model: type[BaseModel]) -> dict[str, Any]:
    """A model's YAML keys (aliases where set) mapped to their fields."""
    return {field.alias or name: field for name, field in model.model_fields.items()}


def _is_model(obj: Any) -> bool:
    return isinstance(obj, type) and issubclass(obj, BaseModel)


NAMES_A_FILE = frozenset({(TraceConfig, "path"), (Scenario, "model"), (Scenario, "profile"),
                          (TierConfig, "model"), (SpeculativeConfig, "draft_model")})
"""The scenario keys that may name an input file (the trace, a model's config.json, a draft
model's, the profile), by the model that holds each; :func:`file_keys` finds where they sit."""


@functools.cache
def file_keys(model: Any = Scenario,
              inside: frozenset = frozenset()) -> tuple[tuple[str, ...], ...]:
    """The key paths from ``model`` to each key of :data:`NAMES_A_FILE`, ``"*"`` for an item of
    a list (``("trace", "path")``, ``("tiers", "*", "model")``, ``("baselines", "*",
    "speculative", "draft_model")`` ...), found by walking the schema, so every list of tiers
    is found without a second list to keep. ``inside``: the models on the way (a model that
    holds itself is walked once)."""
    found = []
    for name, field in model.model_fields.items():
        key = field.alias or name
        if (model, name) in NAMES_A_FILE:
            found.append((key,))
        held = _model_in(field.annotation)
        if held is not None and held not in inside:
            step = (key, "*") if _holds_items(field.annotation) else (key,)
            found += [(*step, *rest) for rest in file_keys(held, inside | {model})]
    return tuple(found)


def file_places(doc: Any, keys: tuple[tuple[str, ...], ...] | None = None
                ) -> list[tuple[tuple[str | int, ...], dict[str, Any]]]:
    """``(place, holder)`` for each key of :func:`file_keys` (or of ``keys``) that a scenario
    document ``doc`` sets: its place with each ``"*"`` a list item's position (``("tiers", 1,
    "speculative", "draft_model")``), and the map that holds it (``holder[place[-1]]`` is its
    value). In the keys' order, an item's keys together (a tier's model, then its draft
    model, then the next tier's); a value of another type than the schema's is passed over."""
    keys = file_keys() if keys is None else keys
    found: list[tuple[tuple[str | int, ...], dict[str, Any]]] = []
    for step in dict.fromkeys(key[0] for key in keys):
        rest = tuple(key[1:] for key in keys if key[0] == step and len(key) > 1)
        if step == "*":
            items = enumerate(doc if isinstance(doc, list) else [])
            found += [((at, *place), holder) for at, item in items
                      for place, holder in file_places(item, rest)]
        elif isinstance(doc, dict) and step in doc:
            if (step,) in keys:
                found.append(((step,), doc))
            found += [((step, *place), holder) for place, holder in file_places(doc[step], rest)]
    return found


def model_places(doc: Any) -> list[tuple[tuple[str | int, ...], dict[str, Any]]]:
    """:func:`file_places` of the keys that name a model (:data:`MODEL_KEYS`: a catalogue name
    or a config path): the scenario's, each tier's and baseline-only tier's, their drafts'."""
    return [(place, holder) for place, holder in file_places(doc) if place[-1] in MODEL_KEYS]


def _holds_items(annotation: Any) -> bool:
    """Whether ``annotation`` is a list or map (of models), possibly optional."""
    origin = typing.get_origin(annotation)
    if origin in (list, tuple, dict):
        return True
    return any(_holds_items(arg) for arg in typing.get_args(annotation)
               if typing.get_origin(arg) is not None)


def _model_in(annotation: Any) -> Any:
    """The BaseModel class inside an annotation like ``list[TierConfig]`` or ``X | None``."""
    if _is_model(annotation):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_in(arg)
        if found is not None:
            return found
    return None

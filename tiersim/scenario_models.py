"""The scenario's pydantic models: what a scenario YAML may hold, with each key's type and range.

A scenario names the trace, the model and GPU, the step-time profile, the precision tiers, the
router, the SLOs and the seed (DESIGN.md §7). :class:`Scenario` is the whole file; unknown keys,
NaN and infinities are errors in every model (:class:`_Strict`), and each validator's message is
worded for the one error line :func:`tiersim.scenario.load_scenario` prints. The limits a
scenario may set (``limits``) and their ceilings are here too. The engine never sees these
models; :mod:`tiersim.runner` turns them into plain engine objects.
"""

from __future__ import annotations

import numbers
import types
import typing
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictBool,
    field_validator,
    model_validator,
)

from tiersim.errors import (
    KeyedError,
    TiersimError,
    percent_hint,
    unprintable,
    unprintable_words,
    yaml_written,
)
from tiersim.limits import (  # noqa: F401  (the scenario's names for them)
    DEFAULT_MAX_REPLICAS,
    DEFAULT_MAX_SWEEP_POINTS,
    MAX_GPUS_PER_REPLICA,
    MAX_GRID_POINTS,
    MAX_REPLICAS_CEILING,
    MAX_SIZED_GPU_OPTIONS,
    SIZED_GPUS_PER_REPLICA,
)
from tiersim.routing.config import AccuracySpec, RouterConfig, WorkloadQualityConfig
from tiersim.scenario_where import Loc


def _printable(name: str) -> str:
    """A name shown in tables and reports: no control or format characters (a terminal escape,
    a right-to-left override, a zero-width space would change what the reader sees), and not
    blank (spaces only: its rows and labels would read as nothing)."""
    if not name.strip():
        raise ValueError("is blank; give a name a reader can see")
    bad = unprintable(name)
    if bad is not None:
        raise ValueError(f"contains {unprintable_words(bad)}; use printable characters")
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
    ships; :func:`~tiersim.scenario._default_profile_for_gpu` swaps it for the scenario's GPU's."""
    try:
        from tiersim.perf import default_profile_name
    except ImportError:
        return None
    return default_profile_name()


class _Strict(BaseModel):
    """Base of every scenario model: unknown keys are errors, and so are NaN and infinities."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


SKIP_MOST = 100_000_000
"""The largest ``trace.skip_longer_than`` (tokens), as ``scheduler.max_model_len``'s."""


class TraceConfig(_Strict):
    """Which logged traffic to replay, and how (window, time scaling)."""

    path: Annotated[str, _not_blank("the trace file's path (from the scenario's folder) or a "
                                    "bundled trace's name")] = Field(
        description="trace file; relative to the scenario's folder, then traces/")
    format: Literal["auto", "azure", "burstgpt", "mooncake", "canonical"] = "auto"
    window: tuple[float, float] | None = Field(
        default=None, description="(start_s, end_s) relative to trace start, on the times as "
        "written (cut before time_scale divides them), then re-zeroed"
    )
    time_scale: float = Field(default=1.0, ge=1e-3, le=1e3,
                              description="2.0 = arrivals twice as fast (0.001 to 1000)")
    skip_longer_than: int | None = Field(
        default=None, description="leave out at load the requests longer "
        "(prompt + output tokens) than this, as vLLM refuses them at its API whatever the "
        "fleet (e.g. the model's context, 163840); a note says how many; default: none")

    @field_validator("skip_longer_than", mode="before")
    @classmethod
    def _skip_tokens(cls, value: object) -> object:
        """Refuse a ``skip_longer_than`` that is not a whole number of tokens from 1 to
        :data:`SKIP_MOST`, saying what to give (pydantic's words named no fix)."""
        if value is None or (isinstance(value, int) and not isinstance(value, bool)
                             and 1 <= value <= SKIP_MOST):
            return value
        raise KeyedError((), "must be a whole number of tokens (prompt + output), from 1 to "
                         f"{SKIP_MOST:,}: the longest request to keep, e.g. the model's "
                         "context (163840), or remove the key to keep every request (got "
                         "{got})", {"got": ((), value)})  # as the file writes it (2e9, not
        # 2000000000.0)

    @field_validator("window")
    @classmethod
    def _window_ordered(cls, window: tuple[float, float] | None) -> tuple[float, float] | None:
        """Refuse a window whose start is not at or after 0 and before its end, at the window's
        own key and line (it was named at ``trace:``'s, its numbers as floats: 360.0)."""
        if window is not None and not 0 <= window[0] < window[1]:
            shown = [int(v) if v.is_integer() and abs(v) < 1e16 else v for v in window]
            raise KeyedError((), "must be [start_s, end_s] with 0 <= start < end (got "
                             "{window})", {"window": ((), shown)})  # as the file writes it
        return window


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
            raise KeyedError((), f"must be one of vLLM's block sizes "
                             f"{_or(list(VLLM_BLOCK_SIZES))} tokens (got {{size}})",
                             {"size": ((), value)})  # as the file writes it: 12.0, not 12
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
            values = {"seqs": (("max_num_seqs",), self.max_num_seqs),
                      "tokens": (("max_num_batched_tokens",), self.max_num_batched_tokens)}
            if "max_num_batched_tokens" not in self.model_fields_set:  # the default's too few
                raise KeyedError(("max_num_seqs",), "must be <= max_num_batched_tokens ({tokens}, "
                                 "its default) so every running request can decode each step "
                                 "(got {seqs}); lower it, or raise max_num_batched_tokens",
                                 values)
            raise KeyedError(("max_num_batched_tokens",), "must be >= max_num_seqs ({seqs}) so "
                             "every running request can decode each step (got {tokens})", values)
        return self


class SpeculativeConfig(_Strict):
    """Speculative decoding on a tier (:mod:`tiersim.engine.spec_decode`): a draft model (its own
    step times) or a draft head proposes ``k`` tokens, the target verifies them in one step."""

    k: int = Field(ge=1, le=16, description="draft tokens per step")
    acceptance: float | list[float] = Field(
        description="acceptance rate of each draft position given the ones before it were "
        "accepted (not vLLM's accepted / drafted: docs/serving.md in tiersim's source "
        "repository), one for all or one per "
        "draft position (a trace column spec_acceptance overrides it per request)")
    draft_model: str | None = Field(default=None, description="draft model (bf16, the tier's "
                                    "GPUs); none: a draft head (EAGLE, MTP)")
    head_cost: float = Field(default=0.05, ge=0, le=10, description="a draft head's cost per "
                             "drafted token, as a fraction of one target decode step")

    @model_validator(mode="after")
    def _rates(self) -> SpeculativeConfig:
        rates = self.acceptance if isinstance(self.acceptance, list) else [self.acceptance]
        if len(rates) not in (1, self.k) or not all(0 <= a <= 1 for a in rates):
            # 70 for 0.7: a rate written as a percent; one of at most k + 1 may be the tokens
            # per step or the mean acceptance length, so it is not called a percent
            over = [a for a in rates if a > self.k + 1]
            hint = percent_hint(over[0]) if len(rates) in (1, self.k) and over else ""
            raise KeyedError(("acceptance",), "must be one rate or k={k} rates, each in "
                             "[0, 1] (got {acceptance})" + hint,
                             {"k": (("k",), self.k),
                              "acceptance": (("acceptance",), self.acceptance)})
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


def _written_share(given: Any, value: float) -> str:
    """A ``gpu_memory_utilization`` as the scenario writes it (:func:`yaml_written`: a number
    read from text keeps that text), with the float it reads as where that differs
    (``0.99999999999999999999, 1 as a float``); the float alone for a value given as text."""
    if not isinstance(given, int | float) or isinstance(given, bool):
        return f"{value:.10g}"
    written = yaml_written(given)
    if not isinstance(getattr(given, "text", None), str):  # written as the float it reads as
        return written
    return f"{written}, {value:.10g} as a float"


class TierConfig(_Strict):
    """One precision tier: N identical replicas of the checkpoint at one numeric format (the
    scenario's model, or the tier's own ``model``: a cascade across different models)."""

    name: Name = Field(min_length=1, max_length=64)
    model: str | None = Field(default=None, description="this tier's model (catalogue name or "
                              "config.json); default: the scenario's")
    precision: str = Field(description="bf16, fp8, fp8_block, w4a16, nvfp4, mxfp4, or "
                           "checkpoint (the formats its config.json declares)")
    replicas: int = Field(ge=1, description="1 or more, at most limits.max_replicas (default "
                          "1024)")  # ge=1 too: :meth:`_runs` says why first
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

    @field_validator("replicas", mode="before")
    @classmethod
    def _runs(cls, value: Any) -> Any:
        """At least one replica, saying how to keep a tier out of the fleet where 0 was written
        for it: "zero drops a tier" is the planner's word (README), and a planner writing
        ``replicas: 0`` for a candidate tier was told only "must be >= 1 (got 0)". A whole number
        below 1 is quoted as the file writes it (``0e0``, ``-2.0``); anything else goes on to
        the integer checks."""
        if _whole_below_one(value):
            raise KeyedError((), "must be >= 1 (got {got}): a tier runs 1 replica or more; to "
                             "keep a tier out of the routed fleet, move it under baselines: "
                             "(sized only as a uniform fleet for the saving) or remove it "
                             "(tiersim plan chooses every tier's replicas, zero included, "
                             "whatever count is written)", {"got": ((), value)})
        return value

    @field_validator("gpu_memory_utilization", mode="wrap")
    @classmethod
    def _below_whole_gpu(cls, given: Any, handler) -> float:
        """Refuse a share vLLM refuses at start-up: it needs the GPU's free memory to be at least
        ``gpu_memory_utilization`` of its total (``Free memory on device ... on startup is less
        than desired GPU memory utilization``), and its CUDA context already holds some, so 1
        never starts; a value above 1 is told as a share (90 is 0.9). The value is quoted as
        written (``given``, before it is read as a float): ``0.99999999999999999999`` read
        "(got 1)", a number not written, where the float it reads as is 1."""
        value = handler(given)
        if value < 1:
            return value
        got = _written_share(given, value)
        # the value as the file writes it where there is one (2e9, not 2000000000.0)
        told = {"got": ((), given)} if isinstance(given, int | float) and not isinstance(
            given, bool) and not isinstance(getattr(given, "text", None), str) else None
        got = "{got}" if told else got  # (without values, a message is shown as it is)
        if value == 1:
            raise KeyedError((), f"must be below 1 (got {got}): vLLM refuses to start where the "
                             "GPU's free memory is less than that share of its total, and its "
                             "own CUDA context is already there; use at most 0.99", told)
        share = f"{value / 100:.10g} for {value:.10g} %" if 10 <= value <= 100 else "such as 0.9"
        raise KeyedError((), f"must be below 1 (got {got}): it is a share of the GPU's "
                         f"memory, {share}", told)

    @model_validator(mode="after")
    def _split_covers_replicas(self) -> TierConfig:
        split = self.disaggregation
        if split is None:
            return self
        if split.prefill_replicas + split.decode_replicas != self.replicas:
            raise KeyedError(("disaggregation",), "prefill_replicas + decode_replicas "
                             "({prefill} + {decode}) must equal replicas ({replicas})",
                             {"prefill": (("disaggregation", "prefill_replicas"),
                                          split.prefill_replicas),
                              "decode": (("disaggregation", "decode_replicas"),
                                         split.decode_replicas),
                              "replicas": (("replicas",), self.replicas)})
        if self.data_parallel != 1:
            raise KeyedError(("data_parallel",), "a disaggregated tier's data-parallel ranks "
                             "(data_parallel {dp}) are not modelled; set data_parallel: 1, or "
                             "remove disaggregation",
                             {"dp": (("data_parallel",), self.data_parallel)})
        if self.speculative is not None:
            raise KeyedError(("speculative",), "speculative decoding on a disaggregated tier "
                             "is not modelled; remove speculative, or disaggregation")
        return self

    @model_validator(mode="after")
    def _spec_budget(self) -> TierConfig:
        spec, sched = self.speculative, self.scheduler
        if spec is not None and sched.max_num_batched_tokens < sched.max_num_seqs * (spec.k + 1):
            raise KeyedError(("speculative", "k"), "speculative k={k} needs "
                             "scheduler.max_num_batched_tokens >= max_num_seqs x (k + 1) = "
                             f"{sched.max_num_seqs * (spec.k + 1)}",
                             {"k": (("speculative", "k"), spec.k)})
        return self

    @model_validator(mode="after")
    def _dp_divides_gpus(self) -> TierConfig:
        if self.gpus_per_replica % self.data_parallel:
            raise KeyedError(("data_parallel",),
                             "data_parallel ({dp}) must divide gpus_per_replica ({gpus}); with "
                             f"{self.gpus_per_replica} GPUs it may be "
                             f"{_or(_divisors(self.gpus_per_replica))}",
                             {"dp": (("data_parallel",), self.data_parallel),
                              "gpus": (("gpus_per_replica",), self.gpus_per_replica)})
        return self

    @property
    def tensor_parallel(self) -> int:
        """GPUs per data-parallel rank (tensor parallel size)."""
        return self.gpus_per_replica // self.data_parallel


class SloConfig(_Strict):
    """Latency objectives; a request meets the SLO when both of its latencies are within them.

    ``scope``: what the p99 limits hold. ``fleet`` (the default): the p99 over all the fleet's
    requests, so a tier's share may see worse (a run and a plan note such a tier). ``tier``:
    each tier's own p99 too, so no class of requests the router sends apart, such as the hard
    ones sent to the top tier, is served slower than the limit (a plan sizes every tier to it;
    a run that misses it in a tier misses its SLOs).

    ``e2e_p99_s`` (optional, no limit by default): the p99 end-to-end latency of a request,
    arrival to last token. Each agent turn is one request, so this is the limit per turn an
    agent waits on; a cascade's escalated request counts both passes. It is held over the
    fleet's requests, and under ``tier`` over each tier's own too (a request is its final
    tier's, as for the tier's TTFT and TPOT; under ``fleet`` a tier over it is noted).

    ``session_p99_s`` (optional, agent sessions only): the p99 over tasks of a task's latency,
    its first step's arrival to its last step's finish (the ``sessions`` block's
    ``task_latency_p99_s``; a task with a dropped step has none, drops being judged apart)."""

    ttft_p99_s: float = Field(default=2.0, gt=0, le=1e6)
    tpot_p99_s: float = Field(default=0.1, gt=0, le=1e6)
    e2e_p99_s: float | None = Field(
        default=None, gt=0, le=1e6,
        description="p99 end-to-end seconds per request (an agent turn); none by default")
    session_p99_s: float | None = Field(
        default=None, gt=0, le=1e6,
        description="p99 seconds per agent task, first arrival to last finish; none by default")
    scope: Literal["fleet", "tier"] = Field(
        default="fleet", description="fleet: the p99 over all requests; tier: each tier's too")


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


def _precision_hint(scenario, written: str) -> str:
    """Where a name given for a tier of today's fleet is a precision of the scenario's tiers
    (``fp8`` for a tier named ``fast``): which tiers run it, as a tier is named by its name."""
    named = [t.name for t in scenario.all_tiers
             if t.precision.strip().lower() == str(written).strip().lower()]
    if not named:
        return ""
    return (f" (it is the precision of {', '.join(repr(n) for n in named)}: name a tier by its "
            "name, not its precision)")


HOURS_PER_MONTH = 730.0
"""``plan.hours_per_month``'s default: a month of 24/7 (8,760 hours a year / 12)."""


class CurrentTier(_Strict):
    """One tier of the fleet run today (``plan.current``): a tier of the scenario (or a
    baseline-only one, alone) by its name, at the replicas and GPUs per replica it runs today,
    as a run scenario writes them."""

    tier: Name = Field(min_length=1, max_length=64, description="a tier's name (tiers or "
                       "baselines)")
    replicas: int = Field(description="replicas today, 1 or more (at most "
                          "limits.max_replicas)")
    gpus_per_replica: int | None = Field(
        default=None, ge=1, le=MAX_GPUS_PER_REPLICA, description="GPUs one replica uses "
        "today; default: the tier's own gpus_per_replica")

    @field_validator("replicas")
    @classmethod
    def _serves(cls, value: int) -> int:
        """At least one replica: a tier of today's fleet at 0 serves nothing."""
        if value < 1:
            raise ValueError(f"{value} replicas serve nothing; give the replicas the tier runs "
                             "today (1 or more), or leave the tier out of plan.current")
        return value


class PlanConfig(_Strict):
    """Keys ``tiersim plan`` alone reads (``tiersim run`` and ``tiersim sweep`` leave them
    aside): the fleet run today, which the plan's saving is quoted against too, and the hours a
    month of it is paid for."""

    # required, but checked once ``tiersim plan --current`` has had its say (it names today's
    # fleet in place of this key): absent, it reads None (pydantic leaves a default unchecked,
    # so ``current: null`` is still refused as no list); :func:`tiersim.scenario.load_scenario`
    # refuses it missing unless told the flag gives it
    current: list[CurrentTier] = Field(
        default=None, min_length=1, max_length=64, description="today's fleet: each tier's "
        "name, replicas and GPUs per replica; simulated on the same trace and seed as the "
        "plan (tiersim plan --current gives it in its place)")
    hours_per_month: float = Field(
        default=HOURS_PER_MONTH, gt=0, le=744, description="hours a month of today's fleet "
        "and of the plan is paid for (730: 24/7; at most 744, a 31-day month)")


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
    plan: PlanConfig | None = Field(default=None, description="tiersim plan's own keys: "
                                    "today's fleet (current) and hours_per_month")

    _source: str = PrivateAttr(default="scenario")

    @field_validator("gpu")
    @classmethod
    def _gpu_name(cls, value: str) -> str:
        """The catalogue's own name for a GPU written in another case, spacing or alias
        (``" h200 "``, ``H200_SXM``: ``H200``), so summary.json, the report and the planned
        scenario see one spelling, as a tier's precision is kept; an unknown name is kept as
        written for :func:`~tiersim.scenario_checks.check_scenario` to name."""
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
            for i, item in enumerate(value):
                given = item.get("replicas") if isinstance(item, dict) else None
                if _whole_below_one(given):  # 0.0 and -1.0 too: not the routed tier's line
                    raise KeyedError((i, "replicas"), "must be >= 1 (got {got}): a baseline "
                                     "is sized by simulation, so its replicas are unused; "
                                     "leave the key out", {"got": ((i, "replicas"), given)})
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

    @model_validator(mode="after")
    def _current_names_tiers(self) -> Scenario:
        """``plan.current`` names each of the scenario's tiers at most once, and a baseline-only
        tier only alone (no router sends it requests beside other tiers)."""
        if self.plan is None or self.plan.current is None:
            return self
        routed = [t.name for t in self.tiers]
        only = [t.name for t in self.baselines]
        seen: set[str] = set()
        for k, entry in enumerate(self.plan.current):
            known = ", ".join(repr(n) for n in [*routed, *only])
            if entry.tier not in routed and entry.tier not in only:
                raise KeyedError(("plan", "current", k, "tier"),
                                 f"{yaml_written(entry.tier)} names no tier of the scenario"
                                 f"{_precision_hint(self, entry.tier)}; write one of {known}")
            if entry.tier in seen:
                raise KeyedError(("plan", "current", k, "tier"),
                                 f"{yaml_written(entry.tier)} is listed twice in today's fleet; "
                                 "give each tier once, with all its replicas")
            seen.add(entry.tier)
            if entry.tier in only and len(self.plan.current) > 1:
                raise KeyedError(("plan", "current", k, "tier"),
                                 f"{yaml_written(entry.tier)} is a baseline-only tier, which no "
                                 "router sends requests beside other tiers; name it alone, or "
                                 "list it under tiers")
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


def _whole_below_one(value: Any) -> bool:
    """Whether a ``replicas`` as the file writes it is a whole number below 1 (``0``, ``0.0``,
    ``-2``): what a tier's and a baseline's checks refuse with their own lines (a fraction or
    anything else goes on to the integer checks). A whole number past a float's range
    (``-1e400`` written out) is one too, never converted to a float (that raised
    ``OverflowError`` for a traceback)."""
    return (isinstance(value, numbers.Real) and not isinstance(value, bool) and value < 1
            and (isinstance(value, numbers.Integral) or float(value).is_integer()))  # numpy's too


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
    """A relative file path ``name`` beside the scenario file ``source`` when anything is there
    (a file; a folder, device or pipe, or a link that leads to none, each refused as such by its
    reader, as a model config's is); else as given (read from the working folder, or a bundled
    name). A name with a blank at its start or end that is a file's beside the scenario but for
    it is the path beside too, blank kept, so that its reader says the blank is the difference
    (it looked for the name without it in the working folder, and ``tiersim run d/s.yaml``
    with ``profile: "p.json "`` read "no such profile file or bundled profile")."""
    from tiersim.paths import leads_nowhere

    path = Path(name)
    if path.is_absolute() or not Path(source).is_file() or name.startswith("~"):
        return name
    beside = Path(source).parent / path
    if _found(beside, Path.exists, leads_nowhere):
        return str(beside)
    stripped = name.strip()
    if stripped and stripped != name and not Path(stripped).is_absolute() and _found(
            Path(source).parent / stripped, Path.exists, leads_nowhere):
        return str(beside)
    return name


def resolve_model_ref(model: str, source: str) -> str:
    """A scenario's model text as :func:`tiersim.hardware.get_model` should read it: a catalogue
    name as it is; a relative config path beside the scenario file ``source`` first (a link
    there that leads to no file too: :func:`tiersim.hardware.get_model` refuses it as such)."""
    from tiersim.paths import leads_nowhere

    path = Path(model)
    looks_like_path = (Path(model.rstrip()).suffix == ".json" or len(path.parts) > 1
                       or model.startswith(("./", "../")) or model.endswith("/"))
    if looks_like_path and not path.is_absolute() and Path(source).is_file():
        beside = Path(source).parent / path
        if _found(beside, Path.exists, leads_nowhere):
            return str(beside)
        stripped = model.strip()  # a blank around a file's name beside: kept, its reader says so
        if stripped and stripped != model and not Path(stripped).is_absolute() and _found(
                Path(source).parent / stripped, Path.exists):
            return str(beside)
    return model


def _found(path: Path, *probes) -> bool:
    """Whether any of ``probes`` holds for ``path``; False where the file system refuses to
    look it up (a name over 255 bytes, a path over 4,096): the reader of the name as given
    then says what it is."""
    try:
        return any(probe(path) for probe in probes)
    except OSError:
        return False


def _divisors(n: int) -> list[int]:
    """The divisors of ``n``, ascending."""
    return [d for d in range(1, n + 1) if n % d == 0]


def _or(values: list[int]) -> str:
    """``1, 2 or 4``."""
    text = [str(v) for v in values]
    return text[0] if len(text) == 1 else ", ".join(text[:-1]) + " or " + text[-1]


def _is_model(obj: Any) -> bool:
    return isinstance(obj, type) and issubclass(obj, BaseModel)


def _model_in(annotation: Any) -> Any:
    """The BaseModel class inside an annotation like ``list[TierConfig]`` or ``X | None``."""
    if _is_model(annotation):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def takes_no_number(loc: Loc) -> bool:
    """Whether the scenario key at ``loc`` takes no number: text alone (a name, a path, one of
    some words: ``router.policy``, ``tiers[0].precision``) or true/false alone
    (``enable_prefix_caching``), so that a number there, ``.nan`` or ``1e400`` too, is refused
    as any number there is, not as a number out of range. An item of a list of maps is at its
    index, or at its name as a sweep axis names it (``tiers.bf16``)."""
    model: Any = Scenario
    info, listed = None, False
    for part in loc:
        fields = ({f.alias or n: f for n, f in model.model_fields.items()}
                  if _is_model(model) else {})
        if isinstance(part, int) or (listed and part not in fields):
            listed = False
            continue
        if part not in fields:
            return False
        info = fields[part]
        model, listed = _model_in(info.annotation), _is_list(info.annotation)
    return info is not None and not listed and _no_number(info.annotation)


def takes_a_name_or_number(loc: Loc) -> bool:
    """Whether the value at ``loc`` of a scenario takes a name as well as a number (a tier by its
    name or index: ``router.tier``, ``router.step_tiers.planning``), so that ``.nan`` there is
    told as no name and no finite number, not as a number alone ("must be a finite number")."""
    annotation: Any = Scenario
    for part in loc:
        inner = _one_kind(annotation)
        if _is_model(inner):
            fields = {f.alias or n: f for n, f in inner.model_fields.items()}
            if part not in fields:
                return False
            annotation = fields[part].annotation
        elif typing.get_origin(inner) is dict and len(typing.get_args(inner)) == 2:
            annotation = typing.get_args(inner)[1]
        elif typing.get_origin(inner) is list and isinstance(part, int):
            annotation = typing.get_args(inner)[0]
        else:
            return False
    kinds = set(_members_of(annotation))
    return str in kinds and bool(kinds & {int, float})


def _one_kind(annotation: Any) -> Any:
    """``annotation`` without ``Annotated`` and ``None`` (``X | None`` is ``X``); a union of
    several kinds as it is."""
    if typing.get_origin(annotation) is Annotated:
        return _one_kind(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        return _one_kind(args[0]) if len(args) == 1 else annotation
    return annotation


def _members_of(annotation: Any) -> list[Any]:
    """The kinds a union admits (``int | str | None``: int, str, NoneType); the kind itself
    otherwise."""
    if typing.get_origin(annotation) is Annotated:
        return _members_of(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [kind for arg in typing.get_args(annotation) for kind in _members_of(arg)]
    return [annotation]


def _is_list(annotation: Any) -> bool:
    """Whether an annotation is a list (``list[TierConfig]``, with ``None`` or inside
    ``Annotated``)."""
    if typing.get_origin(annotation) is list:
        return True
    return any(_is_list(arg) for arg in typing.get_args(annotation)
               if typing.get_origin(annotation) in (Annotated, typing.Union, types.UnionType))


def _no_number(annotation: Any) -> bool:
    """Whether an annotation admits no number: text or booleans alone (``str``,
    ``Literal['a', 'b']``, ``bool``, each with ``None`` or inside ``Annotated``)."""
    origin = typing.get_origin(annotation)
    if annotation in (str, bool):
        return True
    if origin is Literal:
        return all(isinstance(arg, str) for arg in typing.get_args(annotation))
    if origin is Annotated:
        return _no_number(typing.get_args(annotation)[0])
    args = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
    return bool(args) and origin in (typing.Union, types.UnionType) and all(
        _no_number(arg) for arg in args)

"""A scenario's fleet, built: per tier its step-time model, KV capacity and scheduler limits.

This is the one place KV capacity and scheduler limits are computed (the scenario's memory-fit
check calls :func:`kv_blocks` too). Parallelism: a replica has ``gpus_per_replica`` GPUs, split
into ``data_parallel`` attention ranks of ``tensor_parallel`` GPUs each (experts over all of
them, whole experts per GPU with ``expert_parallel``). Each data-parallel rank is its own
scheduler with its own batch and KV cache, so the engine runs ``replicas x data_parallel``
engine replicas per tier, each of ``tensor_parallel`` GPUs. GPUs = replicas x gpus_per_replica.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from tiersim.engine import (
    Disagg,
    KVLevel,
    SchedulerLimits,
    SpecDecoding,
    TierSpec,
    Workload,
    longest_sequence,
)
from tiersim.engine import simulate as engine_simulate
from tiersim.errors import ScenarioError
from tiersim.hardware import get_gpu, get_model, get_precision
from tiersim.perf import build_step_model
from tiersim.perf.memory import (
    kv_bytes_per_token,
    kv_capacity_blocks,
    kv_groups,
    kv_pages,
    state_blocks,
)
from tiersim.results_savings import techniques_words
from tiersim.workload import sessions

if TYPE_CHECKING:  # hints only, from their own module: the scenario checks import this one
    from tiersim.scenario_models import Scenario, TierConfig


@dataclass(frozen=True)
class BuiltTier:
    """One tier ready for the engine.

    ``engine_replicas``: schedulers the engine runs (replicas x data_parallel);
    ``num_blocks``: KV blocks of one engine replica; ``usd_per_replica_second``: the price of
    one engine replica (its ``tensor_parallel`` GPUs) for one second.
    """

    config: TierConfig
    step_model: Any
    num_blocks: int
    limits: SchedulerLimits
    spec_decoding: SpecDecoding | None = None
    disagg: Disagg | None = None
    lockstep: int = 1  # DP ranks stepped together (MoE with data parallelism; see lockstep())
    most_context: int = 0  # the most max_model_len its model takes (0: unknown; most_context())

    @property
    def name(self) -> str:
        """The tier's name."""
        return self.config.name

    @property
    def source(self) -> str:
        """The step model's own label (``roofline``, ``profile:<name> ...``)."""
        return str(getattr(self.step_model, "source", ""))

    def sources(self) -> dict[str, str]:
        """Every operator table this tier's step times read, with where it came from: the step
        model's, and a speculative draft model's as ``draft <model>: <table>`` (its ``k``
        draft steps are part of every decode step)."""
        out = dict(self.step_model.sources()) if hasattr(self.step_model, "sources") else {}
        spec = self.spec_decoding
        draft = None if spec is None else spec.draft_model
        if draft is not None and hasattr(draft, "sources"):
            name = self.config.speculative.draft_model
            out.update({f"draft {name}: {k}": v for k, v in draft.sources().items()})
        return out

    @property
    def context_raisable(self) -> bool:
        """Whether the tier sets its own ``scheduler.max_model_len`` below the most its model
        takes, so a longer request is served by raising it (where that most is unknown, one
        set is taken as raisable); False where it sets none or sets the model's context."""
        asked = self.config.scheduler.max_model_len
        return asked is not None and (not self.most_context or asked < self.most_context)

    @property
    def engine_replicas(self) -> int:
        """Schedulers the engine runs for this tier (one per data-parallel rank)."""
        return self.config.replicas * self.config.data_parallel

    @property
    def gpus(self) -> int:
        """GPUs the tier provisions: replicas x gpus_per_replica."""
        return self.config.replicas * self.config.gpus_per_replica

    @property
    def longest_sequence(self) -> int:
        """The most tokens (prompt + output) one request may have on an engine replica of this
        tier; a larger one is dropped as larger than its KV cache
        (:func:`tiersim.engine.longest_sequence`, a speculative tier's draft tokens counted)."""
        return longest_sequence(self.limits, self.num_blocks, draft_tokens(self.config))

    @property
    def usd_per_replica_second(self) -> float:
        """USD per second of one engine replica (``tensor_parallel`` GPUs)."""
        return parallel(self.config)[0] * self.config.cost_per_gpu_hour / 3600.0

    def spec(self, replicas: int | None = None, prefill: int | None = None) -> TierSpec:
        """The engine's TierSpec; ``replicas`` (scenario replicas) overrides the tier's count,
        ``prefill`` a disaggregated tier's prefill replicas (the rest decode; 0: served
        aggregated, as with no ``disaggregation`` block)."""
        count = self.config.replicas if replicas is None else replicas
        split = None if prefill == 0 else self._split(count)
        if split is not None and prefill is not None:
            split = replace(split, prefill=prefill, decode=count - prefill)
        return TierSpec(name=self.name, replicas=count * self.config.data_parallel,
                        num_blocks=self.num_blocks, limits=self.limits,
                        step_model=self.step_model, balancer=self.config.balancer,
                        output_multiplier=self.config.output_length_multiplier,
                        spec_decoding=self.spec_decoding, disagg=split,
                        lockstep=self.lockstep)

    def _split(self, count: int) -> Disagg | None:
        """The prefill/decode split at ``count`` replicas: as configured, or in the same
        proportion at another count (none below two replicas)."""
        split = self.disagg
        if split is None or count == split.prefill + split.decode:
            return split
        prefill = proportional_prefill(split.prefill, split.decode, count)
        return None if prefill is None else replace(split, prefill=prefill,
                                                    decode=count - prefill)


@dataclass(frozen=True)
class Fleet:
    """Every tier of a scenario, built (cheapest first, as listed)."""

    tiers: tuple[BuiltTier, ...]

    @property
    def gpus(self) -> int:
        """GPUs the whole fleet provisions."""
        return sum(t.gpus for t in self.tiers)

    def specs(self) -> list[TierSpec]:
        """One engine TierSpec per tier."""
        return [t.spec() for t in self.tiers]


def proportional_prefill(prefill: int, decode: int, count: int) -> int | None:
    """The prefill replicas of a ``prefill``P ``decode``D split carried to ``count`` replicas
    in the same proportion (at least one of each; None below two replicas: no split). A tier
    runs so at a count its split does not name, and the planned scenario writes it so where
    the plan did not choose the split."""
    if count < 2:
        return None
    return min(count - 1, max(1, round(count * prefill / (prefill + decode))))


def parallel(tier: TierConfig) -> tuple[int, int, int]:
    """``(tp, dp, ep)`` of a tier: tensor parallel per data-parallel rank, data-parallel ranks,
    expert-parallel size (all the replica's GPUs with ``expert_parallel``, else 1)."""
    ep = tier.gpus_per_replica if tier.expert_parallel else 1
    return tier.tensor_parallel, tier.data_parallel, ep


def draft_tokens(tier: TierConfig) -> int:
    """Draft token slots a request of ``tier`` holds beside its own tokens (speculative ``k``;
    0 without speculative decoding)."""
    return tier.speculative.k if tier.speculative is not None else 0


def windowed(tier: TierConfig, draft_ref: str | None = None) -> bool:
    """Whether ``tier`` charges sliding-window layers by their window (vLLM's hybrid KV cache
    manager, :func:`tiersim.perf.memory.kv_groups`). Not with a speculative draft model (its KV
    in every block), nor with a KV connector (``disaggregation``, ``scheduler.kv_offload``):
    vLLM turns the hybrid manager off whenever ``--kv-transfer-config`` is set, unless the
    connector declares ``SupportsHMA`` (none did by vLLM 0.11), and then a sliding layer holds
    KV for every token, as a full one does."""
    return (draft_ref is None and tier.disaggregation is None
            and not tier.scheduler.kv_offload)


def limits(tier: TierConfig, model_ref: str | None = None,
           draft_ref: str | None = None) -> SchedulerLimits:
    """The engine's scheduler limits of one tier (vLLM's names, from ``tier.scheduler``); with
    ``model_ref``, its context as ``max_model_len`` (a longer request is dropped, as vLLM
    rejects it) and the blocks each sequence's fixed state takes (gated delta-net layers;
    with the speculative draft ``draft_ref`` sharing the blocks)."""
    sched = tier.scheduler
    state, groups = 0, (0, 1, 0)
    if model_ref and windowed(tier, draft_ref):
        groups = kv_groups(get_model(model_ref))
    if model_ref:
        tp = parallel(tier)[0]
        copies = 1 + (tier.speculative.k if tier.speculative is not None else 0)
        state = state_blocks(get_model(model_ref), tp, sched.block_size,
                             tier_kv(tier, model_ref),
                             None if draft_ref is None else get_model(draft_ref), copies)
    return SchedulerLimits(
        max_num_seqs=sched.max_num_seqs, max_num_batched_tokens=sched.max_num_batched_tokens,
        block_size=sched.block_size, watermark=sched.watermark,
        enable_prefix_caching=sched.enable_prefix_caching,
        prefix_cache_fraction=sched.prefix_cache_fraction,
        max_model_len=_max_model_len(tier, model_ref),
        state_blocks=state,
        window=groups[0], full_groups=groups[1], window_groups=groups[2],
    )


def _max_model_len(tier: TierConfig, model_ref: str | None) -> int:
    """The tier's ``max_model_len``: the one asked for, else the model's context; 0 (no limit)
    where neither is known. One above the context raises ValueError (vLLM refuses it; a
    scenario's is refused by name first, :func:`check_contexts`)."""
    problem = context_problem(tier, model_ref)
    if problem is not None:
        raise ValueError(f"scheduler.max_model_len: {problem}")
    asked = tier.scheduler.max_model_len
    context = get_model(model_ref).max_context if model_ref else 0
    return context if asked is None else asked


def context_problem(tier: TierConfig, model_ref: str | None) -> str | None:
    """Why the tier's ``scheduler.max_model_len`` cannot be served: above the model's context
    (its config's ``max_position_embeddings``, or a LongRoPE model's ``context_limit``), which
    vLLM refuses; None when it can (also where the config gives no length key: vLLM then takes
    the one asked for unchecked)."""
    asked = tier.scheduler.max_model_len
    most = most_context(model_ref)
    if asked is None or not most or asked <= most:
        return None
    return (f"{asked} is above {get_model(model_ref).name}'s context ({most} tokens); set it "
            f"to at most {most}")


def most_context(model_ref: str | None) -> int:
    """The most ``scheduler.max_model_len`` vLLM takes for a model: its config's
    ``max_position_embeddings``, or a LongRoPE model's ``context_limit``; 0 where that is not
    known (no model, no length key in its config)."""
    if not model_ref:
        return 0
    model = get_model(model_ref)
    return 0 if model.context_assumed else (model.context_limit or model.max_context or 0)


def check_contexts(scenario: Scenario) -> None:
    """Refuse a tier whose ``scheduler.max_model_len`` is above its model's context, naming
    the tier's key (:func:`context_problem`), a baseline-only tier's too; a run, plan and sweep
    check it before running."""
    for (key, i), tier in scenario.tier_entries():
        problem = context_problem(tier, scenario.tier_model_ref(tier))
        if problem is not None:
            raise ScenarioError(scenario._source, f"{key}[{i}].scheduler.max_model_len",
                                problem)


def with_offload(lim: SchedulerLimits, model_ref: str, tier: TierConfig) -> SchedulerLimits:
    """``lim`` with the tier's KV offload levels (per GPU: capacity and bandwidth in bytes, a
    block's bytes from one GPU's KV bytes per token), their overlap and load-or-recompute
    settings. Levels that hold no whole block are left out (:func:`empty_levels`)."""
    sched = tier.scheduler
    if not sched.kv_offload:
        return lim
    per_token, kept = _kept_levels(model_ref, tier)
    levels = tuple(KVLevel(lv.name, lv.capacity_gb * 1e9, lv.read_gb_s * 1e9, lv.write_gb_s * 1e9)
                   for lv in kept)
    if not levels:
        return lim
    return replace(lim, kv_levels=levels, kv_overlap=sched.kv_offload_overlap,
                   kv_recompute=sched.kv_offload_recompute, kv_bytes_per_token=per_token)


def tier_techniques(scenario: Scenario, tier: TierConfig | None) -> str | None:
    """A tier's serving techniques in the words its fleet's size carries them
    (:func:`tiersim.results_savings.techniques_words`), naming only the offload levels it runs:
    one that holds no whole block is left out (:func:`with_offload`), so a tier whose only
    level holds none reads as plain, as it runs. ``tier`` is the config at the size it runs:
    one GPU's share of a block halves from 1 to 2 GPUs per replica, so a level may hold one at
    one size and none at another. None for no tier or a plain one."""
    if tier is None:
        return None
    if not getattr(getattr(tier, "scheduler", None), "kv_offload", None):
        return techniques_words(tier)  # no offload level to weigh (a stand-in tier: none)
    _, kept = _kept_levels(scenario.tier_model_ref(tier), tier)
    return techniques_words(tier, [level.name for level in kept])


def _kept_levels(model_ref: str, tier: TierConfig) -> tuple[float, list]:
    """One GPU's KV bytes per token of the tier (at its own tensor-parallel size) and its
    offload levels the run keeps: those that hold a whole prompt block (:func:`empty_levels`
    left out), top first. :func:`with_offload` builds the engine's levels from them and
    :func:`tier_techniques` names them, so the two never disagree."""
    per_token = kv_bytes_per_token(get_model(model_ref), tier_kv(tier, model_ref),
                                   tier.tensor_parallel)
    empty = set(empty_levels(per_token, tier))
    return per_token, [lv for i, lv in enumerate(tier.scheduler.kv_offload) if i not in empty]


def block_bytes(per_token: float) -> float:
    """Bytes of one prompt block a prefix cache moves between levels (one GPU's share)."""
    return per_token * sessions.HASH_BLOCK_TOKENS


def empty_levels(per_token: float, tier: TierConfig) -> list[int]:
    """Indexes of the tier's offload levels that hold no whole prompt block of one GPU's
    ``per_token`` KV bytes (``capacity_gb: 0``, say). They are left out, as if not listed: a
    last one would drop every block written to it while the GPU paid for the write, and one
    above another level would hand each block on at once, as if the GPU wrote at its bandwidth
    to the level below."""
    block = block_bytes(per_token)
    if block <= 0:  # no KV bytes per token: nothing to move, nothing to leave out
        return []
    return [i for i, level in enumerate(tier.scheduler.kv_offload)
            if level.capacity_gb * 1e9 // block < 1]  # as KVLevel.capacity_blocks


def spec_decoding(scenario: Scenario, tier: TierConfig) -> SpecDecoding | None:
    """The tier's speculative decoding (a draft model's step times on the tier's GPUs, from the
    scenario's profile as the tier's own are), seeded from the scenario."""
    cfg = tier.speculative
    if cfg is None:
        return None
    rates = cfg.acceptance if isinstance(cfg.acceptance, list) else [cfg.acceptance]
    draft = None
    if cfg.draft_model is not None:
        tp, dp, _ = parallel(tier)
        draft = build_step_model(scenario.draft_model_ref(tier), "bf16", scenario.gpu, tp=tp,
                                 profile=scenario.profile, dp=dp)
    return SpecDecoding(cfg.k, tuple(rates), draft_model=draft, head_cost=cfg.head_cost,
                        seed=scenario.seed)


def disagg(model_ref: str, tier: TierConfig) -> Disagg | None:
    """The tier's prefill/decode split with its KV link (one GPU's KV bytes per token over one
    GPU's link)."""
    cfg = tier.disaggregation
    if cfg is None:
        return None
    model = get_model(model_ref)
    per_token = kv_bytes_per_token(model, tier_kv(tier, model_ref), tier.tensor_parallel)
    return Disagg(cfg.prefill_replicas, cfg.decode_replicas, cfg.link_gb_s * 1e9,
                  cfg.latency_us * 1e-6, per_token,
                  model.state_bytes_per_seq(tier.tensor_parallel))


def lockstep(model_ref: str, tier: TierConfig) -> int:
    """How many engine replicas step together: a MoE model's ``data_parallel`` ranks (vLLM runs
    the DP ranks of a MoE model in lockstep, idle ones on a dummy batch; see
    :mod:`tiersim.engine.lockstep`), else 1 (dense models; not modelled with speculative
    decoding or disaggregation)."""
    if tier.data_parallel == 1 or tier.speculative is not None or tier.disaggregation:
        return 1
    return tier.data_parallel if get_model(model_ref).is_moe else 1


def tier_kv(tier: TierConfig, model_ref: str) -> str:
    """The KV-cache dtype ``tier`` runs on ``model_ref`` (:func:`tiersim.hardware.precisions.
    tier_kv_dtype`: ``auto`` follows the checkpoint's declared format where the tier serves the
    checkpoint's own formats)."""
    from tiersim.hardware.precisions import tier_kv_dtype

    return tier_kv_dtype(get_model(model_ref), tier.precision, tier.kv_dtype)


def kv_blocks(model_ref: str, gpu: str, tier: TierConfig, draft_ref: str | None = None) -> int:
    """KV-cache blocks of one engine replica (one data-parallel rank) of ``tier``, its
    speculative draft model (``draft_ref``) beside it; raises
    :class:`tiersim.perf.memory.FitError` when the weights leave no room."""
    tp, dp, ep = parallel(tier)
    model = get_model(model_ref)
    blocks = kv_capacity_blocks(
        model, get_precision(tier.precision), get_gpu(gpu), tp=tp,
        block_size=tier.scheduler.block_size, gpu_memory_utilization=tier.gpu_memory_utilization,
        kv_dtype=tier_kv(tier, model_ref),
        max_num_batched_tokens=tier.scheduler.max_num_batched_tokens,
        dp=dp, ep=ep, draft=None if draft_ref is None else get_model(draft_ref),
        moe_backend=tier.moe_backend,
    )
    return kv_pages(model, blocks) if windowed(tier, draft_ref) else blocks


def step_model_args(scenario: Scenario, tier: TierConfig) -> tuple[tuple, dict[str, Any]]:
    """What :func:`step_model` builds a tier's step-time model from: the arguments and keywords
    of :func:`tiersim.perf.build_step_model` (all it reads of the scenario and the tier)."""
    tp, dp, ep = parallel(tier)
    model_ref = scenario.tier_model_ref(tier)
    return ((model_ref, tier.precision, scenario.gpu),
            {"tp": tp, "kv_dtype": tier_kv(tier, model_ref), "profile": scenario.profile,
             "dp": dp, "ep": ep, "moe_backend": tier.moe_backend})


def step_model_key(scenario: Scenario, tier: TierConfig) -> str:
    """Two tiers whose keys are equal have equal step-time models: :func:`step_model_args`
    written out, with the version (inode, size, modification and change time) of each argument
    that names a file (a model's config.json, a profile JSON), or of each file in a folder it
    names (a checkout's), so a file rewritten in between (a sweep's later point) keys apart."""
    from pathlib import Path

    args, kwargs = step_model_args(scenario, tier)
    versions: list[tuple] = []
    for value in [*args, *kwargs.values()]:
        if isinstance(value, str | Path):
            try:
                path = Path(value).expanduser()
                # a folder (a checkout's config.json and the files beside it): each file in it
                files = sorted(path.iterdir()) if path.is_dir() else [path]
            except (OSError, ValueError):
                continue
            for file in files:
                try:
                    stat = file.stat()
                except (OSError, ValueError):  # a catalogue name, not a file; a broken link
                    continue
                versions.append((str(file), stat.st_dev, stat.st_ino, stat.st_size,
                                 stat.st_mtime_ns, stat.st_ctime_ns))
    return repr((args, sorted(kwargs.items()), versions))


def step_model(scenario: Scenario, tier: TierConfig) -> Any:
    """The step-time model of one engine replica of a tier (a calibration profile where one
    fits, else roofline)."""
    args, kwargs = step_model_args(scenario, tier)
    return build_step_model(*args, **kwargs)


def build_tier(scenario: Scenario, tier: TierConfig) -> BuiltTier:
    """One tier built: step model, KV blocks and limits."""
    return BuiltTier(config=tier, step_model=step_model(scenario, tier),
                     num_blocks=kv_blocks(scenario.tier_model_ref(tier), scenario.gpu, tier,
                                          scenario.draft_model_ref(tier)),
                     limits=with_offload(limits(tier, scenario.tier_model_ref(tier),
                                                scenario.draft_model_ref(tier)),
                                         scenario.tier_model_ref(tier), tier),
                     spec_decoding=spec_decoding(scenario, tier),
                     disagg=disagg(scenario.tier_model_ref(tier), tier),
                     lockstep=lockstep(scenario.tier_model_ref(tier), tier),
                     most_context=most_context(scenario.tier_model_ref(tier)))


def build_fleet(scenario: Scenario) -> Fleet:
    """Every tier of ``scenario`` built (the memory fit was checked when it loaded; each
    ``max_model_len`` against its model's context is checked here, :func:`check_contexts`)."""
    check_contexts(scenario)
    return Fleet(tiers=tuple(build_tier(scenario, t) for t in scenario.tiers))


def simulate(specs: list[TierSpec], df: pd.DataFrame, assignment, series: bool = True) -> Any:
    """Run the engine over a routed trace (tier output multipliers are applied inside it).

    ``assignment``: first tier, escalation tier and where a refused first pass goes on to,
    per row of ``df`` (:class:`tiersim.routing.Assignment`). The trace's ``prefix_hashes``
    (512-token blocks) reach tiers with prefix caching on. Agent sessions
    (:mod:`tiersim.workload.sessions`) run as closed loops: a step arrives its ``tool_s`` after
    its predecessor finishes. A ``spec_acceptance`` column sets each request's draft acceptance
    on speculative tiers; its ``request_id`` keys the request's speculative draws.
    ``series=False``: no time series is kept (:func:`tiersim.engine.simulate`).
    """
    return engine_simulate(specs, workload(df, assignment), fast_forward=True, series=series)


def workload(df: pd.DataFrame, assignment) -> Workload:
    """The engine's input for a routed trace (:func:`simulate`): every column of ``df`` the
    engine reads, with the routing ``assignment``; two runs of equal specs on equal workloads
    give equal results (:func:`tiersim.engine.simulate` is deterministic)."""
    hashes = list(df["prefix_hashes"]) if "prefix_hashes" in df.columns else None
    outputs = (list(df[sessions.OUTPUT_HASHES]) if sessions.OUTPUT_HASHES in df.columns
               else None)
    follows, think = sessions.links(df)
    return Workload(
        arrival_s=df["arrival_s"].to_numpy(np.float64),
        input_tokens=df["input_tokens"].to_numpy(),  # int32 as loaded: no int64 copies
        output_tokens=df["output_tokens"].to_numpy(),
        tier=np.asarray(assignment.tier, dtype=np.int64),
        escalate_to=np.asarray(assignment.escalate_to, dtype=np.int64),
        refused_to=(None if getattr(assignment, "refused_to", None) is None
                    else np.asarray(assignment.refused_to, dtype=np.int64)),
        prefix_hashes=hashes, output_hashes=outputs, follows=follows, think_s=think,
        spec_acceptance=(df["spec_acceptance"].to_numpy(np.float64)
                         if "spec_acceptance" in df.columns else None),
        request_key=(df["request_id"].to_numpy(np.int64) if "request_id" in df.columns
                     else None),
    )

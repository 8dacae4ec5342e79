"""The checks of a validated scenario that need the hardware catalogue, and its notes.

:func:`check_scenario` finds the first problem a scenario's schema cannot see (an unknown model,
GPU, precision or profile, a draft that cannot draft, a MoE option without experts, two tiers of
one name, a tier whose weights and KV cache do not fit its GPUs, a router option the tiers do not
allow) as a location and a message, which :func:`tiersim.scenario.load_scenario` turns into one
error line. :func:`check_layouts` and the ``_note_*`` functions warn a
:class:`~tiersim.errors.Note` for what runs but likely is not what was meant (a key nothing reads,
a KV cache shorter than ``max_model_len``, a value in another unit ...).
"""

from __future__ import annotations

import contextlib
import contextvars
import unicodedata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from tiersim.errors import ScenarioError, TiersimError
from tiersim.scenario_where import Loc, _where, format_loc

if TYPE_CHECKING:
    from tiersim.hardware import ModelArch
    from tiersim.scenario_models import KVLevelConfig, Scenario, SchedulerConfig, TierConfig


def _note_linked_files(data: dict[str, Any], source: str) -> None:
    """A note per relative file path (``trace.path``, ``profile``) of a scenario read through
    a symbolic link where its target's folder holds a file of that name other than the one
    read: relative paths are read beside the scenario as named, the link's folder
    (README), and a user who kept the file beside the target meant that one."""
    import os
    import warnings

    from tiersim.errors import Note

    link = Path(source)
    try:
        if not link.is_symlink() or link.resolve().parent == link.parent.resolve():
            return
        there = link.resolve().parent
    except (OSError, RuntimeError):
        return
    trace = data.get("trace")
    names = {"trace.path": trace.get("path") if isinstance(trace, dict) else None,
             "profile": data.get("profile")}
    for field, name in names.items():
        if not isinstance(name, str) or not name or Path(name).is_absolute():
            continue
        beside, other = link.parent / name, there / name
        try:
            if not other.is_file() or (beside.is_file() and os.path.samefile(beside, other)):
                continue
        except OSError:
            continue
        read = beside if beside.is_file() else "bundled, or from the working folder"
        warnings.warn(f"{source}: {field} {name} is read beside this link ({read}), not as "
                      f"{other} beside its target: relative paths are read beside the "
                      "scenario as named; link that file too, or write its path absolute",
                      Note, stacklevel=2)


def _note_empty_levels(scenario: Scenario, source: str, root: yaml.Node | None) -> None:
    """A note per KV offload level left out because it holds no whole prompt block
    (:func:`tiersim.fleet.empty_levels`): the run is as if it were not listed."""
    import warnings

    from tiersim.errors import Note
    from tiersim.fleet import block_bytes, empty_levels
    from tiersim.hardware import get_model
    from tiersim.hardware.precisions import tier_kv_dtype
    from tiersim.perf.memory import kv_bytes_per_token

    for at, tier in scenario.tier_entries():  # a baseline-only tier's levels are left out too
        if not tier.scheduler.kv_offload:
            continue
        model = get_model(scenario.tier_model_ref(tier))
        per_token = kv_bytes_per_token(model, tier_kv_dtype(model, tier.precision, tier.kv_dtype),
                                       tier.tensor_parallel)
        empty = empty_levels(per_token, tier)
        for j in empty:
            level = tier.scheduler.kv_offload[j]
            where = _where((*at, "scheduler", "kv_offload", j, "capacity_gb"), root)
            warnings.warn(f"{source}: {where}: {level.capacity_gb:g} GB holds no prompt block "
                          f"(one is {block_bytes(per_token) / 1e6:.3g} MB per GPU on tier "
                          f"{tier.name!r}), so level {level.name!r} is left out, as if not "
                          f"listed ({_evicted_to(tier, j, empty)})", Note, stacklevel=2)
        kept = [(j, lv) for j, lv in enumerate(tier.scheduler.kv_offload) if j not in empty]
        _note_slow_level_above_fast(kept, source, at, root)


def _note_slow_level_above_fast(kept: list[tuple[int, KVLevelConfig]], source: str, at: Loc,
                                root: yaml.Node | None) -> None:
    """A note per KV offload level ``kept`` (index, level; the left-out empty ones dropped)
    of the tier at ``at`` (``("tiers", i)`` or ``("baselines", j)``) listed above a level that
    reads faster: ``kv_offload`` is top first, so the GPU evicts to the slower level and the
    faster one holds only what that level evicts (no KV connector stacks them so: LMCache
    keeps CPU memory above disk)."""
    import warnings

    from tiersim.errors import Note

    for k, (j, level) in enumerate(kept):
        faster = max((lv for _, lv in kept[k + 1:]), key=lambda lv: lv.read_gb_s, default=None)
        if faster is None or faster.read_gb_s <= level.read_gb_s:
            continue
        where = _where((*at, "scheduler", "kv_offload", j), root)
        warnings.warn(f"{source}: {where}: level {level.name!r} reads at {level.read_gb_s:g} "
                      f"GB/s, slower than level {faster.name!r} below it ({faster.read_gb_s:g} "
                      f"GB/s), yet the GPU evicts to {level.name!r} first and {faster.name!r} "
                      f"holds only what {level.name!r} evicts (kv_offload lists levels top "
                      "first); list the faster level first", Note, stacklevel=3)


def _evicted_to(tier: TierConfig, j: int, empty: list[int]) -> str:
    """Where the blocks evicted into the left-out offload level ``j`` go instead: the next
    level kept below it, or nowhere."""
    below = [lv.name for k, lv in enumerate(tier.scheduler.kv_offload) if k > j and k not in empty]
    if not below:
        return "evicted blocks are dropped, not written"
    return f"evicted blocks move down to level {below[0]!r}, at its write_gb_s"


def _moe_backend_problem(scenario: Scenario, tier: TierConfig) -> str | None:
    """Why ``tier`` cannot run its ``moe_backend`` (None where it can)."""
    from tiersim.fleet import parallel
    from tiersim.hardware import get_model
    from tiersim.hardware.precisions import weight_formats
    from tiersim.perf.memory import check_moe_backend

    arch = get_model(scenario.tier_model_ref(tier))
    try:
        check_moe_backend(arch, weight_formats(arch, tier.precision), tier.moe_backend,
                          *parallel(tier))
    except ValueError as err:
        return f"tier {tier.name!r}: {err}"
    return None


def _where_looked(name: Any, scenario: Scenario) -> str:
    """Where a relative model config or profile path ``name`` that names no file was looked
    for (beside the scenario file, then from the working folder), to end its error line; ""
    for a catalogue or bundled name, an absolute path, a file that exists (or a link found,
    which leads to none), or a name holding a NUL."""
    if not isinstance(name, str) or not isinstance(scenario._source, str) or "\x00" in name:
        return ""  # (a NUL: no file can have the name, wherever it is looked for)
    from tiersim.paths import leads_nowhere

    path = Path(name)
    looks_like_path = path.suffix == ".json" or len(path.parts) > 1
    try:
        if (not looks_like_path or path.is_absolute() or name.startswith("~") or path.exists()
                or leads_nowhere(path) or not Path(scenario._source).is_file()):
            return ""
    except OSError:  # a name the file system refuses to look up: no file can have it either
        return ""
    return (f"; a relative path is read beside the scenario (in "
            f"{Path(scenario._source).parent}), then from the working folder ({Path.cwd()})")


def check_scenario(scenario: Scenario, fit: bool = True) -> tuple[Loc, str] | None:
    """The first catalogue problem (unknown name, tier that does not fit, unless not ``fit``)
    as (loc, message)."""
    from tiersim.hardware import get_gpu, get_model, get_precision, kv_dtype_bytes

    entries = scenario.tier_entries()
    served, drafts = [], []  # each tier's model and draft, resolved once (beside the file?)
    model_ref = scenario.model_ref
    lookups = [(("model",), get_model, model_ref), (("gpu",), get_gpu, scenario.gpu)]
    for at, tier in entries:
        served.append(model_ref if tier.model is None else scenario.tier_model_ref(tier))
        drafts.append(scenario.draft_model_ref(tier))
        if tier.model is not None:
            lookups.append(((*at, "model"), get_model, served[-1]))
        if drafts[-1] is not None:
            lookups.append(((*at, "speculative", "draft_model"), get_model, drafts[-1]))
        lookups.append(((*at, "precision"), get_precision, tier.precision))
        lookups.append(((*at, "kv_dtype"), kv_dtype_bytes, tier.kv_dtype))
    archs: dict[str, ModelArch] = {}  # each model named, as read here: read once, not per check
    for loc, lookup, name in lookups:
        try:
            found = lookup(name)
        except (KeyError, ValueError, TiersimError) as err:
            where = _where_looked(name, scenario) if loc[-1] != "gpu" else ""
            return loc, _one_line(err) + where
        if lookup is get_model:
            archs[name] = found
    if scenario.profile is not None:
        from tiersim.perf import profile_gpu_problem, resolve_profile

        try:
            profile = resolve_profile(scenario.profile)
        except TiersimError as err:
            return ("profile",), _one_line(err) + _where_looked(scenario.profile, scenario)
        problem = profile_gpu_problem(profile, get_gpu(scenario.gpu).name, scenario.profile)
        if problem is not None:
            return ("profile",), problem + " or profile: null (roofline)"
    for (at, tier), model, draft in zip(entries, served, drafts, strict=True):
        arch = archs[model]
        if tier.expert_parallel and not arch.is_moe:
            return (*at, "expert_parallel"), (
                f"{arch.name} has no experts; expert_parallel needs a MoE model (drop it)")
        if tier.speculative is not None and tier.data_parallel > 1 and arch.is_moe:
            # fleet.lockstep steps a MoE model's ranks together only without speculative
            # decoding: run anyway, each rank would step on its own, faster than vLLM's
            return (*at, "data_parallel"), (
                f"{arch.name} is a MoE model, whose "
                "data-parallel ranks vLLM steps in lockstep, which tiersim does not model with "
                "speculative decoding; set data_parallel: 1 or drop speculative")
        if tier.moe_backend != "auto":
            problem = _moe_backend_problem(scenario, tier)
            if problem is not None:
                return (*at, "moe_backend"), problem
        if draft is not None:
            problem = _draft_problem(arch, archs[draft])
            if problem is not None:
                return (*at, "speculative", "draft_model"), problem
    duplicate = _duplicate_name(scenario)
    if duplicate is not None:
        return duplicate
    from tiersim.fleet import kv_blocks  # KV capacity is computed in one place

    for (at, tier), model, draft in zip(entries, served, drafts, strict=True) if fit else ():
        try:  # (a model read above as itself: kv_blocks reads a name as get_model does)
            kv_blocks(archs[model], scenario.gpu, tier, None if draft is None else archs[draft])
        except (KeyError, ValueError, TiersimError) as err:
            return (*at, *getattr(err, "key", ())), f"tier {tier.name!r}: {_one_line(err)}"
    for at, tier in scenario.tier_entries():
        if tier.model is not None and tier.accuracy is None:
            return (*at, "accuracy"), (f"tier {tier.name!r} serves its own model, so set "
                                       "its accuracy (the precision priors describe one "
                                       "checkpoint)")
    return _router_problem(scenario)


def _draft_problem(served: ModelArch, drafter: ModelArch) -> str | None:
    """Why ``drafter`` cannot draft for ``served``, or None: another vocabulary (its token ids
    mean nothing to the target) or no fewer parameters per token (each of its ``k`` steps costs
    about a target step, so speculation only slows decoding)."""
    if served.vocab != drafter.vocab:
        return (f"{drafter.name}'s vocabulary ({drafter.vocab:,} tokens) is not "
                f"{served.name}'s ({served.vocab:,}); a draft proposes token ids the "
                "served model verifies, so use a draft of the same tokenizer")
    if drafter.active_params < served.active_params:
        return None
    return (f"{drafter.name} ({_params_words(drafter)}) is not smaller than {served.name} "
            f"({_params_words(served)}); a draft must have fewer parameters than the target, "
            f"or its k steps cost more than the tokens they save, so use "
            f"{_smaller_drafts(served)}")


def _params_words(model: ModelArch) -> str:
    """A model's size for a message: ``8.0 B parameters``, with the active count of a MoE."""
    words = f"{model.total_params / 1e9:.1f} B parameters"
    if model.active_params != model.total_params:
        words += f", {model.active_params / 1e9:.1f} B active"
    return words


def _smaller_drafts(served: ModelArch) -> str:
    """What to draft ``served`` with instead: the catalogue models of its vocabulary with
    fewer active parameters, then a draft head."""
    from tiersim.hardware import MODELS

    names = [m.name for m in MODELS.values()
             if m.vocab == served.vocab and m.active_params < served.active_params]
    smaller = (f"a smaller draft of the same tokenizer ({', '.join(names)})" if names else
               "a smaller draft of the same tokenizer (the path of its config.json)")
    return f"{smaller} or a draft head (drop draft_model)"


def _duplicate_name(scenario: Scenario) -> tuple[Loc, str] | None:
    """The first tier or baseline whose name an earlier one has, as (loc, message): results,
    tables and ``correct_<tier>`` columns are keyed by name across both lists. Names that read
    the same (:func:`shown_name`: ``é`` composed or as ``e`` and an accent, ``bf16`` and
    ``bf16 ``) are one name too: the tables would show two rows under one label."""
    seen: dict[str, tuple[str, str]] = {}
    for at, tier in scenario.tier_entries():
        key = shown_name(tier.name)
        if key not in seen:
            seen[key] = (tier.name, format_loc(at))
            continue
        name, where = seen[key]
        if name == tier.name:
            return (*at, "name"), (f"duplicate tier name {tier.name!r} (also {where}; names "
                                   "must differ across tiers and baselines)")
        return (*at, "name"), (f"tier name {ascii(tier.name)} reads the same as {where}'s "
                               f"{ascii(name)} (they differ only in Unicode form, width or "
                               "surrounding spaces); names must differ visibly across tiers "
                               "and baselines")
    return None


def shown_name(name: str) -> str:
    """How a name reads: NFKC-normalised (composed accents, full-width letters as ASCII) and
    stripped of surrounding spaces."""
    return unicodedata.normalize("NFKC", name).strip()


READ_ONLY_WITH = {
    "kv_offload_overlap": ("kv_offload", "kv_offload levels"),
    "kv_offload_recompute": ("kv_offload", "kv_offload levels"),
    "prefix_cache_fraction": ("enable_prefix_caching", "enable_prefix_caching: true"),
}
"""A tier's scheduler keys read only when another key of that scheduler is set (to true, or a
non-empty list): the key it needs and how to set it, in words. A sweep axis over one that no
point gives what it needs is refused (:mod:`tiersim.sweep.unread`); a run notes one set without
it (:func:`check_layouts`)."""


def unread_scheduler_keys(scheduler: SchedulerConfig) -> list[str]:
    """The keys of :data:`READ_ONLY_WITH` a scheduler block sets without the key each needs
    (so they change nothing), in the order the block's model lists them."""
    return [key for key, (needed, _) in READ_ONLY_WITH.items()
            if key in scheduler.model_fields_set and not getattr(scheduler, needed)]


def check_layouts(scenario: Scenario, source: str | None = None) -> None:
    """Notes on the tiers as configured that do not stop a run: block-FP8 weights split into
    partial blocks, prefix caching a gated delta-net model, scheduler keys nothing reads, a
    prefix-aware balancer with no prefix cache to read, a balancer with one replica to pick,
    expert parallelism over one GPU, a price per request no cost figure reads; and an
    end-to-end SLO that leaves the TTFT one nothing to hold (``source``: the scenario's path,
    named in that note)."""
    note_e2e_below_ttft(getattr(scenario.slo, "e2e_p99_s", None), scenario.slo.ttft_p99_s,
                        source)
    _note_unread_scheduler_keys(scenario)
    _note_unread_prices(scenario)
    _note_unread_accuracy_values(scenario)
    _note_blind_balancer(scenario)
    _note_lone_balancer(scenario)
    _note_lone_expert_parallel(scenario)
    _note_block_splits(scenario)
    _note_hybrid_caching(scenario)
    _note_short_kv(scenario)
    _note_empty_prefix_cache(scenario)
    _note_partial_profile(scenario)
    _note_unlikely_units(scenario)


UNLIKELY_AT = {"ttft_p99_s": 100.0, "tpot_p99_s": 1.0, "cost_per_gpu_hour": 1000.0,
               "lookup_s": 1.0, "tool_s_median": 1000.0}
"""The values (at or above) of a scenario's seconds and prices that are far past any a
serving fleet has, so likely written in another unit (milliseconds, cents): a p99 TTFT SLO of
100 s, a p99 TPOT SLO of 1 s per token, 1,000 USD per GPU-hour (an H200 rents for a few), a
response-cache lookup of 1 s, a generated tool call's median of 1,000 s. They are legal and run;
:func:`check_layouts` notes each."""


#: The option each scenario key's value was given with, by key (``slo.ttft_p99_s`` ->
#: ``--slo-ttft-p99``), named in a note on it instead of the key (:func:`keys_given_as`).
_GIVEN_AS: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar(
    "given_as", default=None)


@contextlib.contextmanager
def keys_given_as(names: dict[str, str]):
    """Inside, a note on a scenario key in ``names`` (:func:`check_layouts`) names what the
    user gave instead: a command that sets the key from an option of its own (``tiersim plan
    --slo-ttft-p99 150`` plans, and runs, a scenario whose ``slo.ttft_p99_s`` is 150, and its
    note said "slo.ttft_p99_s is 150 s", a key the user never wrote)."""
    token = _GIVEN_AS.set({**(_GIVEN_AS.get() or {}), **names})
    try:
        yield
    finally:
        _GIVEN_AS.reset(token)


def _note_unlikely_units(scenario: Scenario) -> None:
    """A note per seconds or price key whose value is at or above :data:`UNLIKELY_AT`, with
    the value it would be in the unit likely meant (milliseconds, cents); a key set from a
    command's option named as that option (:func:`keys_given_as`)."""
    import warnings

    from tiersim.errors import Note

    in_seconds = "it is in seconds, so if milliseconds were meant, write"
    given = _GIVEN_AS.get() or {}
    found = [(given.get(f"slo.{key}", f"slo.{key}"), key, getattr(scenario.slo, key), "s",
              in_seconds, 1000) for key in ("ttft_p99_s", "tpot_p99_s")]
    found += [(f"{kind} {tier.name}: cost_per_gpu_hour", "cost_per_gpu_hour",
               tier.cost_per_gpu_hour, "USD",
               "it is the price of one GPU for one hour (a few USD), so if cents were meant, "
               "write", 100)
              for kind, tiers in (("tier", scenario.tiers), ("baseline", scenario.baselines))
              for tier in tiers]
    cache = scenario.router.response_cache
    if cache is not None:
        found.append(("router.response_cache.lookup_s", "lookup_s", cache.lookup_s, "s",
                      in_seconds, 1000))
    sessions = scenario.workload.sessions
    if sessions.source == "generate":
        found.append(("workload.sessions.generate.tool_s_median", "tool_s_median",
                      sessions.generate.tool_s_median, "s", in_seconds, 1000))
    for key, name, value, unit, meant, per in found:
        limit = UNLIKELY_AT[name]
        if value >= limit:
            warnings.warn(Note(f"{key} is {value:,g} {unit}, at or above {limit:,g} {unit}: "
                               f"{meant} {value / per:g}"), stacklevel=3)


def note_e2e_below_ttft(e2e: float | None, ttft: float | None, source: str | None) -> None:
    """A note where ``slo.e2e_p99_s`` (``e2e``) is below ``slo.ttft_p99_s`` (``ttft``; a
    run's, or a plan's with its options applied): a request's end-to-end time holds its first
    token's, so the fleet's p99 TTFT is never above its p99 end-to-end and the TTFT limit can
    never bind (a run's "meets SLOs" and a plan's sizing read the end-to-end one alone). Equal
    limits are no note: docs/planning.md ("An agent's turn") sets them so on purpose, to judge
    turns by their end-to-end time alone. A key set from a command's option is named as that
    option (:func:`keys_given_as`); values as YAML writes them."""
    import warnings

    from tiersim.errors import Note, yaml_written

    if e2e is None or ttft is None or e2e >= ttft:
        return
    given = _GIVEN_AS.get() or {}
    e2e_key = given.get("slo.e2e_p99_s", "slo.e2e_p99_s")
    ttft_key = given.get("slo.ttft_p99_s", "slo.ttft_p99_s")
    where = f"{source}: " if source else ""
    warnings.warn(Note(
        f"{where}{e2e_key} {yaml_written(e2e)} is below {ttft_key} {yaml_written(ttft)}, so the "
        "TTFT limit can never bind (a request's end-to-end time holds its time to first "
        f"token): lower {ttft_key} to {yaml_written(e2e)}, or raise {e2e_key} above "
        f"{yaml_written(ttft)}"), stacklevel=3)


def _note_unread_scheduler_keys(scenario: Scenario) -> None:
    """A note per scheduler key a tier (or baseline-only tier) sets that nothing reads
    (:func:`unread_scheduler_keys`): left on purpose when comparing, so not refused."""
    import warnings

    from tiersim.errors import Note

    for kind, tiers in (("tier", scenario.tiers), ("baseline", scenario.baselines)):
        for tier in tiers:
            for key in unread_scheduler_keys(tier.scheduler):
                warnings.warn(Note(
                    f"{kind} {tier.name}: scheduler.{key} is read only with "
                    f"{READ_ONLY_WITH[key][1]}, which the {kind} does not have, so it changes "
                    "nothing; give the tier those, or remove the key"), stacklevel=3)


def _note_unread_prices(scenario: Scenario) -> None:
    """A note per tier whose ``cost_per_request_usd`` no figure reads: under a cost model other
    than fixed_per_request, a routed tier's price is read only for the run's
    ``fixed_per_request_cost_usd`` beside the headline, which needs every routed tier's (it is
    null otherwise), and a baseline-only tier's not at all (its uniform fleet is costed in the
    scenario's cost model)."""
    import warnings

    from tiersim.errors import Note

    model = scenario.cost_model
    if model == "fixed_per_request":
        return
    unpriced = [t.name for t in scenario.tiers if t.cost_per_request_usd is None]
    for tier in scenario.tiers if unpriced else ():
        if tier.cost_per_request_usd is not None:
            which = (f"which {unpriced[0]} does not" if len(unpriced) == 1 else
                     f"which {', '.join(unpriced[:-1])} and {unpriced[-1]} do not")
            warnings.warn(Note(
                f"tier {tier.name}: cost_per_request_usd is read under cost_model "
                f"fixed_per_request, and beside {model} (summary.json's "
                f"fixed_per_request_cost_usd) only when every tier sets one, {which}, so it "
                "changes nothing; price every tier, or remove it"), stacklevel=3)
    for tier in scenario.baselines:
        if tier.cost_per_request_usd is not None:
            warnings.warn(Note(
                f"baseline {tier.name}: cost_per_request_usd is read only under cost_model "
                f"fixed_per_request, and this scenario's is {model}, so it changes nothing; "
                "remove it, or set cost_model: fixed_per_request"), stacklevel=3)


def _note_unread_accuracy_values(scenario: Scenario) -> None:
    """A note where ``accuracy_values`` is set and no tier (nor baseline-only tier) sets
    ``accuracy``: the key says what the scenario's accuracy numbers are, and each tier's is
    then its precision's prior, so it labels nothing (``accuracy_values: illustrative`` on such
    a scenario left the source 'prior' without a word)."""
    import warnings

    from tiersim.errors import Note

    said = scenario.accuracy_values
    if said is None or any(t.accuracy is not None for t in [*scenario.tiers,
                                                             *scenario.baselines]):
        return
    warnings.warn(Note(f"accuracy_values: {said} says what the tiers' accuracy numbers are, "
                       "and no tier sets accuracy (each reads its precision's prior), so it "
                       "labels nothing; set the tiers' accuracy, or remove accuracy_values"),
                  stacklevel=3)


def _note_blind_balancer(scenario: Scenario) -> None:
    """A note per tier (or baseline-only tier) whose ``balancer: prefix_aware`` has no prefix
    cache to read (no ``enable_prefix_caching: true``): it then balances exactly as
    ``least_tokens`` does (:class:`tiersim.engine.cluster.PrefixAware`), so the setting
    changes nothing."""
    import warnings

    from tiersim.errors import Note

    for kind, tiers in (("tier", scenario.tiers), ("baseline", scenario.baselines)):
        for tier in tiers:
            if (tier.balancer == "prefix_aware" and not tier.scheduler.enable_prefix_caching
                    and not (kind == "tier" and _lone_balancer(tier))):  # that note says more
                warnings.warn(Note(
                    f"{kind} {tier.name}: balancer prefix_aware counts the prompt tokens each "
                    f"replica has cached, and the {kind} caches none (no "
                    "enable_prefix_caching: true), so it balances as least_tokens does; turn "
                    "prefix caching on, or use balancer: least_tokens"), stacklevel=3)


def _note_lone_balancer(scenario: Scenario) -> None:
    """A note per tier that sets ``balancer`` and has one engine replica to pick (one replica
    of one data-parallel rank): every request goes to it whatever the balancer, so the key
    changes nothing. Baseline-only tiers are left out: they are sized, so their count is not
    the one written."""
    import warnings

    from tiersim.errors import Note

    for tier in scenario.tiers:
        if (_lone_balancer(tier) and tier.disaggregation is not None
                and tier.name in (_PLANNED.get() or {})):
            warnings.warn(Note(_planned_lone_prefill_words(
                tier, _PLANNED.get()[tier.name], (_PLANNED_SPLITS.get() or {}).get(tier.name))),
                stacklevel=3)
        elif _lone_balancer(tier) and tier.disaggregation is not None:
            warnings.warn(Note(
                f"tier {tier.name}: balancer {tier.balancer} picks one of the tier's prefill "
                "replicas for each request (its decode replicas by least outstanding tokens), "
                "and it has one (disaggregation.prefill_replicas 1), so the key changes "
                "nothing; give the tier more prefill replicas, or remove the key"),
                stacklevel=3)
        elif _lone_balancer(tier) and tier.name in (_PLANNED.get() or {}):
            warnings.warn(Note(_planned_lone_balancer_words(tier, _PLANNED.get()[tier.name])),
                          stacklevel=3)
        elif _lone_balancer(tier):
            warnings.warn(Note(
                f"tier {tier.name}: balancer {tier.balancer} picks one of the tier's engine "
                "replicas for each request, and it has one (replicas 1, data_parallel 1), so "
                "the key changes nothing; give the tier more replicas, or remove the key"),
                stacklevel=3)


def _replica_price(tier: TierConfig) -> str:
    """What one more replica of ``tier`` costs an hour, as a clause (", 3.50 USD/hour more
    (1 GPU x 3.50 USD/GPU-hour, the scenario's price)"); "" for a free tier."""
    price = tier.cost_per_gpu_hour
    return ("" if not price else
            f", {tier.gpus_per_replica * price:.2f} USD/hour more ({tier.gpus_per_replica} "
            f"GPU{'s' if tier.gpus_per_replica > 1 else ''} x {price:.2f} USD/GPU-hour, the "
            "scenario's price)")


def _planned_lone_prefill_words(tier: TierConfig, given: int,
                                split: tuple[int, int] | None) -> str:
    """The lone-balancer note on a disaggregated tier a plan gave one prefill replica
    (``given``: the replicas the user's scenario gives it; ``split``: its prefill and decode
    replicas there, None where it names none): the plan chose the count and its split, not
    the user's file, so it says so, as :func:`_planned_lone_balancer_words` does. Before, it
    read "give the tier more prefill replicas, or remove the key", advice on the user's file
    inside a plan."""
    split_now = tier.disaggregation
    ours = f"{split_now.prefill_replicas}P {split_now.decode_replicas}D"
    theirs = (f"{split[0]}P {split[1]}D" if split is not None else
              f"{given} replica{'s' if given != 1 else ''}, aggregated")
    return (f"tier {tier.name}: the plan chose 1 prefill replica for it ({ours} of the "
            f"{tier.replicas} replicas it sized; the scenario gives {theirs}), so its balancer "
            f"{tier.balancer}, which picks among the prefill replicas (the decode ones by "
            "least outstanding tokens), has one to pick and changes nothing in this plan; it "
            f"would pick only with a second prefill replica{_second_prefill(tier)}")


def _second_prefill(tier: TierConfig) -> str:
    """Where a planned disaggregated tier's second prefill replica would come from: one more
    replica (at its price) where its one decode replica cannot give one up, else that or
    another split of its replicas, one the plan did not choose."""
    more = f"one more replica{_replica_price(tier)}"
    if tier.disaggregation.decode_replicas < 2:
        return f": {more}"
    return f": another split of its replicas, one the plan did not choose, or {more}"


def _planned_lone_balancer_words(tier: TierConfig, given: int) -> str:
    """The lone-balancer note on a tier a plan sized to one replica (``given``: the replicas
    the user's scenario gives it): the planner chose the count, not the user's file, so it
    says so, and what a balancer that picks would take (a second replica, at its price)."""
    cost = _replica_price(tier)
    return (f"tier {tier.name}: the plan chose 1 replica for it (the scenario gives {given}), "
            f"so its balancer {tier.balancer} has one engine replica to pick and changes "
            f"nothing in this plan; it would pick only with a second replica{cost}, which the "
            "plan's constraints do not need")


#: While a plan runs its planned fleet, the replicas the user's scenario gives each tier, by
#: name (:func:`planned_counts`): a note on a count there names the plan as its author.
_PLANNED: contextvars.ContextVar[dict[str, int] | None] = contextvars.ContextVar(
    "planned", default=None)
#: With it, the prefill and decode replicas the user's scenario gives each disaggregated tier.
_PLANNED_SPLITS: contextvars.ContextVar[dict[str, tuple[int, int]] | None] = \
    contextvars.ContextVar("planned_splits", default=None)


@contextlib.contextmanager
def planned_counts(given: dict[str, int], splits: dict[str, tuple[int, int]] | None = None):
    """Inside, the tiers named in ``given`` (each with the replicas the user's scenario gives
    it) have replica counts a plan chose: the lone-balancer note on one says the planner
    sized it to one replica, where "give the tier more replicas" read as advice on the user's
    file (fresh54: a plan sized bf16 to 1 replica of the file's 2). ``splits``: the prefill
    and decode replicas the user's scenario gives each disaggregated tier, which the note on
    one prefill replica quotes (the plan chose that split too)."""
    token = _PLANNED.set({**(_PLANNED.get() or {}), **given})
    split_token = _PLANNED_SPLITS.set({**(_PLANNED_SPLITS.get() or {}), **(splits or {})})
    try:
        yield
    finally:
        _PLANNED_SPLITS.reset(split_token)
        _PLANNED.reset(token)


def _note_lone_expert_parallel(scenario: Scenario) -> None:
    """A note per tier that sets ``expert_parallel: true`` on a one-GPU replica: the experts
    are spread over one GPU, as without it, so the key changes nothing. Baseline-only tiers
    are left out: their GPUs per replica are sized."""
    import warnings

    from tiersim.errors import Note

    for tier in scenario.tiers:
        if tier.expert_parallel and tier.gpus_per_replica == 1:
            warnings.warn(Note(
                f"tier {tier.name}: expert_parallel spreads the experts over the replica's "
                "GPUs, and it has one (gpus_per_replica 1), so the key changes nothing; give "
                "the replica more GPUs, or remove the key"), stacklevel=3)


def _lone_balancer(tier: TierConfig) -> bool:
    """Whether ``tier`` sets ``balancer`` with one engine replica to pick: one replica of one
    data-parallel rank, or one prefill replica of a disaggregated tier (the balancer picks
    among its prefill replicas only; :meth:`tiersim.engine.cluster._Fleet._build_disagg`)."""
    if "balancer" not in tier.model_fields_set:
        return False
    split = tier.disaggregation
    return (split.prefill_replicas if split is not None else
            tier.replicas * tier.data_parallel) == 1


def _note_partial_profile(scenario: Scenario) -> None:
    """A note when the scenario's profile is one a calibration cut short or killed wrote
    (:func:`tiersim.perf.partial_note`), or one that holds no tables
    (:func:`tiersim.perf.empty_note`)."""
    import warnings

    from tiersim.errors import Note
    from tiersim.perf import empty_note, partial_note, resolve_profile

    if scenario.profile is None:
        return
    try:
        profile = resolve_profile(scenario.profile)
    except TiersimError:
        return  # the checks above name it
    for note in (partial_note(profile, scenario.profile),
                 empty_note(profile, scenario.profile)):
        if note:
            warnings.warn(Note(note), stacklevel=3)


def _note_block_splits(scenario: Scenario) -> None:
    """A note per tier whose block-FP8 or W4A16 weights its GPUs split into partial blocks or
    quantisation groups (:func:`tiersim.perf.memory.block_split_problem`)."""
    import warnings

    from tiersim.errors import Note
    from tiersim.fleet import parallel
    from tiersim.hardware import get_model
    from tiersim.perf.memory import block_split_problem

    for tier in scenario.tiers:
        try:
            problem = block_split_problem(get_model(scenario.tier_model_ref(tier)),
                                          tier.precision, *parallel(tier))
        except (KeyError, ValueError, TiersimError):
            continue  # the checks above name it
        if problem:
            warnings.warn(Note(f"tier {tier.name}: {problem}"), stacklevel=3)


def _note_short_kv(scenario: Scenario) -> None:
    """A note per tier whose KV cache cannot hold one sequence of its ``max_model_len`` (above
    the watermark, with its delta-net state and draft tokens): such requests are dropped here,
    and vLLM refuses to start a server whose ``max_model_len`` exceeds the whole cache."""
    import warnings

    from tiersim.engine import longest_sequence
    from tiersim.errors import Note
    from tiersim.fleet import draft_tokens, kv_blocks, limits

    for tier in scenario.tiers:
        try:
            ref = scenario.tier_model_ref(tier)
            held = kv_blocks(ref, scenario.gpu, tier, scenario.draft_model_ref(tier))
            lim = limits(tier, ref, scenario.draft_model_ref(tier))
        except (KeyError, ValueError, TiersimError):
            continue  # the checks above name it
        room = longest_sequence(lim, held, draft_tokens(tier))
        note = _short_kv_note(lim, held, tier, room, _vllm_most(lim, held, ref))
        if note:
            warnings.warn(Note(f"tier {tier.name}: {note}"), stacklevel=3)


def _note_empty_prefix_cache(scenario: Scenario) -> None:
    """A note per tier that caches prefixes in a GPU cache holding no whole prompt block
    (``prefix_cache_fraction`` of a replica's KV below one hash block of the workload): caching
    is on, yet no block is ever kept and no prompt hits it."""
    import warnings

    from tiersim.engine.prefix_cache import replica_cache
    from tiersim.errors import Note
    from tiersim.fleet import kv_blocks, limits, with_offload
    from tiersim.trace.canonical import HASH_BLOCK_TOKENS

    for tier in scenario.tiers:
        if not tier.scheduler.enable_prefix_caching:
            continue
        try:
            ref = scenario.tier_model_ref(tier)
            held = kv_blocks(ref, scenario.gpu, tier, scenario.draft_model_ref(tier))
            lim = with_offload(limits(tier, ref, scenario.draft_model_ref(tier)), ref, tier)
        except (KeyError, ValueError, TiersimError):
            continue  # the checks above name it
        cache = replica_cache(lim, held, HASH_BLOCK_TOKENS)
        if cache is None or cache.capacity > 0:
            continue
        blocks = held // (lim.full_groups + lim.window_groups)
        tokens = int(lim.prefix_cache_fraction * blocks * lim.block_size)
        what = ("it keeps no block on the GPU: each is written down to level "
                f"{lim.kv_levels[0].name!r} as soon as it is computed" if lim.kv_levels else
                "it caches nothing and no prompt hits it")
        warnings.warn(Note(
            f"tier {tier.name}: scheduler.prefix_cache_fraction "
            f"{tier.scheduler.prefix_cache_fraction:g} leaves its prefix cache {tokens:,} tokens "
            f"per replica (of {blocks * lim.block_size:,}), less than one "
            f"{HASH_BLOCK_TOKENS}-token prompt block, so {what}; raise prefix_cache_fraction, "
            "or set enable_prefix_caching: false"), stacklevel=3)


def _short_kv_note(lim, held: int, tier: TierConfig, room: int, most: int | None) -> str:
    """What :func:`_note_short_kv` says of a cache of ``held`` blocks of which one sequence may
    hold ``room`` tokens (:func:`tiersim.engine.longest_sequence`) and with which vLLM starts
    at a ``max_model_len`` of at most ``most`` tokens (None: any; :func:`_vllm_most`): "" when
    both are at least ``max_model_len`` (or none is set), else what one sequence may hold and
    why, and the most ``max_model_len`` that both serve; where that is nothing (the
    watermark, a delta-net state or draft slots take every block), that no request can be
    served."""
    cap = room if most is None else min(room, most)
    if room > 0 and (not lim.max_model_len or cap >= lim.max_model_len):
        return ""
    cache = _cache_text(lim, held, tier)
    if room <= 0:
        return (f"one sequence may hold no token of its KV cache per replica {cache}, so no "
                "request can be served (vLLM refuses to start so; give the tier more memory); "
                "here every request is dropped")
    vllm = "sequences of any length" if most is None else f"{most:,} tokens"
    if room >= lim.max_model_len:
        return (f"vLLM refuses to start at max_model_len {lim.max_model_len:,}: by its count "
                f"the KV cache per replica {cache} holds one sequence of at most {cap:,} "
                "tokens (it counts a sliding-window layer one block beyond its window and "
                "step); set "
                f"scheduler.max_model_len to at most {cap:,}, or give the tier more memory")
    return (f"one sequence may hold at most {room:,} tokens of its KV cache per replica "
            f"{cache}, less than max_model_len {lim.max_model_len:,}: a longer request is "
            f"dropped here (vLLM refuses to start when max_model_len exceeds the cache's "
            f"{vllm}); set scheduler.max_model_len to at most {cap:,}, or give the tier more "
            "memory")


def _cache_text(lim, held: int, tier: TierConfig) -> str:
    """The cache of ``held`` blocks as :func:`_short_kv_note` describes it: "(N blocks of B
    tokens, its layer groups, less what one sequence may not use)"."""
    watermark = int(lim.watermark * held)
    reserved = [f"{_blocks(watermark)} for the watermark"] if watermark else []
    if lim.state_blocks:
        reserved.append(f"{lim.state_blocks:,} for the sequence's delta-net state")
    if tier.speculative is not None:
        reserved.append(f"{tier.speculative.k} draft token slots")
    less = f", less {', '.join(reserved)}" if reserved else ""
    return f"({_blocks(held)} of {lim.block_size:,} tokens{_groups_text(lim)}{less})"


def _blocks(count: int) -> str:
    """``1 block``, ``2,064 blocks``: a cache of one block read "(1 blocks of 16 tokens)"."""
    return f"{count:,} block{'' if count == 1 else 's'}"


def _groups_text(lim) -> str:
    """How a sliding-window model's blocks are split (its KV-cache groups, one block per
    group per ``block_size`` tokens; :func:`tiersim.perf.memory.kv_groups`); "" without."""
    if not lim.window:
        return ""
    return (f", one per layer group: {lim.full_groups} full-attention and "
            f"{lim.window_groups} sliding-window of {lim.window:,} tokens")


def _vllm_most(lim, held: int, model_ref: str) -> int | None:
    """The largest ``max_model_len`` vLLM starts with on the tier's cache of ``held`` blocks
    (None: any length): ``held x block_size`` without sliding windows, else by vLLM's count of
    every layer (:func:`tiersim.perf.memory.vllm_longest_sequence`)."""
    from tiersim.hardware import get_model
    from tiersim.perf.memory import vllm_longest_sequence

    if not lim.window:
        return held * lim.block_size
    return vllm_longest_sequence(get_model(model_ref), held, lim.block_size,
                                 lim.max_num_batched_tokens)


def _note_hybrid_caching(scenario: Scenario) -> None:
    """A note per tier caching prefixes of a gated delta-net model: a cached prefix also needs
    the recurrent state at its end, which the prefix cache and offload levels do not hold."""
    import warnings

    from tiersim.errors import Note
    from tiersim.hardware import get_model

    for tier in scenario.tiers:
        sched = tier.scheduler
        if not (sched.enable_prefix_caching or sched.kv_offload):
            continue
        try:
            hybrid = get_model(scenario.tier_model_ref(tier)).is_hybrid
        except (KeyError, ValueError, TiersimError):
            continue  # the checks above name it
        if hybrid:
            warnings.warn(Note(
                f"tier {tier.name}: its model's delta-net layers need their recurrent state at "
                "a cached prefix's end, which tiersim's prefix cache and offload levels do not "
                "hold or move: hit rates read high and loads fast (vLLM keeps a state per "
                "cached block, several times a block's KV)"), stacklevel=3)


def _router_problem(scenario: Scenario) -> tuple[Loc, str] | None:
    """The router's own check of its options against the tiers (no training), as (loc, msg)."""
    from tiersim.routing import ROUTERS, TierInfo
    from tiersim.routing.constrained import with_scenario_floor

    # prices per request are not known before the fleet is built: NaN, not a made-up 1.0
    infos = [TierInfo(name=t.name, precision=t.precision, cost_weight=float("nan"))
             for t in scenario.tiers]
    router = with_scenario_floor(scenario.router, scenario.accuracy_floor)
    try:
        ROUTERS[scenario.router.policy](router, infos, "",
                                        [t.name for t in scenario.baselines])
    except ScenarioError as err:
        loc = tuple(int(p) if p.isascii() and p.isdigit() else p  # not int('²'): a name
                    for p in err.where.split("."))
        return loc, str(err).removeprefix(f"{err.path}: {err.where}: ")
    return None


def _one_line(err: Exception) -> str:
    """An exception's message on one line (KeyError quotes its argument; drop the quotes)."""
    text = err.args[0] if isinstance(err, KeyError) and err.args else str(err)
    return " ".join(str(text).split())

"""What keeps a design from a size at some GPU count or at any replica count
(:class:`FeasibilityChecks`, mixed into :class:`tiersim.plan.planner.Planner`): layouts refused
at a GPU count (a MoE kernel, a split), routed requests longer than a tier's context or larger
than one sequence may hold of its KV cache, and whether the replica limit or the latency itself
stopped the search."""

from __future__ import annotations

import math
import warnings

import numpy as np

from tiersim.errors import Note
from tiersim.limits import SIZED_GPUS_PER_REPLICA
from tiersim.plan.constraints import _missed
from tiersim.plan.evaluate import Design, Outcome
from tiersim.plan.reasons import _one_line, _per_replica
from tiersim.plan.search import HOPELESS
from tiersim.results import fleet_size
from tiersim.routing.capability import output_on_tier


def _refuses_layout(err: Exception) -> bool:
    """Whether ``err`` refuses a layout (a MoE kernel, a split) rather than saying the
    model is short of memory there (a :class:`FitError` with no key)."""
    from tiersim.errors import FitError

    return not (isinstance(err, FitError) and not err.key)


def _note_held_layouts(scenario) -> None:
    """A note for each tier whose ``data_parallel`` the sizing holds: at a GPU count it divides
    the ranks share the replica's GPUs, and tensor parallelism alone there is not tried."""
    for tier in scenario.tiers:
        dp = getattr(tier, "data_parallel", 1)
        if dp > 1:
            warnings.warn(Note(
                f"tier {tier.name}: sized with data_parallel {dp} at every GPU count it divides "
                "(1 below it); tensor parallelism alone at those counts is not tried: set "
                "data_parallel: 1 to size the tier that way"), stacklevel=3)


class FeasibilityChecks:
    """The planner's checks of what no replica count can fix, and their reasons. A mixin of
    :class:`tiersim.plan.planner.Planner`: it reads the planner's ``scenario``, ``evaluator``,
    ``c``, ``gpus``, ``gpu_options``, ``refused`` and ``max_replicas``."""

    def _refused_counts(self) -> dict[str, dict[int, str]]:
        """Per tier, each GPU count the search leaves out because that layout is refused (a
        MoE kernel, a split: not a shortage of memory), with the refusal's line, so a reason
        that names the counts tried also names those (:meth:`_and_refused`). A count whose
        tier is built but whose weights vLLM would not load split that way (partial block-FP8
        blocks or W4A16 groups per GPU: the evaluator's ``split_problem``, which
        :meth:`~tiersim.plan.evaluate.SimEvaluator.fits` left out) is one too: before, the
        plan sized W4A16 at 1 and 2 GPUs per replica beside NVFP4 at 1, 2, 4, 8 and said
        nothing of why."""
        refusals = getattr(self.evaluator, "refusals", {})
        out = {name: {g: _one_line(err) for (n, g), err in sorted(refusals.items())
                      if n == name and g not in options and _refuses_layout(err)}
               for name, options in self.gpus.items()}
        check = getattr(self.evaluator, "split_problem", None)
        built = getattr(self.evaluator, "built", None)
        if check is None or built is None:  # a closed-form stand-in does not say
            return out
        for name, options in self.gpus.items():
            own = self.evaluator.by_name[name].gpus_per_replica
            for g in sorted({*self.gpu_options, own} - {*options, *out[name]}):
                problem = check(name, g) if built(name, g) is not None else ""
                if problem:
                    out[name][g] = problem
            out[name] = dict(sorted(out[name].items()))
        return out

    def _left_out(self, design: Design) -> dict[str, dict[str, str]]:
        """plan.json's ``gpus_per_replica_left_out`` of a design: per tier of it, each GPU count
        of the sizing's (``limits.gpus_per_replica`` and the tier's own) that its search left
        out as a refused layout (:meth:`_refused_counts`), with the refusal; tiers with none
        left out are not named (a shortage of memory is not named: the counts it fits on
        say so)."""
        return {n: {str(g): why for g, why in self.refused[n].items()}
                for n in design.tiers if self.refused.get(n)}

    def _note_refused_options(self) -> None:
        """A note for each GPU count the scenario's ``limits.gpus_per_replica`` (or
        ``--gpus-per-replica``) asks for that a tier's sizing leaves out as a refused layout:
        a fleet found on the other counts said nothing of it (the default counts are not
        noted)."""
        limits = getattr(self.scenario, "limits", None)
        if "gpus_per_replica" not in getattr(limits, "model_fields_set", ()):
            return
        for name, counts in self.refused.items():
            for gpus, why in counts.items():
                if gpus in self.gpu_options:
                    warnings.warn(Note(f"tier {name}: limits.gpus_per_replica {gpus} is left "
                                       f"out of its sizing: {why}"), stacklevel=3)

    def _and_refused(self, name: str) -> str:
        """"; not on G GPUs per replica: why" for each count :meth:`_refused_counts` left out
        of tier ``name`` ("" when none)."""
        return "".join(f"; not on {_per_replica([g])}: {why}"
                       for g, why in self.refused.get(name, {}).items())

    def _and_unasked(self, name: str, reason: str, named: bool = False) -> str:
        """"; not considered: G GPUs per replica, which fit (...)" for the counts of the default
        sizing (:data:`tiersim.limits.SIZED_GPUS_PER_REPLICA`) above every count tried for tier
        ``name`` that ``--gpus-per-replica`` or ``limits.gpus_per_replica`` left out and the
        tier fits on, where the sizing's ``reason`` says more replicas do not help ("" else,
        or when none): the step that sets such a p99 may be shorter on more GPUs a replica,
        and "tried fp8 on 2 GPUs per replica" alone did not say 4 and 8 were never asked
        (round 57: Llama-3.1-70B on Mooncake's trace, p99 TTFT 5.70 s at TP2, met at TP8,
        modelled). A reason that already names the fix (requests over the KV cache) or a
        replica limit that stopped the search is left as it was. ``named``: "not considered
        for fp8: ..." (in a design of several tiers, where the clause follows them all)."""
        if HOPELESS not in (reason or ""):
            return ""
        top = max(self.gpus.get(name) or [0])
        unasked = [g for g in SIZED_GPUS_PER_REPLICA
                   if g > top and g not in self.gpu_options and self.evaluator.fits(name, g)]
        if not unasked:
            return ""
        which = f" for {name}" if named else ""
        return (f"; not considered{which}: {_per_replica(unasked)}, which fit (add them to "
                "--gpus-per-replica or limits.gpus_per_replica)")

    def _split_refusal(self, name: str) -> str:
        """Why a tier has no layout left when every one that fits splits its weights in a way
        vLLM refuses ("" otherwise, or for an evaluator that does not check splits), with the
        GPU counts it does not fit on: the split's fix names those that split whole, 1 always,
        and Qwen2.5-72B in block FP8 read "split it over 1 GPU" where one H100 is too small."""
        check = getattr(self.evaluator, "split_problem", None)
        if check is None:
            return ""
        own = self.evaluator.by_name[name].gpus_per_replica
        counts = sorted({*self.gpu_options, own})
        fitting = [g for g in counts if self.evaluator.built(name, g) is not None]
        problems = [check(name, g) for g in fitting]
        if not fitting or not all(problems):
            return ""
        unfit = [g for g in counts if g not in fitting]
        tail = f"; it does not fit on {_per_replica(unfit)}" if unfit else ""
        return f"{name} on {_per_replica(fitting)}: {problems[-1]}{tail}"

    def _longer(self, design: Design) -> list[tuple[str, int, int]]:
        """Per kept tier routed requests longer (prompt + output) than its context
        (``max_model_len``): (tier, how many, that context), tiers with none left out; empty
        when the evaluator does not say (a closed-form stand-in)."""
        return self._longer_and_unsent(design)[0]

    def _longer_and_unsent(self, design: Design) -> tuple[list[tuple[str, int, int]], int]:
        """:meth:`_longer`, with the later agent-task steps those requests cut off, never sent
        (:func:`tiersim.workload.sessions.never_sent`: counted apart, not as longer; the most
        any seed cuts off). A step too long itself but after a dropped one is among the
        latter, as the run's note on drops counts it."""
        from tiersim.workload.sessions import never_sent

        most: dict[str, tuple[int, int]] = {}
        cut = 0
        for df, tiers in self._routed_runs(design):
            masks = [(name, sent & (tokens > tier.limits.max_model_len)
                      if tier.limits.max_model_len else np.zeros(len(sent), dtype=bool),
                      int(tier.limits.max_model_len or 0))
                     for name, tier, sent, tokens in tiers]
            if not masks:
                continue
            unsent = never_sent(df, np.logical_or.reduce([m for _, m, _ in masks]))
            cut = max(cut, int(unsent.sum()))
            for name, mask, context in masks:
                longer = int(np.sum(mask & ~unsent))
                if longer:
                    most[name] = max(most.get(name, (0, 0)), (longer, context))
        return [(n, *most[n]) for n in design.tiers if n in most], cut

    def _routed_tokens(self, design: Design):
        """``(tier name, built tier, which requests are sent to it, each request's prompt +
        output tokens there)`` per kept tier of ``design``; none when the evaluator does not
        say (a closed-form stand-in). Under ``--robust`` (an evaluator holding one
        ``evaluators`` per seed) the same for each seed's routing in turn, a tier once a seed:
        the callers keep the most requests any seed sends it (before, the plan's own seed's
        routing alone was read)."""
        for _, tiers in self._routed_runs(design):
            yield from tiers

    def _routed_runs(self, design: Design):
        """:meth:`_routed_tokens` a seed at a time, each with the table it routed: ``(df,
        [(tier name, built tier, sent, tokens), ...])``."""
        for evaluator in getattr(self.evaluator, "evaluators", None) or [self.evaluator]:
            df, built = getattr(evaluator, "df", None), getattr(evaluator, "built", None)
            if df is None or built is None:
                return
            infos, a = evaluator.routing(design)[:2]
            prompt = df["input_tokens"].to_numpy(np.float64)
            output = df["output_tokens"].to_numpy(np.float64)
            passed_on = _passed_on(a, df, infos)
            tiers = []
            for k, name in enumerate(design.tiers):
                mult = evaluator.by_name[name].output_length_multiplier
                sent = (((np.asarray(a.tier) == k) & ~passed_on)
                        | (np.asarray(a.escalate_to) == k))
                tiers.append((name, built(name, design.gpus(name)), sent,
                              prompt + output_on_tier(output, mult)))
            yield df, tiers

    def _beyond_model(self, design: Design) -> dict[str, tuple[int, int]]:
        """Per kept tier, routed requests longer (prompt + output) than the most its model
        takes (:attr:`tiersim.fleet.BuiltTier.most_context`, its maximum context), which no
        ``max_model_len`` serves: tier -> (how many, that context), tiers with none or an
        unknown context left out."""
        out: dict[str, tuple[int, int]] = {}
        for name, tier, sent, tokens in self._routed_tokens(design):
            beyond = int(np.sum(sent & (tokens > tier.most_context))) if tier.most_context else 0
            if beyond:
                out[name] = max(out.get(name, (0, 0)), (beyond, int(tier.most_context)))
        return out

    def _over_kv(self, design: Design) -> list[tuple[str, int, int]]:
        """Per kept tier routed requests within its context but larger (prompt + output) than
        one sequence may hold of a replica's KV cache at the design's GPUs per replica
        (:attr:`tiersim.fleet.BuiltTier.longest_sequence`): (tier, how many, that room), tiers
        with none left out. More replicas never serve them (more GPUs per replica may); empty
        when the evaluator does not say (a closed-form stand-in)."""
        most: dict[str, tuple[int, int]] = {}
        for name, tier, sent, tokens in self._routed_tokens(design):
            room = max(tier.longest_sequence, 0)
            context = tier.limits.max_model_len or math.inf
            larger = int(np.sum(sent & (tokens > room) & (tokens <= context)))
            if larger:
                most[name] = max(most.get(name, (0, 0)), (larger, room))
        return [(n, *most[n]) for n in design.tiers if n in most]

    def _no_size(self, design: Design, replicas: dict[str, int], last: Outcome) -> str:
        """Why no replica count meets the SLOs, in a few words: what the largest fleet tried
        missed, and whether the replica limit or the latency itself stopped the search."""
        at = " + ".join(fleet_size(replicas[n], design.gpus(n)) for n in design.tiers)
        if any(replicas[n] >= self.max_replicas for n in design.tiers):
            return (f"misses the SLOs up to the replica limit {self.max_replicas} "
                    f"({_missed(last, self.c)} at {at})")
        return (f"misses the SLOs at any size: more replicas do not help "
                f"({_missed(last, self.c)} at {at})")


def _passed_on(a, df, infos) -> np.ndarray:
    """Which requests their first tier refuses on to a ``refused_to`` tier that holds them (a
    cascade's): that first tier never serves them, so they are no drop of it."""
    if a.refused_to is None:
        return np.zeros(len(df), dtype=bool)
    from tiersim.routing.capability import fits

    on = np.asarray(a.refused_to, dtype=np.int64)
    return (on >= 0) & fits(df, infos)[np.arange(len(df)), np.maximum(on, 0)]

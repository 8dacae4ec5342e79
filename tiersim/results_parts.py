"""The parts of a run summary: its tiers, router, sources, profile, response cache and
sessions, and the model config and trace file it read.

Each is a frozen dataclass with ``to_json()``; :class:`tiersim.results.RunResult` holds them.
Every name here is importable from :mod:`tiersim.results` as well.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from tiersim.results_figures import _fields, _unknown


def model_label(model: str) -> str:
    """A tier's own model in a table cell: a catalogue name as given, a Hugging Face config
    file or folder by its name (the file's stem; a ``config.json`` by its folder's name), not
    its whole path, which folded a cell over many lines; the ``model of <tier>:`` line and
    ``summary.json`` keep the path."""
    path = PurePath(model)
    if len(path.parts) <= 1:
        return model
    if path.name == "config.json" and path.parent.name:
        return path.parent.name
    return path.stem if path.suffix == ".json" else path.name


@dataclass(frozen=True)
class ModelRead:
    """What tiersim read from a tier's model config (:mod:`tiersim.model_read`), for a person
    to check against the model card.

    ``params`` / ``active_params``: the model's parameters (multi-token-prediction layers,
    which tiersim does not serve, left out), and those one token passes through (top-k experts
    only). ``weights_per_gpu_gb``: the tier's weights on each GPU of a replica
    at its layout and formats (1e9 bytes; a speculative draft's not included).
    ``kv_bytes_per_token``: KV-cache bytes one token takes on each GPU, at ``kv_dtype`` (the
    KV-cache dtype the tier runs, ``auto`` resolved). ``weight_formats``: the weight format of
    each module group the model has (``attention``, ``mlp`` (dense MLP), ``shared_experts``,
    ``experts``, ``lm_head``), as ``precision: checkpoint`` resolves it or the tier's
    precision sets it. ``config_sha256``: the SHA-256 of the ``config.json`` read (absent for
    a catalogue model), so a rerun after the file was edited is told apart.
    """

    params: int
    active_params: int
    weights_per_gpu_gb: float
    kv_bytes_per_token: float
    kv_dtype: str
    weight_formats: dict[str, str]
    config_sha256: str | None = None

    @property
    def formats_words(self) -> str:
        """Each module group's weight format: ``attention BF16, experts MXFP4, lm_head BF16``."""
        return ", ".join(f"{group} {fmt}" for group, fmt in self.weight_formats.items())

    def source_words(self, digits: int = 64) -> str:
        """Where the model was read from: tiersim's catalogue, or a config.json and the first
        ``digits`` hex digits of its SHA-256."""
        if self.config_sha256 is None:
            return "tiersim's catalogue"
        return f"config.json sha256 {self.config_sha256[:digits]}"

    def to_json(self) -> dict[str, Any]:
        """Plain JSON fields; no ``config_sha256`` for a catalogue model."""
        out = _fields(self)
        if out["config_sha256"] is None:
            out.pop("config_sha256")
        return out


@dataclass(frozen=True)
class TraceRead:
    """The trace file a run read (:func:`tiersim.inputs.trace_read`): its ``file`` name (no
    folder, so the same run writes the same bytes from any folder), the ``format`` it was read
    as (``format: auto`` resolved) and the SHA-256 of its bytes, so a rerun on an edited or
    replaced file is told apart."""

    file: str
    format: str
    sha256: str
    skip_longer_than: int | None = None
    skipped_requests: int | None = None
    requests_read: int | None = None

    def to_json(self) -> dict[str, Any]:
        """Plain JSON fields; ``skip_longer_than`` (the scenario's ``trace.skip_longer_than``),
        ``skipped_requests`` (those it left out) and ``requests_read`` (the trace's, before)
        only where the key was set."""
        out = _fields(self)
        for key in ("skip_longer_than", "skipped_requests", "requests_read"):
            if out[key] is None:
                out.pop(key)
        return out


@dataclass(frozen=True)
class TierResult:
    """One tier of a run (tiers are listed cheapest first).

    ``cost_usd`` is the tier's cost under the run's cost model (the headline ledger);
    ``attributed_cost_usd`` is its busy replica time x price beside it. ``requests`` counts the
    requests answered on the tier (final tier), ``passes`` the passes it ran (first passes that
    were admitted plus escalations). ``utilization``: busy replica-seconds over replicas x
    duration; ``kv_peak_frac``: the largest KV use of any one replica over its capacity.
    ``accuracy``: the run's accuracy over the requests answered on the tier alone (its final
    tier; a dropped one scored 0, as the run's accuracy scores it; None when it answered none,
    and in a summary written before it was recorded), on the run's basis and source
    (``accuracy_source``). The tiers' accuracies weighted by their requests give the run's.
    With prefix caching, ``prefix_hit_rate`` is the fraction of the tier's prompt tokens found
    cached, ``prefix_hit_by_level`` the same per cache level (``gpu``, then offload levels) and
    ``prefix_hit_bound`` what one unbounded cache would have found (None without caching).
    With KV offload levels, the load-or-recompute rule's choices (:mod:`tiersim.engine.
    kv_levels`), at each pass's first admission: ``offload_loads`` passes loaded the prefix
    blocks they found in an offload level, ``offload_recomputes`` passes recomputed them instead
    because the load was modelled slower than prefill, and ``prefix_recompute_rate`` is the
    fraction of the tier's prompt tokens found cached but so recomputed (not in
    ``prefix_hit_rate``); the three are absent from the JSON without offload levels.
    ``model``: the tier's own model when it names one (a cascade across models; absent from
    the JSON otherwise: the run's ``model``). ``prefill_replicas``: a disaggregated tier's
    prefill replicas of ``replicas`` (absent for an aggregated tier). ``model_read``: what
    tiersim read from the tier's model config (:class:`ModelRead`; None, and absent from the
    JSON, in a summary written before it was recorded). ``cost_per_gpu_hour`` and
    ``cost_per_request_usd``: the tier's prices as the run read them (None for the one: a
    summary written before they were recorded, which has neither; None for the other, with the
    first given: no price per request), so `tiersim report` can tell a price edited in the
    run's scenario.yaml from the one its costs were made with. ``techniques``: the serving
    techniques the tier runs beyond plain serving (``spec decode k=3``, ``KV offload host``:
    :func:`tiersim.results_savings.techniques_words`; absent for a tier served plainly), shown
    with its size as its split is. A speculative tier's realised draws (modelled, from the
    engine's own counts; all four absent from the JSON for a tier without speculative
    decoding): ``spec_verify_steps`` decoder verify steps, ``spec_tokens_per_step`` the tokens
    they emitted per step (vLLM's mean acceptance length), ``spec_expected_tokens_per_step``
    the formula's expectation at the tier's ``k`` and acceptance (each step at its own rates,
    where a trace column sets them) over the same steps, and ``spec_draft_acceptance`` the
    share of drafted tokens accepted (vLLM's acceptance rate, not the per-position
    ``acceptance``: docs/serving.md).
    """

    name: str
    precision: str
    replicas: int
    gpus_per_replica: int
    gpus: int
    requests: int
    share: float | None
    passes: int
    ttft_p99_s: float | None
    tpot_p99_s: float | None
    utilization: float | None
    kv_peak_frac: float | None
    kv_capacity_blocks: int
    cost_usd: float | None
    attributed_cost_usd: float
    step_time_source: str
    accuracy_source: str | None
    prefix_hit_rate: float | None = None
    prefix_hit_bound: float | None = None
    prefix_hit_by_level: dict[str, float] | None = None
    offload_loads: int | None = None
    offload_recomputes: int | None = None
    prefix_recompute_rate: float | None = None
    model: str | None = None
    dropped: int | None = None
    prefill_replicas: int | None = None
    model_read: ModelRead | None = None
    cost_per_gpu_hour: float | None = None
    cost_per_request_usd: float | None = None
    techniques: str | None = None
    spec_verify_steps: int | None = None
    spec_tokens_per_step: float | None = None
    spec_expected_tokens_per_step: float | None = None
    spec_draft_acceptance: float | None = None
    accuracy: float | None = None
    e2e_p99_s: float | None = None
    """Its requests' (final tier's) p99 end-to-end time, an escalated one's both passes
    counted as its TTFT counts the first; only where the run holds ``slo.e2e_p99_s`` (absent
    from the JSON otherwise)."""

    @property
    def label(self) -> str:
        """The tier as the tier tables name it: its name, with its own model where it names one
        (:func:`model_label`)."""
        return self.name if self.model is None else f"{self.name} ({model_label(self.model)})"

    def spec_text(self) -> str | None:
        """A speculative tier's realised draws in words (modelled), as the console and the
        report give them; None for a tier without speculative decoding (or a summary written
        before they were recorded)."""
        if self.spec_verify_steps is None:
            return None
        if not self.spec_verify_steps:
            return "no verify step ran (no request decoded on the tier); modelled"
        accepted = ("n/a" if self.spec_draft_acceptance is None
                    else f"{100 * self.spec_draft_acceptance:.1f} %")
        return (f"{self.spec_tokens_per_step:.3f} tokens per verify step over "
                f"{self.spec_verify_steps:,} steps, against "
                f"{self.spec_expected_tokens_per_step:.3f} from the formula for the tier's k and "
                f"acceptance; {accepted} of drafted tokens accepted (vLLM's acceptance rate, "
                f"not the per-position acceptance: docs/serving.md in tiersim's source "
                f"repository); modelled, from the "
                f"engine's draws")

    def to_json(self) -> dict[str, Any]:
        """Plain JSON fields (the name is the key it sits under in the run's ``tiers``)."""
        out = _fields(self)
        out.pop("name")
        if out["model_read"] is None:  # a summary read back from before it was recorded
            out.pop("model_read")
        if out["cost_per_gpu_hour"] is None:  # read back from before the prices were recorded
            out.pop("cost_per_gpu_hour")
            out.pop("cost_per_request_usd")
        if out["model"] is None:  # the run's model
            out.pop("model")
        if out["prefill_replicas"] is None:  # an aggregated tier
            out.pop("prefill_replicas")
        if out["techniques"] is None:  # a tier served plainly
            out.pop("techniques")
        if not out["dropped"]:  # a tier that dropped nothing
            out.pop("dropped")
        if out["e2e_p99_s"] is None:  # no end-to-end limit held
            out.pop("e2e_p99_s")
        if out["offload_loads"] is None:  # a tier without offload levels
            for key in OFFLOAD_FIELDS:
                out.pop(key)
        if out["spec_verify_steps"] is None:  # a tier without speculative decoding
            for key in SPEC_FIELDS:
                out.pop(key)
        if len(self.prefix_hit_by_level or {}) > 1:  # JSON objects lose their order
            out["prefix_level_order"] = list(self.prefix_hit_by_level)
        return out


AUROC_VERDICT_MIN_CLASS = 100
"""Requests of each class the AUROC asked needs before :meth:`RouterQuality.asked_text` judges
it against the realised AUROC's interval (:data:`tiersim.routing.quality.VERDICT_MIN_CLASS`,
where the figure is argued)."""
CHANCE_TAIL = 0.025
"""The share of random orders below which :meth:`RouterQuality.chance_text` does not call a
perfect order (an AUROC of 1) no better than chance: the tail a 95% interval leaves on each
side, as :data:`tiersim.routing.quality.EDGE_TAIL`."""
AUROC_FEW_COVERAGE = 31
"""The least share (%) of samples in which the interval held the true AUROC with fewer than
:data:`AUROC_VERDICT_MIN_CLASS` of a class (two of a class beside many of the other, AUROC
0.95, tied scores: ``benchmarks/auroc_coverage.py``, 2026-12-07)."""
OFFLOAD_FIELDS = ("offload_loads", "offload_recomputes", "prefix_recompute_rate")
""":class:`TierResult` fields present only for tiers with KV offload levels."""

SPEC_FIELDS = ("spec_verify_steps", "spec_tokens_per_step", "spec_expected_tokens_per_step",
               "spec_draft_acceptance")
""":class:`TierResult` fields present only for speculative tiers (their realised draws)."""


@dataclass(frozen=True)
class RouterQuality:
    """The router's realised quality on the trace it replayed, beside what the scenario asked
    (:mod:`tiersim.routing.quality`).

    ``truth``: what the AUROC is scored against, "trace labels" (``correct_<tier>``) or "drawn
    difficulty" (the class tiersim drew); ``requests``: how many requests were scored (those
    the router routed); ``target``: the positive class in words; ``positives``: how many
    requests are in it (None where nothing was scored); ``auroc``: scikit-learn's
    ``roc_auc_score`` of the router's classifier score, None with the reason in ``no_auroc``
    (no classifier, no request, continuous difficulty, one class); ``auroc_ci95``: its 95%
    interval (DeLong's, :func:`tiersim.routing.quality.auroc_interval`).
    ``auroc_asked``: the AUROC the scenario states for the same target (``asked_from`` names
    the key, ``workload.difficulty.hint_auroc``), None where it states none. ``fpr_asked`` /
    ``fnr_asked``: ``router.confusion``'s injected rates, None where it sets none; the
    realised rates (the router's ``fpr`` / ``fnr``) are the policy's own errors plus those.
    On drawn difficulty, ``auroc_wrong`` is the same score's AUROC for ``wrong_target`` (the
    cheapest tier answering wrong) against the drawn correctness, with its interval
    (``auroc_wrong_ci95``) and how many requests are in it (``wrong_positives``): what a
    routing error costs, where "not easy" (``target``) is what ``hint_auroc`` is stated for (on the
    default job 0.66 against 0.72, modelled). None on trace labels (``auroc`` is that AUROC),
    and where the router has no classifier, no request reached it, or the cheapest tier
    answers every request right or every one wrong.
    """

    truth: str
    requests: int
    target: str
    positives: int | None = None
    auroc: float | None = None
    auroc_ci95: tuple[float, float] | None = None
    no_auroc: str | None = None
    auroc_asked: float | None = None
    asked_from: str | None = None
    fpr_asked: float | None = None
    fnr_asked: float | None = None
    wrong_target: str | None = None
    wrong_positives: int | None = None
    auroc_wrong: float | None = None
    auroc_wrong_ci95: tuple[float, float] | None = None

    def auroc_text(self) -> str:
        """The AUROC at three decimals with its 95% interval, or "none (<why>)"."""
        if self.auroc is None:
            return f"none ({self.no_auroc or 'not recorded'})"
        if self.auroc_ci95 is None:
            return f"{self.auroc:.3f}{_no_interval(self.positives, self.requests, self.target)}"
        (lo, hi), d = self.auroc_ci95, self._ci_decimals()
        return f"{self.auroc:.3f} (95% CI {lo:.{d}f} - {hi:.{d}f})"

    def _ci_decimals(self) -> int:
        """Decimals the interval's ends are shown to: 3, or as many more (up to 10) as tell an
        end from the AUROC asked where the verdict puts that outside the interval (an upper
        end of 0.71996 beside 0.72 asked read "0.720", beside "above the 95% CI")."""
        if self.auroc_asked is None or self.auroc_ci95 is None:
            return 3
        (lo, hi), asked = self.auroc_ci95, self.auroc_asked
        for d in range(3, 10):
            if not ((asked > hi and float(f"{hi:.{d}f}") >= asked)
                    or (asked < lo and float(f"{lo:.{d}f}") <= asked)):
                return d
        return 10

    def chance_text(self) -> str | None:
        """The AUROC, its interval and its target where the 95% interval takes in 0.5 (the
        router's choices are then no better than chance on the trace): "0.514 (95% CI 0.478 -
        0.549) for hard or hopeless"; None otherwise (no AUROC, no interval, or 0.5
        outside it)."""
        if self.auroc is None or self.auroc_ci95 is None:
            return None
        lo, hi = self.auroc_ci95
        if not lo <= 0.5 <= hi or self._ordered_past_chance():
            return None
        return f"{self.auroc_text()} for {self.target}"

    def too_few_words(self) -> str | None:
        """Why no verdict is drawn from the AUROC's interval, where the smaller class has fewer
        than :data:`AUROC_VERDICT_MIN_CLASS` requests (or the counts are not recorded): the
        reason :meth:`asked_text` gives after "no verdict", and the plan's line on a router no
        better than chance (:func:`tiersim.cli.plan_text._chance_line`) gives too, so the two
        never judge one interval by two rules; None where there are enough."""
        return _too_few_for_verdict(self.positives, self.requests, self.target)

    def _ordered_past_chance(self) -> bool:
        """Whether the AUROC is 1 (every request of the target scored above every other) where
        a score drawn at random orders them so less than 2.5 % of the time (once in C(requests,
        positives) orders): the interval of a perfect order rests on ``min(n1, n0)`` disjoint
        pairs (:func:`tiersim.routing.quality.auroc_interval`) and takes in 0.5 up to 5 of a
        class, where 2 requests of 1,000 on top come once in 499,500 random orders."""
        if self.auroc is None or self.auroc < 1.0 or self.positives is None:
            return False
        return math.comb(self.requests, self.positives) * CHANCE_TAIL > 1.0

    def scored_words(self) -> str:
        """What the AUROC is of and where it comes from: "hard or hopeless, against the drawn
        difficulty of 8,819 requests (2,631 of them)"."""
        of = "" if self.positives is None else f" ({self.positives:,} of them)"
        return f"{self.target}, against the {self.truth} of {self.requests:,} requests{of}"

    def wrong_text(self) -> str | None:
        """The AUROC for the cheapest tier answering wrong against the drawn correctness, with
        its interval and how many requests answer wrong: "0.663 (95% CI 0.649 - 0.676) for
        the cheapest tier fp8 answering wrong (1,830 of them)"; None where there is none."""
        if self.auroc_wrong is None:
            return None
        of = "" if self.wrong_positives is None else f" ({self.wrong_positives:,} of them)"
        return f"{self.wrong_auroc_text()} for {self.wrong_target}{of}"

    def wrong_auroc_text(self) -> str | None:
        """``auroc_wrong`` at three decimals with its 95% interval; None where there is
        none."""
        if self.auroc_wrong is None:
            return None
        ci = _no_interval(self.wrong_positives, self.requests, self.wrong_target) if (
            self.auroc_wrong_ci95 is None) else (
            f" (95% CI {self.auroc_wrong_ci95[0]:.3f} - {self.auroc_wrong_ci95[1]:.3f})")
        return f"{self.auroc_wrong:.3f}{ci}"

    def asked_text(self) -> str:
        """The AUROC asked and where it is stated, or why there is none to compare with."""
        if self.auroc_asked is not None:
            return f"{self.auroc_asked:g} ({self.asked_from}{self._against_asked()})"
        if self.truth == "trace labels":
            return "none (a scenario states no AUROC for its trace's labels)"
        return "none (no workload.difficulty.hint_auroc)"

    def _against_asked(self) -> str:
        """Where the AUROC asked lies against the realised one's 95% interval: "; within the
        95% CI", "; above the 95% CI: the classifier is worse than asked", "; below ...: better
        than asked"; nothing without both; "; no verdict: ..." where the smaller class has
        fewer than :data:`AUROC_VERDICT_MIN_CLASS` requests (or the counts are not recorded),
        where the interval is not known to hold the true AUROC in 95 % of samples."""
        if self.auroc_asked is None or self.auroc_ci95 is None:
            return ""
        few = self.too_few_words()
        if few is not None:
            return f"; no verdict: {few}"
        lo, hi = self.auroc_ci95
        if self.auroc_asked > hi:
            return "; above the 95% CI: the classifier is worse than asked"
        if self.auroc_asked < lo:
            return "; below the 95% CI: the classifier is better than asked"
        return "; within the 95% CI"

    def confusion_text(self) -> str:
        """The FPR / FNR the scenario injects, or "none (no router.confusion)"."""
        if self.fpr_asked is None or self.fnr_asked is None:
            return "none (no router.confusion)"
        return (f"{self.fpr_asked * 100:g} % / {self.fnr_asked * 100:g} % injected "
                "(router.confusion, on top of the policy's own errors)")

    def line(self, rates: str, routing_source: str) -> str:
        """The console's line: the AUROC realised against the AUROC asked (and on drawn
        difficulty, the AUROC for the cheapest tier answering wrong), the realised
        ``rates`` (FPR / FNR as printed, scored on ``routing_source``) against those asked."""
        wrong = self.wrong_text()
        also = "" if wrong is None else f", and {wrong}, against the drawn correctness"
        return (f"router quality on the replayed trace: AUROC {self.auroc_text()} for "
                f"{self.scored_words()}, asked {self.asked_text()}{also}; FPR / FNR {rates} "
                f"realised (scored on {routing_source}), asked {self.confusion_text()}")

    def to_json(self) -> dict[str, Any]:
        """Plain JSON fields."""
        return _fields(self)


def _too_few_for_verdict(positives: int | None, requests: int, target: str) -> str | None:
    """Why the AUROC asked is not judged against the interval, in words, where the smaller
    class has fewer than :data:`AUROC_VERDICT_MIN_CLASS` requests: "8 requests hard or
    hopeless, under the 100 of each class a verdict needs (with fewer, the 95% CI held the
    true AUROC in as few as 31 % of simulated samples: docs/metrics.md)"; None where there
    are enough."""
    if positives is None:
        return "the class counts are not recorded"
    negatives = requests - positives
    if min(positives, negatives) >= AUROC_VERDICT_MIN_CLASS:
        return None
    count, words = (positives, target) if positives <= negatives else (
        negatives, f"not {target}")
    return (f"{count:,} request{'' if count == 1 else 's'} {words}, under the "
            f"{AUROC_VERDICT_MIN_CLASS} of each class a verdict needs (with fewer, the 95% CI "
            f"held the true AUROC in as few as {AUROC_FEW_COVERAGE} % of simulated samples: "
            "docs/metrics.md in tiersim's source repository)")


def _no_interval(positives: int | None, requests: int, target: str | None) -> str:
    """Why an AUROC has no 95% interval where a class has one request (DeLong's variance needs
    two of each: :func:`tiersim.routing.quality.auroc_interval`): " (no 95% CI: 1 request
    hard or hopeless; DeLong's needs two of each class)"; nothing where the counts do not
    say (a hand-edited summary)."""
    if positives is None or target is None:
        return ""
    if positives == 1:
        return f" (no 95% CI: 1 request {target}; DeLong's needs two of each class)"
    if requests - positives == 1:
        return f" (no 95% CI: 1 request not {target}; DeLong's needs two of each class)"
    return ""


@dataclass(frozen=True)
class RouterResult:
    """The router's decisions, scored.

    ``basis``: what accuracy is scored on ("expected" or "realised", see
    :mod:`tiersim.routing.accuracy`). ``fpr``/``fnr``: realised false positive / negative rates
    against each request's needed tier (None when no request could have one); ``fpr_among`` /
    ``fnr_among``: how many requests each is a share of (those that needed a tier above the
    cheapest / did not need the top tier; None in a summary written before they were kept).
    ``accuracy_ci95``: 95% interval of the accuracy (Wilson's for 0/1 scores, else Agresti
    and Coull's; ``tiersim.routing.metrics.accuracy_ci``).
    ``floor_met``: accuracy at or
    above the scenario's ``accuracy_floor`` (None without a floor); ``floor_met_ci95``: the
    interval's lower end at or above it. ``escalation_rate``: share of requests a cascade sent
    to its second tier, for either reason; ``escalation_refused_rate``: those of them sent on
    because their first tier refused them at admission (no first pass ran; None, and absent
    from the JSON, when there were none), the rest escalated on the confidence threshold.
    ``fit``: a ``floor`` or ``budget`` router's fitted cuts and what they promised on the
    classifier's calibration split (:meth:`tiersim.routing.constrained.CutFit.as_dict`; None,
    and absent from the JSON, for other policies and in summaries written before it was kept).
    ``quality``: the router's realised AUROC on the trace beside what the scenario asked
    (:class:`RouterQuality`; None, and absent from the JSON, in summaries written before it
    was kept).
    """

    policy: str
    basis: str
    accuracy: float | None
    accuracy_ci95: tuple[float | None, float | None]
    fpr: float | None
    fnr: float | None
    escalation_rate: float
    silent_failure_rate: float
    first_tier_shares: dict[str, float]
    accuracy_floor: float | None = None
    floor_met: bool | None = None
    floor_met_ci95: bool | None = None
    escalation_refused_rate: float | None = None
    fpr_among: int | None = None
    fnr_among: int | None = None
    fit: dict[str, Any] | None = None
    quality: RouterQuality | None = None

    COUNTS_LABEL = "FPR / FNR as counts"
    """The row under the router's rates giving :meth:`counts_text`, in the console and the
    report."""

    NO_INTERVAL = "none: fewer than two requests"
    """What the accuracy's interval reads as where it has none: no request, or a summary
    written before one request had an interval (tiersim's bootstrap needed two)."""

    def interval_text(self, show) -> str:
        """The accuracy's 95% interval as ``show(lo) - show(hi)``, or :attr:`NO_INTERVAL`."""
        lo, hi = self.accuracy_ci95
        if _unknown(lo) or _unknown(hi):
            return self.NO_INTERVAL
        return f"{show(lo)} - {show(hi)}"

    def rate_count(self, which: str) -> str | None:
        """How many requests FPR or FNR (``which``: "fpr" or "fnr") counts, of how many it is a
        share of, e.g. "2 of 5": a rate over a handful of requests reads as one. None where the
        rate is unknown or the summary predates the counts."""
        rate, among = getattr(self, which), getattr(self, f"{which}_among")
        if _unknown(rate) or among is None:
            return None
        return f"{round(rate * among):,} of {among:,}"

    def counts_text(self) -> str | None:
        """FPR's and FNR's :meth:`rate_count`, "2 of 5 / 170 of 312" ("-" for one unknown);
        None where neither is known."""
        fpr, fnr = self.rate_count("fpr"), self.rate_count("fnr")
        if fpr is None and fnr is None:
            return None
        return f"{fpr or '-'} / {fnr or '-'}"

    def to_json(self) -> dict[str, Any]:
        """Plain JSON fields (``escalation_refused_rate`` only when some request was sent on,
        ``fit`` only for a router that fits cuts)."""
        out = _fields(self)
        for key in ("escalation_refused_rate", "fit", "quality"):
            if out[key] is None:
                out.pop(key)
        return out


NOTHING_SERVED_WORDS = "none (no requests served)"
"""The latency's source where no pass ran (``Sources.latency``)."""


@dataclass(frozen=True)
class Sources:
    """Where each group of numbers comes from, in words (latency, accuracy, cost) and, where
    the requests are not the trace's rows, where they come from (``requests``: generated
    sessions, :data:`GENERATED_REQUESTS_WORDS`; a run of generated sessions had said "trace"
    beside its request counts, though the trace named was never replayed)."""

    latency: str
    accuracy: str
    cost: str
    requests: str = "trace"

    def to_json(self) -> dict[str, Any]:
        """Plain JSON fields; ``requests`` only where it is not "trace" (a trace's run writes
        the same bytes as before the field)."""
        out = _fields(self)
        if out["requests"] == "trace":
            out.pop("requests")
        return out


GENERATED_REQUESTS_WORDS = ("generated sessions (workload.sessions.generate, illustrative "
                            "shapes; the trace's rows are not replayed)")
"""Where a run's requests come from when ``workload.sessions.source`` is ``generate``."""


@dataclass(frozen=True)
class ProfileUsed:
    """The step-time profile named by the scenario (None: roofline, or the GPU's default) and,
    per tier, each operator table's source ("roofline", "harness on <device>", "measured:...").
    ``checked``: how that profile's serving predictions matched measured runs
    (:mod:`tiersim.fidelity`); with no profile, how the roofline model matched the GPU's
    measured runs; None when they were not checked (a profile of one's own, the roofline of a
    GPU with no measured rows)."""

    name: str | None
    sources: dict[str, dict[str, str]]
    checked: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """Plain JSON fields."""
        return _fields(self)


@dataclass(frozen=True)
class ResponseCacheResult:
    """What the cache did: hits, and the run with the cache against the same run without it.

    ``*_without`` figures come from simulating every request (no cache); GPU-hours are busy
    GPU-hours; ``cost_saved_usd`` is in the run's cost model (0 under provisioned cost: the
    same fleet is paid for), ``attributed_saved_usd`` in busy time. Latencies cover every
    request, a hit taking ``lookup_s``. ``unanswered``: requests whose key was cached from a
    request the fleet then dropped (too long to serve): no answer to share, so not hits; they
    count as dropped. Formulas: ``docs/metrics.md``; computed by :mod:`tiersim.response_cache`.
    """

    mode: str
    size: int
    lookup_s: float
    key_source: str
    requests: int
    hits: int
    hit_rate: float
    gpu_hours_busy: float
    gpu_hours_busy_without: float
    gpu_hours_saved: float
    cost_usd: float | None
    cost_without_usd: float | None
    cost_saved_usd: float | None
    attributed_saved_usd: float
    e2e_mean_s: float | None
    e2e_mean_without_s: float | None
    e2e_p50_s: float | None
    e2e_p50_without_s: float | None
    e2e_p99_s: float | None
    e2e_p99_without_s: float | None
    ttft_p50_s: float | None
    ttft_p50_without_s: float | None
    unanswered: int = 0

    def to_json(self) -> dict[str, Any]:
        """Plain JSON fields."""
        return _fields(self)


@dataclass(frozen=True)
class StepTypeResult:
    """One step type of an agentic run: steps, their accuracy, the final tiers' shares."""

    step_type: str
    requests: int
    accuracy: float
    final_tier_shares: dict[str, float]

    def to_json(self) -> dict[str, Any]:
        """Plain JSON fields (the step type is the key it sits under)."""
        out = _fields(self)
        out.pop("step_type")
        return out


@dataclass(frozen=True)
class SessionResult:
    """Per-task figures of an agentic run (one task = one ``session_id``).

    ``task_latency_*``: first step's arrival to last step's finish (tasks with a dropped step
    left out); ``task_success``: mean over tasks of the product of their steps' correctness;
    ``success_misjudged_by``: per-request accuracy minus task success; ``latency_ratio_p50``:
    median task latency / median request latency. Computed by :mod:`tiersim.session_metrics`.
    """

    tasks: int
    completed_tasks: int
    steps_per_task_mean: float
    steps_per_task_max: int
    task_latency_p50_s: float | None
    task_latency_p99_s: float | None
    task_latency_mean_s: float | None
    task_success: float
    cost_per_task_usd: float | None
    per_request_accuracy: float
    success_misjudged_by: float
    request_e2e_p50_s: float | None
    latency_ratio_p50: float | None
    step_types: tuple[StepTypeResult, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """Plain JSON fields; ``step_types`` as a map step type -> figures."""
        out = _fields(self)
        out["step_types"] = {s.step_type: s.to_json() for s in self.step_types}
        return out

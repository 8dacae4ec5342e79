"""Pydantic models of the routing, difficulty and accuracy parts of a scenario.

The scenario layer (``tiersim/scenario.py``) embeds these models:

- ``router:`` -> :class:`RouterConfig` (policy and its options, injected confusion, classifier);
- ``workload: {difficulty: ...}`` -> :class:`DifficultyConfig` (how to make difficulty classes
  and per-tier correctness when the trace has no ``correct_<tier>`` labels);
- per tier, ``accuracy:`` -> :data:`AccuracySpec` (a float, a table per difficulty class, or
  absent for the per-precision prior) and ``output_length_multiplier:`` (a float, default 1.0).

Every model forbids unknown keys, so a typo in a scenario is an error that names the key.
Defaults are chosen so that ``router: {policy: uniform}`` alone is a valid router.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tiersim.errors import KeyedError
from tiersim.response_cache import ResponseCacheConfig
from tiersim.shares import sums_to_one
from tiersim.workload.sessions import SessionsConfig

POLICIES = (
    "uniform", "static_split", "threshold", "lagrangian", "oracle", "cascade", "floor", "budget",
    "step_type",
)
DIFFICULTY_KINDS = ("two_type", "three_type", "continuous", "labels")
DIFFICULTY_CLASSES = ("easy", "hard", "hopeless")

Policy = Literal[
    "uniform", "static_split", "threshold", "lagrangian", "oracle", "cascade", "floor", "budget",
    "step_type",
]
DEFAULT_STEP_TIERS = {"planning": "top", "recovery": "top", "final": "top",
                      "tool_call": "cheapest", "format": "cheapest", "boilerplate": "cheapest"}
"""The step-type router's default map: the steps that decide a task on the strong tier, the
formatting ones on the cheap tier ("top" and "cheapest" name the last and first tier)."""
TierRef = int | str
"""A tier named by its ``name`` or by its index (0 = cheapest)."""

AccuracySpec = float | dict[str, float] | None
"""Accuracy of one tier: a mean accuracy in [0, 1], a table ``{easy: .., hard: .., hopeless: ..}``
(a ``continuous`` workload takes only a float), or ``None`` for the per-precision prior."""


class _Strict(BaseModel):
    """Base of every routing config model: unknown keys are errors, and so are NaN and
    infinities (a plain ``nan``, text to YAML 1.1, was read as a float and refused as
    "must be <= 1.0"), as in every scenario model."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, allow_inf_nan=False)


class ConfusionConfig(_Strict):
    """Errors injected on top of any policy.

    ``fpr``: share of the requests that needed a tier above the cheapest which are sent below the
    tier they needed. ``fnr``: share of the requests that did not need the top tier which are sent
    above the tier they needed.
    """

    fpr: float = Field(0.0, ge=0.0, le=1.0)
    fnr: float = Field(0.0, ge=0.0, le=1.0)


class CascadeConfig(_Strict):
    """A two-pass cascade: answer on ``from_tier``, escalate to ``to_tier`` when the confidence
    signal is below ``threshold``.

    The signal is the request's realised correctness on ``from_tier`` (0 or 1) plus Gaussian
    noise of standard deviation ``signal_noise`` (0 = a perfect verifier). ``None`` tiers mean the
    cheapest and the top tier.
    """

    from_tier: TierRef | None = None
    to_tier: TierRef | None = None
    threshold: float = Field(0.5, ge=-10.0, le=10.0, description="on the signal's scale: "
                             "correctness 0/1 plus noise")
    signal_noise: float = Field(0.3, ge=0.0, le=10.0)


class ClassifierConfig(_Strict):
    """The surface-feature difficulty classifier and its calibration.

    ``features`` names feature groups: ``input_tokens`` (log input length), ``task_type``
    (one-hot), ``feat`` (every numeric ``feat_*`` column), ``subject`` (one-hot of a ``subject``
    column), ``text`` (TF-IDF of a ``prompt`` column plus log prompt length). Groups whose columns
    the trace lacks are skipped. ``train_fraction`` of the labelled requests train the classifier
    and its isotonic calibrations; the rest are held out for the report. ``text_max_features``
    bounds the TF-IDF vocabulary; ``C`` is the logistic regression's inverse regularisation.
    """

    features: list[Literal["input_tokens", "task_type", "feat", "subject", "text"]] = Field(
        default_factory=lambda: ["input_tokens", "task_type", "feat", "subject", "text"]
    )
    train_fraction: float = Field(0.5, gt=0.0, lt=1.0)
    text_max_features: int = Field(5000, ge=10)
    C: float = Field(1.0, ge=1e-6, le=1e6)  # liblinear never converged at 1e300, nor at 1e-200
    cv_folds: int = Field(3, ge=2, le=100)
    ece_bins: int = Field(10, ge=2, le=1000)  # 10^8 bins took 11 GB


class RouterConfig(_Strict):
    """``router:`` of a scenario: the policy and its options.

    - ``uniform``: every request on ``tier`` (default: the top, most accurate tier).
    - ``static_split``: each request on a random tier with probabilities ``fractions``
      (a list per tier, cheapest first, or a map name -> share; must sum to 1).
    - ``threshold``: walk tiers cheapest first; take the first whose calibrated probability of
      being good enough is at least its threshold (``thresholds``: one float for all, a list for
      the K-1 non-top tiers, or a map name -> threshold). The top tier takes the rest.
    - ``lagrangian``: the tier maximising calibrated P(correct) - ``lambda`` x relative cost.
    - ``oracle``: knows each request's true expected correctness; with ``lambda`` set it is the
      lagrangian on truth, else the cheapest tier that is truly good enough.
    - ``cascade``: see :class:`CascadeConfig`.
    - ``floor``: the cheapest routing whose expected accuracy reaches the floor (``floor``, else
      the scenario's ``accuracy_floor``), with score thresholds fitted on the classifier's
      calibration split (:mod:`tiersim.routing.constrained`).
    - ``budget``: the most accurate routing whose expected cost per request stays within
      ``budget_relative`` (a fraction of the top tier's cost per request) or
      ``budget_usd_per_request`` (in the tiers' ``cost_weight`` unit: the price per request under
      ``cost_model: fixed_per_request``, else the price of the served requests' replica-seconds
      on the tier's step model at the decode batch the load gives a replica of the fleet:
      :func:`tiersim.inputs.cost_weight`).
    - ``step_type``: agent steps by their ``step_type`` column: ``step_tiers`` maps a step type
      to a tier (a name, an index, "top" or "cheapest"; default :data:`DEFAULT_STEP_TIERS`);
      other step types go where the ``step_fallback`` policy sends them (any other policy, with
      its options from this same block: ``threshold`` combines it with the difficulty
      classifier).
    ``confusion`` injects errors on top of any policy; ``classifier`` configures the classifier
    the ``threshold`` and ``lagrangian`` policies use. ``response_cache`` puts an exact-match
    cache in front of the router (:class:`tiersim.response_cache.ResponseCacheConfig`).
    """

    policy: Policy = "uniform"
    tier: TierRef | None = None
    fractions: list[float] | dict[str, float] | None = None
    thresholds: float | list[float] | dict[str, float] = 0.8
    lambda_: float | None = Field(None, alias="lambda", ge=0.0)
    floor: float | None = Field(None, ge=0.0, le=1.0)
    budget_relative: float | None = Field(None, gt=0.0)
    budget_usd_per_request: float | None = Field(None, gt=0.0)
    confusion: ConfusionConfig = Field(default_factory=ConfusionConfig)
    cascade: CascadeConfig = Field(default_factory=CascadeConfig)
    classifier: ClassifierConfig = Field(default_factory=ClassifierConfig)
    step_tiers: dict[str, TierRef] | None = None
    step_fallback: Policy = "uniform"
    response_cache: ResponseCacheConfig | None = None

    @field_validator("fractions")
    @classmethod
    def _fractions_sum_to_one(cls, value):
        """Shares are non-negative and sum to one."""
        if value is None:
            return value
        shares = list(value.values()) if isinstance(value, dict) else list(value)
        keys = list(value) if isinstance(value, dict) else list(range(len(shares)))
        negative = next((at for at, s in zip(keys, shares, strict=True) if s < 0), None)
        if negative is not None:  # named at the share, as the file writes it
            raise KeyedError((negative,), "fractions must be >= 0 and sum to 1 (got {share})",
                             {"share": ((negative,), value[negative])})
        if not sums_to_one(shares):
            # 10 digits: at 6, a sum of 1.000002 read "got sum 1"
            raise ValueError("fractions must be >= 0 and sum to 1 (got sum "
                             f"{math.fsum(shares):.10g})")
        return value

    @field_validator("thresholds")
    @classmethod
    def _thresholds_are_probabilities(cls, value):
        """Thresholds compare calibrated probabilities: each lies in [0, 1]."""
        places = (list(value.items()) if isinstance(value, dict)
                  else list(enumerate(value)) if isinstance(value, list) else [(None, value)])
        bad = [(at, v) for at, v in places if not 0.0 <= v <= 1.0]
        if bad:  # named at the threshold, as the file writes it
            at = () if bad[0][0] is None else (bad[0][0],)
            raise KeyedError(at, "thresholds are probabilities in [0, 1] (got {threshold})",
                             {"threshold": (at, bad[0][1])})
        return value

    @model_validator(mode="after")
    def _policy_needs(self):
        """Options a policy cannot run without."""
        if self.policy == "static_split" and self.fractions is None:
            raise ValueError("policy static_split needs fractions, e.g. fractions: [0.5, 0.5]")
        if self.policy == "step_type" and self.step_fallback == "step_type":
            raise ValueError("step_fallback must be another policy (e.g. uniform or threshold)")
        if self.policy == "lagrangian" and self.lambda_ is None:
            raise ValueError("policy lagrangian needs lambda, e.g. lambda: 0.1")
        budgets = (self.budget_relative, self.budget_usd_per_request)
        if self.policy == "budget" and sum(b is not None for b in budgets) != 1:
            raise ValueError("policy budget needs exactly one of budget_relative (e.g. 0.6) or "
                             "budget_usd_per_request")
        return self


POLICY_KEYS: dict[str, tuple[str, ...]] = {
    "uniform": ("tier",),
    "static_split": ("fractions",),
    "threshold": ("thresholds", "classifier"),
    "lagrangian": ("lambda", "classifier"),
    "oracle": ("lambda",),
    "cascade": ("cascade",),
    "floor": ("floor", "classifier"),
    "budget": ("budget_relative", "budget_usd_per_request", "classifier"),
    "step_type": ("step_tiers", "step_fallback"),
}
"""The ``router:`` keys each policy reads, as a scenario writes them; every policy reads
``policy``, ``confusion`` and ``response_cache`` (:class:`RouterConfig`)."""


def policies_in_play(router: dict) -> set[str]:
    """The policies a ``router:`` map (as written) routes with: its ``policy`` (default
    uniform) and, for ``step_type``, its ``step_fallback`` (default uniform)."""
    policy = router.get("policy", "uniform")
    fallback = router.get("step_fallback", "uniform") if policy == "step_type" else None
    return {str(p) for p in (policy, fallback) if p is not None}


def unread_key_problem(key: str, policies: set[str], choose: bool = False) -> str | None:
    """Why ``router.<key>`` is refused: no policy in ``policies`` reads it (it would be
    ignored quietly); None when one does, or the key is every policy's or unknown. The fix
    names a scenario's ``policy:``, or with ``choose`` the plan's ``--choose router.policy``."""
    readers = [p for p in POLICIES if key in POLICY_KEYS[p]]
    if not readers or policies & set(readers):
        return None
    named = sorted(policies)
    playing = (f"policy {named[0]} does not read it" if len(named) == 1 else
               f"none of the policies used ({', '.join(named)}) reads it")
    only = readers[0] if len(readers) == 1 else f"{', '.join(readers[:-1])} and {readers[-1]}"
    one = len(readers) == 1
    if choose:
        fix = (f"drop it, or add --choose router.policy="
               f"{readers[0] if one else ','.join(readers)}")
    else:
        fix = f"remove it, or set policy: {readers[0]}" if one else \
            "remove it, or set one of those policies"
    return f"{playing} (only {only} {'does' if one else 'do'}); {fix}"


def unread_router_key(router: dict, policies: set[str] | None = None
                      ) -> tuple[str, str] | None:
    """The first key of a ``router:`` map (as written) that no policy in play reads, with
    :func:`unread_key_problem`'s reason; ``policies``: those in play (default: the map's own,
    :func:`policies_in_play`)."""
    policies = policies_in_play(router) if policies is None else policies
    for key in router:
        problem = unread_key_problem(str(key), policies)
        if problem is not None:
            return str(key), problem
    return None


def check_router_keys(router: RouterConfig, source: str,
                      policies: set[str] | None = None, own: bool = True) -> None:
    """Refuse a ``router:`` key the scenario sets that no policy in play reads
    (:func:`unread_router_key`; ``policies``: those in play, with the router's own unless
    ``own`` is False: a plan whose ``--choose router.policy`` replaces it), as one line naming
    it: ``router: {policy: uniform, fractions: [1]}`` would run without it."""
    from tiersim.errors import ScenarioError

    written = router.model_dump(by_alias=True, exclude_unset=True)
    playing = (policies or set()) | (policies_in_play(written) if own else set())
    found = unread_router_key(written, playing)
    if found is not None:
        raise ScenarioError(source, f"router.{found[0]}", found[1])


class DifficultyConfig(_Strict):
    """``workload: {difficulty: ...}``: how difficulty is generated when the trace lacks labels.

    - ``two_type``: easy with probability ``p_easy``, else hard.
    - ``three_type``: hopeless (wrong on every tier) with probability ``p_hopeless``; the rest easy
      with probability ``p_easy`` or hard.
    - ``continuous``: difficulty ~ Beta(``beta_a``, ``beta_b``); correctness on a tier is a
      logistic curve of difficulty of width ``curve_width`` whose midpoint is set per tier so its
      mean matches the tier's accuracy.
    - ``labels``: the trace must carry ``correct_<tier>`` columns; nothing is generated.
    ``class_difficulty`` places the discrete classes on the [0, 1] difficulty axis (used when a
    tier's accuracy is a single float). ``top_accuracy`` is the accuracy of the top tier on
    non-hopeless requests when no tier states its accuracy (priors are relative to it).
    ``hint_auroc``, when set, adds a column ``feat_difficulty_hint``: a noisy surface feature whose
    AUROC for "not easy" (or for difficulty, continuous) is this value, so a classifier has
    something to learn from on a trace without prompts (RouteLLM MMLU's surface features: ~0.72).
    """

    kind: Literal["two_type", "three_type", "continuous", "labels"] = "two_type"
    p_easy: float = Field(0.8, ge=0.0, le=1.0)
    p_hopeless: float = Field(0.14, ge=0.0, lt=1.0)
    # numpy's Beta(1e308, 1e308) drew 0 for all (a + b overflows) and Beta(5e-324, 5e-324)
    # had mean 0.25, not 0.5; within [1e-6, 1e6] the draws keep their mean
    beta_a: float = Field(2.0, ge=1e-6, le=1e6)
    beta_b: float = Field(5.0, ge=1e-6, le=1e6)
    curve_width: float = Field(0.08, gt=0.0, le=10.0)  # on a [0, 1] axis; 1e300: 1/0
    class_difficulty: dict[Literal["easy", "hard"], float] = Field(
        default_factory=lambda: {"easy": 0.2, "hard": 0.8}
    )
    top_accuracy: float = Field(0.95, gt=0.0, le=1.0)
    hint_auroc: float | None = Field(None, ge=0.5, lt=1.0)

    @field_validator("class_difficulty")
    @classmethod
    def _on_the_difficulty_axis(cls, value):
        """Class positions lie on the [0, 1] difficulty axis."""
        bad = {k: v for k, v in value.items() if not 0.0 <= v <= 1.0}
        if bad:
            name, v = next(iter(bad.items()))  # named at the class, as the file writes it
            raise KeyedError((name,), "must be in [0, 1] (got {position})",
                             {"position": ((name,), v)})
        easy, hard = value.get("easy", 0.2), value.get("hard", 0.8)  # as difficulty.generate
        if easy > hard:  # the classes swap: "easy" requests answered less often than "hard"
            raise ValueError(f"easy ({easy:.6g}) is above hard ({hard:.6g}): easy "
                             "requests would be answered less often than hard ones; "
                             "place easy at or below hard (default {easy: 0.2, hard: 0.8})")
        return value


class WorkloadQualityConfig(_Strict):
    """The routing-owned part of ``workload:``: ``difficulty`` (see :class:`DifficultyConfig`),
    ``sessions`` (agentic sessions, :class:`tiersim.workload.sessions.SessionsConfig`)."""

    difficulty: DifficultyConfig = Field(default_factory=DifficultyConfig)
    sessions: SessionsConfig = Field(default_factory=SessionsConfig)

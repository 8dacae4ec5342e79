"""``tiersim plan --choose PATH=V1,V2``: the router settings a plan chooses among, read
(:func:`_parse_choose`) and checked against the scenario's router before any simulation
(:func:`_check_choose`, :func:`_check_router_keys`).
"""

from __future__ import annotations

import math
import re
import warnings

from tiersim.errors import Note, TiersimError, cut, shown, yaml_written

#: The most combinations of ``--choose`` values a plan tries: each is sized by simulation (a
#: search per tier subset), and three options of 299 values each made 26.7 million settings
#: the plan checked one by one before any simulation.
MAX_CHOOSE_COMBINATIONS = 1_000


CHOOSE_FORM = ("write PATH=VALUE1,VALUE2, a list value in brackets (e.g. router.lambda=0.1,0.2 "
               "or router.thresholds=[0.2,0.5],[0.3,0.6])")


def _parse_choose(items: list[str] | None) -> dict[str, list]:
    """``PATH=v1,v2`` options -> {path: [values]}. The values are read as one YAML flow list
    (``[v1,v2]``) within a scenario's limits, so a value may itself be a list or a quoted string
    holding a comma; one line for a malformed option or a setting given twice (``floor`` and
    ``router.floor`` are one setting)."""
    chosen: dict[str, list] = {}
    for item in items or []:
        path, sep, values = item.partition("=")
        path = path.strip()
        if not sep or not values.strip():
            raise TiersimError(f"--choose {shown(item, 64)}: {CHOOSE_FORM}")
        if not all(part.strip() for part in path.split(".")):
            raise TiersimError(f"--choose {shown(item, 64)}: {shown(path, 64)} has an empty part "
                               "between dots; name a router setting, e.g. router.floor")
        _router_path(path)
        setting = path.removeprefix("router.")
        if setting in {p.removeprefix("router.") for p in chosen}:
            raise TiersimError(f"--choose {cut(path)}: given twice; give all its values in "
                               f"one --choose {cut(path)}=VALUE1,VALUE2")
        chosen[path] = _distinct(path, _choose_values(path, values))
    _check_combinations(chosen)
    return chosen


def _check_combinations(chosen: dict[str, list]) -> None:
    """Refuse more combinations of ``--choose`` values than
    :data:`MAX_CHOOSE_COMBINATIONS`, before any is checked or sized."""
    counts = [len(values) for values in chosen.values()]
    total = math.prod(counts)
    if total > MAX_CHOOSE_COMBINATIONS:
        raise TiersimError(
            f"--choose: {total:,} combinations of router settings "
            f"({' x '.join(f'{c:,}' for c in counts)} values) are more than the "
            f"{MAX_CHOOSE_COMBINATIONS:,} a plan tries, each sized by simulation; give fewer "
            "values")


def _distinct(path: str, values: list) -> list:
    """The values of one ``--choose``, each once, in the order given: a note names a value
    given more than once (it is tried once)."""
    from collections import Counter

    from tiersim.jsonio import sorted_json

    keys = [sorted_json(value, default=repr) for value in values]
    first = dict(zip(reversed(keys), reversed(values), strict=True))  # the first of each
    repeated = [yaml_written(first[key]) for key, count in Counter(keys).items() if count > 1]
    if repeated:  # as typed (1e30, not 1e+30)
        warnings.warn(Note(f"--choose {cut(path)}: {', '.join(repeated)} given more than once; "
                           "each value is tried once"), stacklevel=3)
    return list(dict(zip(keys, values, strict=True)).values())


#: What to use instead of ``--choose`` for a scenario key the planner sets or reads itself.
NOT_CHOSEN = {"tiers": "the planner sizes each tier's replicas and GPUs itself",
              "slo": "give --slo-ttft-p99 / --slo-tpot-p99 / --slo-e2e-p99 / --slo-session-p99",
              "accuracy_floor": "give --accuracy-floor",
              "cost_model": "give --cost-model"}


def _router_path(path: str) -> None:
    """Refuse a ``--choose`` path that names a scenario key outside ``router:`` (say
    ``tiers.bf16.replicas``): a leading ``router.`` may be left out, so it would read as an
    unknown router key; and ``router`` alone, which names no setting of it."""
    from tiersim.scenario import Scenario

    if path == "router":
        raise TiersimError("--choose router: names the router block, not one of its settings; "
                           "name a setting (router.<key>, e.g. router.lambda=0.05,0.1)")
    first = path.split(".")[0]
    if first != "router" and first in Scenario.model_fields:
        instead = NOT_CHOSEN.get(first, "set it in the scenario")
        raise TiersimError(f"--choose {cut(path)}: {first!r} is a scenario key, not a router "
                           "setting; --choose takes router settings only (router.<key>, e.g. "
                           f"router.lambda=0.05,0.1); {instead}")


def _choose_values(path: str, values: str) -> list:
    """The values of one ``--choose``, read as the YAML flow list ``[values]``, each number
    kept with the text it was typed in (``1e30``, not ``1e+30``, in a line that quotes it) until
    :func:`tiersim.cli.plan.plan_capacity` has checked them
    (:func:`tiersim.numbers.plain_numbers`)."""
    from tiersim.scenario import MAX_NODES, TooManyValues, read_yaml_value

    try:
        parsed = read_yaml_value(f"[{values}]", f"--choose {path}", as_written=True)
    except TiersimError as err:
        if isinstance(err, TooManyValues) and not err.aliased:  # values written out, no bomb
            raise TiersimError(f"--choose {cut(path)}: more than {MAX_NODES:,} values; a plan "
                               f"tries at most {MAX_CHOOSE_COMBINATIONS:,} combinations of "
                               "router settings, each sized by simulation; give fewer "
                               "values") from None
        if "invalid YAML" in str(err):
            raise TiersimError(f"--choose {cut(path)}: cannot read {shown(values, 64)} as YAML "
                               "values; quote a text value that holds brackets, braces, commas "
                               f"or a colon ('a[1]'); {CHOOSE_FORM}") from None
        reason = re.sub(r"^.*?: line \d+: \[(\d+)\]", lambda m: f"value {int(m[1]) + 1}",
                        str(err))
        # a line of the option's own text means nothing on a command line
        reason = re.sub(rf"^{re.escape(f'--choose {path}')}: (line \d+: )?", "", reason)
        # PATH=VALUES was written as it should be and a value was refused (1e-400, .nan, a
        # duplicate key): the line ends with that value's fix, not the option's form
        raise TiersimError(f"--choose {cut(path)}: {reason}") from None
    if not isinstance(parsed, list) or not parsed:
        raise TiersimError(f"--choose {cut(f'{path}={values}')}: {CHOOSE_FORM}")
    return parsed


def _check_choose(scenario, choose: dict[str, list] | None, floor: float | None) -> None:
    """Each combination of ``--choose`` values, applied as the planner applies it (the floor
    router at ``floor`` when there is one, the chosen settings over it), must make a valid
    router: one line naming the options, before any simulation."""
    import itertools

    from pydantic import ValidationError

    from tiersim.errors import yaml_written
    from tiersim.plan.evaluate import set_dotted
    from tiersim.routing.config import RouterConfig
    from tiersim.scenario import explain_errors, format_loc, number_problem

    paths = list(choose or {})
    for values in itertools.product(*(choose or {}).values()):
        doc = scenario.router.model_dump(mode="json", by_alias=True, exclude_unset=True)
        if floor is not None:
            doc.update(policy="floor", floor=floor)
        for path, value in zip(paths, values, strict=True):
            try:
                set_dotted(doc, path, value)
            except TiersimError as err:
                raise TiersimError(f"--choose {err}") from None
        said = cut(" ".join(f"{p}={yaml_written(v)}" for p, v in zip(paths, values, strict=True)))
        # pydantic reads tier: no as tier 0, and floor: 010 as 10
        problem = number_problem({"router": doc})  # a boolean, then misspelt, near-whole
        if problem is not None:
            raise TiersimError(f"--choose {said}: {format_loc(problem[0])}: {problem[1]}")
        try:
            cfg = RouterConfig.model_validate(doc)
        except ValidationError as err:
            loc, message = explain_errors(err.errors(), doc, ("router",))
            if message.endswith("(got null)") and _at(doc, loc[1:]) is None:  # as a file's is
                message += "; null is YAML's null (no value): write the value"
            raise TiersimError(f"--choose {said}: {format_loc(loc)}: {message}") from None
        _refuse_unknown_tiers(scenario, cfg, said)


def _at(doc, loc) -> object:
    """The value at ``loc`` of the router map ``doc``; a marker, not None, where there is none
    (a key refused as missing)."""
    for part in loc:
        if isinstance(doc, dict) and part in doc or isinstance(doc, list) and isinstance(
                part, int) and 0 <= part < len(doc):
            doc = doc[part]
        else:
            return _at
    return doc


def _refuse_unknown_tiers(scenario, cfg, said: str) -> None:
    """Refuse a router, as the ``--choose`` values ``said`` make it, that names a tier the
    scenario does not route to (``router.fractions={w4a16: 0.6, nope: 0.4}``, ``router.tier``,
    ``router.cascade.to_tier``): checked against the scenario's tiers as a run of it is, before
    any simulation. Before, the plan ran, the designs routed with the value were each refused
    in the runner-up lines, and the plan exited 0."""
    from tiersim.errors import ScenarioError
    from tiersim.routing import TierInfo
    from tiersim.routing.policies import ROUTERS

    infos = [TierInfo(name=t.name, precision=t.precision, cost_weight=math.nan)
             for t in scenario.tiers]  # no prices: a budget is checked once the fleet has them
    try:
        ROUTERS[cfg.policy](cfg, infos, "--choose", [t.name for t in scenario.baselines])
    except ScenarioError as err:
        if err.message.startswith("unknown tier ") or "is a baseline-only tier" in err.message:
            raise TiersimError(f"--choose {said}: {err.where}: {err.message}") from None
    except (ValueError, TypeError, KeyError, IndexError):  # the planner's, per design, as before
        pass


def _check_router_keys(scenario, source: str, choose: dict[str, list],
                       floor: float | None) -> None:
    """Refuse a ``router:`` key of the scenario, or one ``--choose`` sets, that no policy the
    plan routes with reads (the scenario's, those ``--choose router.policy`` tries, the floor
    router where a ``floor`` is planned for): it would be ignored quietly
    (:func:`tiersim.routing.config.check_router_keys`)."""
    from tiersim.routing.config import check_router_keys, policies_in_play, unread_key_problem

    settings = {path.removeprefix("router.").split(".")[0].replace("lambda_", "lambda"): path
                for path in choose}  # floor and router.floor are one setting
    policies = {str(p) for key in ("policy", "step_fallback") if key in settings
                for p in choose[settings[key]]}
    if floor is not None:  # the planner routes with the floor router at the floor
        policies.add("floor")
    own = "policy" not in settings  # --choose router.policy replaces the scenario's policy
    try:
        check_router_keys(scenario.router, source, policies, own=own)
    except TiersimError as err:
        if own:
            raise
        # a key of the scenario's own policy, which --choose router.policy replaces: the plan
        # ignores it, and says so
        warnings.warn(Note(f"{err}; --choose router.policy replaces the scenario's policy, "
                           "so the plan ignores it"), stacklevel=2)
    if own:
        policies |= policies_in_play(scenario.router.model_dump(by_alias=True,
                                                                exclude_unset=True))
    for key, path in settings.items():
        problem = unread_key_problem(key, policies, choose=True)
        if problem is not None:
            raise TiersimError(f"--choose {cut(path)}: {problem}")

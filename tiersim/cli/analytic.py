"""``tiersim analytic``: the two-type closed form, from parameters or estimated from a trace.

    tiersim analytic --p 0.8 --eps 0.01 --delta 0.3 --dc 1.0 [--floor 0.97]
    tiersim analytic --trace T.parquet --scenario S.yaml     # estimate p, eps, delta first

With a trace, p is the share of requests the cheap tier answers well enough (realised cheap
correctness >= top), eps and delta the mean accuracy loss of the cheap tier on those and on the
rest. Tiers are the scenario's cheapest and top tier (or ``--cheap``/``--top`` column names).
With a scenario, ``c0`` and ``dc`` are priced as ``tiersim run`` prices them for its summary's
``analytic`` block, unless ``--c0`` and ``--dc`` are given (both: one alone would mix its unit
with the scenario's USD, and is refused): each tier's uniform fleet is sized by
simulation and costed in the scenario's cost model (:func:`tiersim.summary.two_tier_prices`),
in USD of all the workload's requests. Two tiers of one price (no trade to model), or a cheap
tier more accurate than the top (the closed form assumes the top the better), get the run's
note instead of a frontier, with or without a scenario; so does a scenario whose response cache
answers every request (no request to estimate on), or where a tier's uniform fleet meets the
SLOs at no size (no price). Estimating p, eps and delta needs no
simulation. A generated workload's own classes (``difficulty_class``) define easy and hard when
present.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import numpy as np
import typer

from tiersim.analytic import TwoType, accuracy_note, estimate, summary
from tiersim.cli.analytic_prices import _fleet_uniform, _prices, _uniform_at_floor

# the names imported "as" themselves: tests import them from here
from tiersim.cli.analytic_text import _estimate_lines as _estimate_lines
from tiersim.cli.analytic_text import accuracy_words as accuracy_words
from tiersim.cli.analytic_text import figure_sources, render, render_note
from tiersim.cli.usage import echo, expand_home, number_flag, scenario_help, unsigned_zero
from tiersim.errors import ScenarioError, TiersimError, baseline_only
from tiersim.scenario_where import _short

analytic_app = typer.Typer(add_completion=False, no_args_is_help=False)
WHERE = "tiersim analytic"


@analytic_app.callback(invoke_without_command=True)
def analytic(
    p: Annotated[float | None, typer.Option(
        "--p", **number_flag(float, flag="--p"),
        help="share of easy requests (without --trace/--scenario, which estimate it)")]
        = None,
    eps: Annotated[float | None, typer.Option(
        "--eps", **number_flag(float, flag="--eps"),
        help="cheap-tier loss on easy (without --trace/--scenario)")] = None,
    delta: Annotated[float | None, typer.Option(
        "--delta", **number_flag(float, flag="--delta"),
        help="cheap-tier loss on hard (without --trace/--scenario)")] = None,
    dc: Annotated[float | None, typer.Option(
        "--dc", **number_flag(float, flag="--dc"),
        help="extra cost of the top tier per request (default 1; with --scenario, "
        "priced as run prices it unless --c0 and --dc are both given)")] = None,
    c0: Annotated[float | None, typer.Option(
        "--c0", **number_flag(float, flag="--c0"),
        help="cost of the cheap tier per request (default 0 with --p/--eps/--delta, "
        "1 with --trace alone; with --scenario, as --dc)")] = None,
    floor: Annotated[float | None, typer.Option(
        "--floor", **number_flag(float, flag="--floor"),
        help="accuracy floor (default: the scenario's accuracy_floor, else none)")]
        = None,
    trace: Annotated[Path | None, typer.Option(
        "--trace", help="trace to estimate on, read whole (default: the scenario's, as it "
        "sets it); alone, it needs the correct_<tier> columns of --cheap and --top",
        parser=expand_home)] = None,
    scenario: Annotated[Path | None, typer.Option(
        "--scenario", help=scenario_help("scenario YAML: its tiers, correctness model and "
                                         "prices"),
        parser=expand_home)] = None,
    cheap: Annotated[str | None, typer.Option(
        "--cheap", help="cheap tier's name (default: the scenario's first tier)")] = None,
    top: Annotated[str | None, typer.Option(
        "--top", help="top tier's name (default: the scenario's last tier)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Print dC*, the kink and both frontiers of the two-type model."""
    from tiersim.numbers import plain_float

    p, eps, delta, dc, c0, floor = map(unsigned_zero, (p, eps, delta, dc, c0, floor))
    _check_numbers({"--p": p, "--eps": eps, "--delta": delta, "--floor": floor}, high=1.0)
    _check_numbers({"--dc": dc, "--c0": c0}, high=MAX_COST)
    p, eps, delta, dc, c0, floor = map(plain_float, (p, eps, delta, dc, c0, floor))  # checked
    if trace is None and scenario is None:
        _check_flag_tiers(cheap, top)
        model, est = _from_flags(p, eps, delta, dc, c0), None
    else:
        _check_data_flags({"--p": p, "--eps": eps, "--delta": delta}, cheap, top)
        if scenario is not None:
            _check_price_pair(c0, dc)
        model, est, floor, fleet_pick = _from_data(trace, scenario, cheap, top, dc, c0, floor)
    if model is None:  # no trade to model, or the cheap tier the better: the run's note
        note = est.pop("note")
        out = {"note": note, "estimated_from": est}
        echo(json.dumps(out, indent=1) if as_json else render_note(out))
        return
    if not model.dc > 0:
        raise ScenarioError(WHERE, "--dc", f"the top tier must cost more than the cheap one "
                            f"(dc = {model.dc:g}); the closed form prices the top tier's extra")
    if model.dc < MIN_DC:
        raise ScenarioError(WHERE, "--dc", f"must be at least {MIN_DC:.4g} (got {model.dc!r}), "
                            "the smallest number a float holds to its full digits: below it "
                            "dC* and the frontiers' costs round to 0; give dc in a larger unit "
                            "(per 1,000 or 10^6 requests)")
    out = summary(model, floor)
    if est is not None:
        out["estimated_from"] = est
        if "at_floor" in out:
            out["at_floor"] = _uniform_at_floor(out["at_floor"], model, est, fleet_pick)
    given = tuple(flag for flag, value in (("--c0", c0), ("--dc", dc)) if value is not None)
    out["sources"] = figure_sources(out, given)
    echo(json.dumps(out, indent=1) if as_json else render(out))


MIN_DC = sys.float_info.min
"""Smallest dc the closed form prices (the smallest normal float, 2.225e-308): ``--dc 5e-324``
gave dC* = 0, which read "0.0% of dc"."""

MAX_COST_TEXT = "1e12"
""":data:`MAX_COST` as a user writes it, and as a refusal quotes it (it read ``1e+12``,
Python's spelling, which is no one's)."""

MAX_COST = float(MAX_COST_TEXT)
"""Largest --dc / --c0 taken (USD per request): beyond it the frontiers overflow to infinity,
which JSON cannot hold."""


def _check_numbers(values: dict[str, float | None], high: float | None) -> None:
    """Each given flag must be a finite number >= 0 (and <= ``high`` where one is given)."""
    import math

    from tiersim.numbers import as_written

    for flag, value in values.items():
        if value is None:
            continue
        if not math.isfinite(value) or value < 0 or (high is not None and value > high):
            bound = MAX_COST_TEXT if high == MAX_COST else f"{high:g}"
            rule = f"from 0 to {bound}" if high is not None else "finite and >= 0"
            raise ScenarioError(WHERE, flag, f"must be {rule} (got {as_written(value)})")


def _check_data_flags(shares: dict[str, float | None], cheap: str | None,
                      top: str | None) -> None:
    """With --trace/--scenario the shares and losses are estimated (flags for them would be
    silently overridden), and --cheap and --top must name two tiers."""
    given = [flag for flag, value in shares.items() if value is not None]
    if given:
        raise ScenarioError(WHERE, "/".join(given), "the model's shares and losses are "
                            "estimated from --trace/--scenario, which would override them; "
                            "give one or the other")
    if cheap is not None and cheap == top:
        raise ScenarioError(WHERE, "--cheap/--top", f"both name the tier {cheap!r}; name two "
                            "tiers")


def _check_price_pair(c0: float | None, dc: float | None) -> None:
    """With --scenario, --c0 and --dc come together or not at all: one given beside one the
    scenario prices (USD of its simulated fleets) would mix two units in one frontier."""
    if (c0 is None) == (dc is None):
        return
    given, missing = ("--c0", "--dc") if dc is None else ("--dc", "--c0")
    raise ScenarioError(WHERE, "--c0/--dc", f"{given} is given without {missing}; with "
                        "--scenario give both (prices of your own, one unit) or neither (the "
                        "scenario's, in USD of its simulated fleets): one of each mixes units")


def _check_flag_tiers(cheap: str | None, top: str | None) -> None:
    """--cheap and --top name tiers of --trace/--scenario: without either they would be
    silently ignored."""
    given = [flag for flag, value in (("--cheap", cheap), ("--top", top)) if value is not None]
    if given:
        raise ScenarioError(WHERE, "/".join(given), "names a tier of --trace/--scenario, and "
                            "neither is given; give one, or drop it")


def _from_flags(p, eps, delta, dc, c0) -> TwoType:
    """The model from --p/--eps/--delta/--dc."""
    if None in (p, eps, delta):
        raise ScenarioError(WHERE, "--p/--eps/--delta", "give all three, or --trace/--scenario")
    try:
        return TwoType(p, eps, delta, dc=1.0 if dc is None else dc, c0=c0 or 0.0, a_top=1.0)
    except ValueError as exc:
        raise ScenarioError(WHERE, "--p/--eps/--delta/--dc", str(exc)) from None


def _from_data(trace, scenario, cheap, top, dc, c0, floor):
    """Estimate the model from a trace (and a scenario's tiers, costs and difficulty model):
    (model, estimate, floor, the scenario's cheapest uniform fleet at the floor), the model
    None and the estimate's ``note`` saying why where ``tiersim run`` notes the same (tiers of
    one price, the cheap tier the more accurate). The last is :func:`_fleet_uniform`'s, where
    the scenario prices every tier and a floor is set; else None (only the two compared tiers
    are priced)."""
    from tiersim.routing.accuracy import expected_matrix, prepare_workload, realised_matrix
    from tiersim.routing.types import TierInfo

    scn, fleet, infos, source = None, None, None, str(scenario or trace)
    if scenario is not None:
        scn, fleet, infos = _scenario_tiers(scenario)
    if scn is not None and trace is not None:
        _note_replaced_trace(scn, scenario, trace)
    df = _load(trace, scn, source)
    if infos is None:
        if cheap is None or top is None:
            raise ScenarioError(WHERE, "--cheap/--top", "name the two tiers' correct_<name> "
                                "columns, or give --scenario")
        infos = [TierInfo(cheap), TierInfo(top)]
        _require_labels(df, infos, source)
    pair = _pick(infos, cheap, top, source, [t.name for t in scn.baselines] if scn else [])
    every = infos
    if scn is not None:  # the requests run serves: its sessions (generated, or the trace's)
        from tiersim.inputs import baseline_infos, prepare_all
        from tiersim.runner import workload_rng

        # every tier run checks, baseline-only ones too (their draws leave the tiers' alone)
        every = [*infos, *baseline_infos(scn)]
        prepared = prepare_all(df, every, scn, workload_rng(scn), source)
    else:
        prepared = prepare_workload(df, infos, None, rng=np.random.default_rng(0), source=source)
    df, end_s = prepared.df, 0.0
    if scn is not None:  # as run: the requests a response cache answers never reach a tier
        from tiersim.runner import served_requests

        df, _, end_s = served_requests(scn, df, source)
    header = _provenance(pair, prepared, trace, scenario, scn)
    if scn is not None and not len(df):  # the run's note: no request to estimate on
        from tiersim.summary import NOTHING_SERVED_NOTE

        return None, {"n": 0, **header, "note": NOTHING_SERVED_NOTE}, floor, None
    easy = None
    if "difficulty_class" in df and df["difficulty_class"].notna().any():
        easy = (df["difficulty_class"] != "hard").to_numpy()  # generator's types; hopeless: easy
    expected = expected_matrix(df, pair, header["basis"])
    est = {**estimate(expected, realised_matrix(df, pair), easy), **header}
    accuracy = expected.mean(axis=0)
    est["accuracy"] = {pair[0].name: float(accuracy[0]), pair[1].name: float(accuracy[1])}
    c0, dc, runs = _prices(scn, (fleet, df, end_s), pair, source, (c0, dc), est)
    note = est.get("note") or accuracy_note(pair[0].name, pair[1].name, est)
    if note is not None:  # the run's note: no trade to model, or the cheap tier the better one
        est["note"] = note
        return None, est, floor, None
    if floor is None and scn is not None:
        floor = scn.accuracy_floor
    model = TwoType(est["p"], est["eps"], est["delta"], dc=dc, c0=c0, a_top=est["a_top"])
    pick = None
    if runs is not None and floor is not None:
        pick = _fleet_uniform(scn.cost_model, runs, (df, every, header["basis"]), floor,
                              (pair, c0, dc))
    return model, est, floor, pick


def _note_replaced_trace(scn, scenario: Path, trace: Path) -> None:
    """A note when ``--trace`` replaces a scenario's trace whose ``trace:`` block sets how to
    read its own (a window, a time scale, a format other than auto): none of it is applied to
    the ``--trace`` file, which is read whole, as it is."""
    cfg = scn.trace
    keys = [f"trace.{key}" for key, unset in (("window", None), ("time_scale", 1.0),
                                              ("format", "auto"))
            if getattr(cfg, key) != unset]
    if not keys:
        return
    named = keys[0] if len(keys) == 1 else f"{', '.join(keys[:-1])} and {keys[-1]}"
    echo(f"note: --trace replaces {scenario}'s trace, so its {named} "
               f"{'is' if len(keys) == 1 else 'are'} not applied (set for its own trace): "
               f"the whole of {trace} is read as it is; give the scenario alone to estimate "
               "on its trace", err=True)


def _provenance(pair, prepared, trace, scenario, scn) -> dict:
    """Where an estimate comes from: the two tiers, the trace or scenario, each tier's accuracy
    source (as ``tiersim run`` labels it: :func:`tiersim.summary.accuracy_labels`), the
    accuracy basis, and the scenario giving the tiers beside a ``--trace``."""
    from tiersim.summary import accuracy_labels

    said = prepared.accuracy_source if scn is None else accuracy_labels(
        prepared.accuracy_source, scn)
    out = {"cheap": pair[0].name, "top": pair[1].name, "source": str(trace or scenario),
           "accuracy_source": {t.name: said[t.name] for t in pair}, "basis": _basis(scn)}
    if trace is not None and scenario is not None:
        out["tiers_from"] = str(scenario)
    return out


def _require_labels(df, infos, source: str) -> None:
    """A bare trace (no scenario to model correctness) must carry both tiers' labels."""
    from tiersim.routing.accuracy import correct_column

    missing = [correct_column(t) for t in infos if correct_column(t) not in df]
    if missing:
        has = sorted(str(c) for c in df.columns if str(c).startswith("correct_"))
        found = f"it has {', '.join(has)}" if has else "it has no correct_<tier> columns"
        raise TiersimError(f"{source}: no column {', '.join(missing)} ({found}); name the "
                           "labelled tiers with --cheap/--top, or give --scenario to model "
                           "correctness")


def _basis(scn) -> str:
    """What accuracy is scored on: as ``run`` scores it for the scenario (its analytic section
    and its uniform fleets), the realised values where the scenario's router reads them (a
    cascade, injected ``confusion``), else the expected ones."""
    from tiersim.plan.evaluate import scores_realised

    return "realised" if scn is not None and scores_realised(scn) else "expected"


def _scenario_tiers(path: Path):
    """The scenario, its built fleet and its tiers' TierInfo; a scenario ``tiersim run``
    refuses (a router or session key nothing reads) is refused with run's line, and a
    ``sweep:`` map and the tiers as configured (:func:`tiersim.scenario_checks.check_layouts`) are
    noted as run notes them (the base point is read; its tiers' uniform fleets are sized)."""
    from tiersim import runner
    from tiersim.cli.run import base_point_only, check_scenario_keys, scenario_path
    from tiersim.scenario import check_layouts, load_scenario

    path = scenario_path(path)  # a bundled scenario's name works, as with run
    scn = load_scenario(path)
    check_scenario_keys(scn, path)
    if scn.sweep:
        echo(f"note: {base_point_only(path, 'reads')}", err=True)
    fleet = runner.build_fleet(scn)
    check_layouts(scn, str(path))
    return scn, fleet, runner.tier_infos(scn, fleet)


def _load(trace, scn, source):
    """The trace named on the command line, else the scenario's own."""
    if trace is not None:  # read whole, for the columns the scenario's run reads
        from tiersim.inputs import trace_keep
        from tiersim.paths import command_line_trace
        from tiersim.trace import read_trace

        path = command_line_trace(trace)  # as `trace inspect` finds and names it
        return read_trace(path, keep=trace_keep(scn)).table
    from tiersim import runner

    return runner.load_scenario_trace(scn, source).table


def _pick(infos, cheap, top, source: str = WHERE, baselines: list[str] | None = None):
    """The cheap and top TierInfo (default: first and last); ``source`` names the scenario,
    ``baselines`` its baseline-only tiers (named as such when a flag names one)."""
    names, baselines = [t.name for t in infos], baselines or []
    if len(names) < 2:
        raise ScenarioError(source, "tiers", f"the closed form compares two tiers and there is "
                            f"one ({names[0]}); give a scenario with two or more tiers")
    for flag, name in (("--cheap", cheap), ("--top", top)):
        baseline = baseline_only(name, names, baselines, "which no request is routed to, so "
                                 "the closed form cannot price routing to it")
        if baseline is not None:
            raise ScenarioError(WHERE, flag, baseline)
        if name is not None and name not in names:
            raise ScenarioError(WHERE, flag, f"unknown tier {_short(name, 64)!r}; tiers are "
                                f"{', '.join(names)}")
    lo = names.index(cheap) if cheap else 0
    hi = names.index(top) if top else len(names) - 1
    if lo == hi:  # one flag names the tier the other defaults to (both given: checked before)
        raise _same_tier(names, cheap)
    return [infos[lo], infos[hi]]


def _same_tier(names: list[str], cheap: str | None) -> ScenarioError:
    """The error for --cheap naming the top (last) tier, or --top the cheapest (first): the
    closed form would compare a tier with itself."""
    if cheap is not None:
        return ScenarioError(WHERE, "--cheap", f"names {cheap!r}, the last tier, which --top "
                             f"takes by default; name a cheaper tier ({', '.join(names[:-1])}), "
                             "or give --top")
    return ScenarioError(WHERE, "--top", f"names {names[0]!r}, the first tier, which --cheap "
                         f"takes by default; name a dearer tier ({', '.join(names[1:])}), or "
                         "give --cheap")

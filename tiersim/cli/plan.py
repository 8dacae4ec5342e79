"""``tiersim plan SCENARIO``: the cheapest fleet meeting the SLOs and the accuracy floor.

:func:`plan_capacity` runs the planner (:mod:`tiersim.plan`) end to end and writes the plan
folder: plan.json, the planned scenario, its run (:func:`tiersim.runner.run_scenario`) and the
report. It lives here, above both the planner and the runner, because the runner's savings use
the planner's search (planner -> runner -> savings -> planner would be an import cycle).
"""

from __future__ import annotations

import errno
import json
import warnings
from pathlib import Path
from typing import Annotated

import typer

from tiersim.cli.plan_choose import _check_choose, _check_router_keys, _parse_choose
from tiersim.cli.plan_current import parse_current
from tiersim.cli.plan_fit import _fitting
from tiersim.cli.plan_options import (
    _check_cost_model,
    _check_limits,
    _flags_given,
    _over_the_cap,
    _parse_gpus,
)
from tiersim.cli.plan_scenario import (
    apply_split,
    as_searched,
    planned_doc,
    planned_scenario,
    with_disaggregation,
)
from tiersim.cli.plan_seeds import DEFAULT_CHECK_SEEDS

# the names imported "as" themselves: tests import them from here
from tiersim.cli.plan_text import _saving_line as _saving_line
from tiersim.cli.plan_text import _tiers_over_slo as _tiers_over_slo
from tiersim.cli.plan_text import _uniform_line as _uniform_line
from tiersim.cli.plan_text import format_plan
from tiersim.cli.usage import echo, expand_home, number_flag, scenario_help, unsigned_zero
from tiersim.errors import Note, TiersimError, escaped
from tiersim.results import PlanResult


def plan(
    scenario: Annotated[Path, typer.Argument(help=scenario_help("Scenario YAML to size"),
                                               parser=expand_home)],
    slo_ttft_p99: Annotated[float | None, typer.Option(
        "--slo-ttft-p99", **number_flag(float, flag="--slo-ttft-p99"),
        help="p99 TTFT limit, seconds (default: the scenario's).")] = None,
    slo_tpot_p99: Annotated[float | None, typer.Option(
        "--slo-tpot-p99", **number_flag(float, flag="--slo-tpot-p99"),
        help="p99 TPOT limit, seconds (default: the scenario's).")] = None,
    slo_e2e_p99: Annotated[float | None, typer.Option(
        "--slo-e2e-p99", **number_flag(float, flag="--slo-e2e-p99"),
        help="p99 end-to-end limit per request (an agent turn: arrival to last token, a "
        "cascade's two passes included), seconds (default: the scenario's slo.e2e_p99_s; "
        "none unless set).")] = None,
    slo_session_p99: Annotated[float | None, typer.Option(
        "--slo-session-p99", **number_flag(float, flag="--slo-session-p99"),
        help="p99 limit per agent task (session), its first step's arrival to its last step's "
        "finish, seconds (default: the scenario's slo.session_p99_s; none unless set; agent "
        "sessions only).")] = None,
    accuracy_floor: Annotated[float | None, typer.Option(
        "--accuracy-floor", **number_flag(float, flag="--accuracy-floor"),
        help="Least expected accuracy (default: the "
        "scenario's accuracy_floor).")] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Plan folder.",
                                          parser=expand_home)] = Path("plan"),
    choose: Annotated[list[str] | None, typer.Option(
        "--choose", help="Router setting to choose too: PATH=V1,V2 (repeatable); "
        "router.floor values are tried beside the accuracy floor and its raised "
        "margins, not instead of them.")] = None,
    max_replicas: Annotated[int | None, typer.Option(
        **number_flag(int, 1, flag="--max-replicas"),
        help="Largest tier to try (default: the scenario's "
        "limits.max_replicas, 1024 unless it sets one, as a run sizes its uniform "
        "baselines; a value other than the cap a run of the scenario sizes its baselines "
        "under is written into the planned scenario's limits).")] = None,
    gpus_per_replica: Annotated[str | None, typer.Option(
        "--gpus-per-replica", help="GPUs per replica to consider, e.g. 1,2,4 (default: the "
        "scenario's limits.gpus_per_replica, 1,2,4,8; each tier's own value is added, values "
        "that do not fit are skipped; written into the planned scenario's limits, so its run "
        "sizes its uniform baselines over the same).")] = None,
    cost_model: Annotated[str | None, typer.Option(
        "--cost-model", help="provisioned, attributed or fixed_per_request (default: the "
        "scenario's when it sets one, else provisioned).")] = None,
    report: Annotated[bool, typer.Option(help="Write report.html too.")] = True,
    check_seeds: Annotated[int, typer.Option(
        "--check-seeds", **number_flag(int, 0, flag="--check-seeds"),
        help="Simulate the planned fleet and the uniform fleet its saving is quoted against "
        "at this many other seeds (the scenario's seed + 1 .. + N; nothing is sized again) and "
        "say at how many it meets the constraints; 0 turns the check off (at most 1,000).")
    ] = DEFAULT_CHECK_SEEDS,
    current: Annotated[list[str] | None, typer.Option(
        "--current", help="Today's fleet, TIER=REPLICAS or TIER=REPLICASxGPUS (repeatable, "
        "one a tier; in place of the scenario's plan.current): simulated on the same trace "
        "and seed, and the plan's saving against it given per hour and per month.")] = None,
    hours_per_month: Annotated[float | None, typer.Option(
        "--hours-per-month", **number_flag(float, flag="--hours-per-month"),
        help="Hours a month of today's fleet and of the plan is paid for, the month its "
        "savings are priced over, with or without --current (default: the scenario's "
        "plan.hours_per_month, 730: 24/7; at most 744).")] = None,
    robust: Annotated[bool, typer.Option(
        "--robust", help="Size for the scenario's seed and the --check-seeds seeds after it "
        "together: a design (and the uniform fleet its saving is quoted against) qualifies "
        "only if it meets the SLOs and the accuracy floor at every one of them, and the plan's "
        "figures are the worst over them (up to N + 1 simulations a fleet judged; the worst "
        "seed can make the search judge larger fleets too, so it can take more than N + 1 "
        "times the simulations of the plan without --robust).")
    ] = False,
) -> None:
    """Cheapest fleet (replicas and GPUs per tier, router setting) meeting the SLOs and the
    accuracy floor, with the runner-up designs and the best uniform fleets beside it. Exit
    status 1 when no fleet meets them (plan.json and the report still say what each missed)."""
    from tiersim.cli.interrupted import said_if_interrupted

    with said_if_interrupted(out, "plan"):  # a stop while its modules load is said too
        from tiersim.cli.plan_seeds import DefaultCount
        from tiersim.cli.run import provenance_lines, scenario_path
        from tiersim.numbers import WrittenWhole

        if not isinstance(check_seeds, WrittenWhole):  # not typed: the default, held to the
            check_seeds = DefaultCount(check_seeds)  # seeds there are after the scenario's
        path = scenario_path(scenario)
        slo_ttft_p99, slo_tpot_p99, accuracy_floor, slo_e2e_p99, slo_session_p99 = map(
            unsigned_zero, (slo_ttft_p99, slo_tpot_p99, accuracy_floor, slo_e2e_p99,
                            slo_session_p99))
        result = plan_capacity(path, slo_ttft_p99, slo_tpot_p99, accuracy_floor, out,
                               _parse_choose(choose), max_replicas=max_replicas,
                               gpu_options=_parse_gpus(gpus_per_replica),
                               cost_model=_check_cost_model(cost_model), report=report,
                               check_seeds=check_seeds, robust=robust,  # a plain int once checked
                               current=parse_current(current),
                               hours_per_month=unsigned_zero(hours_per_month),
                               e2e=slo_e2e_p99, session=slo_session_p99)
        echo(format_plan(result, planned_quality(out, result)))
        from tiersim.results_seeds import unchecked_lines

        for line in unchecked_lines(result.seed_check_none):  # where the check's block would be
            echo(line)
        for line in source_lines(result, provenance_lines(path)):
            echo(line)
        echo("wrote " + ", ".join(escaped(out / name) for name in written(result, report)))
    if result.plan is None:  # an answer, written down, but no fleet to act on: status 1
        raise SystemExit(1)


def source_lines(result: PlanResult, provenance: list[str]) -> list[str]:
    """The plan's last lines on where its figures come from: ``provenance``
    (:func:`tiersim.cli.run.provenance_lines` of the scenario: its tiers' step times at the
    layout it writes, and the profile's fidelity), its first line read from plan.json's
    ``sources.latency`` where the plan has it: the step times of the GPU counts its designs
    ran. Before, a scenario writing its tiers at 2 GPUs a replica, every design sized at 1,
    named the 2-GPU tables ("roofline (5 ops)", plan.json "roofline (4 ops)")."""
    latency = (result.sources or {}).get("latency")
    if latency is None or not provenance:
        return provenance
    return [f"latencies {latency}", *provenance[1:]]


def planned_quality(out: Path, result: PlanResult):
    """The router quality (:class:`tiersim.results.RouterQuality`) of the planned fleet's run
    this plan just wrote to ``out``; None with no fleet planned or none recorded."""
    from tiersim.results import RunResult

    if result.plan is None or not (out / "summary.json").is_file():
        return None
    run = RunResult.from_json(json.loads((out / "summary.json").read_text(encoding="utf-8")))
    return run.router.quality


def written(result: PlanResult, report: bool) -> list[str]:
    """The files :func:`write_plan` writes, in order: plan.json, with a plan the planned
    scenario's run (:data:`tiersim.outputs.DATA_FILES`, scenario.yaml among them, and its
    manifest), and report.html when asked."""
    from tiersim.manifest import MANIFEST
    from tiersim.outputs import DATA_FILES

    run = [*DATA_FILES, MANIFEST] if result.plan is not None else []
    return ["plan.json", *run] + (["report.html"] if report else [])


def plan_capacity(scenario_path: str | Path, ttft: float | None = None,
                  tpot: float | None = None, floor: float | None = None,
                  out_dir: str | Path | None = None, choose: dict[str, list] | None = None,
                  max_replicas: int | None = None, gpu_options: tuple[int, ...] | None = None,
                  cost_model: str | None = None, report: bool = True,
                  check_seeds: int = 0, robust: bool = False,
                  current: list[tuple[str, int, int | None, str]] | None = None,
                  hours_per_month: float | None = None,
                  e2e: float | None = None, session: float | None = None) -> PlanResult:
    """Plan the scenario at ``scenario_path`` (limits default to the scenario's; ``max_replicas``
    to the cap a run sizes its uniform baselines under,
    :func:`tiersim.savings.baseline_replica_limit`); with ``out_dir``, write plan.json,
    scenario.yaml (the plan as a scenario), the planned run's files and report.html.
    ``check_seeds``: simulate the planned fleet and its saving's baseline at that many seeds
    after the scenario's (:func:`tiersim.cli.plan_seeds.check_seeds`; ``tiersim plan`` checks
    :data:`~tiersim.cli.plan_seeds.DEFAULT_CHECK_SEEDS` unless told otherwise, this function
    none). ``robust``: size every design for the scenario's seed and those ``check_seeds``
    seeds together (:mod:`tiersim.plan.robust`). ``current`` (``--current``, parsed by
    :func:`~tiersim.cli.plan_current.parse_current`; else the scenario's ``plan.current``) and
    ``hours_per_month``: today's fleet, simulated beside the plan and its saving against it
    given per hour and per month (plan.json ``current``). ``e2e``: the p99 end-to-end limit
    per request (``--slo-e2e-p99``; default the scenario's ``slo.e2e_p99_s``, none unless
    set). ``session``: the p99 limit per agent task (``--slo-session-p99``; default the
    scenario's ``slo.session_p99_s``)."""
    from tiersim.cli.plan_current import month_hours, today_fleet
    from tiersim.numbers import plain_float, plain_int, plain_numbers
    from tiersim.outputs import out_folder
    from tiersim.scenario import load_scenario
    from tiersim.workload.sessions import check_session_keys

    _check_limits(ttft, tpot, floor, e2e, session)
    # checked: the text is not kept
    ttft, tpot, floor, e2e, session = map(plain_float, (ttft, tpot, floor, e2e, session))
    # plan.hours_per_month may stand without plan.current: the month of the baseline saving
    scenario = with_gpu_options(load_scenario(scenario_path, fit=False,
                                              current_given=current is not None), gpu_options)
    if hours_per_month is not None and not 0 < hours_per_month <= 744:
        from tiersim.numbers import as_written  # as typed: 744.0000001 read "744" with :g

        raise TiersimError(f"--hours-per-month {as_written(hours_per_month)}: give the hours a "
                           "month is paid for, above 0 and at most 744 (730: 24/7)")
    hours = month_hours(scenario, None if hours_per_month is None
                        else plain_float(hours_per_month))
    today = today_fleet(scenario, str(scenario_path), current, hours)
    gpu_options = tuple(sorted(set(scenario.limits.gpus_per_replica)))
    scenario = _fitting(scenario, gpu_options)  # planner sizes
    from tiersim.savings import baseline_replica_limit

    if max_replicas is None:  # the cap a run of the scenario sizes its baselines under
        max_replicas = baseline_replica_limit(scenario)
    elif max_replicas > scenario.limits.max_replicas:
        raise TiersimError(_over_the_cap(max_replicas, scenario.limits.max_replicas,
                                         scenario_path))
    max_replicas = plain_int(max_replicas)  # checked: a planned scenario holds a plain int
    floor_used = floor if floor is not None else scenario.accuracy_floor
    _check_choose(scenario, choose, floor_used)
    _check_router_keys(scenario, str(scenario_path), choose or {}, floor_used)
    choose = None if choose is None else plain_numbers(choose)  # checked: the text not kept
    check_session_keys(scenario.workload.sessions, str(scenario_path))
    from tiersim.cli.plan_seeds import check_count

    # checked (as max_replicas, no text kept); a default held to the seeds there are
    asked = check_seeds
    check_seeds = plain_int(check_count(scenario, check_seeds, str(scenario_path), robust))
    # why none (plan.json seed_check_none): 0 asked for, or none left after the scenario's seed
    unchecked = (None if check_seeds else "--check-seeds 0" if not asked
                 else "no seed follows the scenario's")
    if robust:
        from tiersim.cli.plan_seeds import check_robust

        check_robust(scenario, check_seeds, str(scenario_path))
    out = None if out_dir is None else Path(out_dir)
    from tiersim.plan.evaluate import keeping_runs
    from tiersim.scenario import keys_given_as

    with out_folder(out, "plan", scenario, Path(scenario_path)), \
            keys_given_as(_flags_given(ttft, tpot, e2e, session)), \
            keeping_runs():  # see reuse_kept_runs
        if scenario.sweep:  # the planned scenario.yaml drops it: say so, as run does
            from tiersim.cli.run import base_point_only

            warnings.warn(Note(base_point_only(scenario_path, "plans")), stacklevel=2)
        return _plan(scenario, scenario_path, (ttft, tpot, floor, e2e, session), out, choose,
                     max_replicas, gpu_options, cost_model, report, check_seeds, robust, today,
                     unchecked, hours)


def with_gpu_options(scenario, gpu_options: tuple[int, ...] | None):
    """The scenario with ``--gpus-per-replica`` as its ``limits.gpus_per_replica`` (unchanged
    without the option): the plan sizes its designs and uniform fleets over those values, and
    the planned scenario it writes carries them, so a run of it sizes its uniform baselines
    over the same values and quotes the plan's saving."""
    if gpu_options is None:
        return scenario
    limits = scenario.limits.model_copy(update={"gpus_per_replica": tuple(gpu_options)})
    return scenario.model_copy(update={"limits": limits})


def _plan(scenario, scenario_path, limits, out: Path | None, choose, max_replicas: int,
          gpu_options, cost_model, report: bool, check_seeds: int = 0,
          robust: bool = False, today=None, unchecked: str | None = None,
          hours: float | None = None) -> PlanResult:
    """:func:`plan_capacity` once the folder is claimed. ``unchecked``: why no seed is checked
    (plan.json ``seed_check_none``, kept where a fleet is planned). ``hours``: the hours a
    month is paid for where given (plan.json ``hours_per_month``)."""
    from tiersim.plan.evaluate import SimEvaluator
    from tiersim.plan.planner import Constraints, Planner, planning_cost_model

    ttft, tpot, floor, e2e, session = limits
    scenario = scenario.model_copy(update={"cost_model": planning_cost_model(scenario,
                                                                             cost_model)})
    unpriced = [t.name for t in scenario.all_tiers if t.cost_per_request_usd is None]
    if scenario.cost_model == "fixed_per_request" and unpriced:
        raise TiersimError(f"--cost-model fixed_per_request: {scenario_path} has no "
                           f"cost_per_request_usd on {', '.join(unpriced)}; price every tier "
                           "or plan with another cost model")
    constraints = Constraints.of(scenario, ttft, tpot, floor, e2e, session)
    if robust:  # one evaluator per seed, answering with the worst over them
        from tiersim.plan.robust import seeds_evaluator

        seeds = [scenario.seed + k for k in range(check_seeds + 1)]
        evaluator = seeds_evaluator(scenario, str(scenario_path), seeds)
    else:
        evaluator = SimEvaluator(scenario, str(scenario_path))
    if session is not None and "follows_id" not in evaluator.df.columns:  # no task to hold
        from tiersim.inputs import NO_SESSIONS_WORDS

        raise TiersimError(f"--slo-session-p99: {scenario_path}: "
                           + NO_SESSIONS_WORDS.replace("remove it", "leave the flag out")
                           .replace("slo.e2e_p99_s", "--slo-e2e-p99"))
    if today is not None:  # refused before the search (and its notes), not after it
        from tiersim.cli.plan_current import check_today

        check_today(evaluator, today, str(scenario_path))
    _note_tier_order(scenario, str(scenario_path), evaluator.df)
    from tiersim.scenario_checks import note_e2e_below_ttft  # the planned run's note, unplanned

    note_e2e_below_ttft(constraints.e2e_p99_s, constraints.ttft_p99_s, str(scenario_path))
    evaluator.slo = (constraints.ttft_p99_s, constraints.tpot_p99_s,
                     constraints.e2e_p99_s)  # splits chosen for these
    planner = Planner(scenario, constraints, evaluator,
                      gpu_options=gpu_options, max_replicas=max_replicas,
                      choose=choose)
    result = planner.plan()
    if robust:  # the seeds sized for, and the plan's fleet at each
        import dataclasses

        from tiersim.plan.robust import robust_record

        result = dataclasses.replace(result, robust=robust_record(evaluator, result,
                                                                  constraints))
    result = with_disaggregation(scenario, result, str(scenario_path),
                                 tuple(evaluator.sized_seeds[1:]) if robust else ())
    from tiersim.plan.evaluate import reuse_kept_runs

    reuse_kept_runs()  # the seed check and the planned run's baselines rerun the search's
    # uniform fleets (the same results, not simulated again); the search's count is as before
    if check_seeds:  # the planned fleet at other seeds, before plan.json is written
        import dataclasses

        from tiersim.cli.plan_seeds import check_seeds as seed_check

        result = dataclasses.replace(result, seed_check=seed_check(
            scenario, result, str(scenario_path), max_replicas, check_seeds, today))
    elif unchecked is not None and result.plan is not None:  # said by console and report alike
        import dataclasses

        result = dataclasses.replace(result, seed_check_none=unchecked)
    if today is not None:  # today's fleet on the same trace, seed and constraints
        import dataclasses

        from tiersim.cli.plan_current import current_record

        result = dataclasses.replace(result, current=current_record(evaluator, today,
                                                                    constraints, result))
    if hours is not None:  # the month of the saving lines, re-read by tiersim report
        import dataclasses

        result = dataclasses.replace(result, hours_per_month=float(hours))
    if out is not None:
        write_plan(out, scenario, result, str(scenario_path), report, max_replicas)
    return result


def _note_tier_order(scenario, source: str, df) -> None:
    """The note a run gives when its tiers are not listed cheapest first, given for the plan's
    candidate tiers: every design takes them in the scenario's order (its first tier the cheap
    one), so the order, not the price, decides which way round a design is tried. ``df``: the
    served requests the tiers are priced over, as a run prices them."""
    from tiersim.fleet import build_fleet
    from tiersim.runner import fleet_replicas, note_tier_order, price_sample, tier_infos

    infos = tier_infos(scenario, build_fleet(scenario),
                       price_sample(df, scenario.seed, fleet_replicas(scenario)))
    note_tier_order(scenario, infos, source)


def write_plan(out: Path, scenario, result: PlanResult, source: str, report: bool,
               max_replicas: int | None = None) -> None:
    """plan.json, the planned scenario.yaml (holding ``max_replicas``, the limit the plan sized
    under, where a run would not) and its run (with report.html when asked), renamed into
    place as one set (:func:`tiersim.outputs.write_run`): an interrupted plan leaves the
    earlier plan whole, never its plan.json beside this plan's run. With no plan, plan.json
    alone, and an earlier plan's report, run and scenario.yaml are removed (the report
    first: a plan stopped then leaves no report of the earlier plan beside this one)."""
    from tiersim.outputs import signals_deferred
    from tiersim.results import dumps
    from tiersim.runner import run_into
    from tiersim.scenario import dump_yaml, planned_counts, scenario_from_dict

    out.mkdir(parents=True, exist_ok=True)
    plan_json = dumps(result.to_json())
    if result.plan is not None:
        doc = planned_doc(scenario, result, max_replicas)
        splits = {t.name: (t.disaggregation.prefill_replicas, t.disaggregation.decode_replicas)
                  for t in scenario.tiers if t.disaggregation is not None}
        with planned_counts({t.name: t.replicas for t in scenario.tiers},  # the plan's counts
                            splits):
            run_into(scenario_from_dict(as_searched(doc, scenario), source), out, source,
                     baselines=True,  # savings simulated, as a run's (under the plan's claim)
                     report=report, extra={"scenario.yaml": dump_yaml(doc),
                                           "plan.json": plan_json})
        return
    with signals_deferred():  # a failed plan.json write leaves the earlier plan and its run
        (out / "report.html").unlink(missing_ok=True)  # of the earlier plan: written below
        _write(out / "plan.json", plan_json)
        _remove_planned_run(out, report)
    if report:
        from tiersim.report.page import write_report  # the plan holds the folder

        write_report(out)


def _remove_planned_run(out: Path, report: bool) -> None:
    """Remove an earlier plan's run files and scenario.yaml (and its report.html when none is
    written now): they describe a plan this folder no longer holds. The manifest goes first,
    so a reader never takes what is left for a whole run."""
    from tiersim.manifest import MANIFEST
    from tiersim.outputs import DATA_FILES

    stale = [MANIFEST, *DATA_FILES] + ([] if report else ["report.html"])
    for name in stale:
        try:
            (out / name).unlink(missing_ok=True)
        except OSError as err:
            raise TiersimError(f"{out / name}: cannot remove the earlier plan's file "
                               f"({err.strerror or err}); remove it or choose another --out "
                               "folder") from None


def _write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (a reader sees the old file or the new one); a
    full or read-only disk is one line naming the file."""
    from tiersim.atomic import write_text_atomic

    try:
        write_text_atomic(path, text)
    except OSError as err:
        from tiersim.errors import FILE_TOO_LARGE_FIX, os_errno, os_said

        fix = (FILE_TOO_LARGE_FIX if os_errno(err) == errno.EFBIG else  # ulimit -f: not space
               "free some space or choose another --out folder")
        raise TiersimError(f"{path}: cannot write it ({os_said(err)}); {fix}") from None


__all__ = ["apply_split", "as_searched", "plan", "format_plan", "plan_capacity",
           "planned_scenario", "with_disaggregation", "write_plan", "written"]

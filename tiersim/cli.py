"""The ``tiersim`` command line: ``run`` here, the other commands mounted from their packages.

``tiersim run [SCENARIO] [--out DIR]`` replays a scenario and prints a summary table in which every
number says where it comes from (a measured profile, public measured data, or the roofline).
``trace``, ``analytic``, ``calibrate``, ``sweep``, ``report`` and ``plan`` live in their own
packages; each is mounted behind a guard, so a piece that fails to import leaves the others
working and says why when it is called.

Errors a user can cause (:class:`~tiersim.errors.TiersimError`) are printed as one line on stderr
with exit status 1 and no traceback; that happens in :meth:`TiersimApp.__call__`, the console
script's entry point, so it covers every mounted command too.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from tiersim.errors import TiersimError


class TiersimApp(typer.Typer):
    """A typer app whose entry point turns TiersimError into one stderr line and exit 1."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run the command line; user-input errors end it with status 1 and no traceback."""
        try:
            return super().__call__(*args, **kwargs)
        except TiersimError as err:
            typer.echo(f"Error: {err}", err=True)
            raise SystemExit(1) from None


app = TiersimApp(
    name="tiersim",
    help="Replay logged LLM traffic through a modelled, precision-tiered GPU fleet.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def default_scenario() -> Path:
    """The bundled ``scenarios/default.yaml``."""
    from tiersim.paths import bundled

    return bundled("scenarios", "default.yaml")


@app.command()
def run(
    scenario: Annotated[
        Path | None, typer.Argument(help="Scenario YAML (default: the bundled default.yaml).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write requests/summary/timeseries here.")
    ] = None,
    report: Annotated[
        bool, typer.Option(help="With --out, also write DIR/report.html.")
    ] = True,
    baselines: Annotated[
        bool, typer.Option(help="Also simulate each tier alone on the fleet's GPUs and quote "
                           "savings against those runs (one extra run per tier).")
    ] = False,
) -> None:
    """Replay a scenario's trace through its tiers and print the summary."""
    from tiersim.runner import run_scenario
    from tiersim.scenario import load_scenario

    path = scenario if scenario is not None else default_scenario()
    loaded = load_scenario(path)
    if loaded.sweep:
        typer.echo(f"note: {path} has a sweep: map; this runs its base point only "
                   "(use `tiersim sweep` for the grid)", err=True)
    with _status(f"simulating {loaded.name} ..."):
        summary = run_scenario(loaded, out_dir=out, scenario_path=path, baselines=baselines)
    print_summary(summary, out)
    if out is not None:
        _keep_scenario(Path(path), out)
    if out is not None and report:
        from tiersim.report import write_report

        typer.echo(f"wrote {write_report(out)}")


def _keep_scenario(path: Path, out: Path) -> None:
    """Copy the scenario next to its results, so the report can show what was run."""
    target = out / "scenario.yaml"
    if not target.exists() or target.resolve() != path.resolve():
        target.write_text(path.read_text())


def _status(message: str):
    """A spinner on stderr while the simulation runs (only when stderr is a terminal)."""
    import contextlib

    from rich.console import Console

    console = Console(stderr=True)
    return console.status(message) if console.is_terminal else contextlib.nullcontext()


def print_summary(summary: dict, out: Path | None) -> None:
    """Print the headline numbers and the per-tier table, each with its source."""
    from rich.console import Console

    console = Console(width=max(Console().width, 100))
    console.print(headline_table(summary))
    console.print(tier_table(summary))
    if "baselines" in summary:
        console.print(baseline_table(summary))
    if out is not None:
        console.print(f"wrote {out}/requests.parquet, summary.json, timeseries.parquet")


def _fmt(value: Any, unit: str = "", scale: float = 1.0, digits: int = 3) -> str:
    """A number for the table; '-' when missing."""
    if value is None:
        return "-"
    if isinstance(value, int) and scale == 1.0:
        return f"{value:,}{unit}"
    scaled = value * scale
    if abs(scaled) < 1e-9:
        return f"0{unit}"
    if abs(scaled) >= 10 ** digits:
        return f"{scaled:,.0f}{unit}"
    return f"{scaled:,.{digits}g}{unit}"


def headline_table(summary: dict):
    """Fleet-wide numbers: value and where each comes from."""
    from rich.table import Table

    src = summary.get("sources", {})
    latency, cost, acc = src.get("latency", "-"), src.get("cost", "-"), src.get("accuracy", "-")
    table = Table(title=f"tiersim run: {summary.get('scenario', '')}", title_justify="left")
    for col in ("metric", "value", "source"):
        table.add_column(col)
    rows = [
        ("requests (completed / dropped)",
         f"{summary['requests']:,} ({summary['completed']:,} / {summary['dropped']:,})", "trace"),
        ("duration", _fmt(summary["duration_s"], " s"), latency),
        ("TTFT p50 / p99", f"{_fmt(summary['ttft_p50_s'], ' s')} / "
         f"{_fmt(summary['ttft_p99_s'], ' s')}", latency),
        ("TPOT p50 / p99", f"{_fmt(summary['tpot_p50_s'], ' ms', 1e3)} / "
         f"{_fmt(summary['tpot_p99_s'], ' ms', 1e3)}", latency),
        ("end-to-end p99", _fmt(summary["e2e_p99_s"], " s"), latency),
        ("SLO attainment", _fmt(summary["slo_attainment"], " %", 100), latency),
        ("throughput", _fmt(summary["throughput_tok_s"], " output tok/s"), latency),
        (f"cost ({summary.get('cost_model', '')})", _fmt(summary["cost_usd"], " USD"), cost),
        ("cost per 1M output tokens", _fmt(summary["cost_per_1m_output_tokens"], " USD"), cost),
        ("GPU-hours provisioned", _fmt(summary["gpu_hours"]), "scenario"),
        ("expected accuracy", _fmt(summary["accuracy"], " %", 100), acc),
        *router_rows(summary, acc),
    ]
    for row in rows:
        table.add_row(*row)
    return table


def router_rows(summary: dict, accuracy_source: str) -> list[tuple[str, str, str]]:
    """The router's error rates and the routed cost against the cheapest adequate uniform tier."""
    router = summary.get("router") or {}
    rows = [(
        f"router ({router.get('policy', '-')}): FPR / FNR / escalated",
        f"{_fmt(router.get('fpr'), ' %', 100)} / {_fmt(router.get('fnr'), ' %', 100)} / "
        f"{_fmt(router.get('escalation_rate'), ' %', 100)}",
        accuracy_source,
    )]
    saving = (summary.get("savings") or {})
    if saving.get("baseline_uniform_tier") is not None:
        rows.append((
            f"saved vs uniform {saving['baseline_uniform_tier']}",
            _fmt(saving["vs_uniform_frac"], " %", 100),
            "attributed; uniform estimated (--baselines simulates it)"
            if saving.get("uniform_costs_estimated") else "attributed; uniform simulated",
        ))
    return rows


def baseline_table(summary: dict):
    """Each tier serving the whole trace on the fleet's GPUs, against the routed run."""
    from rich.table import Table

    table = Table(title="uniform baselines (every request on one tier, same GPUs)",
                  title_justify="left")
    for col in ("tier", "replicas", "cost USD", "TTFT p99", "TPOT p99", "dropped"):
        table.add_column(col, no_wrap=True)
    for name, b in summary["baselines"].items():
        table.add_row(name, _fmt(b["replicas"]), _fmt(b["cost_usd"]), _fmt(b["ttft_p99_s"], " s"),
                      _fmt(b["tpot_p99_s"], " ms", 1e3), _fmt(b["dropped"]))
    table.add_row("routed", "", _fmt(summary["cost"]["attributed_usd"]),
                  _fmt(summary["ttft_p99_s"], " s"), _fmt(summary["tpot_p99_s"], " ms", 1e3),
                  _fmt(summary["dropped"]))
    return table


def tier_table(summary: dict):
    """Per-tier numbers, with each tier's step-time source."""
    from rich.table import Table

    table = Table(title="tiers (cheapest first)", title_justify="left")
    for col in ("tier", "requests", "share", "TTFT p99", "TPOT p99", "util", "KV peak",
                "cost USD"):
        table.add_column(col, no_wrap=True)
    for name, t in summary["tiers"].items():
        table.add_row(
            name, _fmt(t["requests"]), _fmt(t["share"], " %", 100),
            _fmt(t["ttft_p99_s"], " s"), _fmt(t["tpot_p99_s"], " ms", 1e3),
            _fmt(t["utilization"], " %", 100), _fmt(t["kv_peak_frac"], " %", 100),
            _fmt(t["cost_usd"]),
        )
    steps = "; ".join(f"{n}: {t.get('step_time_source', '-')}" for n, t in summary["tiers"].items())
    table.caption = f"step times from {steps}"
    table.caption_justify = "left"
    return table


# ---------------------------------------------------------------------------------------------
# Commands that live in other packages


_PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True,
                 "help_option_names": []}


def _mount_app(name: str, module: str, attr: str, help_text: str) -> None:
    """Mount ``module.attr`` (a typer app) as ``tiersim NAME``; on import failure, a stub."""
    try:
        sub = getattr(importlib.import_module(module), attr)
    except Exception as err:  # noqa: BLE001 - any failure must leave the other commands usable
        _mount_stub(name, module, err, help_text)
        return
    if isinstance(sub, typer.Typer):
        app.add_typer(sub, name=name, help=help_text)
    else:
        app.command(name=name, help=help_text)(sub)


def _mount_stub(name: str, module: str, err: Exception, help_text: str) -> None:
    """A command that explains why ``tiersim NAME`` is unavailable."""
    reason = " ".join(f"{type(err).__name__}: {err}".split())

    def unavailable(ctx: typer.Context) -> None:
        raise TiersimError(f"tiersim {name} is unavailable ({module} failed to import: {reason})")

    unavailable.__doc__ = f"{help_text} [unavailable: {reason}]"
    app.command(name=name, context_settings=_PASS_THROUGH)(unavailable)


@app.command(name="calibrate", context_settings=_PASS_THROUGH)
def calibrate(ctx: typer.Context) -> None:
    """Measure a calibration profile on this GPU, or import one (--from aiconfigurator).

    Arguments pass through to the harness (``tiersim calibrate --help`` shows them) or, with
    ``--from aiconfigurator``, to the aiconfigurator importer.
    """
    argv = list(ctx.args)
    source = _flag_value(argv, "--from")
    if source == "aiconfigurator":
        code = import_aiconfigurator_main(_drop_flag(argv, "--from"))
    elif source is not None:
        raise TiersimError(f"--from {source!r}: the only importer is 'aiconfigurator'")
    else:
        from tiersim.calibrate import main as harness_main

        code = harness_main(argv)
    raise typer.Exit(code or 0)


def import_aiconfigurator_main(argv: list[str]) -> int:
    """``tiersim calibrate --from aiconfigurator [--gpu h200] [--engine vllm] --out P.json``."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="tiersim calibrate --from aiconfigurator",
        description="Import NVIDIA's measured operator tables (aiconfigurator-core) as a profile.")
    parser.add_argument("--gpu", default="h200", help="GPU folder of the data (default h200)")
    parser.add_argument("--engine", default="vllm", help="vllm, trtllm or sglang (default vllm)")
    parser.add_argument("--name", default=None, help="profile name (default GPU_aiconfigurator_"
                        "ENGINE)")
    parser.add_argument("--out", required=True, help="where to write the profile JSON")
    args = parser.parse_args(argv)
    from tiersim.perf.aiconfigurator import import_aiconfigurator

    profile, missing = import_aiconfigurator(gpu=args.gpu, engine=args.engine, out=args.out,
                                             name=args.name)
    typer.echo(f"wrote {args.out}: profile {profile.name!r}, {len(profile.tables)} measured "
               f"tables; {len(missing)} not in the data (roofline): {', '.join(missing) or '-'}")
    return 0


def _flag_value(argv: list[str], flag: str) -> str | None:
    """The value of ``--flag VALUE`` or ``--flag=VALUE`` in argv, if present."""
    for i, arg in enumerate(argv):
        if arg == flag and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None


def _drop_flag(argv: list[str], flag: str) -> list[str]:
    """argv without ``--flag VALUE`` / ``--flag=VALUE``."""
    out, skip = [], False
    for i, arg in enumerate(argv):
        if skip:
            skip = False
        elif arg == flag and i + 1 < len(argv):
            skip = True
        elif not arg.startswith(flag + "="):
            out.append(arg)
    return out


_mount_app("trace", "tiersim.trace.cli", "trace_app", "Inspect and convert request traces.")
_mount_app("analytic", "tiersim.routing.cli", "analytic_app",
           "The two-type closed form: savings of oracle routing over a static split.")
_mount_app("sweep", "tiersim.sweep.cli", "sweep", "Run every point of a scenario's sweep grid.")
_mount_app("report", "tiersim.report.cli", "report", "Write the HTML report of a run or sweep.")
_mount_app("plan", "tiersim.report.cli", "plan", "Capacity plan: replicas needed per tier.")


def main(argv: list[str] | None = None) -> int:
    """Run the command line on ``argv`` (default: sys.argv) and return the exit status."""
    try:
        app(args=argv, prog_name="tiersim")
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

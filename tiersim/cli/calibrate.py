"""``tiersim calibrate``: measure a profile with the harness, or import one from aiconfigurator.

The harness itself (:func:`tiersim.calibrate.main`, also ``python -m tiersim.calibrate``) needs
only the standard library, torch and numpy, so it stays in the calibrate package; this command
hands its arguments on to it.
"""

from __future__ import annotations

import typer

from tiersim.cli.usage import echo
from tiersim.errors import TiersimError, escaped, shown


def calibrate(ctx: typer.Context) -> None:
    """Measure a calibration profile on this GPU, or import one (--from aiconfigurator).

    Arguments pass through to the harness (``tiersim calibrate --help`` shows them) or, with
    ``--from aiconfigurator``, to the aiconfigurator importer.
    """
    argv = list(ctx.args)
    times = sum(arg == "--from" or arg.startswith("--from=") for arg in argv)
    if times > 1:  # drop_flag removes every one: --from aiconfigurator --from=foo ran the import
        raise TiersimError(f"--from is given {times} times; give it once (only the first would "
                           "count); see tiersim calibrate --help")
    source = flag_value(argv, "--from")
    if source is None and "--from" in argv or source is not None and source.startswith("-"):
        raise TiersimError("--from needs a value; the only importer is 'aiconfigurator' "
                           "(tiersim calibrate --from aiconfigurator --out P.json)")
    if source == "aiconfigurator":
        code = import_aiconfigurator_main(drop_flag(argv, "--from"))
    elif source is not None:
        raise TiersimError(f"--from {shown(source, 64)}: the only importer is 'aiconfigurator'")
    else:
        from tiersim.calibrate import main as harness_main

        code = harness_main(argv)
    raise typer.Exit(code or 0)


def import_aiconfigurator_main(argv: list[str]) -> int:
    """``tiersim calibrate --from aiconfigurator [--gpu h200] [--engine vllm] --out P.json``."""
    from tiersim.calibrate.cli import OneLineParser, home_path

    parser = OneLineParser(
        prog="tiersim calibrate --from aiconfigurator",
        description="Import NVIDIA's measured operator tables (aiconfigurator-core) as a profile.")
    parser.add_argument("--gpu", default="h200", help="GPU folder of the data (default h200)")
    parser.add_argument("--engine", default="vllm", help="vllm, trtllm or sglang (default vllm)")
    parser.add_argument("--name", default=None, help="profile name (default GPU_aiconfigurator_"
                        "ENGINE)")
    parser.add_argument("--out", required=True, type=home_path,
                        help="where to write the profile JSON")
    args = parser.parse_args(argv)
    from tiersim.calibrate.cli import bundled_import_problem, out_problem
    from tiersim.errors import TiersimError
    from tiersim.perf.aiconfigurator import import_aiconfigurator

    problem = out_problem(args.out) or bundled_import_problem(args.out, args.gpu, args.engine,
                                                              args.name)
    if problem:
        raise TiersimError(problem)

    profile, missing = import_aiconfigurator(gpu=args.gpu, engine=args.engine, out=args.out,
                                             name=args.name)
    echo(f"wrote {escaped(args.out)}: profile {profile.name!r}, {len(profile.tables):,} "
               f"measured tables; {len(missing):,} not in the data (roofline): "
               f"{', '.join(missing) or '-'}")
    if not profile.overhead_source.startswith("fitted"):
        echo("note: its per-iteration overhead is the roofline's assumption and it has no "
                   "eager-step cost: the data holds neither; a rebuild over a profile fitted "
                   "for the same engine and GPU keeps its fitted values (write over the shipped "
                   "file, or refit with benchmarks/fidelity_silicon.py --fit in tiersim's source "
                   "repository)")
    return 0


def flag_value(argv: list[str], flag: str) -> str | None:
    """The value of ``--flag VALUE`` or ``--flag=VALUE`` in argv, if present."""
    for i, arg in enumerate(argv):
        if arg == flag and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None


def drop_flag(argv: list[str], flag: str) -> list[str]:
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

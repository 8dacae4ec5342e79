"""The one typer app of ``tiersim``, with every command mounted from its own module.

Each command lives in a module of this package (``run``, ``trace``, ``analytic``,
``calibrate``, ``sweep``, ``plan``, ``report``, ``disagg``) and is mounted behind a guard, so a
module that fails to import leaves the others working and says why when it is called.

Errors a user can cause (:class:`~tiersim.errors.TiersimError`) are printed as one line on stderr
with exit status 1 and no traceback; that happens in :meth:`TiersimApp.__call__`, the console
script's entry point, so it covers every mounted command.
"""

from __future__ import annotations

import importlib
from typing import Any

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

PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True,
                "help_option_names": []}
"""Context settings of a command that hands its arguments on untouched."""


def mount(name: str, module: str, attr: str, help_text: str,
          context_settings: dict | None = None) -> None:
    """Mount ``module.attr`` (a typer app or a command function) as ``tiersim NAME``; on import
    failure, a stub that says why."""
    try:
        sub = getattr(importlib.import_module(module), attr)
    except Exception as err:  # noqa: BLE001 - any failure must leave the other commands usable
        mount_stub(name, module, err, help_text)
        return
    if isinstance(sub, typer.Typer):
        app.add_typer(sub, name=name, help=help_text)
    else:
        app.command(name=name, help=help_text, context_settings=context_settings)(sub)


def mount_stub(name: str, module: str, err: Exception, help_text: str) -> None:
    """A command that explains why ``tiersim NAME`` is unavailable."""
    reason = " ".join(f"{type(err).__name__}: {err}".split())

    def unavailable(ctx: typer.Context) -> None:
        raise TiersimError(f"tiersim {name} is unavailable ({module} failed to import: {reason})")

    unavailable.__doc__ = f"{help_text} [unavailable: {reason}]"
    app.command(name=name, context_settings=PASS_THROUGH)(unavailable)


COMMANDS = (
    ("run", "tiersim.cli.run", "run",
     "Replay a scenario's trace through its tiers and print the summary.", None),
    ("trace", "tiersim.cli.trace", "trace_app", "Inspect and convert request traces.", None),
    ("analytic", "tiersim.cli.analytic", "analytic_app",
     "The two-type closed form: savings of oracle routing over a static split.", None),
    ("calibrate", "tiersim.cli.calibrate", "calibrate",
     "Measure a calibration profile on this GPU, or import one (--from aiconfigurator).",
     PASS_THROUGH),
    ("sweep", "tiersim.cli.sweep", "sweep", "Run every point of a scenario's sweep grid.", None),
    ("report", "tiersim.cli.report", "report", "Write the HTML report of a run or sweep.", None),
    ("plan", "tiersim.cli.plan", "plan", "Capacity plan: replicas needed per tier.", None),
    ("disagg", "tiersim.cli.disagg", "disagg",
     "Choose a tier's prefill/decode split against aggregated serving on the same GPUs.", None),
)
"""(name, module, attribute, help, context settings) of every command."""

for _name, _module, _attr, _help, _ctx in COMMANDS:
    mount(_name, _module, _attr, _help, _ctx)


def main(argv: list[str] | None = None) -> int:
    """Run the command line on ``argv`` (default: sys.argv) and return the exit status."""
    try:
        app(args=argv, prog_name="tiersim")
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    return 0

"""The one typer app of ``tiersim``, with every command mounted from its own module.

Each command lives in a module of this package (``run``, ``trace``, ``analytic``,
``calibrate``, ``sweep``, ``plan``, ``report``, ``disagg``) and is mounted lazily: its module is
imported only when that command runs (``tiersim --help`` lists them all from their help lines;
``tiersim run`` imports no other command's module, issue 13), and a module that fails to import
leaves the others working and says why when it is called.

Errors a user can cause (:class:`~tiersim.errors.TiersimError`, and the framework's usage errors:
a bad option value, an unknown option, a missing ``--out``, :mod:`tiersim.cli.usage`) are
printed as one line on stderr with exit status 1 and no traceback (``tiersim`` or ``tiersim
trace`` without a command prints the help and exits 1 too: it ran nothing); that happens in
:meth:`TiersimApp.__call__`, the console script's entry point, so it covers every mounted
command.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import typer
from typer.core import TyperGroup

from tiersim import memory
from tiersim.cli import usage
from tiersim.cli.stops import (
    _as_signalled,
    _catch_terminations,
    _end_process,
    _hold_signals_at_exit,
    _release_terminations,
    _say_ended,
    _Stop,
)
from tiersim.cli.stops import _terminated as _terminated  # tests import it from here
from tiersim.cli.streams import (
    _escape_unencodable,
    _Notes,
    _reader_gone,
    _refuse_closed_stdout,
    _silence_stdout,
    _stdout_failed,
    memory_line,
    os_error_line,
)
from tiersim.cli.usage import echo
from tiersim.cli.width import _readable_width, _restore_width
from tiersim.errors import READER_GONE, TiersimError, escaped


def _with_line(err: TiersimError) -> TiersimError:
    """A scenario or sweep error with its key's line in the file, where it names none
    (:func:`tiersim.sweep.refusal.with_line`)."""
    from tiersim.sweep.refusal import with_line

    return with_line(err)


def _refuse_empty_args(argv: list[str] | None) -> None:
    """Refuse an empty argument (``--out "$UNSET"``): an empty path reads as ``.``, so an empty
    ``--out`` would write into, and overwrite files of, the folder the command runs in (``--out
    .`` says so on purpose), and an empty option value would quietly take its default. The
    option or argument is named as the command's own parser reads the words."""
    import sys

    args = list(sys.argv[1:] if argv is None else argv)
    args = args[:args.index("--")] if "--" in args else args
    if not any(not arg.strip() or arg.endswith("=") for arg in args):
        return
    name = _empty_name(args)
    if name == "--out" and args[:1] == ["calibrate"]:  # its --out is a file
        raise TiersimError("--out is empty (an unset shell variable?); give the path of the "
                           "profile JSON to write")
    if name == "--out":
        raise TiersimError("--out is empty (an unset shell variable?): it would write into "
                           "the current folder; name the folder, or give --out . for this one")
    required = _empty_is_required(args)  # then leaving it out is no fix: say only what is
    if name is not None and name.startswith("-"):
        raise TiersimError(f"{name} is empty (an unset shell variable?); give its value"
                           + ("" if required else ", or leave it out"))
    if name is not None:
        raise TiersimError(f"{name} is empty (an unset shell variable?): an empty path reads "
                           "as the current folder; give the value"
                           + ("" if required else ", or leave the argument out"))


def _refuse_repeated_options(argv: list[str] | None) -> None:
    """Refuse an option given twice (``--out a --out b``): the framework keeps the last
    silently, as a duplicated key in a scenario would be kept, which tiersim refuses too.
    Commands that hand their words on (``calibrate``) check their own."""
    import sys

    args = list(sys.argv[1:] if argv is None else argv)
    args = args[:args.index("--")] if "--" in args else args
    command = load(args[0]) if args and args[0] in MOUNTED else None
    if command is None or command.context_settings.get("ignore_unknown_options"):
        return
    try:
        found = usage.repeated_param(command, args[1:])
    except usage.ClickException:
        return  # a usage error: the command's own parse reports it
    if found is not None:
        param, times = found
        said = (f"{usage.option_names(param).replace('/', ' and ')} are both given; give one"
                if param.is_flag else f"{usage.option_names(param)} is given {times} times; "
                "give it once")
        raise TiersimError(f"{said} (only the last would count); see {_typed_command(argv)} "
                           "--help")


def _empty_name(args: list[str]) -> str | None:
    """The option (long name) or argument (upper case, ``argument N`` where the command's
    words are not known) that ``args`` leave empty, or None."""
    command = load(args[0]) if args and args[0] in MOUNTED else None
    if command is not None and not command.context_settings.get("ignore_unknown_options"):
        param = usage.empty_param(command, args[1:])
        return None if param is None else usage.param_name(param)
    for i, arg in enumerate(args):  # a command that hands its words on (calibrate)
        if arg in ("--out=", "-o=") or arg.startswith("--") and arg.endswith("="):
            return {"-o": "--out"}.get(arg[:-1], arg[:-1])
        if arg.startswith("-") and i + 1 < len(args) and not args[i + 1].strip():
            return {"-o": "--out"}.get(arg, arg)
        if not arg.strip():
            return f"argument {i + 1}"
    return None


def _empty_is_required(args: list[str]) -> bool:
    """Whether the option or argument ``args`` leave empty (:func:`_empty_name`) is one the
    command requires (``tiersim report ""``: DIRECTORY), so that leaving it out is refused
    too ('required, and not given'); False where the command's words are not known."""
    command = load(args[0]) if args and args[0] in MOUNTED else None
    if command is None or command.context_settings.get("ignore_unknown_options"):
        return False
    param = usage.empty_param(command, args[1:])
    return bool(getattr(param, "required", False))


def _typed_command(argv: list[str] | None) -> str:
    """``tiersim`` and the command typed (``tiersim run``, ``tiersim trace inspect``), where it
    is one of tiersim's."""
    import sys

    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in MOUNTED:
        return "tiersim"
    typed, command = ["tiersim", args[0]], LOADED.get(args[0])
    for arg in args[1:]:  # a group's subcommand typed after it (``tiersim trace inspect``)
        sub = getattr(command, "commands", {}).get(arg)
        if sub is None:
            break
        typed.append(arg)
        command = sub
    return " ".join(typed)


class TiersimApp(typer.Typer):
    """A typer app whose entry point turns TiersimError and usage errors into one stderr line
    and exit 1."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run the command line; user-input errors end it with status 1 and no traceback, and
        tiersim's own warnings (a trace's dropped rows ...) are one ``note:`` line each."""
        import sys
        import threading
        import warnings

        _escape_unencodable()
        columns = _readable_width()
        shown = warnings.showwarning
        warnings.showwarning = _Notes()
        main = threading.current_thread() is threading.main_thread()
        terminate = _catch_terminations() if main else {}
        guarded = main and memory.arm_guard()  # stop before the address space is all taken
        exiting = kwargs.get("args") is None  # the console script: the process ends next
        if main and exiting:
            _hold_signals_at_exit()
        ran_out = False  # memory ran out (the guard stopped the command): end at once too
        try:
            _refuse_closed_stdout()
            _refuse_empty_args(kwargs.get("args"))
            _refuse_repeated_options(kwargs.get("args"))
            code = _as_signalled(super().__call__, *args,
                                 **{**kwargs, "standalone_mode": False})
            # a signal from here on finds the command's work done (one that stopped it:
            # typer returns 130 for Ctrl-C, and it said what it left itself)
            _Stop.ended = _Stop.signum is None
            sys.stdout.flush()  # a reader gone from the pipe is met here, not in Python's exit
            raise SystemExit(code if isinstance(code, int) else 0)  # typer.Exit's code
        except SystemExit as err:  # the framework's own answer to a closed pipe is status 1
            if _reader_gone(err):
                _silence_stdout()
                raise SystemExit(READER_GONE) from None
            raise
        except usage.NoArgsIsHelpError:  # no command: the framework has printed the help
            raise SystemExit(1) from None  # nothing ran: a usage mistake, as --bogus is
        except usage.UsageError as err:  # --workers 0, --bogus, no --out: one line too
            line = usage.usage_line(err, _typed_command(kwargs.get("args")))
            echo(f"Error: {escaped(line)}", err=True)
            raise SystemExit(1) from None
        except usage.ClickException as err:
            echo(f"Error: {escaped(err.format_message())}", err=True)
            raise SystemExit(err.exit_code) from None
        except KeyboardInterrupt:  # Ctrl-C before or after the command (typer's covers it)
            raise SystemExit(130) from None
        except typer.Abort:  # end of input at a prompt
            echo("Aborted!", err=True)
            raise SystemExit(1) from None
        except TiersimError as err:
            echo(f"Error: {escaped(_with_line(err))}", err=True)
            raise SystemExit(1) from None
        except RuntimeError as err:  # Path.expanduser: "~nosuchuser/..." in any path given
            if "home directory" not in str(err):
                raise
            echo(f"Error: {escaped(err)} (a path starts with ~ and a user that does not "
                       "exist); write the path in full", err=True)
            raise SystemExit(1) from None
        except MemoryError as err:  # past what the process may use (ulimit -v): one line too
            ran_out = True
            echo(f"Error: {escaped(memory_line(err))}", err=True)
            raise SystemExit(1) from None
        except OSError as err:  # the system refused a file or the terminal: one line too
            if _reader_gone(err):
                _silence_stdout()
                raise SystemExit(READER_GONE) from None
            stdout = err.filename is None and _stdout_failed(err)
            if stdout:
                _silence_stdout()
            echo(f"Error: {escaped(os_error_line(err, stdout))}", err=True)
            raise SystemExit(1) from None
        finally:
            warnings.showwarning = shown
            _restore_width(columns)
            if guarded:
                memory.disarm_guard()
            ended = _Stop.ended
            stopped = _release_terminations(terminate, exiting)
            if stopped and ended:
                _say_ended()
            if (stopped or ran_out) and exiting:
                _end_process(sys.exc_info()[1])


class LazyGroup(TyperGroup):
    """The top-level command group: commands registered with :func:`mount` are listed from
    their help line and imported when resolved (the command that runs), never before."""

    def list_commands(self, ctx: typer.Context) -> list[str]:
        """Every command, in the order mounted."""
        return [*self.commands, *(name for name in MOUNTED if name not in self.commands)]

    def get_command(self, ctx: typer.Context, cmd_name: str):
        """The command: loaded if it ran, else a stand-in carrying its help line."""
        if cmd_name in self.commands or cmd_name not in MOUNTED:
            return self.commands.get(cmd_name)
        return LOADED.get(cmd_name) or _listed(cmd_name, MOUNTED[cmd_name][2])

    def resolve_command(self, ctx: typer.Context, args: list[str]):
        """Import the command about to run, then resolve it as click does."""
        if args and args[0] in MOUNTED and args[0] not in self.commands:
            load(args[0])
        return super().resolve_command(ctx, args)


app = TiersimApp(
    name="tiersim",
    help="Replay logged LLM traffic through a modelled, precision-tiered GPU fleet.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=LazyGroup,
)


def _print_version(value: bool) -> None:
    """``tiersim --version``: print the version run folders and sweep points record, and stop."""
    if value:
        import tiersim

        echo(f"tiersim {tiersim.__version__}")
        raise typer.Exit()


@app.callback()
def _top_level(
    version: bool = typer.Option(False, "--version", is_eager=True, callback=_print_version,
                                 help="Print tiersim's version and exit."),
) -> None:
    """The top-level group: its one option is ``--version`` (typer needs a callback for a group
    whose commands are all mounted lazily)."""


PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True,
                "help_option_names": []}
"""Context settings of a command that hands its arguments on untouched."""

MOUNTED: dict[str, tuple[str, str, str, dict | None]] = {}
"""Command name -> (module, attribute, help line, context settings), in mount order."""
LOADED: dict[str, Any] = {}
"""Command name -> its click command, once imported (or the stub saying why it cannot be)."""


def mount(name: str, module: str, attr: str, help_text: str,
          context_settings: dict | None = None) -> None:
    """Mount ``module.attr`` (a typer app or a command function) as ``tiersim NAME``, imported
    when the command runs; on import failure, a stub that says why."""
    MOUNTED[name] = (module, attr, help_text, context_settings)
    LOADED.pop(name, None)


def load(name: str):
    """The click command of mounted command ``name``, importing its module on first use."""
    if name not in LOADED:
        module, attr, help_text, context_settings = MOUNTED[name]
        try:
            sub = getattr(importlib.import_module(module), attr)
        except Exception as err:  # noqa: BLE001 - any failure must leave the other commands usable
            LOADED[name] = mount_stub(name, module, err, help_text)
        else:
            LOADED[name] = _command(name, sub, help_text, context_settings)
    return LOADED[name]


def _command(name: str, sub: Any, help_text: str, context_settings: dict | None = None):
    """``sub`` (a typer app or a command function) as the click command ``name``, built as
    ``add_typer``/``command`` on the top-level app would build it."""
    holder = typer.Typer(add_completion=False)
    holder.callback()(_no_op)  # a group, so a one-command app stays a sub-group
    if isinstance(sub, typer.Typer):
        holder.add_typer(sub, name=name, help=help_text)
    else:
        holder.command(name=name, help=help_text, context_settings=context_settings)(sub)
    command = typer.main.get_command(holder).commands[name]
    for each in getattr(command, "commands", {}).values():  # a group's list of its commands
        if each.short_help is None and each.help:  # rich keeps the docstring's line breaks
            each.short_help = " ".join(inspect.cleandoc(each.help).split("\n\n")[0].split())
    return command


def _no_op() -> None:
    """The holder group's callback (does nothing)."""


def _listed(name: str, help_text: str):
    """A stand-in for a command not imported yet: its name and help line, for ``--help``."""
    return _command(name, _no_op, help_text)


def mount_stub(name: str, module: str, err: Exception, help_text: str):
    """A command that explains why ``tiersim NAME`` is unavailable."""
    reason = " ".join(f"{type(err).__name__}: {err}".split())

    def unavailable(ctx: typer.Context) -> None:
        raise TiersimError(f"tiersim {name} is unavailable ({module} failed to import: {reason})")

    return _command(name, unavailable, f"{help_text} [unavailable: {reason}]", PASS_THROUGH)


COMMANDS = (
    ("run", "tiersim.cli.run", "run",
     "Replay a scenario's trace through its tiers and print the summary.", None),
    ("calibrate", "tiersim.cli.calibrate", "calibrate",
     "Measure a calibration profile on this GPU, or import one (--from aiconfigurator).",
     PASS_THROUGH),
    ("sweep", "tiersim.cli.sweep", "sweep", "Run every point of a scenario's sweep grid.", None),
    ("report", "tiersim.cli.report", "report", "Write the HTML report of a run, sweep or plan.",
     None),
    ("plan", "tiersim.cli.plan", "plan", "Capacity plan: replicas needed per tier.", None),
    ("disagg", "tiersim.cli.disagg", "disagg",
     "Choose a tier's prefill/decode split against aggregated serving on the same GPUs.", None),
    ("trace", "tiersim.cli.trace", "trace_app", "Inspect request traces.", None),
    ("analytic", "tiersim.cli.analytic", "analytic",
     "The two-type closed form: savings of oracle routing over a static split.", None),
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

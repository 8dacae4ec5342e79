"""A usage error of the command-line framework as one line.

typer (click underneath) refuses a bad option value, an unknown option or a missing ``--out``
itself, before a command runs; left to itself it prints the usage, a hint and a boxed message
and exits with status 2. :func:`usage_line` turns such an error into the one line every other
refusal is (``--workers: input should be greater than or equal to 1; see tiersim sweep
--help``); :class:`tiersim.cli.app.TiersimApp` prints it after ``Error:`` and exits with 1.
"""

from __future__ import annotations

import re
from pathlib import Path

try:  # newer typer carries its own copy of click, and raises its exceptions
    from typer._click import exceptions as errors
except ImportError:  # pragma: no cover - typer that uses click itself
    from click import exceptions as errors

UsageError = errors.UsageError
"""The framework's usage error (what :func:`usage_line` reads)."""
ClickException = errors.ClickException
"""Any error the framework reports itself (a usage error or another)."""
NoArgsIsHelpError = getattr(errors, "NoArgsIsHelpError", ())
"""A command group called without a command: the framework has printed its help already."""


def echo(message: str, err: bool = False) -> None:
    """``typer.echo(message, err=err)`` to the current ``sys.stdout`` (``sys.stderr``), the
    stream found afresh for each line as the framework's echo finds it, but not remembered:
    the framework's echo keeps a per-stream wrapper in a weak map whose value is the stream
    itself, so a stream the caller redirects (``redirect_stdout`` to a StringIO, as a program
    calling :func:`tiersim.cli.main` does) was kept for the life of the process, with all it
    was written.

    Each line's control and format characters are written as their escapes (``\\x1b``,
    ``\\u202e``; :func:`tiersim.errors.escaped_lines`): a line may quote a path, the user's
    text, whose terminal escape or right-to-left override would recolour or reverse it."""
    import sys

    import typer

    from tiersim.errors import escaped_lines

    message = escaped_lines(message)

    if (sys.stderr if err else sys.stdout) is None:
        return  # no stream (pythonw): nothing is written, as the framework's echo does
    get_text_stream = getattr(sys.modules[typer.echo.__module__], "get_text_stream", None)
    if get_text_stream is None:  # pragma: no cover - another framework version
        typer.echo(message, err=err)
        return
    typer.echo(message, file=get_text_stream("stderr" if err else "stdout", errors=None))


def usage_line(error: UsageError, command: str = "tiersim") -> str:
    """``<option>: <problem>; see <command> --help`` for a usage error (``command``: the
    command typed, for an error that does not name its own)."""
    ctx = error.ctx
    see = f"see {ctx.command_path if ctx is not None else command} --help"
    where, problem = _where(error), _problem(error)
    return f"{where}: {problem}; {see}" if where else f"{problem}; {see}"


def _where(error: UsageError) -> str | None:
    """The option as typed (its long name) or the argument (upper case) the error is about."""
    if isinstance(error, (errors.NoSuchOption, errors.BadOptionUsage)):
        return error.option_name
    param = getattr(error, "param", None)
    return None if param is None else param_name(param)


def param_name(param) -> str:
    """An option's long name (``--out``), or an argument's name in upper case (``SCENARIO``),
    as ``--help`` shows them."""
    if param.param_type_name == "option" and param.opts:
        return max(param.opts, key=len)
    return str(param.name or param.human_readable_name).upper()


def empty_param(command, args: list[str]):
    """The first parameter of ``command`` (a group's subcommand named in ``args`` too) that
    ``args`` give an empty or blank value, as the framework's own parser assigns the words (a
    flag takes none, so the word after it is an argument); None when there is none."""
    values, order = _parsed(command, args)
    for param in order:
        given = values.get(param.name)
        given = given if isinstance(given, (list, tuple)) else [given]
        if any(isinstance(value, str) and not value.strip() for value in given):
            return param
    return None


def repeated_param(command, args: list[str]):
    """The first option of ``command`` (a group's subcommand named in ``args`` too) that
    ``args`` give more than once and that takes one value (not a ``multiple`` option such as
    ``plan --choose``), with how many times; None when there is none. The framework keeps the
    last silently: ``run --out a --out b`` wrote to b, ``--report --no-report`` skipped the
    report."""
    _, order = _parsed(command, args)
    counts: dict[str, int] = {}
    for param in order:
        if _takes_one(param, args):
            counts[param.name] = counts.get(param.name, 0) + 1
    repeated = [p for p in order if counts.get(p.name, 0) > 1]
    return (repeated[0], counts[repeated[0].name]) if repeated else None


def _takes_one(param, args: list[str]) -> bool:
    """Whether a second use of ``param`` would silently override the first: an option of one
    value, or an on/off flag pair given both ways (``--report --no-report``); not a flag
    repeated as itself, a ``multiple`` or counting option, or ``--help``."""
    if param.param_type_name != "option" or param.multiple or param.count or param.is_eager:
        return False
    if not param.is_flag:
        return True
    words = {arg.split("=", 1)[0] for arg in args}
    return bool(words & set(param.opts)) and bool(words & set(param.secondary_opts))


def option_names(param) -> str:
    """An option as ``--help`` lists it: its long name, and a flag's off switch after a slash
    (``--report/--no-report``)."""
    names = [max(param.opts, key=len)]
    if param.secondary_opts:
        names.append(max(param.secondary_opts, key=len))
    return "/".join(names)


def _parsed(command, args: list[str]):
    """``(values, order)`` of ``args`` as ``command``'s own parser reads them (after walking
    a group to the subcommand that ``args`` name); ``order`` lists a parameter once per use."""
    while getattr(command, "commands", None) and args and args[0] in command.commands:
        command, args = command.commands[args[0]], args[1:]
    ctx = command.context_class(command, info_name=command.name, resilient_parsing=True)
    values, _, order = command.make_parser(ctx).parse_args(list(args))
    return values, order


def _problem(error: UsageError) -> str:
    """What is wrong, in the framework's words, as part of a sentence."""
    if isinstance(error, errors.NoSuchOption):
        close = getattr(error, "possibilities", None)
        return "no such option" + (f" (did you mean {' or '.join(close)}?)" if close else "")
    if isinstance(error, errors.MissingParameter):
        return "required, and not given"
    command = re.match(r"No such command ('.*')\.", error.format_message())
    if command:
        close = _close_commands(error.ctx, command.group(1))
        return f"no such command {command.group(1)}" + (
            f" (did you mean {' or '.join(map(repr, close))}?)" if close else "")
    if isinstance(error, errors.BadParameter):
        text = error.message
    elif isinstance(error, errors.BadOptionUsage):
        text = re.sub(r"^Option '[^']*' ", "", error.message)
    else:
        text = error.format_message()
    text = " ".join(str(text).split()).rstrip(".")
    return text[:1].lower() + text[1:] if text[1:2].islower() else text


def _close_commands(ctx, typed: str) -> list[str]:
    """The commands of ``ctx``'s group spelled close to ``typed`` (its repr, as the framework
    quotes it), as an unknown option's are found: the top-level commands load lazily, so the
    framework saw none to suggest."""
    import ast
    import difflib

    if ctx is None or not hasattr(ctx.command, "list_commands"):
        return []
    try:
        name = ast.literal_eval(typed)
    except (ValueError, SyntaxError):
        return []
    return difflib.get_close_matches(str(name), ctx.command.list_commands(ctx))


__all__ = ["ClickException", "NoArgsIsHelpError", "UsageError", "empty_param", "number_flag",
           "option_names", "param_name", "read_flag_number", "repeated_param", "scenario_help",
           "unsigned_zero", "usage_line"]


def scenario_help(what: str, default: str | None = None) -> str:
    """The help of a command's scenario argument: ``what`` it is, then the bundled scenarios a
    bare name or ``scenarios/NAME`` reads outside a checkout (:func:`tiersim.cli.run.
    scenario_path`), so ``--help`` names them (before, only a name found nowhere listed them),
    and the ``default`` where the command has one."""
    from tiersim.paths import available

    names = ", ".join(Path(name).stem for name in available("scenarios"))
    tail = f"; default: {default}" if default else ""
    return f"{what}, or a bundled scenario by name ({names}){tail}."


def expand_home(value: str | Path | None) -> Path | None:
    """A path argument or option, parsed from the text as typed (a ``parser=``, so that
    ``./~backup`` keeps its ``./`` and stays a local folder), with a leading ``~`` expanded to
    the home folder, as a scenario's paths are: a shell leaves ``--out=~/runs`` as typed,
    which wrote into a folder named ``~`` (or failed once the simulation was done). A
    ``~user`` of no user is refused, naming the option (the framework's
    :class:`BadParameter`)."""
    if value is None:
        return None
    from tiersim.paths import home_expanded

    try:
        return home_expanded(value)
    except ValueError as error:
        raise errors.BadParameter(str(error)) from None


def unsigned_zero(value: float | None) -> float | None:
    """A number flag's value with ``-0`` read as 0 (``analytic --floor -0`` printed "at floor
    -0.0000", ``plan --accuracy-floor -0`` "vs floor -0.00%"), keeping the text it was typed
    as (:class:`~tiersim.numbers.WrittenNumber`); every other number is left as it is."""
    if value != 0:
        return value
    from tiersim.numbers import WrittenNumber

    text = getattr(value, "text", None)  # -0 as typed, for a refusal to quote
    return WrittenNumber(0.0, text) if isinstance(text, str) else value + 0.0


def number_flag(kind: type, low: float | None = None, high: float | None = None, *,
                flag: str) -> dict:
    """``typer.Option`` keywords for a number flag of type ``kind`` (int or float), from
    ``low`` to ``high`` where given: its text read by :func:`read_flag_number`, and the
    bounds shown in ``--help`` (``[x>=1]``). ``flag``: the option's name, which a refusal of
    a unit typed after the number names with what to type (``--max-replicas 4``)."""
    import functools

    return {"parser": functools.partial(read_flag_number, kind, low, high, flag=flag),
            "min": low, "max": high}


def read_flag_number(kind: type, low: float | None, high: float | None, text: str, *,
                     flag: str | None = None):
    """A number flag's ``text`` read as a scenario's number is (:mod:`tiersim.numbers`: ``1e3``
    is 1000, ``1__0`` and ``010`` are refused with the number to write), then held to ``kind``
    (a whole number for int: ``2.0`` is 2, ``1e30`` is 10**30 exactly, held to the bounds and
    the command's own checks as its digits are, where it read "unable to parse input string
    as an integer, exceeded maximum size") and to ``low`` .. ``high``, in the words the
    framework used for those checks; :class:`BadParameter`, naming the flag, otherwise. A
    float read from text keeps it (:class:`~tiersim.numbers.WrittenNumber`), so the command's
    own checks quote it as typed (``-5``, not ``-5.0``); the command makes it a plain float
    once checked (:func:`~tiersim.numbers.plain_float`). A whole number read from text keeps
    it too (:class:`~tiersim.numbers.WrittenWhole`: ``--max-replicas 1e30``, not its 31
    digits), made a plain int once checked (:func:`~tiersim.numbers.plain_int`). A default
    (a number, not text) is only held to them. ``flag``: the option's name, for the words of
    a unit typed after the number (:func:`tiersim.numbers.flag_unit_words`)."""
    import sys
    from typing import Annotated

    from pydantic import Field, TypeAdapter, ValidationError

    from tiersim.numbers import (
        NumberError,
        WrittenNumber,
        WrittenWhole,
        exact_whole,
        read_number,
    )

    try:
        number = read_number(text, kind, flag) if isinstance(text, str) else text
    except NumberError as err:
        raise errors.BadParameter(str(err)) from None
    if kind is int and isinstance(text, str) and isinstance(number, float) \
            and number.is_integer():
        try:
            number = exact_whole(text)
        except NumberError as err:  # 2.99999999999999999999: whole only as a float
            raise errors.BadParameter(str(err)) from None
    if kind is float and isinstance(number, int) and abs(number) > sys.float_info.max:
        raise errors.BadParameter(f"a whole number of {len(str(abs(number))):,} digits is "
                                  "beyond any setting")  # pydantic: 'a valid number'
    try:
        value = TypeAdapter(Annotated[kind, Field(ge=low, le=high)]).validate_python(number)
    except ValidationError as err:
        raise errors.BadParameter(err.errors()[0]["msg"]) from None
    if isinstance(text, str) and isinstance(value, float):
        return WrittenNumber(value, text)  # a refusal quotes it as typed: -5, 1e9, 1e400
    if isinstance(text, str) and isinstance(value, int) and not isinstance(value, bool):
        return WrittenWhole(value, text)  # as typed: --max-replicas 1e30, not its 31 digits
    return value

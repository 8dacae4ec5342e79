"""Command line of the harness, with the standard library only (no typer): ``main(argv)``.

``python -m tiersim.calibrate --device cuda --model Qwen3-Coder-30B-A3B
--precisions bf16,fp8,fp8_block,w4a16,nvfp4 --out profile.json``. torch is imported only when
a run starts, so ``--help`` and the error for a missing torch need nothing beyond Python.
"""

from __future__ import annotations

import argparse
import difflib
import math
import os
import signal
import sys
import tempfile
from contextlib import contextmanager, suppress
from pathlib import Path

from tiersim.calibrate.errors import RECEIVED, Stopped
from tiersim.calibrate.options import (
    KV_DTYPES,
    PRECISIONS,
    SECTIONS,
    choose,
    model_shapes,
    quick_problem,
)
from tiersim.errors import (
    READER_GONE,
    TiersimError,
    escaped,
    import_extra,
    os_error_line,
    shown,
)
from tiersim.numbers import as_written, plain_float, plain_int

DEVICES = ("cuda", "cpu")
"""The ``--device`` values the harness measures on (``runner._device``)."""


def _csv(text: str) -> tuple[str, ...]:
    """'a,b' -> ('a', 'b')."""
    return tuple(v.strip() for v in text.split(",") if v.strip())


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one ``Error:`` line and exit 1, as every
    tiersim command's are (argparse's own: a usage block and exit 2)."""

    def error(self, message: str):  # noqa: D102 -- argparse's hook
        error(f"{message}; see {self.prog} --help")
        raise SystemExit(1)

    def parse_known_args(self, args=None, namespace=None):
        """argparse's ``parse_known_args``, an unknown ``--option`` named first, with the
        options spelled close to it: argparse checks required options first, so ``--ot
        p.json`` said "the following arguments are required: --out", naming the option given
        (misspelt) as missing and not the one typed."""
        words = list(sys.argv[1:] if args is None else args)
        for word in words[:words.index("--")] if "--" in words else words:
            name = word.split("=", 1)[0]
            if not name.startswith("--") or self._known(name):
                continue
            if name == "--from":  # only `tiersim calibrate` reads it, before the harness
                self.error("--from is the import of NVIDIA's tables, which `tiersim calibrate "
                           "--from aiconfigurator --out P.json` runs (tiersim[aic]); python -m "
                           "tiersim.calibrate runs the harness alone, measuring this machine")
            close = difflib.get_close_matches(name, sorted(self._option_string_actions), 2,
                                              0.75)
            self.error(f"unrecognized arguments: {name}"
                       + (f" (did you mean {' or '.join(close)}?)" if close else ""))
        return super().parse_known_args(args, namespace)

    def _known(self, name: str) -> bool:
        """Whether argparse reads ``name`` as one of the options (or, with abbreviations
        allowed, the start of one)."""
        options = self._option_string_actions
        return name in options or (self.allow_abbrev and name != "--"
                                   and any(o.startswith(name) for o in options))

    def add_argument(self, *args, **kwargs):
        """argparse's ``add_argument``; an option that stores one value is refused when given
        twice (argparse keeps the last silently: ``--out a.json --out b.json`` wrote b.json)."""
        if kwargs.get("action") is None and args and args[0].startswith("-"):
            kwargs["action"] = _Once
        return super().add_argument(*args, **kwargs)


class _Once(argparse._StoreAction):
    """argparse's store action, for an option that may be given once (see
    :meth:`OneLineParser.add_argument`)."""

    def __call__(self, parser, namespace, values, option_string=None):
        """Store the value, or refuse a second one."""
        self.times = getattr(self, "times", 0) + 1
        if self.times > 1:
            parser.error(f"{max(self.option_strings, key=len)} is given {self.times} times; give "
                         "it once (only the last would count)")
        super().__call__(parser, namespace, values, option_string)


def whole_number(text: str, flag: str | None = None) -> int:
    """A whole-number option's ``text`` read by the rule tiersim's flags and scenarios read
    numbers with (:mod:`tiersim.numbers`): ``1e3`` is 1000, ``0x10`` is refused with the
    number to write. ``int`` read ``1e3`` as no int and quoted a 5,000-digit value whole. The
    number keeps its text (:class:`~tiersim.numbers.WrittenWhole`), so a refusal quotes it as
    typed (``--seed 1e30``, not its 31 digits); the command makes it a plain int once
    checked. ``flag``: the option's name, for the words of a unit typed after the number
    (:func:`tiersim.numbers.flag_unit_words`)."""
    from tiersim.numbers import NumberError, WrittenWhole, exact_whole, read_number

    try:
        number = read_number(text, int, flag)
    except NumberError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    if isinstance(number, int):
        return WrittenWhole(number, text)
    if not math.isfinite(number):
        raise argparse.ArgumentTypeError("input should be a finite number")
    if not number.is_integer():
        raise argparse.ArgumentTypeError("input should be a valid integer, got a number with "
                                         "a fractional part")
    try:
        return WrittenWhole(exact_whole(text), text)
    except NumberError as err:  # 2.99999999999999999999: whole only as a float
        raise argparse.ArgumentTypeError(str(err)) from None


def real_number(text: str, flag: str | None = None) -> float:
    """A number option's ``text`` read by tiersim's one rule (:func:`whole_number`), as a
    float; a whole number beyond a float is refused (``float`` read it as infinity, so the
    error line said 'got inf' of a number written out), and one no float holds keeps the text
    it was typed as, as every float does (:class:`~tiersim.numbers.WrittenNumber`: ``1e400``
    read 'got inf', ``-5`` 'got -5.0'); :func:`_arg_problem` makes it a plain float once
    checked."""
    from tiersim.numbers import NumberError, WrittenNumber, read_number

    try:
        number = read_number(text, float, flag)
    except NumberError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    try:
        return WrittenNumber(float(number), text)  # a refusal quotes it as typed: -5, 1e400
    except OverflowError:
        raise argparse.ArgumentTypeError(f"a whole number of {len(str(abs(number))):,} digits "
                                         "is beyond any setting") from None


def _flag_type(read, flag: str):
    """``read`` (:func:`whole_number`, :func:`real_number`) for option ``flag``, named as
    ``read`` is (argparse names a type by its ``__name__`` in a refusal it words itself)."""
    import functools

    typed = functools.partial(read, flag=flag)
    typed.__name__ = read.__name__
    return typed


def home_path(text: str) -> str:
    """An argument's path with a leading ``~`` expanded (``--out=~/p.json``), refusing a
    ``~user`` of no user in the words ``tiersim run`` uses (:func:`tiersim.paths.home_expanded`)."""
    from tiersim.paths import home_expanded

    if not text.startswith("~"):
        return text  # as typed: an empty --out is named empty, not read as "."
    try:
        return str(home_expanded(text))
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def parser() -> argparse.ArgumentParser:
    """The argument parser of ``tiersim calibrate``."""
    p = OneLineParser(
        prog="tiersim calibrate",
        description="Measure operator latency tables on this machine and write a profile JSON.",
        epilog="To import NVIDIA's measured tables instead: tiersim calibrate --from "
               "aiconfigurator --out P.json [--gpu h200] [--engine vllm] (needs tiersim[aic]).")
    p.add_argument("--device", default="cuda", help="cuda or cpu (default cuda)")
    p.add_argument("--model", default=None,
                   help="Qwen3-Coder-30B-A3B (default), Llama-3.1-8B, Llama-3.1-70B, "
                        "Qwen3-235B-A22B or MiniMax-M2.5; with --config, the name to give "
                        "that model")
    p.add_argument("--config", default=None, type=home_path,
                   help="a Hugging Face config.json (or the folder holding it) instead of "
                        "--model")
    p.add_argument("--precisions", default=",".join(PRECISIONS), type=_csv,
                   help=f"weight formats to measure, from {','.join(PRECISIONS)} (default all)")
    p.add_argument("--kv-dtypes", default=",".join(KV_DTYPES), type=_csv,
                   help=f"KV-cache dtypes to measure attention at, from {','.join(KV_DTYPES)} "
                        "(default both)")
    p.add_argument("--ops", default=",".join(SECTIONS), type=_csv,
                   help=f"sections to measure, from {','.join(SECTIONS)}")
    p.add_argument("--tp", default=1, type=_flag_type(whole_number, "--tp"),
                   help="tensor parallelism (shards the shapes)")
    p.add_argument("--quick", action="store_true",
                   help="tiny built-in shapes and few points: seconds on a CPU, same file "
                        "format (takes neither --model nor --config)")
    p.add_argument("--budget-s", default=None, type=_flag_type(real_number, "--budget-s"),
                   help="stop measuring after this many seconds (checked before every grid "
                        "point); what was measured goes to OUT's .partial.json name")
    p.add_argument("--compile-dequant", action="store_true",
                   help="NVFP4 off FP4 hardware: fuse the dequantisation with torch.compile")
    p.add_argument("--seed", default=0, type=_flag_type(whole_number, "--seed"),
                   help="seed of the random weights and inputs measured (default 0; recorded "
                        "in the profile)")
    p.add_argument("--out", required=True, type=home_path,  # --out=~/p.json too
                   help="where to write the profile JSON (only a complete one; a run that "
                        "does not finish writes P.partial.json for P.json)")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the harness from command-line arguments; returns the exit status (0 ok, 1 error).

    Only a complete profile is written to ``--out``; SIGINT or SIGTERM, a spent ``--budget-s``
    or nothing measured is one ``error:`` line and exit 1, with what was measured under the
    partial name (see ``runner.partial_path``) and an earlier ``--out`` left as it was. A
    character standard output cannot encode is printed as its escape (``\\xfc``): in a C
    locale, a profile written as ``prüfung.json`` was named in a UnicodeEncodeError traceback.
    An operating-system error (a path the system refuses to look up: a name over 255 bytes)
    is the one line :func:`tiersim.errors.os_error_line` gives, as ``tiersim calibrate``
    prints it; it was a traceback here.
    """
    for stream in (sys.stdout, sys.stderr):  # a name a C locale cannot print, as its escape
        with suppress(AttributeError, ValueError):  # closed, or not a text stream
            stream.reconfigure(errors="backslashreplace")
    args = parser().parse_args(argv)
    try:
        return _checked_and_measured(args)
    except OSError as err:
        error(os_error_line(err))
        return 1


def _checked_and_measured(args) -> int:
    """:func:`main` after its arguments are parsed: refuse what cannot be measured or written,
    then measure; the exit status."""
    if args.device.strip() and args.device not in DEVICES:  # before torch is imported
        error(f"--device {shown(args.device, 64)}: must be cuda or cpu")
        return 1
    problem = (_arg_problem(args) or out_problem(args.out) or partial_problem(args.out)
               or bundled_problem(args.out)
               or quick_problem(args.quick, args.model, args.config)
               or _same_file(args.config, args.out) or options_problem(args))
    if problem:
        error(problem)
        return 1
    args.budget_s = plain_float(args.budget_s)  # checked: the text it was typed as is not kept
    args.tp, args.seed = plain_int(args.tp), plain_int(args.seed)  # checked, as plain ints
    kept = f"{args.out} left as it was" if Path(args.out).is_file() else f"{args.out} not written"
    with _signals_stop() as stopped:
        try:
            return _measure(args, stopped)
        except Stopped as exc:  # a signal before the measurement started
            error(f"interrupted by {exc.args[0]} before anything was measured; {kept}")
            return 1


def _measure(args, stopped: list) -> int:
    """Import torch, run the harness, print the summary and the one-line outcome; a signal
    after the run returned (the list ``stopped`` gets an item) is ignored."""
    try:
        torch = import_extra("torch", "torch", "torch is not installed; pip install "
                             "'tiersim[gpu]'", "pip install 'tiersim[gpu]' (torch 2.13.0)")
    except TiersimError as err:  # not installed, or installed and failing to import
        error(str(err))
        return 1
    if not hasattr(torch, "float8_e4m3fn"):  # every format's scales and FP8 paths use it
        error(f"torch {torch.__version__} has no float8_e4m3fn (FP8); "
              "pip install 'tiersim[gpu]' (torch 2.13.0)")
        return 1
    from tiersim.calibrate.runner import PartialProfile, run_calibration
    from tiersim.calibrate.summary import summarize

    try:
        try:
            doc = run_calibration(
                device=args.device, model=args.model, precisions=args.precisions,
                quick=args.quick, tp=args.tp, out=args.out, config=args.config,
                kv_dtypes=args.kv_dtypes, ops=args.ops, seed=args.seed,
                budget_s=args.budget_s, compile_dequant=args.compile_dequant)
        finally:
            stopped.append(True)
    except PartialProfile as exc:
        _say(summarize(exc.doc))  # the error line below names what was written
        error(str(exc))
        return 1
    except TiersimError as exc:
        error(str(exc))
        return 1
    written = f"the profile is written: {args.out}"
    # the path as typed may hold a line break or a terminal escape: printed as its escapes,
    # as the import path and every error line print it
    return _say(summarize(doc), written) or _say(f"wrote {escaped(args.out)}", written)


def error(text: str) -> None:
    """Print ``text`` as the one ``Error:`` line on standard error, every control or format
    character written as its escape (:func:`tiersim.errors.escaped`): a path holding a line
    break made the line two, and a terminal escape in an argument reached the terminal."""
    print(f"Error: {escaped(text)}", file=sys.stderr)


def _say(text: str, written: str | None = None) -> int:
    """Print ``text`` on standard output; the exit status: 0 once printed, 1 where the system
    refuses it (``> /dev/full``) after one ``Error:`` line on stderr ending in ``(written)``
    (none where ``written`` is None), :data:`~tiersim.errors.READER_GONE` with no line where
    the reader left the pipe (``| head -1``), as every tiersim command ends then.
    ``tiersim calibrate`` has its app for this, ``python -m tiersim.calibrate`` had none: the
    profile was written, then a traceback."""
    import errno

    try:
        print(text, flush=True)
    except OSError as err:
        with suppress(OSError, ValueError):  # the exit's flush of what is buffered would fail
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        if isinstance(err, BrokenPipeError):
            return READER_GONE
        if written is not None:
            fix = ("; free some space on that disk or write elsewhere"
                   if err.errno in (errno.ENOSPC, errno.EDQUOT) else "")
            error(f"standard output: {err.strerror or err}{fix} ({written})")
        return 1
    return 0


@contextmanager
def _signals_stop():
    """SIGTERM, SIGINT and SIGHUP (a closed terminal or ssh session; one already ignored, as
    under ``nohup``, stays ignored) raise ``Stopped(signal name)`` once (the runner saves the
    partial file and reports it); later ones, and any after the list it yields gets an item, are
    ignored so that the answer is written whole. The signal is also kept in
    ``errors.RECEIVED`` (cleared on exit), where the runner finds one whose Stopped was
    swallowed. Previous handlers come back on exit. Outside the main thread (where handlers
    cannot be set) nothing changes."""
    done: list[bool] = []

    def handler(signum, _frame):
        if not done:
            done.append(True)
            RECEIVED.append(signal.Signals(signum).name)
            raise Stopped(RECEIVED[-1])

    saved = {}
    try:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            if sig == signal.SIGHUP and signal.getsignal(sig) is signal.SIG_IGN:
                continue
            saved[sig] = signal.signal(sig, handler)
    except ValueError:  # not the main thread
        pass
    try:
        yield done
    finally:
        for sig, old in saved.items():
            signal.signal(sig, old)
        RECEIVED.clear()


def out_problem(out: str) -> str | None:
    """Why ``--out`` cannot take a profile JSON (checked before anything is measured), else
    None: it must be a regular file or a new name in an existing folder, never a folder, a
    device or a pipe (the write replaces its target: as root, ``--out /dev/null`` replaced the
    device)."""
    path = Path(out)
    if out.endswith(("/", "\\")):
        return f"--out {out}: names a folder; give a file path for the profile JSON"
    dead = _link_to_nothing(path)
    if dead is not None:
        return dead
    if path.exists() and not path.is_file():
        return f"--out {out}: not a regular file (a folder, device or pipe); give a file path"
    step_back = _step_back_problem(out, path)
    if step_back is not None:
        return step_back
    if not path.parent.is_dir():
        above = next((a for a in path.parents if a.exists()), None)
        if above is not None and not above.is_dir():
            return f"--out {out}: {above} is a file, not a folder; give a path in a folder"
        return f"--out {out}: folder {path.parent} does not exist; create it first"
    return (partial_name_problem(out) or _not_profile_problem(out, path)
            or _not_json_problem(out, path) or _write_problem(out, path.parent))


def _not_json_problem(out: str, path: Path) -> str | None:
    """Refuse an ``--out`` whose name does not end in ``.json``: the profile is JSON, and
    ``--out p.yaml`` wrote JSON under a YAML name without a word."""
    if path.suffix.lower() == ".json":
        return None
    return (f"--out {out}: the profile is written as JSON; give a name ending in .json, such "
            f"as {path.with_suffix('.json')}")


def _step_back_problem(out: str, path: Path) -> str | None:
    """Why ``--out`` cannot be written where it steps back (``..``) out of a folder that does
    not exist (``x/../../p.json``, ``x`` missing), else None: the system cannot step back out
    of a folder that is not there, so the folder it names was said not to exist ("folder
    x/../.. does not exist") though it did. As ``tiersim run --out`` says it
    (:func:`tiersim.outputs.refuse_step_back_through_missing`): the folder stepped out of, and
    the path meant."""
    current = Path(path.anchor) if path.is_absolute() else Path()
    for part in path.parts[1:] if path.is_absolute() else path.parts:
        if part == ".." and not (current.exists() or current.is_symlink()):
            landing = os.path.realpath(path)
            shown = landing if path.is_absolute() else os.path.relpath(landing)
            return (f"--out {out}: steps back out of {current}, a folder that does not exist, "
                    f"so it names {shown}; give that path as --out if it is meant")
        current = current / part
    return None


def _link_to_nothing(path: Path) -> str | None:
    """Why ``--out`` cannot be written where it, or a folder above it, is a symbolic link that
    leads to nothing (its target missing, or a loop of links), else None: the write replaced
    such a link with the profile, and a loop ended in a RuntimeError traceback."""
    from tiersim.paths import LINK_TO_NOTHING, leads_nowhere

    if leads_nowhere(path):
        return (f"--out {path}: {LINK_TO_NOTHING}; point the link at a file, remove it, or "
                "give another file path")
    dead = next((above for above in reversed(path.parents) if leads_nowhere(above)), None)
    if dead is None:
        return None
    return (f"--out {path}: {dead} is a link that leads to no folder (or the links loop); "
            "point it at a folder, remove it, or give another file path")


PROFILE_SCHEMA = "tiersim.profile/1"
"""The ``schema`` of a profile document: the only kind of file ``--out`` replaces."""
MAX_PROFILE_BYTES = 1 << 28
"""Largest existing ``--out`` read to see whether it is a profile (the shipped ones are about
1 MB); a larger file is taken for something else."""


def _not_profile_problem(out: str, path: Path) -> str | None:
    """Refuse an ``--out`` that exists and is not a profile: the write replaces its target,
    and ``--out run/summary.json`` replaced a run's summary (``--out scenario.yaml`` the
    scenario) with a profile."""
    what = _file_kind(path) if path.is_file() else None
    if what is None:
        return None
    if _other_format(what):
        return (f"--out {out}: holds {what}, which the profile would replace; give a new "
                "file name, or use the tiersim that wrote it")
    return (f"--out {out}: holds {what}, not a tiersim profile; the profile would replace it; "
            "give a new file name, or the path of a profile to replace")


def _file_kind(path: Path) -> str | None:
    """None for a profile document (or an empty file), else what ``path`` holds, in words."""
    import json

    if path.stat().st_size == 0:
        return None
    if path.stat().st_size > MAX_PROFILE_BYTES:
        return f"{path.stat().st_size:,} bytes (more than any profile)"
    try:
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return "not a JSON document"
    except RecursionError:
        return "JSON nested too deeply to read"
    schema = doc.get("schema") if isinstance(doc, dict) else None
    if schema == PROFILE_SCHEMA:
        return None
    family = PROFILE_SCHEMA.rsplit("/", 1)[0] + "/"
    if isinstance(schema, str) and schema.startswith(family) and len(schema) <= 40:
        return (f"a profile of format {schema!r} (another tiersim version's; this one writes "
                f"{PROFILE_SCHEMA!r})")
    return "a JSON document with no schema" if schema is None else (
        f"a JSON document of schema {shown(schema)}")


def _other_format(what: str) -> bool:
    """Whether :func:`_file_kind`'s ``what`` is a profile of another tiersim version's format
    (a profile still, which the refusal must not call none)."""
    return what.startswith("a profile of format ")


def partial_problem(out: str) -> str | None:
    """Refuse an ``--out`` whose partial name (``P.partial.json``, where a run that does not
    finish writes after every table, and which a complete run removes) is a folder, device
    or pipe (every save failed there, and the run ended in a traceback), or a file that is
    not a profile (a complete run deleted it, a cut one replaced it)."""
    from tiersim.calibrate.schema import partial_path

    partial = partial_path(out)
    too_long = _partial_name_too_long(out, partial)
    if too_long:
        return too_long
    where = f"--out {out}: {partial}, where a run that does not finish writes what it measured"
    if partial.exists() and not partial.is_file():
        return (f"{where}, is not a regular file (a folder, device or pipe); move it, or give "
                "another --out")
    what = _file_kind(partial) if partial.is_file() else None
    if what is not None:
        verdict = "" if _other_format(what) else ", not a tiersim profile"
        return (f"{where} (and a complete run removes), holds {what}{verdict}; move it, or "
                "give another --out")
    return None


NAME_MAX_BYTES = 255
"""The most bytes a folder or file name may have (``tiersim.scenario.NAME_MAX_BYTES``)."""


def _partial_name_too_long(out: str, partial: Path) -> str | None:
    """Refuse an ``--out`` whose own name fits the system's 255 bytes but whose partial name
    (``.partial`` added) does not: looking the partial file up failed with 'File name too
    long; use a shorter name (at most 255 bytes ...)', naming the first 117 characters of a
    name that looked like ``--out``'s, which was within the limit. None where it fits."""
    size = len(os.fsencode(partial.name))
    if size <= NAME_MAX_BYTES:
        return None
    room = NAME_MAX_BYTES - (size - len(os.fsencode(Path(out).name)))
    return (f"--out {shown(out, 60)}: its partial name (where a run that does not finish "
            f"writes what it measured: .partial added) would be {size} bytes, over the "
            f"{NAME_MAX_BYTES} a file name may have; give --out a name of at most {room} bytes")


def partial_name_problem(out: str) -> str | None:
    """Refuse an ``--out`` named as a cut run's file (``P.partial.json``, ``P.partial``; see
    ``runner.partial_path``): that name says a run did not finish, and a cut run of this
    one would write ``P.partial.partial.json``. The name offered ends in ``.json``, the only
    one taken (:func:`_not_json_problem`)."""
    path = Path(out)
    suffix = "" if path.suffix == ".partial" else path.suffix
    stem = path.name.removesuffix(suffix)
    if not stem.endswith(".partial") or stem == ".partial":
        return None
    while stem.endswith(".partial") and stem != ".partial":
        stem = stem.removesuffix(".partial")
    return (f"--out {out}: a name ending in .partial{suffix} is the harness's own for what a "
            "run that does not finish measured (P.partial.json for P.json); give another "
            f"name, such as {path.with_name(stem + '.json')}")


def _write_problem(out: str, folder: Path) -> str | None:
    """Why a file cannot be created in ``folder``, found by creating (and removing) one: the
    permission bits alone pass for root, and say nothing of a read-only disk or ``/proc``."""
    try:
        handle, probe = tempfile.mkstemp(prefix=".tiersim-probe-", suffix=".tmp", dir=folder)
    except OSError as err:
        return (f"--out {out}: cannot write in folder {folder} ({err.strerror or err}); choose "
                "another path")
    os.close(handle)
    os.unlink(probe)
    return None


BUNDLED = Path(__file__).resolve().parent.parent / "profiles"
"""The folder of the profiles shipped inside the package (``tiersim/profiles``)."""


def bundled_problem(out: str) -> str | None:
    """Refuse an ``--out`` among the profiles shipped inside the package: every scenario that
    names no profile reads them, so a harness run there (a CPU test, another GPU) replaced the
    default H200 profile. (``--from aiconfigurator``, which rebuilds them from NVIDIA's tables
    of the same GPU, may write there: :func:`bundled_import_problem`.)"""
    if Path(out).resolve().parent == BUNDLED.resolve():
        return (f"--out {out}: among the profiles shipped with tiersim, which every scenario "
                "that names no profile reads; write it elsewhere and name it in a scenario's "
                "profile:")
    return None


def bundled_import_problem(out: str, gpu: str, engine: str, name: str | None) -> str | None:
    """Refuse an ``--out`` among the shipped profiles for ``tiersim calibrate --from
    aiconfigurator`` unless it rebuilds a shipped file from its own GPU's and engine's tables
    (``h200_aiconfigurator_vllm.json`` from ``--gpu h200 --engine vllm``, under its own name,
    as profiles/README.md's rebuild command does), else None: ``--gpu h100 --out
    profiles/h200_aiconfigurator_vllm.json`` replaced the default H200 profile with H100's
    tables (a note said only that its fitted overhead was dropped), and a new name there
    added a profile to the installed package."""
    import re

    path = Path(out)
    if path.resolve().parent != BUNDLED.resolve():
        return None
    rebuilt = re.fullmatch(r"(.+)_aiconfigurator_(.+)\.json", path.name)
    if rebuilt is None or not path.is_file():
        return (f"--out {out}: among the profiles shipped with tiersim, where --from "
                "aiconfigurator only rebuilds a shipped GPU_aiconfigurator_ENGINE.json from its "
                "own GPU's and engine's tables; write it elsewhere and name it in a scenario's "
                "profile:")
    own = (rebuilt.group(1), rebuilt.group(2))
    if (gpu.lower(), engine.lower()) != own:
        return (f"--out {out}: a profile shipped with tiersim, built from {own[0]}'s {own[1]} "
                f"tables, which --gpu {gpu} --engine {engine} would replace with {gpu}'s "
                f"{engine} ones; to rebuild it give --gpu {own[0]} --engine {own[1]}, or write "
                "elsewhere and name it in a scenario's profile:")
    if name is not None and name != path.stem:
        return (f"--name {shown(name, 64)}: a profile shipped with tiersim keeps its name "
                f"({path.stem}), which runs name as their source; drop --name, or write "
                "elsewhere")
    return None


def _arg_problem(args) -> str | None:
    """A numeric flag out of range, or a text flag given empty, else None."""
    for flag in ("model", "config", "out", "device", "precisions", "kv_dtypes", "ops"):
        value = getattr(args, flag, None)
        if isinstance(value, str) and not value.strip():
            fix = ("give the path of the profile JSON to write" if flag == "out"  # required
                   else "give its value, or leave it out")
            return f"--{flag.replace('_', '-')} is empty (an unset shell variable?); {fix}"
    if not 0 <= args.seed < 2**63:
        return f"--seed: must be from 0 to 2**63 - 1 (got {shown(args.seed)})"
    if args.budget_s is not None and not (math.isfinite(args.budget_s) and args.budget_s > 0):
        return ("--budget-s: must be a finite number of seconds > 0 (got "
                f"{as_written(args.budget_s)})")
    return None


def _same_file(config: str | None, out: str) -> str | None:
    """Refuse an ``--out`` that is the ``--config`` the run reads (it would be replaced)."""
    if config and Path(config).exists() and os.path.realpath(config) == os.path.realpath(out):
        return f"--out {out}: is the --config this run reads; write the profile elsewhere"
    return None


def options_problem(args) -> str | None:
    """What the run would refuse in ``--precisions``, ``--kv-dtypes``, ``--ops``, ``--model``
    or ``--config`` and ``--tp``, else None: checked before torch is imported, so a typo is
    named on a machine without torch, not after installing it (and before CUDA starts up)."""
    from tiersim.calibrate import shapes
    from tiersim.calibrate.errors import CalibrateError

    try:
        choose("precisions", tuple(args.precisions), PRECISIONS)
        choose("kv-dtypes", tuple(args.kv_dtypes), KV_DTYPES)
        choose("ops", tuple(args.ops), SECTIONS)
        shapes.shard(model_shapes(args.model, args.config, args.quick), args.tp)
    except CalibrateError as err:
        return str(err)
    return unread_problem(args)


READ_BY = {"precisions": ("gemm", "moe"), "kv_dtypes": ("attn_decode", "attn_prefill")}
"""The ``--ops`` sections that read each list option (the other sections measure at none)."""


def unread_problem(args) -> str | None:
    """A ``--precisions`` or ``--kv-dtypes`` other than the default that no section of ``--ops``
    reads, or ``--compile-dequant`` where no NVFP4 GEMM is measured, else None: such an option
    was silently ignored (``--precisions fp8 --ops overhead`` wrote a complete profile)."""
    defaults = {"precisions": PRECISIONS, "kv_dtypes": KV_DTYPES}
    ops = ",".join(args.ops)
    for flag, sections in READ_BY.items():
        given = tuple(getattr(args, flag))
        if given != defaults[flag] and not set(sections) & set(args.ops):
            name = f"--{flag.replace('_', '-')}"
            return (f"{name} {','.join(given)}: no section of --ops {ops} reads it (only "
                    f"{' and '.join(sections)} do); add one of them to --ops, or drop {name}")
    if args.compile_dequant and not ("nvfp4" in args.precisions and "gemm" in args.ops):
        return (f"--compile-dequant: fuses the dequantisation of NVFP4 GEMMs, and this run "
                f"measures none (--ops {ops}, --precisions {','.join(args.precisions)}); "
                "measure gemm at nvfp4, or drop --compile-dequant")
    return None

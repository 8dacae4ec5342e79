"""User-facing errors: one line that names the file, the place and the fix.

Every error a person can cause with their input (a trace, a scenario, a profile) is raised as a
subclass of :class:`TiersimError`. The CLI prints ``str(error)`` on one line and exits 1; nothing
else in the package prints tracebacks for these. An operating-system error's one line is
:func:`os_error_line` (the command line's and ``python -m tiersim.calibrate``'s).
"""

from __future__ import annotations

import datetime
import json
import math
import re
import unicodedata


def unprintable(text: str) -> str | None:
    """The first control or format character of ``text`` (a terminal escape, a right-to-left
    override, a zero-width space: they change what a reader of a table sees), or line or
    paragraph separator (U+2028, U+2029: they break a table's row in two), else None."""
    if isinstance(text, str) and text.isprintable():  # no character of "Other" or "Separator"
        return None  # (Python's words, the same Unicode data): none of the four, found in C
    return next((c for c in text if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")),
                None)


def unprintable_words(char: str) -> str:
    """What :func:`unprintable` found, in words, with its code point: "the control or format
    character U+001B" or "the line or paragraph separator U+2028"."""
    kind = ("line or paragraph separator" if unicodedata.category(char) in ("Zl", "Zp")
            else "control or format character")
    return f"the {kind} U+{ord(char):04X}"


ESCAPED = ("Cc", "Cf", "Cs", "Zl", "Zp")
"""The Unicode categories :func:`escaped` writes as escapes: control, format, surrogate, and
line and paragraph separator characters."""


def escaped(text: str) -> str:
    """``text`` with every control or format character written as its escape (``\\x1b``,
    ``\\u202e``): a message quoting a hostile name cannot retitle or recolour the terminal,
    or reorder what a reader sees. So is a byte of a file name that is not UTF-8 (Python holds
    it as a surrogate, ``\\udce9``), which no terminal encoding could print, and a line or
    paragraph separator (``\\u2028``, ``\\u2029``), which would break the line in two for
    a reader that honours Unicode's line breaks (Python's ``splitlines``, an editor)."""
    return "".join(c.encode("unicode_escape").decode("ascii")
                   if unicodedata.category(c) in ESCAPED else c for c in str(text))


def escaped_lines(text: str) -> str:
    """:func:`escaped` of each line of ``text``: its line breaks kept, every other control or
    format character written as its escape."""
    return "\n".join(escaped(line) for line in str(text).split("\n"))


def shown(value, width: int = 40) -> str:
    """``repr(value)`` cut to ``width`` characters for an error line (a 400-digit number reads
    as its first digits; one too long for ``repr`` as "a huge int"; a YAML date as
    :func:`written`)."""
    huge = isinstance(value, int) and not isinstance(value, bool) and value.bit_length() >= 4000
    text = "a huge int" if huge else written(value)
    return text if len(text) <= width else text[:width - 3] + "..."


def shown_yaml(value, width: int = 40) -> str:
    """:func:`shown`, but spelt as YAML writes the value (:func:`yaml_written`): for a value a
    user wrote in a scenario's YAML (a sweep axis value), ``true`` and ``null``, not Python's
    ``True`` and ``None``."""
    huge = isinstance(value, int) and not isinstance(value, bool) and value.bit_length() >= 4000
    return cut("a huge int" if huge else yaml_written(value), width)


def json_written(value) -> str:
    """``value`` as JSON writes it, for an error line quoting a value a user wrote in a JSON
    file (a model's ``config.json``): ``true``, ``false``, ``null``, text in double quotes
    (``"bfloat16"``, escaped as JSON escapes it), ``[1, null]``, ``{"a": true}``; a number as
    the file writes it where it keeps its text (``1e308``, ``2.048e3``: a
    :class:`~tiersim.numbers.WrittenNumber`, as :func:`tiersim.jsonio.read_json` reads a float
    with ``floats_as_written``), else as Python writes it. Python's words were ``True``,
    ``None``, ``'text'``, ``{'a': 1}`` and ``1e+308``, which no JSON file holds."""
    return _flow_written(value, _json_scalar, lambda key: _json_text(str(key)))


def _json_scalar(value) -> str | None:
    """A JSON file's non-finite float (``NaN``, ``Infinity``, as Python's JSON reader takes
    them) or text (:func:`_json_text`); None for any other value."""
    if isinstance(value, float) and not math.isfinite(value):
        return json.dumps(value)
    return _json_text(value) if isinstance(value, str) else None


def _json_text(text: str) -> str:
    """``text`` in double quotes as a JSON file writes it: ``"bf16é"``, its letters as they are
    (``json.dumps`` wrote ``"bf16\\u00e9"``, which the file does not hold), a quote, backslash
    or control character escaped as JSON escapes it, and any other control or format character
    (``\\u202e``) as :func:`escaped` writes it."""
    return escaped(json.dumps(text, ensure_ascii=False))


def _flow_written(value, scalar, key) -> str:
    """``value`` in a flow style both JSON and YAML share (:func:`json_written`,
    :func:`yaml_written`): ``null``, ``true``/``false``, a number keeping its text as written,
    ``[..]`` and ``{k: v}`` (each key by ``key``); any other value by ``scalar``, or as Python
    writes it (:func:`written`) where that gives None."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and isinstance(getattr(value, "text", None), str):
        return value.text  # a number that keeps the text it was read from, as written
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_flow_written(v, scalar, key) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key(k)}: {_flow_written(v, scalar, key)}"
                               for k, v in value.items()) + "}"
    said = scalar(value)
    return written(value) if said is None else said


def shown_json(value, width: int = 40) -> str:
    """:func:`shown`, but spelt as JSON writes the value (:func:`json_written`): for a value
    read from a model's ``config.json`` or ``hf_quant_config.json``."""
    huge = isinstance(value, int) and not isinstance(value, bool) and value.bit_length() >= 4000
    return cut("a huge int" if huge else json_written(value), width)


def percent_hint(value) -> str:
    """The words after a refused share (a value that must be at most 1) that reads as a
    percent: ``"; a share, not a percent: 0.8 for 80%"`` for a number above 1 and at most
    100, else ``""`` (``accuracy_floor: 80`` read only "must be <= 1.0 (got 80)")."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 1 < value <= 100:
        return ""
    return f"; a share, not a percent: {value / 100:g} for {value:g}%"


def yaml_written(value) -> str:
    """``value`` in YAML's flow style: ``true``, ``false``, ``null``, a date as written, text in
    single quotes (``'it''s'``; in double quotes, escaped, where it holds a control character),
    ``[1, null]``, ``{a: true}``. Numbers as Python writes them (``1e-05``, which tiersim reads
    as a number), but ``.inf`` and ``.nan``."""
    return _flow_written(value, _yaml_scalar, _yaml_key)


def _yaml_scalar(value) -> str | None:
    """YAML's ``.nan``, ``.inf`` and ``-.inf``, or text (single-quoted; double-quoted and
    escaped where it holds a control character); None for any other value."""
    if isinstance(value, float) and value != value:
        return ".nan"
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return ".inf" if value > 0 else "-.inf"
    if isinstance(value, str):
        if any(unicodedata.category(c) in ESCAPED for c in value):
            return json.dumps(value)
        return "'" + value.replace("'", "''") + "'"
    return None


def setting_written(value) -> str:
    """A setting's value (a router setting a plan chose) as a scenario writes it, in YAML's
    flow style: ``true``, ``false``, ``null``, ``{w4a16: 0.6, bf16: 0.4}`` (:func:`yaml_written`),
    but a name (a policy, a tier: ``cascade``, ``fp8-big``) bare where YAML reads it back as
    that text, and a float to the 10 significant digits the JSON files keep, no zeros added
    (``0.5``; :func:`tiersim.results.as_given`). Before, the plan's router line spelt them as
    Python does (``True``, ``None``, ``{'w4a16': 0.6}``)."""
    if isinstance(value, str) and _plain_name(value, "-"):
        return value
    if isinstance(value, float) and math.isfinite(value) \
            and not isinstance(getattr(value, "text", None), str):  # .inf: yaml_written's
        return f"{value:.10g}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(setting_written(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_yaml_key(k)}: {setting_written(v)}"
                               for k, v in value.items()) + "}"
    return yaml_written(value)


_YAML_WORDS = ("true", "false", "yes", "no", "on", "off", "null", "y", "n")
"""Words YAML 1.1 reads as no text (a bool, null): a name spelt so is quoted."""


def _plain_name(text: str, also: str = "") -> bool:
    """Whether ``text`` is a plain name YAML reads back as that text, written bare: ASCII
    letters, digits, ``_``, ``.`` (and the characters ``also``), starting with a letter, none
    of :data:`_YAML_WORDS`."""
    rest = text
    for char in "_." + also:
        rest = rest.replace(char, "a")
    return (bool(text) and rest.isascii() and rest.isalnum() and text[0].isalpha()
            and text.lower() not in _YAML_WORDS)


def _yaml_key(key) -> str:
    """A map key as :func:`yaml_written` writes it: a plain name (``policy``) bare, as a
    scenario writes its keys; any other text quoted."""
    return key if isinstance(key, str) and _plain_name(key) else yaml_written(key)


def cut(text: str, width: int = 64) -> str:
    """``text`` cut to ``width`` characters, ending ``...`` where cut: a command-line value an
    error line names as written (``--choose PATH``), however long the value given."""
    return text if len(text) <= width else text[:width - 3] + "..."


def written(value) -> str:
    """``repr(value)``, but a date or time (what YAML reads an unquoted ``2024-01-01`` as) as
    the YAML that wrote it, inside lists and maps too: ``[240, 2024-01-01]``, not
    ``[240, datetime.date(2024, 1, 1)]``."""
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(written(v) for v in value) + "]"
    if isinstance(value, tuple):
        return "(" + ", ".join(written(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{written(k)}: {written(v)}" for k, v in value.items()) + "}"
    return repr(value)


def one_line(text: str) -> str:
    """``text`` with line breaks turned into spaces: an error is always shown on one line."""
    return " ".join(str(text).splitlines())


def baseline_only(name, tiers: list[str], baselines: list[str], why: str) -> str | None:
    """Why ``name``, a tier a flag or setting names, is refused when it names none of the
    routed ``tiers`` but one of the scenario's baseline-only tiers (``baselines``): it is one
    (at ``baselines[i]``), ``why`` (what that rules out), and the tiers there are; None when
    ``name`` is no baseline-only tier (a tier, or an unknown name: the caller's own line)."""
    if name in tiers or name not in baselines:
        return None
    return (f"{name!r} is a baseline-only tier (baselines[{baselines.index(name)}]), {why}; "
            f"tiers are {', '.join(tiers)}")


READER_GONE = 128 + 13
"""Exit status of a command whose standard output (or error) is a pipe the reader left
(``tiersim trace inspect T | head -1``): 128 + SIGPIPE, what the shell reports for git, ``seq``
or ``yes`` there, and how tiersim reports its other stopping signals (SIGTERM 128 + 15, SIGHUP
128 + 1, Ctrl-C 130). Not 0: the command stopped at that write, before what it had left to do
or print. The command stops quietly (no line on stderr), its cleanup run."""


class TiersimError(Exception):
    """Base class of errors caused by user input; ``str()`` is the one line shown to the user."""


class TraceError(TiersimError):
    """A trace file is malformed: names file, row and column."""

    def __init__(self, path: str, message: str, row: int | None = None, column: str | None = None):
        self.path, self.row, self.column = str(path), row, column
        where = self.path
        if row is not None:
            where += f": row {row}"
        if column is not None:
            where += f", column {column!r}" if row is not None else f": column {column!r}"
        super().__init__(one_line(f"{where}: {message}"))


class ScenarioError(TiersimError):
    """A scenario YAML is invalid: names file and key path. ``refused_as``: pydantic's type of
    the error that refused the value, where the value was read from a dict (a sweep point),
    so that the file's line, once found, can add how YAML read what is written there
    (:func:`tiersim.scenario_explain.located`)."""

    def __init__(self, path: str, where: str, message: str, refused_as: str | None = None):
        self.path, self.where, self.message = str(path), where, message
        self.refused_as = refused_as
        super().__init__(one_line(f"{path}: {where}: {message}" if where else
                                  f"{path}: {message}"))


class KeyedError(ValueError):
    """A scenario model's cross-field check's error that names the key it is about: ``key`` (a
    location under the model that raised it) is added to pydantic's location, so the line
    shown is that key's, not the whole block's.

    ``values``: where ``message`` quotes a value the model read (a child key's), the value by
    the name of its ``{field}`` in ``message``, with its location under the model: the line is
    told with the value as the file writes it (``-1``, ``1e308``), read from the model's input
    (:meth:`told`), not as the model converted it (``-1.0``, ``1e+308``). Without ``values``
    ``message`` is shown as it is (no fields filled, braces kept).
    """

    def __init__(self, key: tuple[str | int, ...], message: str,
                 values: dict[str, tuple[tuple[str | int, ...], object]] | None = None):
        self.key, self.template, self.values = key, message, dict(values or {})
        super().__init__(self.told(None))

    def told(self, given: object, text_at=None) -> str:
        """The message with each value as ``given`` (the model's input, as read from the file)
        holds it at its location, or as ``text_at`` (a location's text in the file, or None)
        gives it; the value the model read where ``given`` has none there (a default) or is
        None. Each value is cut to 80 characters (a 400-digit number reads as its first
        digits), so the line keeps its fix."""
        if not self.values:
            return self.template
        shown = {}
        for name, (loc, value) in self.values.items():
            text = None if text_at is None else text_at(loc)
            if text is not None:
                shown[name] = cut(text, 80)
                continue
            node = given
            for part in loc:
                found = isinstance(node, dict) and part in node or (
                    isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node))
                node = node[part] if found else _NOT_GIVEN
                if node is _NOT_GIVEN:
                    break
            shown[name] = cut(yaml_written(value if node is _NOT_GIVEN else node), 80)
        return self.template.format(**shown)

    def __reduce__(self):
        """Pickled with its key and values (a sweep's worker process hands errors back)."""
        return type(self), (self.key, self.template, self.values)


_NOT_GIVEN = object()


class FitError(TiersimError):
    """A model does not fit in a GPU's memory at a precision (says by how many GB), or cannot be
    split over a replica's GPUs. ``key``: the tier key a split refusal asks the user to change
    (``("gpus_per_replica",)``), so a scenario's error names that key's line; empty where the
    fix is not one key (a model too big for its GPUs)."""

    def __init__(self, message: str, key: tuple[str, ...] = ()):
        super().__init__(message)
        self.key = tuple(key)

    def __reduce__(self):
        """Pickled with its key (a sweep's worker process hands errors back)."""
        return type(self), (str(self), self.key)


NOTHING_WRITTEN = (", so nothing was written (a run's files and its page are written together, "
                   "or none of them)")
"""What a run's or plan's page that could not be written adds (:class:`ReportError`): the
data files wait in the run's temporary folder and go with it, so the folder is left as it was
(a new one is removed); the line had said only that the page could not be written."""


class ReportError(TiersimError):
    """A report page that could not be written: ``named`` (the page's place in the folder the
    user gave), what the system ``said`` and the ``fix``; ``nothing``: where the page was the
    last of a run's files written together (``tiersim run``, ``tiersim plan``),
    :data:`NOTHING_WRITTEN` (:meth:`nothing_written`), else empty (``tiersim report`` and a
    sweep, whose results were already in the folder, stay)."""

    def __init__(self, named: str, said: str, fix: str, nothing: str = ""):
        self.named, self.said, self.fix, self.nothing = str(named), said, fix, nothing
        super().__init__(f"{named}: cannot write the report ({said}){nothing}; {fix}")

    def nothing_written(self) -> ReportError:
        """The same line, saying nothing of the run was written (:data:`NOTHING_WRITTEN`)."""
        return ReportError(self.named, self.said, self.fix, NOTHING_WRITTEN)

    def __reduce__(self):
        """Pickled with its parts (a sweep's worker process hands errors back)."""
        return type(self), (self.named, self.said, self.fix, self.nothing)


class ProfileError(TiersimError):
    """A calibration profile is malformed or does not match the model or GPU."""


class Note(UserWarning):
    """Something a user should know about a valid input (printed as one ``note:`` line by the
    CLI; the run goes on)."""


class VisionNote(Note):
    """A multimodal wrapper is served as its language model: its vision tower is not counted
    (an importer reading configs the user did not name folds these into one line)."""


class UnreachableFloor(Note):
    """The floor router's floor is above every routing it can find. The planner, which tries
    raised floors on purpose, reports this as the design's missed accuracy instead."""


class IdleConfusion(Note):
    """An injected ``router.confusion`` rate has no request to move in this routing (the
    policy's own FPR or FNR is 100 %). The planner, which routes every design it tries,
    leaves it to the planned fleet's run: a design's routing is not the scenario's."""


NOTE_NUMBER = re.compile(r"(?<![\w.,])\d+(?:[.,]\d+)*(?:e[-+]?\d+)?")
"""A number in a note's text (``1,234.5``, ``3e-05``, ``[5,6,7]`` as one): left out of its kind
(:func:`note_kind`). Digits within a word (a tier's name, ``w4a16``; a GPU's, ``H200``;
``p99``) are no number."""


def note_kind(text: str) -> str:
    """A note's kind: its text with each number (:data:`NOTE_NUMBER`) as ``#``. A sweep shows
    each kind once (:class:`tiersim.sweep.points.SweepNotes`, and its report's notes): a price
    axis raises one note a point with that point's figures. The digits of a tier's name were
    left out too, so w4a16's note and w8a16's were one kind and the second never shown."""
    return NOTE_NUMBER.sub("#", text)


def notes_of(caught: list) -> list[str]:
    """The distinct texts of tiersim's notes among ``caught`` (``warnings.WarningMessage``
    records), in order; any other warning is shown as Python shows it. A sweep point's record
    and a run's summary keep them."""
    import warnings

    notes: list[str] = []
    for w in caught:
        if w.category.__module__.startswith("tiersim."):
            if str(w.message) not in notes:
                notes.append(str(w.message))
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    return notes


def import_extra(module: str, name: str, missing: str, reinstall: str,
                 kind: type[TiersimError] = TiersimError):
    """Import ``module``, the package ``name`` of one of tiersim's extras (torch,
    aiconfigurator-core).

    Not installed, it raises ``kind(missing)``; installed but failing to import (a dependency
    missing or of another version, a shared library it cannot load, any exception its import
    raises), it raises one line naming what failed and ``reinstall`` (the pip command), not
    'not installed': pip would say it is.
    """
    import sys

    try:  # the import statement's own path (importlib's bypasses what -X importtime logs)
        __import__(module)
        return sys.modules[module]
    except ImportError as err:
        if err.name == module:
            raise kind(missing) from None
        said = str(err)
    except OSError as err:  # a shared library it loads is missing (libcudnn.so.9, ...)
        said = str(err.strerror or err)
    except Exception as err:  # noqa: BLE001 - whatever its import raised, one line
        said = f"{type(err).__name__}: {err}"
    said = " ".join(said.split())
    said = said if len(said) <= 200 else f"{said[:197]}..."
    raise kind(f"{name} cannot be imported ({said}); reinstall it: {reinstall}") from None


FILE_TOO_LARGE_FIX = ("raise the largest file size this shell lets a command write (ulimit -f) "
                      "or write elsewhere")
"""The fix of EFBIG ("File too large"): a file over the process's RLIMIT_FSIZE (``ulimit -f``)
or the file system's largest file; more free space does not help."""

#: What to do about an operating-system error a user can meet, by errno name.
OS_FIXES = {
    "ENAMETOOLONG": "use a shorter name (at most 255 bytes for each folder or file name)",
    "ENOSPC": "free some space on that disk or write elsewhere",
    "EDQUOT": "free some space on that disk or write elsewhere",
    "EACCES": "check the permissions of the file and its folders",
    "EPERM": "check the permissions of the file and its folders",
    "EROFS": "write to a disk that is not read-only",
    "EFBIG": FILE_TOO_LARGE_FIX,
}


def os_errno(err: OSError) -> int | None:
    """``err``'s errno, or the one its words name where it has none: pyarrow raises an
    OSError without one, "Error writing bytes to file. Detail: [errno 27] File too large",
    which was told to "check the folder's permissions"."""
    if err.errno:
        return err.errno
    found = re.search(r"\[errno (\d+)\]", str(err))
    return int(found.group(1)) if found else None


def os_said(err: OSError) -> str:
    """What the system said of ``err`` in its own short words ("File too large"), also where
    pyarrow wrapped them in its own ("Error writing bytes to file. Detail: [errno 27] File too
    large")."""
    import os

    text, number = err.strerror or str(err), os_errno(err)
    if number and (not err.strerror or "[errno " in text):  # pyarrow's words around them
        return os.strerror(number)
    return text or type(err).__name__


def os_error_line(err: OSError, stdout: bool = False) -> str:
    """One line for an operating-system error: the file it names (shortened to 120 characters),
    or standard output where that is what failed (``stdout``), what the system said, and the
    fix where one is known (:data:`OS_FIXES`; a name too long is told apart from a path too
    long in all, :data:`PATH_TOO_LONG_FIX`)."""
    import errno

    if not stdout and err.filename is None and _working_folder_gone():
        return ("the current folder no longer exists (it was removed after the command's shell "
                "entered it); cd to a folder that exists and run the command again")
    where = "standard output" if stdout else None if err.filename is None else str(err.filename)
    if where is not None and len(where) > 120:
        where = where[:117] + "..."
    said = err.strerror or str(err) or type(err).__name__
    line = f"{where}: {said}" if where else said
    fix = OS_FIXES.get(errno.errorcode.get(err.errno or 0, ""))
    if err.errno == errno.ENAMETOOLONG and not _long_name_in(err.filename):
        fix = PATH_TOO_LONG_FIX
    return f"{line}; {fix}" if fix else line


PATH_TOO_LONG_FIX = ("use a shorter path (at most 4,095 bytes in all: fewer or shorter folder "
                     "names, or a relative path from a folder nearer the file)")
"""The fix of ENAMETOOLONG where no folder or file name of the path is over 255 bytes: the
path as a whole is over the system's limit (Linux's PATH_MAX less its NUL), and the line told
to keep each name within 255 bytes, which every name already was."""


def _long_name_in(path) -> bool:
    """Whether a folder or file name of ``path`` (None: unknown, taken as True) is over 255
    bytes, the most a name may have."""
    import os

    if path is None:
        return True
    raw = os.fsencode(path) if isinstance(path, str | bytes | os.PathLike) else b""
    return not raw or max(len(part) for part in raw.split(b"/")) > 255


def _working_folder_gone() -> bool:
    """Whether the current folder was removed while a shell stood in it (``os.getcwd`` then
    fails with no file name, and so does every relative path)."""
    import os

    try:
        os.getcwd()
    except FileNotFoundError:
        return True
    return False

"""Reading scenario YAML text safely, and wording what YAML read or could not read.

A scenario file is read defensively (docs/security.md): at most :data:`MAX_FILE_BYTES`, UTF-8
text only, YAML nested at most :data:`MAX_DEPTH` deep and at most :data:`MAX_NODES` values once
aliases are expanded (an alias bomb or a recursive alias is refused before anything walks it),
every number finite and no whole number beyond any setting, no key given twice and no key YAML
reads as something other than a name. :class:`_BoundedLoader` is PyYAML's safe loader with
these limits, numbers read as YAML 1.2 and :mod:`tiersim.numbers` read them, and the YAML 1.1
tags no scenario field means refused at the tag; every YAML problem becomes one
:class:`~tiersim.errors.ScenarioError` line naming the file and line, with the fix where the
problem is a common one (:data:`YAML_FIXES`). :func:`dump_yaml` writes text this loader reads
back the same.
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path
from typing import Any

import yaml

from tiersim.errors import ScenarioError, unprintable_words
from tiersim.numbers import (
    FRACTIONAL,
    MAX_INT_BITS,
    NON_FINITE,
    WHOLE,
    WrittenNumber,
    beyond_float_words,
    huge,
    underflow_words,
    underflows,
    whole_only_as_float,
)
from tiersim.scenario_where import _MERGE, Loc, _node_at, _short, _where, format_loc

MAX_FILE_BYTES = 1_000_000
"""Largest scenario file read (a scenario is a few KB of YAML)."""
MAX_DEPTH = 64
"""Deepest nesting of YAML maps and lists accepted."""
MAX_NODES = 100_000
"""Most YAML values accepted, counted with every alias expanded (stops alias bombs)."""


def read_yaml(path: str | Path) -> tuple[Any, yaml.Node | None]:
    """A scenario file's data and node tree, read within the limits above; one line on error."""
    source = str(path)
    text = _read_text(Path(path), source)
    root = _compose(text, source)  # refuses deep nesting and alias bombs before any walk
    try:
        data = yaml.load(text, Loader=_BoundedLoader)  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as err:  # e.g. an unhashable key, an unknown tag
        raise ScenarioError(source, _mark(err, text), f"invalid YAML: {_problem(err)}") from None
    _reject_non_finite(data, source, root, ())
    return data, root


def blank_around(name: str, what: str) -> str:
    """Why a scenario file ``name`` not found is refused where ``what`` (a file, a bundled
    scenario) is there but for a space (or tab) at the start or end of ``name``: the refusal
    said "file not found" (or listed the bundled scenario it missed as there), the blank that
    made the difference unseen."""
    from tiersim.errors import yaml_written

    return (f"file not found: {yaml_written(name)} has a space (or another blank) at its start "
            f"or end, which {what} has not; remove it")


def _read_text(path: Path, source: str) -> str:
    """The file as UTF-8 text, refusing big, binary and undecodable files, and anything but a
    regular file (a FIFO would hang the read), or a link that leads to no file."""
    from tiersim.paths import LINK_TO_NOTHING, leads_nowhere

    if leads_nowhere(path):  # else 'file not found', or the system's words for a loop
        raise ScenarioError(source, "", f"{LINK_TO_NOTHING}; point it at a scenario YAML file")
    if path.exists() and not path.is_file() and not path.is_dir():
        raise ScenarioError(source, "", "not a regular file (a device or pipe); name a scenario "
                            "YAML file")
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        stripped = str(path).strip()
        if stripped and stripped != str(path) and Path(stripped).is_file():
            raise ScenarioError(source, "", blank_around(str(path), f"the file {stripped}")
                                ) from None
        raise ScenarioError(source, "", "file not found") from None
    except IsADirectoryError:
        raise ScenarioError(source, "", "is a folder; name a scenario YAML file") from None
    except OSError as err:
        raise ScenarioError(source, "", f"cannot read file ({err.strerror})") from None
    if len(raw) > MAX_FILE_BYTES:
        raise ScenarioError(source, "", f"file is larger than {MAX_FILE_BYTES:,} bytes; a "
                            "scenario is a few KB of YAML")
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ScenarioError(source, "", "UTF-16 text; save the scenario as UTF-8")
    if b"\0" in raw:
        raise ScenarioError(source, "", f"not a text file (NUL byte at offset "
                            f"{raw.index(0)}); a scenario is YAML text")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw[:err.start].count(b"\n") + 1
        raise ScenarioError(source, f"line {line}", f"not UTF-8 text (byte "
                            f"0x{raw[err.start]:02x}); save the file as UTF-8") from None
    _no_unicode_line_break(text, source)
    return text


UNICODE_BREAKS = re.compile("[\x85\u2028\u2029]")
"""The characters YAML 1.1 (so PyYAML) reads as line breaks that no editor shows as one: NEL
(U+0085, what a Windows-1252 ellipsis becomes read as Latin-1) and the line and paragraph
separators."""


def _no_unicode_line_break(text: str, source: str) -> None:
    """Refuse a scenario holding a :data:`UNICODE_BREAKS` character, at its line as an editor
    counts lines: YAML breaks the line there, so the rest of a comment was read as a key
    ("line 2: scenario for tests and quick checks: unknown key") and every line number below
    it was one too many. tiersim writes none (a saved scenario escapes them: ``"\\L"``)."""
    found = UNICODE_BREAKS.search(text)
    if found is None:
        return
    char = found.group()
    line = len(re.findall(r"\r\n|\r|\n", text[:found.start()])) + 1  # as YAML and an editor
    raise ScenarioError(source, f"line {line}", f"holds {unprintable_words(char)}, which YAML "
                        "reads as a line break (no editor shows one there; it ends a comment, "
                        "cuts a value in two and moves every later line number); remove it, or "
                        f"write it as an escape (\"\\u{ord(char):04x}\") inside double quotes")


def check_size(root: yaml.Node | None, source: str) -> int:
    """The number of YAML values under ``root`` with aliases expanded; refuses a tree deeper
    than MAX_DEPTH, larger than MAX_NODES, or holding an alias to itself."""
    memo: dict[int, int] = {}
    return _count(root, source, memo, set(), 0) if root is not None else 0


def _count(node: yaml.Node, source: str, memo: dict[int, int], open_ids: set[int],
           depth: int) -> int:
    """Expanded size of ``node`` (memoised per node, so an alias bomb costs its text size)."""
    key = id(node)
    if key in memo:
        return memo[key]
    line = f"line {node.start_mark.line + 1}"
    if key in open_ids:
        raise ScenarioError(source, line, "an alias refers to a value that contains it; "
                            "write the value out")
    if depth > MAX_DEPTH:
        raise ScenarioError(source, line, f"nested more than {MAX_DEPTH} levels deep")
    children: list[yaml.Node] = []
    if isinstance(node, yaml.MappingNode):
        children = [part for pair in node.value for part in pair]
    elif isinstance(node, yaml.SequenceNode):
        children = list(node.value)
    open_ids.add(key)
    total = 1
    for child in children:
        total += _count(child, source, memo, open_ids, depth + 1)
        if total > MAX_NODES:
            raise TooManyValues(source, line, _holds_alias(node))
    open_ids.discard(key)
    memo[key] = total
    return total


class TooManyValues(ScenarioError):
    """YAML text holding more than :data:`MAX_NODES` values, ``aliased`` when it gets there
    by expanding aliases (an alias bomb) rather than by values written out."""

    def __init__(self, path: str, where: str, aliased: bool):
        """The error at ``where`` in ``path``, worded for how the values got there."""
        self.aliased = aliased
        super().__init__(path, where, (
            f"more than {MAX_NODES:,} values once aliases are expanded (an alias bomb?); "
            "write the values out") if aliased else f"more than {MAX_NODES:,} values; give "
            "fewer")


def _holds_alias(node: yaml.Node) -> bool:
    """Whether some node under ``node`` is reached twice: an alias (each node once, so the
    walk costs the text's size, never the expanded one)."""
    seen: set[int] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            return True
        seen.add(id(current))
        if isinstance(current, yaml.MappingNode):
            stack.extend(part for pair in current.value for part in pair)
        elif isinstance(current, yaml.SequenceNode):
            stack.extend(current.value)
    return False


def _yaml_reading(root: yaml.Node | None, loc: Loc) -> str:
    """``; YAML reads no unquoted as false: write 'no' in quotes if it is text`` where the
    value at ``loc`` of the node tree ``root`` is a plain scalar YAML 1.1 reads, by its
    spelling alone, as a boolean or a number (a tier named ``no``, ``on`` or ``0x10``); ""
    otherwise (quoted, tagged, or text)."""
    node = None if root is None else _node_at(root, loc)
    if not isinstance(node, yaml.ScalarNode) or node.style is not None or node.tag != (
            _BoundedLoader("").resolve(yaml.ScalarNode, node.value, (True, False))):
        return ""
    kind = node.tag.rsplit(":", 1)[-1]
    if kind == "bool":
        reads = str(yaml.SafeLoader.bool_values.get(node.value.lower())).lower()
    elif kind in ("int", "float"):
        reads = "a number"
    else:
        return ""
    written = _short(node.value, 40)
    return f"; YAML reads {written} unquoted as {reads}: write {written!r} in quotes if it is text"


def _reading(refused_as: str | None, root: yaml.Node | None, loc: Loc) -> str:
    """How YAML read the value at ``loc`` of the node tree ``root`` that pydantic refused as
    ``refused_as`` (its error type), where that tells the fix: a plain word or number where
    text goes (:func:`_yaml_reading`), a null (:func:`_null_reading`); "" otherwise."""
    text = _yaml_reading(root, loc) if refused_as in ("string_type", "literal_error") else ""
    return text or _null_reading(root, loc)


def _null_reading(root: yaml.Node | None, loc: Loc) -> str:
    """``; ~ is YAML's null (no value): write the value`` where the value at ``loc`` of the
    node tree ``root`` is a plain null (``~``, ``null``, or nothing after the colon); ""
    otherwise."""
    node = None if root is None else _node_at(root, loc)
    if not isinstance(node, yaml.ScalarNode) or node.style is not None or node.tag != (
            "tag:yaml.org,2002:null"):
        return ""
    written = _short(node.value, 40) if node.value else "nothing after the colon"
    return f"; {written} is YAML's null (no value): write the value"


def written_text(root: yaml.Node, loc: Loc) -> str | None:
    """The file's text of the value at ``loc`` of the node tree ``root``, as written (``true``,
    ``010``, ``'two'``, ``[1, ~]``), an anchor before it left out; None where the value is not
    on one line of the file (a block list) or the tree holds no text."""
    node = _node_at(root, loc)
    start, end = (None, None) if node is None else (node.start_mark, node.end_mark)
    if start is None or end is None or start.buffer is None or start.line != end.line:
        return None
    text = start.buffer[start.index:end.index].strip()
    if text.startswith("&"):  # `&name value`: the value, as an alias (*name) of it reads
        text = text.partition(" ")[2].strip()
    return text or None


def numbers_as_written(data: Any, root: yaml.Node | None, loc: Loc = ()) -> Any:
    """``data`` (read from the node tree ``root`` at ``loc``) with each number the file writes
    otherwise than Python does (``1e30``, ``0.00001``, ``1_000.5``; Python: ``1e+30``,
    ``1e-05``, ``1000.5``) kept as a :class:`~tiersim.numbers.WrittenNumber` of its text, so a
    line that quotes it (:func:`tiersim.errors.yaml_written`) quotes it as written: a sweep's
    axis values, ``tiersim plan --choose`` values. The number is the same: a point id or any
    JSON of it (``json`` writes a float as ``float.__repr__`` does) is unchanged, and pydantic
    reads it as a plain float, so nothing a run writes keeps the text."""
    if isinstance(data, dict):
        return {key: numbers_as_written(value, root, (*loc, key)) for key, value in data.items()}
    if isinstance(data, list):
        return [numbers_as_written(value, root, (*loc, i)) for i, value in enumerate(data)]
    if type(data) is not float or root is None or not math.isfinite(data):
        return data
    node = _node_at(root, loc)
    if not isinstance(node, yaml.ScalarNode) or node.style is not None or node.value == repr(data):
        return data
    return WrittenNumber(data, node.value)


def _is_quoted(root: yaml.Node, loc: Loc) -> bool:
    """Whether the scalar at ``loc`` in the node tree is quoted, a block scalar, or a plain
    one tagged ``!!str`` that YAML would otherwise read as a number (``!!str 2``)."""
    node = _node_at(root, loc)
    return isinstance(node, yaml.ScalarNode) and (node.style in ("'", '"', "|", ">")
                                                  or _tagged_text(node))


def _tagged_text(node: yaml.Node) -> bool:
    """Whether a plain scalar is text only by an explicit ``!!str`` tag (``!!str 2``)."""
    return (isinstance(node, yaml.ScalarNode) and node.style is None and node.tag == _STR
            and _BoundedLoader("").resolve(yaml.ScalarNode, node.value, (True, False)) != _STR)


def without_quotes(root: yaml.Node | None, loc: Loc) -> str:
    """How to write the text at ``loc`` as a number: ``without quotes``, or ``without the
    !!str tag`` where a tag made it text."""
    node = None if root is None else _node_at(root, loc)
    return "without the !!str tag" if node is not None and _tagged_text(node) else (
        "without quotes")


def _reject_non_finite(data: Any, source: str, root: yaml.Node | None, loc: Loc) -> None:
    """Every number in a scenario must be finite: ``.nan`` and ``.inf`` are refused, and so is a
    whole number (value or key) of more than :data:`MAX_INT_BITS` bits."""
    if isinstance(data, float) and (isinstance(data, _Underflow) or not math.isfinite(data)):
        text = _number_for_text(loc, root)
        if text is not None:  # a name: text YAML read as a number, not a number gone wrong
            raise ScenarioError(source, _where(loc, root), text)
        if _takes_no_number(loc):
            return  # the key's own check words it, as it does any number there
        if not isinstance(data, _Underflow) and _takes_a_name_or_number(loc):
            raise ScenarioError(source, _where(loc, root), (
                "a name or a finite number is expected here, not "
                f"{_written_number(data, loc, root)}{_yaml_reading(root, loc)}"))
    if isinstance(data, _Underflow):
        raise ScenarioError(source, _where(loc, root), underflow_words(data.text))
    if isinstance(data, float) and not math.isfinite(data):
        raise ScenarioError(source, _where(loc, root), _not_finite(data, loc, root))
    if isinstance(data, int) and data.bit_length() > MAX_INT_BITS:
        raise ScenarioError(source, _where(loc, root), _huge(data))
    if isinstance(data, dict):
        for key, value in data.items():
            if isinstance(key, int) and key.bit_length() > MAX_INT_BITS:
                raise ScenarioError(source, _where(loc, root), f"a key: {_huge(key)}")
            _reject_non_finite(value, source, root, loc + (key,))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            _reject_non_finite(value, source, root, loc + (i,))


MODEL_KEYS = ("model", "draft_model")
"""Keys whose value names a model (text): a ``.nan`` there is no number gone wrong."""


TEXT_KEYS = ("name",)
"""Keys whose value is text wherever a scenario has them (a scenario's, a tier's, an offload
level's name): a plain number there is text YAML read as a number."""


def _number_for_text(loc: Loc, root: yaml.Node | None) -> str | None:
    """Why a number no float holds (``1e-400``, ``1e400``, ``.nan``) written plain at a key of
    :data:`TEXT_KEYS` is refused: the key takes text, which YAML reads unquoted as a number,
    so it is to be quoted (``name: 1e-400`` read "nearer 0 than any number tiersim holds ...
    write 0 if that is meant"); None elsewhere, or where the number is not written plain (a
    ``!!float`` tag), which the number's own words refuse."""
    if not loc or loc[-1] not in TEXT_KEYS:
        return None
    reading = _yaml_reading(root, loc)
    if not reading:
        return None
    written = written_text(root, loc) if root is not None else None
    got = f" (got {_short(written, 40)})" if written else ""
    return f"input should be a valid string{got}{reading}"


def _takes_no_number(loc: Loc) -> bool:
    """Whether the scenario key at ``loc`` takes no number (text or true/false alone), a model
    key aside (its own words, :func:`_not_finite`): ``router.policy: .nan`` read "must be a
    finite number", of a key that takes none. A sweep axis' value is at the key the axis
    names; anywhere else in ``sweep:`` a list or a map goes (an axis' values, ``zip:`` and its
    groups), which the sweep's own check asks for (``sweep: {seed: .nan}`` read "must be a
    finite number", where "values must be a non-empty list" is the fix)."""
    from tiersim.scenario_models import takes_no_number

    if loc[:1] == ("sweep",):
        if not (len(loc) > 2 and isinstance(loc[-1], int) and loc[-2] != "zip"):
            return True
        path = loc[-2]  # an axis' value: the key its dotted path names
        loc = tuple(path.split(".")) if isinstance(path, str) else ()
    return bool(loc) and loc[-1] not in MODEL_KEYS and takes_no_number(loc)


def _takes_a_name_or_number(loc: Loc) -> bool:
    """Whether the scenario key at ``loc`` takes a name as well as a number (a tier's name or
    index): ``router.step_tiers.planning: .nan`` read "must be a finite number", where a name
    goes too."""
    from tiersim.scenario_models import takes_a_name_or_number

    return bool(loc) and loc[:1] != ("sweep",) and takes_a_name_or_number(loc)


def _not_finite(value: float, loc: Loc, root: yaml.Node | None) -> str:
    """Why ``.nan`` or ``.inf`` at ``loc`` is refused: a number must be finite, and a model key
    wants a model's name (``model: .nan`` read "must be a finite number" for a text field).
    The value is quoted as the file writes it (:func:`_written_number`): ``1e400`` read
    "(got inf)", a value not written."""
    written = _written_number(value, loc, root)
    if loc and loc[-1] in MODEL_KEYS:
        from tiersim.hardware.models import MODEL_WANTED

        return f"must name {MODEL_WANTED} (got {written}){_yaml_reading(root, loc)}"
    return f"must be a finite number (got {beyond_float_words(written)})"


def _written_number(value: float, loc: Loc, root: yaml.Node | None) -> str:
    """The text of the number at ``loc`` of the node tree ``root`` as written, its tag left
    out (``1e400``, ``.NaN``, ``!!float -1e400``'s ``-1e400``); where the tree holds no
    such number there (a value a check made), as YAML writes ``value`` (``.inf``, ``.nan``)."""
    from tiersim.errors import yaml_written

    node = None if root is None else _node_at(root, loc)
    text = node.value.strip() if isinstance(node, yaml.ScalarNode) else ""
    beyond = FRACTIONAL.match(text) and math.isinf(float(text.replace("_", "")))
    return text if beyond or NON_FINITE.match(text) else yaml_written(value)


def _huge(number: int) -> str:
    """Why a whole number of more than :data:`MAX_INT_BITS` bits is refused (never printed)."""
    if isinstance(number, _Overlong):
        return (f"a whole number of {number.digits:,} digits is beyond any setting (at most "
                f"{MAX_INT_BITS:,} bits, about 900 digits)")
    return huge(number.bit_length())


class _Underflow(float):
    """A decimal number in a scenario other than 0 but nearer 0 than any float (``1e-400``),
    written ``text``: stands as 0.0, which :func:`_reject_non_finite` refuses (YAML read it as
    0.0 without a word: a price of 1e-400 made a free tier)."""

    def __new__(cls, text: str):
        number = super().__new__(cls, 0.0)
        number.text = text
        return number


class _NotFinite(float):
    """A number in a scenario that is no finite float, written ``text``: beyond any float
    (``1e999``), or a NaN or infinity spelt as YAML does not write it (``.NaN``, ``+.INF``).
    It stands as the NaN or infinity YAML reads it as, which :func:`_reject_non_finite`
    refuses where a number is read, and which an error line quotes as written
    (:func:`tiersim.errors.yaml_written`) where the key takes text (``mode: 1e999`` read
    "(got .inf)")."""

    def __new__(cls, value: float, text: str = ""):
        """``value`` (a NaN or infinity), with the text the YAML wrote it as (none: unpickled,
        the text comes back with the instance's attributes)."""
        number = super().__new__(cls, value)
        number.text = text
        return number


class NearWhole(float):
    """A decimal number in a scenario that is whole only as a float (``1.99999999999999999999``
    reads as 2.0), written ``text``: a float field reads it as that float, and a field that
    takes whole numbers refuses it (:func:`tiersim.scenario.refuse_text_numbers`; pydantic
    took 2.0 as 2 without a word)."""

    def __new__(cls, value: float, text: str = ""):
        """``value``, with the text the YAML wrote it as."""
        number = super().__new__(cls, value)
        number.text = text
        return number


yaml.SafeDumper.add_representer(NearWhole, yaml.SafeDumper.represent_float)
yaml.SafeDumper.add_representer(_NotFinite, yaml.SafeDumper.represent_float)
"""A :class:`NearWhole` a float field keeps is written as the float it reads as
(``yaml.safe_dump``, :func:`dump_yaml`: a sweep point's scenario, the report's copy), which
PyYAML's safe dumper refused as 'cannot represent an object'."""

yaml.SafeDumper.add_representer(
    WrittenNumber, lambda dumper, number: dumper.represent_float(float(number)))
"""A :class:`~tiersim.numbers.WrittenNumber` (a flag's number, kept with its text until its
command has checked it) is written as the float it is, should one reach a written scenario
(``represent_float`` writes ``repr``, which is its text: ``1e9`` was written ``!!float
'1.0e9'``)."""


def _construct_float(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> float:
    """A float as PyYAML reads it, but one that :func:`~tiersim.numbers.underflows` as an
    :class:`_Underflow`, and one whole only as a float as a :class:`NearWhole`."""
    text = str(loader.construct_scalar(node))
    if FRACTIONAL.match(text) and underflows(text.replace("_", "")):
        return _Underflow(text)
    value = yaml.SafeLoader.construct_yaml_float(loader, node)
    if not math.isfinite(value) and text not in (".nan", ".inf", "-.inf"):
        return _NotFinite(value, text)
    if FRACTIONAL.match(text) and whole_only_as_float(text):
        return NearWhole(value, text)
    return value


class _Overlong(int):
    """A decimal whole number in a scenario of ``digits`` digits, more than Python makes an int
    of, and than any setting holds (:func:`_reject_non_finite` refuses it, :func:`_huge` says why):
    stands as 2 to the power :data:`MAX_INT_BITS`, past every limit."""

    def __new__(cls, digits: int):
        number = super().__new__(cls, 1 << MAX_INT_BITS)
        number.digits = digits
        return number


def _digits(node: yaml.Node) -> int:
    """The digits of a plain scalar YAML reads as a decimal whole number (0 for any other
    node)."""
    if not isinstance(node, yaml.ScalarNode) or node.tag != _INT or node.style is not None:
        return 0
    text = node.value.replace("_", "")
    return len(text.lstrip("+-")) if WHOLE.match(text) else 0


class _DepthError(yaml.YAMLError):
    """Raised while composing a node nested deeper than MAX_DEPTH."""

    def __init__(self, mark: yaml.Mark):
        super().__init__(f"nested more than {MAX_DEPTH} levels deep")
        self.problem_mark, self.problem = mark, f"nested more than {MAX_DEPTH} levels deep"


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader that stops at MAX_DEPTH levels of nesting while composing (before
    Python's recursion limit, which deep nesting would otherwise hit slowly)."""

    _depth = 0

    def compose_node(self, parent, index):
        """Compose one node, counting how deep it is."""
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH + 1:
                raise _DepthError(self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def flatten_mapping(self, node):
        """Merge keys (``<<: [*a, *b]``) as YAML defines them: the mapping's own keys win, then
        the earlier mapping of the list. PyYAML 6.0.4 keeps the later one for keys longer than
        one character (it tells keys apart by object identity, yaml/pyyaml#953)."""
        merged, own = [], []
        for key, value in node.value:
            if key.tag != _MERGE:
                own.append((key, value))
                continue
            listed = isinstance(value, yaml.SequenceNode)
            for source in value.value if listed else [value]:
                if not isinstance(source, yaml.MappingNode):  # PyYAML's words
                    wanted = "a mapping" if listed else "a mapping or list of mappings"
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark,
                        f"expected {wanted} for merging, but found {source.id}",
                        source.start_mark)
                self.flatten_mapping(source)
                merged.append(source.value)
        node.value = [pair for pairs in reversed(merged) for pair in pairs] + own  # last wins

    def construct_object(self, node, deep=False):
        """Construct one value; a value its tag cannot hold (``!!int abc``, ``!!bool 1``, an
        integer of more than 4,300 digits) is a YAML error at that node, not a traceback. A
        decimal whole number of more digits than Python makes an int of (4,300) is an
        :class:`_Overlong`, refused by its digits (Python's refusal was cut short midway)."""
        digits = _digits(node)
        if digits > sys.get_int_max_str_digits() > 0:
            return _Overlong(digits)
        try:
            return super().construct_object(node, deep)
        except yaml.YAMLError:
            raise
        except (ValueError, KeyError, TypeError, AttributeError, OverflowError,
                IndexError) as err:  # IndexError: !!float "" reads its empty text's first
            raise yaml.constructor.ConstructorError(
                None, None, _unreadable(node, err), node.start_mark) from None


def _unreadable(node: yaml.Node, err: Exception) -> str:
    """Why YAML cannot build ``node``'s value, in a few words that :data:`YAML_FIXES` gives the
    fix of: a tag the value is not of (``!!int abc``, ``!!float ""``), or a date that is none
    (``2001-02-30``). Before, Python's words for it, cut at 80 characters with no fix
    ("cannot read this value as its type (invalid literal for int() with base 10: '...")."""
    tag = node.tag.replace("tag:yaml.org,2002:", "!!")
    value = node.value if isinstance(node.value, str) else ""
    shown = repr(_short(value, 20)) if value.strip() else "an empty value"
    reason = _short(" ".join(str(err).split()), 40) or type(err).__name__
    if _explicit_tag(node):
        if tag == "!!timestamp" and _looks_like(node, value):  # untagged, it fails the same
            return f"{shown} is no date ({reason})"
        return f"the {tag} tag cannot read {shown}"
    if tag == "!!timestamp":
        return f"{shown} is no date or time ({reason})"
    return f"YAML cannot read {shown} as {tag} ({reason})"


def _looks_like(node: yaml.Node, value: str) -> bool:
    """Whether YAML gives ``value`` written plainly the tag ``node`` has (``2001-02-30`` looks
    like a date), so that removing the tag would not make it readable."""
    return yaml.SafeLoader.resolve(yaml.SafeLoader, yaml.ScalarNode, value,
                                   (True, False)) == node.tag


def _explicit_tag(node: yaml.Node) -> bool:
    """Whether ``node``'s tag is written in the text (``!!int 1.5``, ``&a !!int 1.5``), not
    the one YAML gives what a plain value looks like."""
    mark = node.start_mark
    buffer, pointer = getattr(mark, "buffer", None), getattr(mark, "pointer", None)
    if not isinstance(buffer, str) or not isinstance(pointer, int):
        return False
    return re.match(r"(&\S+\s+)?!", buffer[pointer:pointer + 300]) is not None


_INT = "tag:yaml.org,2002:int"
_STR = "tag:yaml.org,2002:str"
_FLOAT = "tag:yaml.org,2002:float"
_VALUE = "tag:yaml.org,2002:value"
"""YAML 1.1's type of a bare ``=`` (a mapping's "default value"), which PyYAML's safe loader
cannot build: dropped from the resolvers, so ``=`` is text as a key and as a value (a value
was refused as a tag the file did not have)."""
_PLAIN_NUMBER = {
    _INT: WHOLE,
    _FLOAT: re.compile(rf"{FRACTIONAL.pattern}|^(?:[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"),
}
"""The plain scalars read as numbers: those :mod:`tiersim.numbers` reads as one (decimal, at
most one ``_`` between two digits, ``1e3`` as 1000 as YAML 1.2 reads it), and YAML's ``.inf``
and ``.nan`` (refused later, at their key). PyYAML's YAML 1.1 patterns also read ``010`` as
octal 8, ``1:30`` as 90 (base 60), ``0x10`` as 16 and ``1__0`` as 10: such a scalar is text
here, a number field refuses it with the decimal number to write
(:func:`~tiersim.scenario.refuse_text_numbers`) and a name such as ``08`` stays text.
:func:`dump_yaml` quotes text that reads as a number here (``1e3``), so a run's
``scenario.yaml`` reads back the same."""


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    """An integer in decimal (a leading zero too, as in ``!!int 010``), or in hex / octal /
    binary with an explicit 0x / 0o / 0b."""
    text = loader.construct_scalar(node).replace("_", "")
    sign = -1 if text.startswith("-") else 1
    digits = text.lstrip("+-")
    bases = {"0x": 16, "0o": 8, "0b": 2}
    base = bases.get(digits[:2].lower())
    return sign * (int(digits[2:], base) if base else int(digits, 10))


_BoundedLoader.yaml_implicit_resolvers = {
    first: [(tag, _PLAIN_NUMBER.get(tag, rx)) for tag, rx in resolvers if tag != _VALUE]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_BoundedLoader.add_constructor(_INT, _construct_int)
_BoundedLoader.add_constructor(_FLOAT, _construct_float)
_BoundedLoader.add_constructor(_MERGE, lambda loader, node: loader.construct_scalar(node))
"""A plain ``<<`` is YAML 1.1's merge only as a key (:meth:`_BoundedLoader.flatten_mapping`
takes those away first); as a value PyYAML cannot build it, so it is the text ``<<``, as YAML
1.2 reads it (it was refused as a '!' tag the file does not have)."""

_UNREAD_TAGS = {"set": "an unordered set", "binary": "bytes from base64",
                "omap": "a list of pairs", "pairs": "a list of pairs"}
"""YAML 1.1 tags PyYAML's safe loader reads into what no scenario field means (a ``!!set`` in
a list's place gave its items in hash order, repeats dropped; ``!!binary`` a name decoded
from base64), with what each makes: refused at the tag (:data:`YAML_FIXES`)."""


def _refuse_tag(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    """Refuse a value tagged with one of :data:`_UNREAD_TAGS`."""
    name = node.tag.rsplit(":", 1)[-1]
    raise yaml.constructor.ConstructorError(
        None, None, f"'!!{name}' makes {_UNREAD_TAGS[name]}, which a scenario does not read",
        node.start_mark)


for _tag in _UNREAD_TAGS:
    _BoundedLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _refuse_tag)


def read_yaml_value(text: str, source: str = "<value>", as_written: bool = False) -> Any:
    """One YAML value read as scenario files are, within the same limits (nesting, aliases,
    NaN and infinity refused): ``tiersim plan --choose`` values. One line on error, naming
    ``source``. ``as_written``: its numbers keep the text they are written in
    (:func:`numbers_as_written`)."""
    root = _compose(text, source)
    try:
        data = yaml.load(text, Loader=_BoundedLoader)  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as err:
        raise ScenarioError(source, _mark(err, text), f"invalid YAML: {_problem(err)}") from None
    _reject_non_finite(data, source, root, ())
    return numbers_as_written(data, root) if as_written else data


class _Dumper(yaml.SafeDumper):
    """``yaml.safe_dump`` that also quotes text this loader reads as no text (``'1e3'``, a
    number to YAML 1.2 and here, which YAML 1.1 and so ``safe_dump`` leave plain)."""

    def resolve(self, kind, value, implicit):
        """The tag a plain ``value`` gets: text only where both YAML 1.1 and
        :class:`_BoundedLoader` read it as text."""
        tag = super().resolve(kind, value, implicit)
        if kind is yaml.ScalarNode and implicit[0] and tag == _STR:
            return _BoundedLoader("").resolve(kind, value, implicit)
        return tag


def dump_yaml(doc: Any) -> str:
    """``doc`` as YAML text that :func:`read_yaml` reads back as ``doc`` (a run's, plan's or
    sweep's ``scenario.yaml``): ``yaml.safe_dump`` in the order given, with every text that
    reads as a number or a boolean quoted."""
    return yaml.dump(doc, Dumper=_Dumper, sort_keys=False)


def _compose(text: str, source: str) -> yaml.Node | None:
    """Parse YAML into a node tree (for line numbers); syntax errors become one line."""
    try:
        root = yaml.compose(text, Loader=_BoundedLoader)
    except _DepthError as err:
        raise ScenarioError(source, _mark(err), err.problem) from None
    except yaml.YAMLError as err:
        raise ScenarioError(source, _mark(err, text), f"invalid YAML: {_problem(err)}") from None
    except RecursionError:
        raise ScenarioError(source, "", f"nested more than {MAX_DEPTH} levels deep") from None
    check_size(root, source)
    _reject_duplicate_keys(root, source, ())
    return root


def _mark(err: yaml.YAMLError, text: str | None = None) -> str:
    """``line N`` of a YAML error, or "" when it has no position: the line of the quote a quoted
    text left open starts at (the problem's is the file's end), and of the character a reader's
    error names (found by its position in ``text``)."""
    mark = _open_quote(err) or getattr(err, "problem_mark", None)
    if mark is None and isinstance(err, yaml.reader.ReaderError) and text is not None:
        return f"line {text.count(chr(10), 0, err.position) + 1}"
    return f"line {mark.line + 1}" if mark is not None else ""


def _open_quote(err: yaml.YAMLError):
    """The mark of the quote a quoted text that the file's end cuts off starts at; else None."""
    context = str(getattr(err, "context", None) or "")
    if "quoted scalar" in context and "end of stream" in str(getattr(err, "problem", "")):
        return getattr(err, "context_mark", None)
    return None


def _in_context(err: yaml.YAMLError, text: str) -> str:
    """A YAML error's problem ``text`` with what its context adds: where a duplicate anchor was
    first defined, that a quote is never closed, which list or map a flow error is in."""
    context = str(getattr(err, "context", None) or "")
    mark = getattr(err, "context_mark", None)
    line = f"line {mark.line + 1}" if mark is not None else "an earlier line"
    if context.startswith("found duplicate anchor") and text == "second occurrence":
        anchor = context.removeprefix("found duplicate ").split(";")[0]
        return f"{_short(anchor, 60)} is defined twice (first on {line})"
    if _open_quote(err) is not None:
        return "a quote that starts on this line is never closed (the file ends first)"
    for kind, opened in (("flow sequence", "[ list"), ("flow mapping", "{ map")):
        if context.startswith(f"while parsing a {kind}") and mark is not None:
            return f"{text} (in the {opened} that starts on {line})"
    return text


def _problem(err: yaml.YAMLError) -> str:
    """A YAML error's problem in a few words (never the file's text beyond one character), with
    the fix where the problem is a common one."""
    problem = getattr(err, "problem", None) or (str(err).splitlines() or ["syntax error"])[0]
    text = _in_context(err, _short(" ".join(str(problem).split())))
    fix = next((fix for cause, fix in YAML_FIXES if cause in text), None)
    if fix is not None and "character '\\t'" in text and not _in_indentation(err):
        fix = "write spaces, not a tab, inside a line (this YAML reader takes no tab there)"
    long_key = _long_key(err) if "could not find expected ':'" in text else None
    if long_key is not None:  # it has its ': ', which "write each key as 'key: value'" asked for
        fix = (f"a key YAML reads has at most 1,024 characters, and this one has {long_key:,}: "
               "remove it (no scenario key is that long)")
    return f"{text}; {fix}" if fix else text


def _long_key(err: yaml.YAMLError) -> int | None:
    """The length of the plain key a YAML error refuses for being over PyYAML's 1,024
    characters (its ``:`` is on the key's line, past that many characters), else None."""
    start, end = getattr(err, "context_mark", None), getattr(err, "problem_mark", None)
    if start is None or end is None or start.line != end.line:
        return None
    buffer, pointer = getattr(end, "buffer", None), getattr(end, "pointer", None)
    if not isinstance(buffer, str) or not isinstance(pointer, int) or not (
            buffer[pointer:pointer + 1] == ":" and end.column - start.column > 1024):
        return None
    return len(buffer[start.pointer:pointer].rstrip())


def _in_indentation(err: yaml.YAMLError) -> bool:
    """Whether the character a YAML error points at has only blanks before it on its line (a
    tab there is indentation; after a key or a comma it is not), or its line is unknown."""
    mark = getattr(err, "problem_mark", None)
    buffer, pointer = getattr(mark, "buffer", None), getattr(mark, "pointer", None)
    if not isinstance(buffer, str) or not isinstance(pointer, int):
        return True
    start = buffer.rfind("\n", 0, pointer) + 1
    return not buffer[start:pointer].strip()


#: (words of a PyYAML problem, the fix a user needs) for the problems people meet most.
YAML_FIXES = (
    ("another document", "a scenario is one YAML document: remove the '---' line and whatever "
     "follows it, or split it into two files"),
    ("character '\\t'", "indent with spaces, not tabs"),
    ("could not determine a constructor", "remove the '!' tag: a scenario holds plain maps, "
     "lists, strings and numbers"),
    ("which a scenario does not read", "remove the tag: a scenario holds plain maps, lists, "
     "strings and numbers"),
    ("is no date (", "write a real date, or remove the !!timestamp tag and quote the value "
     "if it is text"),
    ("tag cannot read", "remove the tag (YAML then reads the value as it looks), or write a "
     "value of that type"),
    ("is no date or time", "YAML reads it as one: quote it if it is text, or write a real date"),
    ("mapping values are not allowed here", "quote a value that holds ': ', or line the key up "
     "with the keys beside it"),
    ("is never closed", "close the quote"),
    ("expected ',' or ']'", "close the list with ']', or put a comma between its items"),
    ("expected ',' or '}'", "close the map with '}', or put a comma between its entries"),
    ("could not find expected ':'", "write each key as 'key: value' (a colon and a space "
     "after the key)"),
    ("but found '<stream end>'", "the file ends where a value is due (cut short?): finish it, "
     "or give the whole file"),
    ("found undefined alias", "define the anchor (&name) above the first alias to it (*name), "
     "or write the value out"),
    ("is defined twice", "give each anchor its own name"),
    ("that cannot start any token", "quote the value: YAML keeps @, ` and % at the start of a "
     "value for itself"),
    ("expected <block end>", "line the key or list item up with the ones beside it, or indent "
     "it under its key"),
    ("unacceptable character", "remove that control character: a scenario is plain text"),
    ("found unknown escape character", "in double quotes write a backslash as \\\\, or use "
     "single quotes"),
    ("expected escape sequence of", "in double quotes a backslash starts an escape (\\xHH, "
     "\\uHHHH): write a backslash as \\\\, or use single quotes"),
    ("sequence entries are not allowed here", "put each list item ('- ') on its own line, "
     "indented under its key, or quote the value if the '- ' is text"),
    ("expected the node content, but found ','", "remove the extra comma, or write the value "
     "that is missing"),
    ("for merging", "'<<' merges maps (<<: *anchor): give it a map or a list of maps, or quote "
     "the key ('<<') if it is text"),
    ("expected alphabetic or numeric character", "write a name right after an anchor's & "
     "(&name), an alias's * (*name) or a directive's %, or quote the value if the mark is text"),
    ("expected '<document start>'", "a scenario is one YAML document: remove the '...' or '%' "
     "line above this one (a document end or a directive)"),
    ("YAML directive", "remove the %YAML line: a scenario needs none"),
    ("incompatible YAML document", "remove the %YAML line: a scenario needs none"),
    ("undefined tag handle", "remove the tag, or quote the value if its '!' is text"),
    ("non-specific tag", "remove the tag, or quote the value if its '!' is text"),
    ("appended to the tag", "remove the tag, or quote the value if its '!' is text"),
    ("expected '>'", "close the tag !<...> with '>', or remove the tag"),
    ("chomping or indentation indicators", "after | or > write only - or + and an indentation "
     "digit (|-, >2), or quote the value"),
    ("indentation indicator in the range", "after | or > write an indentation digit from 1 to "
     "9, or none"),
    ("expected a comment or a line break", "end the line after its | or > (or its %YAML "
     "directive), or put a space and # before a comment"),
    ("expected a digit", "remove the %YAML line: a scenario needs none"),
    ("expected URI", "remove the tag, or quote the value if its '!' is text"),
    ("unexpected document separator", "a '---' or '...' line inside a quoted value ends the "
     "document: indent that line, or remove it"),
)


#: What YAML reads an unquoted key of each of these types as (``yes``, ``~``, ``1.5``,
#: ``2001-12-14``): no key of a scenario is one, and each is refused on its own line (a whole
#: number key is named on its line by the checks of numbers).
_NOT_NAMES = {"bool": "true", "null": "null", "float": "a number", "timestamp": "a date"}


def _reject_duplicate_keys(node: yaml.Node | None, source: str, loc: Loc) -> None:
    """PyYAML keeps the last of two equal keys silently; make that an error instead. A key
    YAML reads as no name (true, null, a number or a date) is refused on its own line."""
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            if not isinstance(key, yaml.ScalarNode):
                where = f"line {key.start_mark.line + 1}: {format_loc(loc)}"
                raise ScenarioError(source, where, "a key must be a plain name, not a map or "
                                    "list")
            # (a !!set's members are its keys: refused for its tag when it is built)
            # (a sweep axis's key has its own line, naming a dotted path to give instead)
            reads_as = (_NOT_NAMES.get(key.tag.rsplit(":", 1)[-1])
                        if node.tag.endswith(":map") and tuple(loc) != ("sweep",) else None)
            if reads_as is not None and key.tag.endswith(":bool"):
                reads_as = str(yaml.SafeLoader.bool_values.get(key.value.lower())).lower()
            if reads_as is not None:  # pydantic names no line or key for it, and loses True
                where = f"line {key.start_mark.line + 1}: {format_loc(loc + (key.value,))}"
                raise ScenarioError(source, where, f"YAML reads this key as {reads_as}, not a "
                                    f"name; quote it if it is one ('{_short(key.value, 40)}'), "
                                    "or remove it")
            if key.value in seen:
                where = f"line {key.start_mark.line + 1}: {format_loc(loc + (key.value,))}"
                raise ScenarioError(source, where, "duplicate key (remove one of them)")
            seen.add(key.value)
            _reject_duplicate_keys(value, source, loc + (key.value,))
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _reject_duplicate_keys(item, source, loc + (i,))

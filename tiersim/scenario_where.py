"""Where a scenario value is: key paths and the lines of a YAML node tree.

A pydantic error location (``("tiers", 0, "replica")``) is written as a key path
(:func:`format_loc`: ``tiers[0].replica``) and walked down the ``yaml.compose`` node tree, which
keeps each key's position, to its line (:func:`line_of`); :func:`key_path` reads a key path back.
A key that a merge (``<<: *defaults``) brings is found where the merged map writes it. These
helpers read nothing and import nothing of tiersim: the YAML reader (:mod:`tiersim.scenario_yaml`)
and the error wording (:mod:`tiersim.scenario_explain`) build on them.
"""

from __future__ import annotations

import ast
import re

import yaml

Loc = tuple[str | int, ...]
_MERGE = "tag:yaml.org,2002:merge"


def _node_at(root: yaml.Node, loc: Loc) -> yaml.Node | None:
    """The node at ``loc`` in the node tree, or None."""
    node = root
    for part in loc:
        child = _child(node, part)
        if child is None:
            return None
        node = child[1]
    return node


def _where(loc: Loc, root: yaml.Node | None) -> str:
    """``line N: dotted.path[i].key`` (line omitted when unknown)."""
    line = line_of(root, loc) if root is not None else None
    path = format_loc(loc)
    return f"line {line}: {path}" if line is not None else path


#: A key path as :func:`format_loc` writes it (``tiers[1].accuracy``).
_KEY = r"(?:[A-Za-z_]\w*|'(?:[^'\\]|\\.)*')"
"""One key of a key path: a plain name, or one :func:`format_loc` quoted (``'seed '``)."""
_KEY_PATH = re.compile(rf"{_KEY}(?:\.{_KEY}|\[\d+\])*")


def key_path(where: str) -> Loc | None:
    """The location a key path names (``tiers[1].scheduler`` -> ``("tiers", 1, "scheduler")``),
    or None where ``where`` is no key path (a line number, a file)."""
    if not _KEY_PATH.fullmatch(where):
        return None
    return tuple(int(index) if index else ast.literal_eval(quoted) if quoted else key
                 for key, quoted, index in re.findall(
                     r"([A-Za-z_]\w*)|('(?:[^'\\]|\\.)*')|\[(\d+)\]", where))


def format_loc(loc: Loc) -> str:
    """``("tiers", 1, "replicas")`` -> ``tiers[1].replicas``; a key of more than 40 characters
    cut short (a file's key may be 200 kB: the line quotes it, not the file), an empty one
    written ``''`` (it was read as the top level), one with white space at either end quoted
    (``'seed '``: unquoted, its space was lost before the colon that follows)."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            text = _short(str(part), 40) if str(part) else "''"
            text = repr(text) if text != text.strip() else text
            out += f".{text}" if out else text
    return out or "(top level)"


def line_of(root: yaml.Node | None, loc: Loc) -> int | None:
    """1-based line of the YAML key (or item) at ``loc``; the deepest existing ancestor's line."""
    node, line = root, None
    for part in loc:
        child = _child(node, part)
        if child is None:
            break
        key_node, node = child
        line = (key_node or node).start_mark.line + 1
    if line is None and root is not None:
        line = root.start_mark.line + 1
    return line


def _child(node: yaml.Node | None, part: str | int) -> tuple[yaml.Node | None, yaml.Node] | None:
    """The (key node, value node) under ``node`` for one location part, or None. A key a
    merge (``<<: *defaults``) brings is found where the merged map writes it (the map's own
    keys first, then each merged map in turn, as the loader reads them)."""
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if key.tag != _MERGE and key.value == str(part):
                return key, value
        for source in _merged(node):
            found = _child(source, part)
            if found is not None:
                return found
    elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and (
        0 <= part < len(node.value)
    ):
        return None, node.value[part]
    return None


def _merged(node: yaml.MappingNode) -> list[yaml.Node]:
    """The maps a mapping node merges (``<<: *a`` or ``<<: [*a, *b]``), earliest first."""
    sources: list[yaml.Node] = []
    for key, value in node.value:
        if key.tag == _MERGE:
            sources += value.value if isinstance(value, yaml.SequenceNode) else [value]
    return sources


def _short(text: str, limit: int = 80) -> str:
    """``text`` cut to ``limit`` characters (an error line quotes a value, not a whole file)."""
    return text if len(text) <= limit else text[:limit - 3] + "..."

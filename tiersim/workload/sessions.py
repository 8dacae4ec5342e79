"""Agentic sessions: a task is a chain of model calls, each waiting for its predecessor and tool.

Canonical session columns (a trace may carry them; :func:`generate` makes them):

- ``session_id`` (int): the task; ``step`` (int >= 0): the call's place in it;
- ``parent`` (optional int): the step this one follows (-1 or an empty cell: none; without
  the column, each step follows the previous one). Sessions are chains: a step has at most
  one follower (the engine's closed loop);
- ``step_type`` (optional text, default ``step``): e.g. planning, tool_call, code, verify,
  recovery, final (the step-type router reads it);
- ``tool_s`` (optional float >= 0, default 0): tool or think time between the predecessor's
  finish and this step's arrival. A step's ``arrival_s`` is ignored unless it starts its session.

Context: with ``context: accumulate`` (default) a step's ``input_tokens`` are its NEW tokens
(instruction plus the tool result it follows) and its prompt is the session's context so far:
``prompt_k = prompt_parent + output_parent + new_k`` (the root's prompt is its new tokens plus
``system_prompt_tokens``). With ``context: logged`` ``input_tokens`` already hold the whole
prompt. Either way each prompt gets Mooncake-style ``prefix_hashes`` (one per 512 tokens) unless
the trace has them (read under ``context: logged`` only, as they name the logged prompt's
blocks): a full block has the same hash in every step whose prompt holds the same
tokens there (the earliest step of the chain whose prompt plus output covers the block owns it;
blocks inside the shared system prompt are shared by every session), the last partial block is
the step's own. So a tier with prefix caching sees the reuse. Output tokens are counted in the
context as the trace states them (a tier's output multiplier is not fed back).

:func:`generate` is the seeded generator; its distributions are stated in
:class:`SessionGenerator` and ``docs/agentic.md``.
"""

from __future__ import annotations

import bisect
import hashlib
import math
from array import array
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, model_validator

from tiersim.errors import (
    KeyedError,
    ScenarioError,
    TraceError,
    escaped,
    unprintable,
    unprintable_words,
)
from tiersim.memory import beyond_room, memory_room
from tiersim.shares import sums_to_one
from tiersim.trace import checks
from tiersim.trace.canonical import FOLLOWS, HASH_BLOCK_TOKENS, MAX_TOOL_S, OUTPUT_HASHES
from tiersim.trace.loader import MAX_SPAN_S, TraceOrigin

MAX_PREFIX_HASHES = 50_000_000
"""Most prefix-block hashes the session prompts of one run may hold in all (400 MB of int64:
about 25 billion prompt tokens counted with their context). Beyond it a run is refused before
the hashes fill memory: 1,000 generated tasks of 1,000 steps each passed 6.8 GB in two minutes."""
MAX_GENERATED_STEPS = 10_000_000
"""Most steps (requests) ``workload.sessions.generate`` may make in all. Memory bounds them
first: a run takes about :data:`GENERATED_STEP_BYTES` a step, so 10^7 steps need over 6 GB
(:func:`check_memory` refuses a scenario whose steps would not fit before any is made)."""
GENERATED_STEP_BYTES = 650
"""Memory a run takes per generated session step, at least: ``tiersim run --no-baselines`` of
10^6 one-token steps peaked at 747,420 KiB, one of 10^5 at 214,752 KiB (``/usr/bin/time -v``),
606 bytes a step (the table, its prefix hashes, the engine's and the results' arrays), rounded
up. Steps with longer prompts take more (8 bytes per 512 prompt tokens for their prefix
hashes, bounded by :data:`MAX_PREFIX_HASHES`)."""
MAX_PROMPT_TOKENS = 10**8
"""Longest prompt a session step may reach with its context (100 million tokens, far beyond
any model's context): a longer one is refused before its prefix hashes are made, as their
count (one per 512 tokens, per step) would take minutes and gigabytes for a few rows."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class StepTokens(_Strict):
    """Median new input tokens and output tokens of one step type (log-normal around them)."""

    input: float = Field(gt=0, le=1e6)
    output: float = Field(gt=0, le=1e6)


DEFAULT_TOKENS = {
    "planning": {"input": 600, "output": 400}, "tool_call": {"input": 300, "output": 80},
    "code": {"input": 400, "output": 600}, "verify": {"input": 800, "output": 150},
    "recovery": {"input": 500, "output": 400}, "final": {"input": 200, "output": 500},
}
DEFAULT_MIX = {"tool_call": 0.45, "code": 0.30, "verify": 0.15, "recovery": 0.10}


#: Longest expected span of generated task starts (tasks / rate): a trace may span 1e9 s, and
#: the tasks' steps and tool time come after their starts.
MAX_START_SPAN_S = 1e8


class SessionGenerator(_Strict):
    """The seeded session generator (``workload.sessions.generate``).

    - Tasks start as a Poisson process at ``task_rate_rps`` (``tasks`` of them).
    - Steps per task: a ``planning`` step, ``1 + Poisson(middle_steps_mean - 1)`` middle steps
      (at most ``max_steps - 2``) whose types are drawn from ``step_mix``, and a ``final`` step.
    - Tokens: per step type, new input and output tokens are log-normal with medians ``tokens``
      and log-space standard deviation ``token_sigma`` (at least 1 token each).
    - Tool time before every step but the first: log-normal, median ``tool_s_median`` seconds,
      log-space standard deviation ``tool_s_sigma``, at most 1e6 s (a trace's limit too).
    - A task stops early (its last kept step ends it) once a prompt, counted whole (the system
      prompt, the context so far and the step's new tokens), would exceed
      ``max_context_tokens``; the first step's new tokens are cut to fit, so every task keeps
      at least its planning step (:class:`SessionsConfig` refuses a system prompt that leaves
      it no room).
    """

    tasks: int = Field(200, ge=1, le=100_000)
    task_rate_rps: float = Field(0.5, gt=0, le=1e4)
    middle_steps_mean: float = Field(4.0, ge=1, le=1000)
    max_steps: int = Field(30, ge=2, le=10_000)
    step_mix: dict[str, float] = Field(default_factory=lambda: dict(DEFAULT_MIX))
    tokens: dict[str, StepTokens] = Field(
        default_factory=lambda: {k: StepTokens(**v) for k, v in DEFAULT_TOKENS.items()})
    token_sigma: float = Field(0.5, ge=0, le=5)
    tool_s_median: float = Field(2.0, ge=0, le=1e5)
    tool_s_sigma: float = Field(1.0, ge=0, le=5)
    max_context_tokens: int = Field(32768, ge=1, le=10_000_000)

    @model_validator(mode="after")
    def _span_within_a_trace(self) -> SessionGenerator:
        span = self.tasks / self.task_rate_rps
        if span > MAX_START_SPAN_S:
            raise KeyedError(("task_rate_rps",), "at task_rate_rps {rate} {tasks} tasks would "
                             f"start over about {span:.3g} s, beyond the "
                             f"{MAX_START_SPAN_S:,.0f} s generated tasks may start over (times "
                             "lose their precision beyond); raise the rate or lower tasks",
                             {"rate": (("task_rate_rps",), self.task_rate_rps),
                              "tasks": (("tasks",), self.tasks)})
        return self

    @model_validator(mode="after")
    def _types_known(self) -> SessionGenerator:
        shares = list(self.step_mix.values())
        if not shares or any(s < 0 for s in shares) or not sums_to_one(shares):
            raise ValueError("step_mix shares must be >= 0 and sum to 1")
        missing = sorted({"planning", "final", *self.step_mix} - set(self.tokens))
        if missing:
            raise ValueError(f"tokens needs an entry for step type(s) {', '.join(missing)}")
        return self

    @model_validator(mode="after")
    def _types_printable(self) -> SessionGenerator:
        """Refuse a step type holding a control or format character: the types are shown in
        the step-type table and the report, as a trace's ``step_type`` column (refused there
        too) is."""
        for key, kinds in (("step_mix", self.step_mix), ("tokens", self.tokens)):
            for kind in kinds:
                bad = unprintable(kind)
                if bad is not None:
                    raise KeyedError((key,), f"step type '{escaped(kind)}' contains "
                                     f"{unprintable_words(bad)}; use printable characters")
        return self


class SessionsConfig(_Strict):
    """``workload.sessions``: where sessions come from and how prompts carry context.

    ``source``: ``auto`` (sessions when the trace has ``session_id`` and ``step``), ``trace``
    (it must have them), ``generate`` (:class:`SessionGenerator` replaces the trace's rows) or
    ``off`` (session columns ignored, every row arrives at its own time).
    """

    source: Literal["auto", "trace", "generate", "off"] = "auto"
    context: Literal["accumulate", "logged"] = "accumulate"
    system_prompt_tokens: int = Field(0, ge=0, le=1_000_000)
    generate: SessionGenerator = Field(default_factory=SessionGenerator)

    @model_validator(mode="after")
    def _system_prompt_leaves_room(self) -> SessionsConfig:
        longest = self.generate.max_context_tokens
        if self.source == "generate" and self.system_prompt_tokens >= longest:
            raise KeyedError(("system_prompt_tokens",), f"{self.system_prompt_tokens:,} tokens "
                             f"leave no room for a task's first step within "
                             f"generate.max_context_tokens ({longest:,}, counting the system "
                             "prompt); lower system_prompt_tokens or raise max_context_tokens")
        return self


SOURCE_KEYS: dict[str, tuple[str, ...]] = {
    "auto": ("context", "system_prompt_tokens"),
    "trace": ("context", "system_prompt_tokens"),
    "generate": ("system_prompt_tokens", "generate"),
    "off": (),
}
"""The ``workload.sessions`` keys each ``source`` reads (every source reads ``source``): the
generator's settings only ``generate``, the context a trace's steps carry only a trace's
sessions (generated ones always accumulate it), nothing ``off``."""


def source_named(value) -> str:
    """A ``source:`` as written, as :class:`SessionsConfig` reads it (unquoted off: False) and
    ``auto`` when unset."""
    return "off" if value is False else "auto" if value is None else str(value)


def unread_session_key_problem(key: str, sources: set[str]) -> str | None:
    """Why ``workload.sessions.<key>`` is refused: no source in ``sources`` reads it (it would
    be ignored quietly); None when one does, or the key is ``source`` or unknown."""
    readers = [name for name, keys in SOURCE_KEYS.items() if key in keys]
    if not readers or sources & set(readers):
        return None
    named = sorted(sources)
    playing = (f"source {named[0]} does not read it" if len(named) == 1 else
               f"none of the sources used ({', '.join(named)}) reads it")
    one = len(readers) == 1
    only = readers[0] if one else f"{', '.join(readers[:-1])} and {readers[-1]}"
    fix = (f"remove it, or set source: {readers[0]}" if one else
           "remove it, or set one of those sources")
    return f"{playing} (only {only} {'does' if one else 'do'}); {fix}"


def check_session_keys(cfg: SessionsConfig, source: str) -> None:
    """Refuse a ``workload.sessions`` key the scenario sets that its ``source`` never reads
    (:func:`unread_session_key_problem`), as one line naming it: ``generate: {...}`` under
    ``source: off`` would run without it. A sweep checks over its points instead
    (:func:`tiersim.sweep.unread.check_session_keys`)."""
    for key in cfg.model_dump(exclude_unset=True):
        problem = unread_session_key_problem(key, {cfg.source})
        if problem is not None:
            raise ScenarioError(source, f"workload.sessions.{key}", problem)


def has_session_columns(df: pd.DataFrame) -> bool:
    """Whether a table carries the two session columns every session trace needs."""
    return "session_id" in df.columns and "step" in df.columns


def enabled(cfg: SessionsConfig, df: pd.DataFrame) -> bool:
    """Whether a run with this config over this table is a session run."""
    if cfg.source == "auto":
        return has_session_columns(df)
    return cfg.source != "off"


def prepare_sessions(df: pd.DataFrame, cfg: SessionsConfig, rng: np.random.Generator,
                     source: str = "trace", origin: TraceOrigin | None = None) -> pd.DataFrame:
    """The run's table: generated sessions, or the trace's sessions with context and links, or
    ``df`` unchanged when sessions are off. ``origin`` (from :func:`tiersim.trace.read_trace`)
    names the file's rows in errors; without it they name ``source`` and the table row."""
    if cfg.source == "generate":
        check_memory(cfg.generate, source)
        tasks = generate(cfg.generate, rng, source, cfg.system_prompt_tokens)
        check_span(tasks, source, generated=True)
        return with_context(tasks, "accumulate", cfg.system_prompt_tokens, source,
                            generated=True)
    if not enabled(cfg, df):
        _unread_without_sessions(cfg, source)
        return df
    if not has_session_columns(df):
        raise TraceError(source, _missing_session_columns(df, origin))
    _own_hashes_logged(df, cfg, source)
    return with_context(checked(df, source, origin), cfg.context, cfg.system_prompt_tokens,
                        source, origin)


def _missing_session_columns(df: pd.DataFrame, origin: TraceOrigin | None) -> str:
    """Why ``source: trace`` cannot replay ``df``: the session column(s) it lacks, named as
    missing (an aiperf trace's ``session_id`` with its turns in file order was told it had "no
    session_id and step columns"), the trace file (``origin``) and the fixes."""
    missing = [c for c in ("session_id", "step") if c not in df.columns]
    trace = f"the trace {origin.path}" if origin is not None else "the trace"
    what = {"session_id": "a session_id column (the task each row belongs to)",
            "step": "a step column (each row's place in its session: 0, 1, 2, ... in the order "
                    "the session's turns follow one another)"}
    add = " and ".join(what[c] for c in missing)
    return (f"workload.sessions.source is 'trace' but {trace} has no "
            f"{' and no '.join(missing)} column; add {add}, "
            "or set source: off to replay every row as an independent request at its own "
            "arrival_s")


def _unread_without_sessions(cfg: SessionsConfig, source: str) -> None:
    """Refuse a key of :data:`SOURCE_KEYS` that ``source: auto`` reads only from a session
    trace, set for a trace without the session columns: it runs no sessions, so the key would
    be ignored quietly (``source: off`` keys are refused by :func:`check_session_keys`)."""
    if cfg.source != "auto":
        return
    key = next((k for k in SOURCE_KEYS["auto"] if k in cfg.model_fields_set), None)
    if key is not None:
        raise ScenarioError(source, f"workload.sessions.{key}", "the trace has no session_id "
                            "and step columns, so source auto runs no sessions and never reads "
                            "it; remove it, or give the trace those columns")


def _own_hashes_logged(df: pd.DataFrame, cfg: SessionsConfig, source: str) -> None:
    """Refuse a session trace's own ``prefix_hashes`` under ``context: accumulate``: they are
    checked against, and name the blocks of, the prompt as logged (``input_tokens``), which
    there holds the step's new tokens only; put at the head of the prompt with its context
    they would stand at the wrong blocks (the context itself would never be found cached).
    Under ``context: logged`` they name the whole prompt, so ``system_prompt_tokens`` (read
    only to hash the prompts tiersim hashes) is refused beside them."""
    if cfg.context == "accumulate" and "prefix_hashes" in df.columns:
        raise ScenarioError(source, "workload.sessions.context", "the trace's own prefix hashes "
                            "(prefix_hashes, or Mooncake's hash_ids) name the blocks of each "
                            "step's logged prompt, but under context: accumulate (the default) "
                            "a step's input_tokens are its new tokens and its prompt is the "
                            "session's context so far, whose blocks those ids do not name; set "
                            "context: logged if input_tokens are whole prompts, or remove the "
                            "hash column to have tiersim hash each prompt with its context")
    if "prefix_hashes" in df.columns and "system_prompt_tokens" in cfg.model_fields_set:
        raise ScenarioError(source, "workload.sessions.system_prompt_tokens", "the trace's own "
                            "prefix hashes (prefix_hashes, or Mooncake's hash_ids) name every "
                            "block of each logged prompt, its system prompt's too, so "
                            "system_prompt_tokens is never read; remove it, or remove the hash "
                            "column to have tiersim hash each prompt with its system prompt")


# ---------------------------------------------------------------------------------------------
# Reading session columns


def checked(df: pd.DataFrame, source: str, origin: TraceOrigin | None = None) -> pd.DataFrame:
    """``df`` with ``parent`` (row-independent step numbers), ``step_type`` and ``tool_s``
    filled and checked; a bad value is a one-line TraceError naming the row and column. Its
    request ids are unique and >= 0 (a step after request -1 was a traceback, one after -2
    was replayed as a new task: :data:`FOLLOWS` reads a negative id as none)."""
    out = df.reset_index(drop=True).copy()
    twice = np.flatnonzero(out["request_id"].duplicated().to_numpy())
    if len(twice):
        raise _error(origin, source, "request_id repeats; a session trace needs one id per step",
                     int(twice[0]), "request_id")
    negative = np.flatnonzero(out["request_id"].to_numpy(np.int64) < 0)
    if len(negative):  # FOLLOWS holds the predecessor's id, -1 for none (see with_context)
        row = int(negative[0])
        raise _error(origin, source, f"a session step's request_id must be >= 0 (got "
                     f"{out['request_id'].iat[row]}): the replay links a step to the one "
                     "before it by its id, a negative id meaning none; number the requests "
                     "from 0", row, "request_id")
    out["step_type"] = filled_step_types(out["step_type"]) if "step_type" in out else "step"
    tool = pd.to_numeric(out["tool_s"], errors="coerce") if "tool_s" in out else None
    if tool is not None:
        values = tool.fillna(0).to_numpy(np.float64)
        bad = np.flatnonzero(~((values >= 0) & (values <= MAX_TOOL_S)))
        if len(bad):
            raise _error(origin, source, f"tool_s must be a number of seconds from 0 to "
                         f"{MAX_TOOL_S:g}", int(bad[0]), "tool_s")
        out["tool_s"] = tool.fillna(0.0).to_numpy(np.float64)
    else:
        out["tool_s"] = 0.0
    out["parent"] = _parents(out, source, origin)
    check_span(out, source, origin)
    return out


def filled_step_types(s: pd.Series):
    """Each step's type as text, ``"step"`` where none is given. A category column (a
    dictionary-encoded Parquet column) stays one, ``"step"`` added to its categories: filling
    it raised TypeError, and as text each row would copy its type."""
    if not isinstance(s.dtype, pd.CategoricalDtype):
        return s.fillna("step").astype(str)
    kinds = pd.Index(s.cat.categories.astype(str))
    kinds = kinds if "step" in kinds else kinds.append(pd.Index(["step"]))
    codes = s.cat.codes.to_numpy().copy()  # the categories first, as they are, in kinds
    codes[codes < 0] = kinds.get_loc("step")
    return pd.Categorical.from_codes(codes, categories=kinds)


def _error(origin: TraceOrigin | None, source: str, message: str, index: int | None,
           column: str) -> TraceError:
    """A TraceError at 0-based table row ``index``: with the table's ``origin`` it names the
    trace file and the file's row (1-based data row, file line); otherwise ``source`` and the
    1-based table row."""
    if origin is None:
        return TraceError(source, message, None if index is None else index + 1, column)
    return origin.error(message, index, column)


def _parents(df: pd.DataFrame, source: str, origin: TraceOrigin | None) -> np.ndarray:
    """Each step's parent step number (-1 for none), checked: an earlier step of the same
    session, each with at most one follower."""
    parent = np.full(len(df), -1, dtype=np.int64)
    given = _given_parents(df, source, origin)
    for sid, rows in df.groupby("session_id", sort=False).indices.items():
        steps = df["step"].to_numpy()[rows]
        order = rows[np.argsort(steps, kind="stable")]
        ordered = df["step"].to_numpy()[order]
        dup = np.flatnonzero(np.diff(ordered) == 0)
        if len(dup):
            raise _error(origin, source, f"session {_named(origin, sid)} has step "
                         f"{ordered[dup[0]]} twice", int(order[dup[0] + 1]), "step")
        earlier: set[int] = set()
        for pos, row in enumerate(order):
            if pos:
                earlier.add(int(ordered[pos - 1]))
            if given is None:  # no parent column: each step follows the one before
                parent[row] = ordered[pos - 1] if pos else -1
                continue
            p = float(given[row])
            if p != -1 and p not in earlier:
                raise _error(origin, source, f"parent {_parent_shown(df['parent'].iloc[row], p)} "
                             f"is not an earlier step of session {_named(origin, sid)}",
                             int(row), "parent")
            parent[row] = int(p)
        _one_follower_each(parent, order, sid, source, origin)
    return parent


def _one_follower_each(parent: np.ndarray, order: np.ndarray, sid, source: str,
                       origin: TraceOrigin | None) -> None:
    """Refuse a step of session ``sid`` (its rows ``order``, by step) that two steps follow,
    naming both rows; the error is at the second."""
    kids = parent[order]
    seen: dict[int, int] = {}
    for row, kid in zip(order.tolist(), kids.tolist(), strict=True):
        if kid < 0:
            continue
        if kid in seen:
            first = _row_named(origin, seen[kid])
            raise _error(origin, source, f"step {kid} of session {_named(origin, sid)} has two "
                         f"followers (rows {first} and {_row_named(origin, row)}); tiersim "
                         "sessions are chains "
                         "(give each step at most one follower)", row, "parent")
        seen[kid] = row


def _named(origin: TraceOrigin | None, sid) -> str:
    """Session ``sid`` (the number tiersim gave it) as an error names it: as the file writes
    it (:meth:`~tiersim.trace.loader.TraceOrigin.session`), its text id where it had one."""
    return str(sid) if origin is None else origin.session(int(sid))


def _row_named(origin: TraceOrigin | None, index: int) -> int:
    """The 1-based row an error names for 0-based table row ``index`` (:func:`_error`)."""
    return index + 1 if origin is None else origin.row(index)


def _given_parents(df: pd.DataFrame, source: str,
                   origin: TraceOrigin | None) -> np.ndarray | None:
    """The trace's ``parent`` column as float64, -1 (none) where a cell is empty (or text of
    spaces alone), as -1 is; None without the column (then each step follows the one before).
    A filled cell must be a whole number (whether it is -1 or an earlier step is checked per
    session): 0.5 is not truncated to 0, nor is other text read as empty, nor true as 1."""
    if "parent" not in df:
        return None
    cells = df["parent"]
    missing = cells.isna().to_numpy() | _blank_texts(cells)
    values = checks.to_floats(cells)
    with np.errstate(invalid="ignore"):
        whole = np.isfinite(values) & (values == np.floor(values))
    i = checks.first_true(~missing & (~whole | checks.true_false(cells)))
    if i is not None:
        raise _error(origin, source, f"parent must be a whole number, -1 or an earlier step of "
                     f"the session (got {_cell(cells.iloc[i])}); fix it, or leave it empty (as "
                     "-1) for a step that follows none", i, "parent")
    return np.where(missing, -1.0, values)


def _blank_texts(cells: pd.Series) -> np.ndarray:
    """Where a cell is text of spaces alone, or none (a Parquet or JSON ``""``): an empty cell,
    as a CSV's reads. Refused as "text of 0 characters", it was told to "leave it empty"."""
    blank = cells.map(lambda v: isinstance(v, str) and not v.strip())
    return blank.to_numpy(dtype=bool, na_value=False)


def _parent_shown(cell, value: float) -> str:
    """A parent's number for a message: an integer cell in full (2**62, not 4.6e+18), any
    other as read (a text cell's number, never its text)."""
    return checks.show_number(cell if isinstance(cell, int | np.integer) else value)


def _cell(value) -> str:
    """A parent cell for a message: a number in short form, anything else by its kind."""
    if isinstance(value, bool | np.bool_):
        return f"a true/false value, {value}"
    if isinstance(value, int | float | np.integer | np.floating):
        return checks.show_number(value)
    return checks.short(value)


# ---------------------------------------------------------------------------------------------
# Context and prefix hashes


def with_context(df: pd.DataFrame, context: str, system_tokens: int = 0, source: str = "trace",
                 origin: TraceOrigin | None = None, generated: bool = False) -> pd.DataFrame:
    """Prompts carry the session's context (see the module docstring): sets ``input_tokens``
    (accumulate), ``prefix_hashes`` (unless present) and the internal :data:`FOLLOWS` column.
    A prompt above :data:`MAX_PROMPT_TOKENS` is a TraceError naming its row (``origin`` and
    ``source`` as for :func:`checked`); so is a table whose prompts need more than
    :data:`MAX_PREFIX_HASHES` hashes in all (``generated``: a ScenarioError naming the
    generator's keys)."""
    out = df.reset_index(drop=True).copy()
    new = out["input_tokens"].to_numpy(np.int64)
    outputs = out["output_tokens"].to_numpy(np.int64)
    prompt = new.copy()
    follows = np.full(len(out), -1, dtype=np.int64)
    hashes = np.empty(len(out), dtype=object)
    keep_hashes = "prefix_hashes" in out.columns
    steps, parents = out["step"].to_numpy(np.int64), out["parent"].to_numpy(np.int64)
    sids = out["session_id"].to_numpy()
    order = np.empty(len(out), dtype=np.int64)  # rows, each session's steps in order
    above_of = np.full(len(out), -1, dtype=np.int64)  # the row each one follows (-1: none)
    at = 0
    for sid, rows in out.groupby("session_id", sort=False).indices.items():
        by_step = {int(steps[r]): int(r) for r in rows}
        for row in rows[np.argsort(steps[rows], kind="stable")]:
            above = by_step[int(parents[row])] if parents[row] >= 0 else -1
            order[at], above_of[row], at = row, above, at + 1
            if above >= 0:
                follows[row] = above
                if context == "accumulate":
                    prompt[row] = prompt[above] + outputs[above] + new[row]
            elif context == "accumulate":
                prompt[row] = new[row] + system_tokens
            if prompt[row] > MAX_PROMPT_TOKENS:
                raise _too_long(origin, source, int(sid), int(steps[row]), int(prompt[row]),
                                context, int(row))
    if not keep_hashes:
        _check_hash_budget(order, prompt, steps, sids, origin, source, generated)
        ancestry: dict[int, tuple[list[int], list[int]]] = {}  # row -> (ends, owners) of its chain
        for row in map(int, order):
            above = int(above_of[row])
            ends, owners = _ancestry(ancestry, above, prompt, outputs, steps)
            known = hashes[above][:prompt[above] // HASH_BLOCK_TOKENS] if above >= 0 else None
            hashes[row] = block_hashes(int(sids[row]), int(steps[row]), int(prompt[row]), ends,
                                       owners, system_tokens, known)
            ancestry[row] = (ends, owners)
    out["input_tokens"] = prompt.astype(np.int32) if prompt.max(initial=0) < 2**31 else prompt
    if not keep_hashes:
        out["prefix_hashes"] = hashes
        if context == "accumulate":
            out[OUTPUT_HASHES] = _output_hashes(hashes, follows, prompt, outputs)
    out[FOLLOWS] = np.where(follows >= 0, out["request_id"].to_numpy(np.int64)[follows], -1)
    return out


def check_span(df: pd.DataFrame, source: str, origin: TraceOrigin | None = None,
               generated: bool = False) -> None:
    """Refuse a step whose session's first ``arrival_s`` plus the ``tool_s`` of the steps
    leading to it (a bound below its arrival, which waits for their service too) passes
    :data:`tiersim.trace.loader.MAX_SPAN_S`, the span the loader allows an arrival: 1,200
    steps of ``tool_s`` 1e6 (each within its limit) ran 1.2e9 s. ``df`` has the checked
    ``parent`` and ``tool_s`` columns (:func:`checked`, or the generator's); a TraceError names
    the row as :func:`checked` does (``generated``: a ScenarioError naming the generator's
    keys)."""
    tool = df["tool_s"].to_numpy(np.float64)
    if not len(df) or float(tool.sum()) + float(df["arrival_s"].max()) <= MAX_SPAN_S:
        return  # no chain can pass it
    earliest = df["arrival_s"].to_numpy(np.float64).copy()
    steps, parents = df["step"].to_numpy(np.int64), df["parent"].to_numpy(np.int64)
    for sid, rows in df.groupby("session_id", sort=False).indices.items():
        by_step = {int(steps[r]): int(r) for r in rows}
        for row in rows[np.argsort(steps[rows], kind="stable")]:
            if parents[row] >= 0:
                earliest[row] = earliest[by_step[int(parents[row])]] + tool[row]
                if earliest[row] > MAX_SPAN_S:
                    raise _too_late(origin, source, int(sid), int(steps[row]),
                                    float(earliest[row]), int(row), generated)


def _too_late(origin: TraceOrigin | None, source: str, sid: int, step: int, at: float,
              row: int, generated: bool) -> TraceError | ScenarioError:
    """The error for a step whose session's start plus the tool time leading to it passes
    :data:`tiersim.trace.loader.MAX_SPAN_S`, the span an arrival may have (its realised
    arrival, after its predecessors' service too, is later still)."""
    message = (f"step {step} of {'task' if generated else 'session'} {_named(origin, sid)} "
               "arrives at least "
               f"{at:.4g} s after time 0 (its {'task' if generated else 'session'}'s first "
               f"arrival{'' if generated else '_s'} plus the tool_s of the steps that lead to "
               f"it), more than the {MAX_SPAN_S:.0e} s (31 years) a run may span")
    if generated:
        return ScenarioError(source, "workload.sessions.generate", f"{message}; lower "
                             "tool_s_median, tool_s_sigma, middle_steps_mean or max_steps")
    return _error(origin, source, f"{message}; check the tool_s unit (seconds), or shorten the "
                  "session", row, "tool_s")


def _output_hashes(hashes: np.ndarray, follows: np.ndarray, prompt: np.ndarray,
                   outputs: np.ndarray) -> np.ndarray:
    """Per row, :data:`OUTPUT_HASHES`: its follower's hashes of the blocks the row completes
    after its prompt's full blocks (its prompt plus output less the last token, whose KV is
    never computed); empty where no step follows."""
    b = HASH_BLOCK_TOKENS
    none = np.zeros(0, dtype=np.int64)  # NOTE (memory): one for every row that completes none
    out = np.empty(len(hashes), dtype=object)
    out[:] = [none] * len(hashes)
    for row, above in enumerate(map(int, follows)):
        if above >= 0:
            start, end = prompt[above] // b, (prompt[above] + outputs[above] - 1) // b
            if end > start:
                out[above] = np.asarray(hashes[row][start:end], dtype=np.int64)
    return out


def _too_long(origin: TraceOrigin | None, source: str, sid: int, step: int, prompt: int,
              context: str, row: int) -> TraceError:
    """The error for a step whose prompt exceeds :data:`MAX_PROMPT_TOKENS`."""
    what = "with the session's context so far" if context == "accumulate" else "logged"
    return _error(origin, source, f"step {step} of session {_named(origin, sid)} has a prompt "
                  f"of {prompt:,} tokens ({what}), more than the {MAX_PROMPT_TOKENS:,} a session "
                  "step may have (far beyond any model's context); check input_tokens and "
                  "output_tokens, or split the session", row, "input_tokens")


def _check_hash_budget(order: np.ndarray, prompt: np.ndarray, steps: np.ndarray,
                       sids: np.ndarray, origin: TraceOrigin | None, source: str,
                       generated: bool) -> None:
    """Refuse prompts that need more than :data:`MAX_PREFIX_HASHES` hashes in all, before any
    is made (the error names the step, in ``order``, where the count passes the limit)."""
    total = np.cumsum(-(-prompt[order] // HASH_BLOCK_TOKENS))
    if len(total) and total[-1] > MAX_PREFIX_HASHES:
        row = int(order[np.searchsorted(total, MAX_PREFIX_HASHES, side="right")])
        raise _too_many_hashes(origin, source, int(sids[row]), int(steps[row]), row, generated)


def _too_many_hashes(origin: TraceOrigin | None, source: str, sid: int, step: int, row: int,
                     generated: bool) -> TraceError | ScenarioError:
    """The error for session prompts that need more than :data:`MAX_PREFIX_HASHES` hashes."""
    tokens = MAX_PREFIX_HASHES * HASH_BLOCK_TOKENS
    message = (f"by step {step} of session {_named(origin, sid)} the sessions' prompts, each "
               f"with its context, hold over {tokens:,} tokens in all, more than tiersim hashes "
               "for prefix caching in one run")
    if generated:
        return ScenarioError(source, "workload.sessions.generate", f"{message}; lower tasks, "
                             "middle_steps_mean, max_steps or max_context_tokens")
    return _error(origin, source, f"{message}; simulate fewer or shorter sessions", row,
                  "input_tokens")


def _ancestry(ancestry: dict, above: int, prompt: np.ndarray, outputs: np.ndarray,
              steps: np.ndarray) -> tuple[list[int], list[int]]:
    """``(ends, owners)`` of a step's ancestors, root first, from its parent's (``above``;
    -1: none), as :func:`block_hashes` reads them: the ancestors' stream lengths (prompt plus
    output) cut to the shortest that comes after each (only the blocks every later stream
    holds are shared), in runs of one length, each with the step number of its first ancestor.
    Under ``context: accumulate`` every stream is longer than its parent's, so these are the
    streams themselves; a logged prompt shorter than its parent's cuts the longer ones before
    it (a binary search over the uncut lengths gave its follower blocks the chain had lost).
    Sessions are chains (one follower per step), so the parent's lists are taken over and
    extended, not copied: a 10,000-step session walked its whole ancestry for every step
    before."""
    if above < 0:
        return [], []
    ends, owners = ancestry.pop(above)
    end, owner = int(prompt[above] + outputs[above]), int(steps[above])
    while ends and ends[-1] > end:  # cut to this one: they run from the earliest cut
        ends.pop()
        owner = owners.pop()
    if not ends or ends[-1] < end:
        ends.append(end)
        owners.append(owner)
    return ends, owners


def block_hashes(session: int, step: int, prompt: int, ends: list[int], owners: list[int],
                 system_tokens: int = 0, known: np.ndarray | None = None) -> np.ndarray:
    """One hash per :data:`HASH_BLOCK_TOKENS` of a ``prompt``-token prompt.

    ``ends``: for each ancestor (root first) its prompt plus output length, in increasing order
    (:func:`_ancestry` cuts a chain's to it); ``owners``: their step numbers. A full block
    belongs to the first ancestor whose stream covers it (else to this step); blocks inside the
    system prompt are shared by all sessions; a partial last block is this step's own.
    ``known``: the parent's full-block hashes, reused as this prompt's first blocks: a block
    inside the parent's prompt has the same owner for both, so hashing each step's prompt again
    from its start (work growing with the square of the session's length) gives the same
    values.
    """
    b = HASH_BLOCK_TOKENS
    head = np.zeros(0, dtype=np.int64) if known is None else known[:prompt // b]
    out = []
    for i in range(len(head), prompt // b):
        end = (i + 1) * b
        if end <= system_tokens:
            out.append(_hash("system", i))
            continue
        k = bisect.bisect_left(ends, end)
        out.append(_hash(session, owners[k] if k < len(ends) else step, i))
    if prompt % b:
        out.append(_hash(session, step, prompt // b, "partial"))
    return np.concatenate([head, np.asarray(out, dtype=np.int64)])


def _hash(*parts) -> int:
    """A stable non-negative int64 from ``parts`` (BLAKE2b, 8 bytes)."""
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


# ---------------------------------------------------------------------------------------------
# Generator


def mix_order(step_mix: dict[str, float]) -> list[str]:
    """The step types of ``step_mix`` in the one order the generator draws them in, whatever
    order the map was written in: :data:`DEFAULT_MIX`'s types in its order, then any others
    sorted by name (a YAML map's key order means nothing, so it must not change the tasks)."""
    known = [k for k in DEFAULT_MIX if k in step_mix]
    return known + sorted(k for k in step_mix if k not in DEFAULT_MIX)


def expected_steps(cfg: SessionGenerator) -> float:
    """The steps ``cfg`` makes on average: per task a planning and a final step and
    ``min(1 + Poisson(middle_steps_mean - 1), max_steps - 2)`` middle steps (tasks stopped
    early by ``max_context_tokens`` make fewer)."""
    cap, lam = cfg.max_steps - 2, cfg.middle_steps_mean - 1
    k = np.arange(max(cap - 1, 0))
    if lam > 0:
        log_pmf = k * math.log(lam) - lam - np.array([math.lgamma(x + 1.0) for x in k])
        pmf = np.exp(log_pmf)
    else:
        pmf = (k == 0).astype(np.float64)
    middle = cap - float(np.cumsum(pmf).sum())  # E[min(Y, cap)] = sum of P(Y > j), j < cap
    return cfg.tasks * (2.0 + middle)


def check_memory(cfg: SessionGenerator, source: str) -> None:
    """Refuse, before any step is made, sessions whose run would need more memory than this
    process may still take (:func:`memory_room`): :func:`expected_steps` at
    :data:`GENERATED_STEP_BYTES` each. A ScenarioError naming ``workload.sessions.generate``,
    the estimate and the fix."""
    steps = expected_steps(cfg)
    short = beyond_room(steps, GENERATED_STEP_BYTES, "step", memory_room())
    if short is None:
        return
    raise ScenarioError(source, "workload.sessions.generate", (
        f"makes about {steps:,.0f} steps on average ({cfg.tasks:,} tasks of about "
        f"{steps / cfg.tasks:,.1f} steps), which {short}; lower tasks, middle_steps_mean or "
        "max_steps, or run where more memory is allowed"))


def generate(cfg: SessionGenerator, rng: np.random.Generator, source: str = "scenario",
             system_tokens: int = 0) -> pd.DataFrame:
    """``cfg.tasks`` sessions in the canonical table with session columns (new tokens per step;
    :func:`with_context` adds the context and the ``system_tokens`` of the system prompt, which
    count towards ``cfg.max_context_tokens`` and must be below it). Same ``rng`` state, same
    table. More than :data:`MAX_GENERATED_STEPS` steps in all is a ScenarioError naming
    ``source``.

    NOTE (memory): the steps are kept as columns of machine numbers (:class:`_Steps`), not a
    dict per step: 10^6 one-token steps raised the peak by 570 MiB that way (400 MiB of it
    still resident after the table was made), by 182 MiB now."""
    if system_tokens >= cfg.max_context_tokens:
        raise ValueError(f"system_tokens ({system_tokens}) must be below max_context_tokens "
                         f"({cfg.max_context_tokens})")
    starts = np.concatenate(([0.0], np.cumsum(rng.exponential(1 / cfg.task_rate_rps,
                                                              cfg.tasks - 1))))
    mix_names = mix_order(cfg.step_mix)
    mix_p = np.array([cfg.step_mix[k] for k in mix_names])
    mix_p = mix_p / mix_p.sum()  # the validator allows 1e-6 off 1; numpy's choice, about 1e-8
    steps, hashes = _Steps(["planning", *mix_names, "final"]), 0
    _check_hashes_up_front(cfg, steps.names, mix_p, system_tokens, source)
    for sid, start in enumerate(starts):
        codes, task = _draw_task(cfg, rng, steps.names, mix_p, system_tokens)
        hashes = _hashes_within_budget(sid, task, hashes, system_tokens, source)
        steps.add(float(start), codes, task)
        if len(steps) > MAX_GENERATED_STEPS:
            raise ScenarioError(source, "workload.sessions.generate", f"makes over "
                                f"{MAX_GENERATED_STEPS:,} steps in all; lower tasks, "
                                "middle_steps_mean or max_steps")
    df = steps.frame()
    df.insert(0, "request_id", np.arange(len(df), dtype=np.int64))
    return df


class _Steps:
    """The generated steps as columns: per step its new input tokens, output tokens, tool
    time and step type (an index into ``names``); per task its start and step count."""

    def __init__(self, names: list[str]):
        self.names = names
        self.new, self.out = array("q"), array("q")
        self.tool, self.kind = array("d"), array("q")
        self.starts, self.counts = array("d"), array("q")

    def __len__(self) -> int:
        return len(self.new)

    def add(self, start: float, codes: list[int], task: tuple[list, list, list]) -> None:
        """One task starting at ``start``: its rows (:func:`_task_rows`), typed by the first
        of ``codes``."""
        new, out, tool = task
        self.new.extend(new)
        self.out.extend(out)
        self.tool.extend(tool)
        self.kind.extend(codes[:len(new)])
        self.starts.append(start)
        self.counts.append(len(new))

    def frame(self) -> pd.DataFrame:
        """The canonical table (columns as a dict per step gave them: int64, float64, and the
        step types as text, one string object per type)."""
        counts = np.frombuffer(self.counts, dtype=np.int64)
        first = np.repeat(np.cumsum(counts) - counts, counts)
        step = np.arange(len(self), dtype=np.int64) - first
        names = np.array(self.names, dtype=object)
        return pd.DataFrame({
            "arrival_s": np.repeat(np.frombuffer(self.starts, dtype=np.float64), counts),
            "input_tokens": np.array(self.new, dtype=np.int64),
            "output_tokens": np.array(self.out, dtype=np.int64),
            "session_id": np.repeat(np.arange(len(counts), dtype=np.int64), counts),
            "step": step, "parent": step - 1,
            "step_type": names[np.frombuffer(self.kind, dtype=np.int64)],
            "tool_s": np.array(self.tool, dtype=np.float64)})


def _draw_task(cfg: SessionGenerator, rng: np.random.Generator, names: list[str],
               mix_p: np.ndarray, system_tokens: int) -> tuple[list[int], tuple[list, list, list]]:
    """One task's step types (``codes``: indices into ``names``, planning first, final last)
    and rows (:func:`_task_rows`), drawn from ``rng``."""
    middle = min(1 + int(rng.poisson(cfg.middle_steps_mean - 1)), cfg.max_steps - 2)
    # the mix's index (as choice draws the names themselves), 1 on: 0 is planning
    codes = [0, *(1 + rng.choice(len(mix_p), size=middle, p=mix_p)).tolist(), len(mix_p) + 1]
    return codes, _task_rows(cfg, rng, names, codes, system_tokens)


SAMPLE_TASKS = 1000
"""Tasks :func:`_check_hashes_up_front` draws (from their own seed) to estimate the prefix
hashes a generator's tasks need: about 0.5 s for tasks of 35 steps, where the count kept while
the tasks are made passed the limit after 20-28 s (40,114 tasks of 100,000)."""

SAFE_SIGMAS = 5.0
"""How many standard errors the estimated hashes (the sample's mean, and the sum over the
tasks) must clear the limit by before a run is refused up front."""


def _check_hashes_up_front(cfg: SessionGenerator, names: list[str], mix_p: np.ndarray,
                           system_tokens: int, source: str) -> None:
    """Refuse, before any task is made, a generator whose tasks surely need more than
    :data:`MAX_PREFIX_HASHES` prefix hashes: :data:`SAMPLE_TASKS` tasks drawn as the generator
    draws them (from seed 0, not the run's) estimate a task's hashes, and the run is refused
    where the estimate for all ``cfg.tasks``, less :data:`SAFE_SIGMAS` standard errors (of the
    sample's mean and of the sum), is above the limit. Skipped where no task can need that
    many (each prompt is at most ``max_context_tokens``) or the tasks are few (the count kept
    as they are made, :func:`_hashes_within_budget`, refuses the rest)."""
    most = cfg.tasks * cfg.max_steps * -(-cfg.max_context_tokens // HASH_BLOCK_TOKENS)
    if most <= MAX_PREFIX_HASHES or cfg.tasks <= 4 * SAMPLE_TASKS:
        return
    rng = np.random.default_rng(0)
    per_task = np.empty(SAMPLE_TASKS)
    for i in range(SAMPLE_TASKS):
        new, out, _ = _draw_task(cfg, rng, names, mix_p, system_tokens)[1]
        prompts = (system_tokens + np.cumsum(np.array(new, dtype=np.int64))
                   + np.concatenate(([0], np.cumsum(np.array(out, dtype=np.int64))[:-1])))
        per_task[i] = float(np.sum(-(-prompts // HASH_BLOCK_TOKENS)))
    mean, sd = float(per_task.mean()), float(per_task.std(ddof=1))
    error = cfg.tasks * sd / math.sqrt(SAMPLE_TASKS) + math.sqrt(cfg.tasks) * sd
    if cfg.tasks * mean - SAFE_SIGMAS * error <= MAX_PREFIX_HASHES:
        return
    tokens = MAX_PREFIX_HASHES * HASH_BLOCK_TOKENS
    raise ScenarioError(source, "workload.sessions.generate", (
        f"{cfg.tasks:,} tasks' prompts, each with its context, would hold about "
        f"{float(f'{cfg.tasks * mean * HASH_BLOCK_TOKENS:.2g}'):,.0f} tokens in all (about "
        f"{mean:,.0f} prefix blocks of {HASH_BLOCK_TOKENS} tokens a task, over "
        f"{SAMPLE_TASKS:,} tasks drawn as these are), more than the {tokens:,} tokens tiersim "
        "hashes for prefix caching in one run; lower tasks, middle_steps_mean, max_steps or "
        "max_context_tokens"))


def _hashes_within_budget(sid: int, task: tuple[list, list, list], before: int,
                          system_tokens: int, source: str) -> int:
    """The prefix hashes the generated rows need so far, ``before`` those of ``task`` (task
    ``sid``'s rows, :func:`_task_rows`); a ScenarioError, as :func:`with_context` raises it,
    once they pass :data:`MAX_PREFIX_HASHES`: counted as the tasks are made, so the generator
    stops there instead of making every task first (20,000 tasks of about 100 steps: 55 s and
    1.3 GB before the refusal)."""
    new = np.array(task[0], dtype=np.int64)
    out = np.array(task[1], dtype=np.int64)
    prompts = system_tokens + np.cumsum(new) + np.concatenate(([0], np.cumsum(out)[:-1]))
    total = before + np.cumsum(-(-prompts // HASH_BLOCK_TOKENS))
    if total[-1] <= MAX_PREFIX_HASHES:
        return int(total[-1])
    step = int(np.searchsorted(total, MAX_PREFIX_HASHES, side="right"))
    raise _too_many_hashes(None, source, sid, step, 0, True)


def _task_rows(cfg: SessionGenerator, rng: np.random.Generator, names: list[str],
               codes: list[int], system_tokens: int) -> tuple[list[int], list[int], list[float]]:
    """One task's new input tokens, output tokens and tool times per step (step ``k`` of type
    ``names[codes[k]]``), stopped before a prompt (``system_tokens``, the context so far and
    the step's new tokens) would exceed ``max_context_tokens``; the first step's new tokens
    are cut to fit."""
    news, outs, tools = [], [], []
    context, room = system_tokens, cfg.max_context_tokens
    for step, code in enumerate(codes):
        med = cfg.tokens[names[code]]
        new = max(1, int(round(med.input * np.exp(cfg.token_sigma * rng.standard_normal()))))
        out = max(1, int(round(med.output * np.exp(cfg.token_sigma * rng.standard_normal()))))
        tool = 0.0 if step == 0 else min(MAX_TOOL_S, float(
            cfg.tool_s_median * np.exp(cfg.tool_s_sigma * rng.standard_normal())))
        if step == 0:
            new = min(new, room - context)
        elif context + new > room:
            break
        context += new + out
        news.append(new)
        outs.append(out)
        tools.append(tool)
    return news, outs, tools


def never_sent(df: pd.DataFrame, refused: np.ndarray) -> np.ndarray:
    """Which requests of ``df`` the engine never sends where each request ``refused`` marks is
    dropped if sent (longer than its tier's context): every later step of a task, after a step
    dropped or never sent, whatever its own size (its prompt would hold an output never
    made). All False without sessions. A refused step that is never sent is counted here,
    not as a drop of its own: a uniform fleet's "drops 2 requests longer than ..." counted the
    later step of a task the earlier one cut off, which the run's note calls never sent."""
    refused = np.asarray(refused, dtype=bool)
    unsent = np.zeros(len(refused), dtype=bool)
    follows, _ = links(df)
    if follows is None:
        return unsent
    has = follows >= 0
    while True:  # a step further down each task every pass
        cut = np.zeros_like(unsent)
        cut[has] = (refused | unsent)[follows[has]]
        if (cut == unsent).all():
            return unsent
        unsent = cut


def links(df: pd.DataFrame) -> tuple[np.ndarray | None, np.ndarray | float]:
    """The engine's closed-loop links of a prepared table (or any subset of its rows):
    ``(follows, think_s)`` with ``follows`` as row positions; ``(None, 0.0)`` without sessions.

    A step whose predecessor is not in ``df`` (a subset simulated on its own, as the planner
    sizes one tier at a time) arrives at its own ``arrival_s``, its task's start.
    """
    if FOLLOWS not in df.columns:
        return None, 0.0
    position = pd.Series(np.arange(len(df)), index=df["request_id"].to_numpy(np.int64))
    pred = df[FOLLOWS].to_numpy(np.int64)
    found = position.reindex(pred).fillna(-1).to_numpy(np.int64)  # read-only when no NaN
    follows = np.where(pred < 0, -1, found)
    return follows, df["tool_s"].to_numpy(np.float64)

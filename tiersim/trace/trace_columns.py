"""The column names tiersim reads from a trace: the canonical core and named optional columns,
the token-length columns, each format's required columns, and :func:`is_trace_column`, which
says whether a name is one of them (only such a name is shown in a message about a file not
yet recognised as a trace: docs/security.md).

This module imports no other trace module, so that the file checks
(:mod:`tiersim.trace.filecheck`) and the readers can ask it without importing the formats;
:mod:`tiersim.trace.canonical` and :mod:`tiersim.trace.formats` import their names from here.
"""

from __future__ import annotations

CORE = ("request_id", "arrival_s", "input_tokens", "output_tokens")
NAMED = ("session_id", "step", "parent", "step_type", "tool_s", "spec_acceptance", "task_type",
         "prefix_hashes", "difficulty", "difficulty_class", "prompt", "prompt_hash")
"""Optional columns read by their exact name (here, by the sessions or by the router);
``correct_<tier>``, ``p_correct_<tier>`` and ``feat_*`` are read by their prefix."""

LENGTH_COLUMNS = ("num_prefill_tokens", "num_decode_tokens")

REQUIRED = {"azure": ("TIMESTAMP", "ContextTokens", "GeneratedTokens"),
            "burstgpt": ("Timestamp", "Request tokens", "Response tokens"),
            "mooncake": ("timestamp", "input_length", "output_length"),
            "canonical": ("arrival_s", "input_tokens", "output_tokens")}
"""The columns that identify each format (:attr:`tiersim.trace.formats.Format.required`)."""


_TRACE_COLUMNS = frozenset({*(c for f in REQUIRED.values() for c in f), *LENGTH_COLUMNS,
                            *CORE, *NAMED, "Model", "hash_ids"})


def is_trace_column(name: str) -> bool:
    """Whether tiersim reads a column by this exact name: a format's required column, a length
    column, a canonical core or named optional column, BurstGPT's ``Model`` or Mooncake's
    ``hash_ids``. Only such a name is shown in a message about a file not yet recognised as a
    trace (docs/security.md); a prefixed column (``feat_*``) is no such name, as the file's own
    text follows its prefix."""
    return name in _TRACE_COLUMNS

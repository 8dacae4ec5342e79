"""The step-time interface every performance model implements.

An iteration (one forward pass of a continuous-batching replica) is described by a
:class:`StepShape`: the prefill chunks it runs (new tokens and tokens already cached for that
request) and its decode sequences with their summed context. A :class:`StepTimeModel` turns a
shape into seconds. Decode-only iterations also have a vectorised form, :meth:`decode_times`,
which the engine uses to fast-forward over stretches where the batch cannot change; for a
pure-decode shape ``step_time`` must equal ``decode_times`` exactly (the fast-forward test holds
them to 1e-9 relative).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np


@dataclass(frozen=True, slots=True)
class StepShape:
    """What one iteration computes.

    prefill_chunks: ``(new_tokens, cached_tokens)`` per request being prefilled this step;
        ``cached_tokens`` is how much of that request's context is already in the KV cache
        (earlier chunks or a prefix-cache hit).
    decode_seqs: number of requests producing one token each.
    decode_context: sum over those requests of their context length (tokens in KV).
    """

    prefill_chunks: tuple[tuple[int, int], ...] = ()
    decode_seqs: int = 0
    decode_context: int = 0

    @property
    def prefill_tokens(self) -> int:
        """Total new prompt tokens computed this step."""
        return sum(c[0] for c in self.prefill_chunks)

    @property
    def num_tokens(self) -> int:
        """Tokens through the dense layers this step (prefill tokens + one per decode)."""
        return self.prefill_tokens + self.decode_seqs


class StepTimeModel(Protocol):
    """Predicts one iteration's wall time on one replica (all its GPUs)."""

    #: Where the numbers come from, shown to users: e.g. ``"roofline"`` or
    #: ``"profile:h200_aiconfigurator_vllm (measured public data)"``.
    source: str

    def step_time(self, shape: StepShape) -> float:
        """Seconds for one iteration of the given shape."""
        ...

    def decode_times(self, decode_seqs: int, decode_context: np.ndarray) -> np.ndarray:
        """Seconds of pure-decode iterations, one per entry of ``decode_context`` (vectorised)."""
        ...

    def sources(self) -> dict[str, str]:
        """Which source each operator table came from: ``{table_name: source}``."""
        ...


@dataclass
class LinearStepModel:
    """A simple affine step-time model, for tests and queueing checks.

    ``t = overhead + per_prefill_token * prefill_tokens + per_decode_seq * decode_seqs
    + per_context_token * decode_context``.
    """

    overhead: float = 0.005
    per_prefill_token: float = 2e-5
    per_decode_seq: float = 1e-4
    per_context_token: float = 1e-8
    source: str = "linear (test model)"
    _sources: dict = field(default_factory=dict)

    def step_time(self, shape: StepShape) -> float:
        """Affine in prefill tokens, decode sequences and decode context."""
        if not shape.prefill_chunks:
            return float(self.decode_times(shape.decode_seqs, np.array([shape.decode_context]))[0])
        return (
            self.overhead
            + self.per_prefill_token * shape.prefill_tokens
            + self.per_decode_seq * shape.decode_seqs
            + self.per_context_token * shape.decode_context
        )

    def decode_times(self, decode_seqs: int, decode_context: np.ndarray) -> np.ndarray:
        """Vectorised pure-decode times."""
        ctx = np.asarray(decode_context, dtype=np.float64)
        return self.overhead + self.per_decode_seq * decode_seqs + self.per_context_token * ctx

    def sources(self) -> dict[str, str]:
        """All terms are the test model's own."""
        return {"step": self.source}

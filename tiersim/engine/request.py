"""Per-request state inside a replica, and the scheduler limits.

A request holds ``prompt`` tokens and must emit ``output`` tokens. ``tokens`` is how many tokens
of its sequence are known (prompt + emitted outputs) and ``computed`` how many of those have KV in
the cache. A step that brings ``computed`` up to ``tokens`` emits one output token. Prefill is
therefore "compute many known tokens", decode is "compute the one newest token"; preemption by
recompute resets ``computed`` to 0 while keeping the emitted outputs (as vLLM v1 does).

With prefix caching a request also carries its prompt's block ``hashes`` (Mooncake style, one per
``hash_block_tokens`` of prompt) and ``cached``: the prompt tokens its first admission on this
replica found in the prefix cache (see :mod:`tiersim.engine.prefix_cache`). That admission also
records the cached tokens per cache level (``level_hits``), the cached tokens it recomputed
instead of loading them from an offload level (``recomputed``) and which of the two it chose
for its blocks found in an offload level (``offload_loaded``: None when it found none there).
"""

from __future__ import annotations

from dataclasses import dataclass
from struct import Struct

from tiersim.engine.kv_levels import KVLevel

WAITING, PREFILL, DECODE, DONE, DROPPED = range(5)


@dataclass(frozen=True, slots=True)
class SchedulerLimits:
    """vLLM-style scheduler limits of one replica.

    ``enable_prefix_caching`` turns on the per-replica prefix cache; it holds
    ``prefix_cache_fraction`` of the replica's KV capacity (in tokens), counted in hash blocks.
    ``kv_levels`` are offload stores beneath it (host DRAM, SSD; :mod:`tiersim.engine.kv_levels`),
    top first, whose blocks are ``kv_bytes_per_token`` x hash block tokens; ``kv_overlap``
    overlaps their transfers with the step's compute layer by layer. ``kv_recompute``: a request
    whose prefix blocks sit in an offload level recomputes them instead of loading them when
    that is modelled faster (:mod:`tiersim.engine.prefix_cache`); False always loads them (a
    connector that always loads). ``max_model_len``: the longest prompt + output a request may
    have (vLLM rejects a longer one; here it is dropped); 0: no limit. ``state_blocks``: blocks
    every admitted request holds beside its tokens' blocks, for a fixed per-sequence state
    (gated delta-net layers; :func:`tiersim.perf.memory.state_blocks`), 0 for none.

    Sliding-window attention (``window`` tokens, 0: none) splits the blocks into KV-cache groups
    as vLLM's hybrid allocator does: ``full_groups`` groups of full-attention layers and
    ``window_groups`` of sliding-window layers, each block then one group's pages (the replica's
    ``num_blocks`` count pages: blocks x groups). A sequence holds a page per ``block_size``
    tokens in each full group, and in each window group at most a window's worth and one block
    of its latest tokens (:func:`seq_blocks`). The defaults (one full group) are one block per
    ``block_size`` tokens.
    """

    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    block_size: int = 16
    watermark: float = 0.01
    enable_prefix_caching: bool = False
    prefix_cache_fraction: float = 1.0
    kv_levels: tuple[KVLevel, ...] = ()
    kv_overlap: bool = True
    kv_recompute: bool = True
    kv_bytes_per_token: float = 0.0
    max_model_len: int = 0
    state_blocks: int = 0
    window: int = 0
    full_groups: int = 1
    window_groups: int = 0

    def __post_init__(self) -> None:
        if self.window < 0 or self.full_groups < 0 or self.window_groups < 0 or (
                bool(self.window) != bool(self.window_groups)):
            raise ValueError(f"window ({self.window}) and window_groups ({self.window_groups}) "
                             "must be both 0 or both > 0, full_groups >= 0")
        if self.full_groups + self.window_groups < 1:
            raise ValueError("full_groups + window_groups must be >= 1")
        if self.kv_levels and self.kv_bytes_per_token <= 0:
            raise ValueError("kv_levels need kv_bytes_per_token > 0 (the size of a block moved)")
        if self.max_num_seqs < 1 or self.block_size < 1:
            raise ValueError("max_num_seqs and block_size must be >= 1")
        if self.state_blocks < 0:
            raise ValueError(f"state_blocks must be >= 0 (got {self.state_blocks})")
        if self.max_num_batched_tokens < self.max_num_seqs:
            raise ValueError(
                f"max_num_batched_tokens ({self.max_num_batched_tokens}) must be >= "
                f"max_num_seqs ({self.max_num_seqs}) so every running request decodes each step"
            )
        if not 0.0 <= self.watermark < 1.0:
            raise ValueError(f"watermark must be in [0, 1) (got {self.watermark})")
        if not 0.0 < self.prefix_cache_fraction <= 1.0:
            raise ValueError(
                f"prefix_cache_fraction must be in (0, 1] (got {self.prefix_cache_fraction})"
            )


#: What :func:`longest_sequence` answers where no length is too long (a sliding-window model
#: whose every layer has a window: a sequence's blocks stop growing past it).
UNBOUNDED = 2**62


def seq_blocks(limits: SchedulerLimits, upto: int, new: int = 1) -> int:
    """Blocks a sequence holds for a step that brings its KV to ``upto`` tokens, ``new`` of
    them computed in that step (a decode step: 1; at rest between steps: 1 too), its fixed
    state's included: ``full_groups`` pages per ``block_size`` tokens, and in each window group
    at most ``ceil((new + window - 1) / block_size) + 1`` pages (vLLM's sliding-window manager
    frees the blocks wholly before ``computed - window + 1`` before it allocates the step's, so
    it holds at most that many; this count is never below vLLM's)."""
    bs = limits.block_size
    blocks = -(-upto // bs)
    if not limits.window_groups:
        return blocks + limits.state_blocks
    cap = -(-(new + limits.window - 1) // bs) + 1
    return (limits.full_groups * blocks + limits.window_groups * min(blocks, cap)
            + limits.state_blocks)


def sequences_held(limits: SchedulerLimits, num_blocks: int, tokens: int, extra: int = 0) -> int:
    """How many sequences of ``tokens`` tokens each (prompt + output) a replica of
    ``num_blocks`` KV blocks holds at once, each at its full length (:func:`seq_blocks` of
    its last decode step, its fixed state's blocks included; ``extra``: token slots each
    holds beside them, a speculative tier's ``k`` draft tokens): the blocks over a
    sequence's. The one figure the run's KV-thrashing note and the router's price
    (:func:`tiersim.inputs.request_seconds`) read; 0: not one fits. A speculative step
    computes ``extra + 1`` tokens, so a window group holds the pages of that step's window, as
    the engine's speculative scheduler allocates them (it was counted at a one-token step:
    a page a window group short). The blocks are those above the scheduler's watermark
    (``int(watermark x num_blocks)``, as :func:`longest_sequence` counts them): the engine
    admits a sequence only where its blocks leave the watermark free, so with the others at
    full length the last one, admitted whole, finds the watermark's blocks closed to it (a
    cache of 100 blocks, watermark 1, sequences of 10 blocks each taken at admission: the
    engine holds 9, this said 10 until round 56). A sequence admitted short of its full blocks
    can grow into the watermark, so where outputs outgrow it the engine can hold one more."""
    usable = int(num_blocks) - int(limits.watermark * int(num_blocks))
    return max(0, usable) // seq_blocks(limits, max(1, int(tokens) + int(extra)),
                                        1 + max(0, int(extra)))


def longest_sequence(limits: SchedulerLimits, num_blocks: int, extra: int = 0) -> int:
    """The most tokens (prompt + output) one request may have on a replica of ``num_blocks``
    KV blocks: its token blocks and its fixed state's (``limits.state_blocks``) must fit above
    the watermark (``int(watermark x num_blocks)`` blocks), alone, or it is dropped on arrival;
    ``extra``: token slots it holds beside them (a speculative tier's ``k`` draft tokens).
    With sliding windows its blocks are :func:`seq_blocks` of a step of up to
    ``max_num_batched_tokens`` tokens (:data:`UNBOUNDED` where they never outgrow the cache),
    whatever its prompt: a request preempted by recompute prefills its prompt and outputs so
    far again in chunks of up to that budget, so a rule by its own prompt chunk and decode
    steps admits requests that, preempted late, can never be re-admitted (vLLM's start-up
    check counts the same step: :func:`tiersim.perf.memory.vllm_longest_sequence`).
    The one rule :meth:`tiersim.engine.scheduler.ReplicaScheduler.fits` and the run's notes on
    short KV caches and dropped requests share; 0 or less: no request fits."""
    usable = num_blocks - int(limits.watermark * num_blocks) - limits.state_blocks
    if not limits.window_groups:
        return usable * limits.block_size - extra
    full, win, bs = limits.full_groups, limits.window_groups, limits.block_size
    cap = -(-(limits.max_num_batched_tokens + limits.window - 1) // bs) + 1
    most = min(cap, usable // (full + win))  # blocks of a sequence within its window's cap
    if full == 0 and usable >= win * cap:
        return UNBOUNDED
    if full and (usable - win * cap) // full > cap:
        most = (usable - win * cap) // full
    return most * bs - extra


class Req:
    """One request's mutable state on a replica (one pass; an escalation makes a new one)."""

    __slots__ = (
        "idx", "prompt", "output", "n_out", "tokens", "computed", "blocks", "state", "arrival",
        "admitted", "first_token", "finish", "preemptions", "gpu_s", "acc_mark", "join_it",
        "c_join", "finish_it", "heap_seq", "hashes", "cached", "filled",
        "level_hits", "recomputed", "offload_loaded", "weight",
    )

    def __init__(self, idx: int, prompt: int, output: int, arrival: float,
                 hashes: list[int] | None = None):
        self.idx, self.prompt, self.output, self.arrival = idx, prompt, output, arrival
        self.n_out = 0
        self.tokens = prompt
        self.computed = 0
        self.blocks = 0
        self.state = WAITING
        self.admitted: float | None = None  # None until: set once, when first admitted
        self.first_token: float | None = None
        self.finish: float | None = None
        self.preemptions = 0
        self.gpu_s = 0.0
        self.acc_mark = 0.0
        self.join_it = 0
        self.c_join = 0
        self.finish_it = 0
        self.heap_seq = -1
        self.hashes = hashes or ()  # (shared, not a fresh empty list per request)
        self.cached = -1  # prompt tokens found cached at the first admission (-1: not admitted)
        self.filled = 0  # leading hashes already put in the prefix cache at this admission
        self.level_hits: list[int] | None = None  # cached tokens per cache level (first admission)
        self.recomputed = 0  # cached tokens recomputed instead of loaded (first admission)
        self.offload_loaded: bool | None = None  # offloaded hits loaded (True) or recomputed
        self.weight = 0  # blocks a decoder takes at each block boundary (scheduler aggregate)

    def __repr__(self) -> str:
        return (
            f"Req({self.idx}, prompt={self.prompt}, output={self.output}, n_out={self.n_out}, "
            f"computed={self.computed}, state={self.state})"
        )


class Backlog:
    """Fresh requests queued behind a replica's waiting queue, first in first out, held as
    packed rows (request row, prompt and output tokens, arrival: 32 bytes a request) until
    :meth:`pop` makes the :class:`Req` of the next one out.

    NOTE (memory): a burst (every request arriving at once) queues the whole trace on its
    replicas; as :class:`Req` objects that is about 400 bytes a request, here 32 (README,
    "Bursts"). NOTE (speed): one ``bytearray``, appended at its end and deleted at its front:
    CPython moves a bytearray's start on such a deletion instead of moving its bytes, and
    regrows it geometrically, so both ends cost amortised O(1) (a push and a pop together
    about 0.4 us, against a Req's 0.4 us and 400 bytes).
    """

    __slots__ = ("_rows", "size")

    def __init__(self) -> None:
        self._rows = bytearray()
        self.size = 0  # requests queued (NOTE (speed): read by the scheduler, not len())

    def __len__(self) -> int:
        return self.size

    def push(self, idx: int, prompt: int, output: int, arrival: float) -> None:
        """Queue a fresh request (nothing computed yet) at the tail."""
        self._rows += _PACK(idx, prompt, output, arrival)
        self.size += 1

    def pop(self) -> Req:
        """Take the request at the head out, as a fresh :class:`Req` (the backlog must not be
        empty)."""
        rows = self._rows
        req = Req(*_UNPACK(rows))
        del rows[:_ROW.size]
        self.size -= 1
        return req


#: a backlog row: request row, prompt tokens, output tokens (int64 each), arrival (float64)
_ROW = Struct("=qqqd")
_PACK, _UNPACK = _ROW.pack, _ROW.unpack_from

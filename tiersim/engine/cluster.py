"""Tiers of replicas, balancers, and :func:`simulate`: a workload in, per-request times out.

Routing is decided before the run (it depends on the request, not on fleet state): each request
carries its first tier and, for a cascade, the tier it escalates to when its first pass finishes.
An escalated request re-enters the fleet at that moment; its latency and GPU time cover both
passes. A cascade's request its first tier refuses at admission (it can never fit there) goes
on at once to the tier it names for that (``Workload.refused_to``), as a cascade client does on
that immediate refusal: an escalation with no first pass.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field, replace

import numpy as np

from tiersim.engine.disagg import Disagg
from tiersim.engine.load_series import SeriesRows
from tiersim.engine.lockstep import lockstep_replicas
from tiersim.engine.prefix_cache import hit_tokens, use_prefill_model
from tiersim.engine.replica import OutstandingBoard, Replica
from tiersim.engine.request import DROPPED, Req, SchedulerLimits
from tiersim.engine.scheduler import ReplicaScheduler
from tiersim.engine.simenv import SimEnv
from tiersim.engine.spec_decode import (
    SpecDecoding,
    SpecScheduler,
    SpecStats,
    SpecStepModel,
    tier_key,
)
from tiersim.perf.base import StepTimeModel


@dataclass
class TierSpec:
    """One tier: ``replicas`` identical replicas of one precision."""

    name: str
    replicas: int
    num_blocks: int
    step_model: StepTimeModel
    limits: SchedulerLimits = field(default_factory=SchedulerLimits)
    balancer: str = "least_tokens"
    output_multiplier: float = 1.0
    spec_decoding: SpecDecoding | None = None  # speculative decoding (tiersim.engine.spec_decode)
    disagg: Disagg | None = None  # prefill/decode split of the replicas (tiersim.engine.disagg)
    lockstep: int = 1  # DP ranks stepped together, in consecutive groups (tiersim.engine.lockstep)

    def __post_init__(self) -> None:
        if self.replicas < 1:
            raise ValueError(f"tier {self.name!r}: replicas must be >= 1 (got {self.replicas})")
        if self.balancer not in BALANCERS:
            raise ValueError(f"tier {self.name!r}: unknown balancer {self.balancer!r}; "
                             f"choose one of {sorted(BALANCERS)}")
        if self.output_multiplier <= 0:
            raise ValueError(f"tier {self.name!r}: output_multiplier must be > 0")
        if self.disagg is not None:
            if self.disagg.prefill + self.disagg.decode != self.replicas:
                raise ValueError(f"tier {self.name!r}: prefill + decode replicas "
                                 f"({self.disagg.prefill} + {self.disagg.decode}) must equal "
                                 f"its replicas ({self.replicas})")
            if self.spec_decoding is not None:
                raise ValueError(f"tier {self.name!r}: speculative decoding with "
                                 f"disaggregation is not modelled")
        if self.lockstep < 1 or self.replicas % self.lockstep:
            raise ValueError(f"tier {self.name!r}: lockstep ({self.lockstep}) must be >= 1 and "
                             f"divide its replicas ({self.replicas})")
        if self.lockstep > 1 and (self.disagg is not None or self.spec_decoding is not None):
            raise ValueError(f"tier {self.name!r}: lockstep DP ranks with disaggregation or "
                             f"speculative decoding are not modelled")


@dataclass
class Workload:
    """Requests as arrays (columnar: no object per request until it is dispatched);
    ``tier``/``escalate_to`` index the tier list.

    Dtypes: ``arrival_s`` float64; ``input_tokens``/``output_tokens`` any integer dtype (int32
    as a trace loads them, 4 bytes a request; read one at a time with ``int()``); ``tier`` and
    ``escalate_to`` int64 (the result's ``first_tier`` is ``tier`` itself, not a copy).

    Open loop: ``arrival_s`` sorted. Closed loop (a fixed number of clients, each sending its
    next request when the previous one finishes): ``follows[i] = j`` makes request ``i`` arrive
    ``think_s`` after request ``j`` finishes (its ``arrival_s`` is ignored); ``-1`` = arrives at
    ``arrival_s``. Requests that arrive on their own must still be sorted by ``arrival_s``.
    ``think_s`` is one number for every request or an array with one per request (an agent
    step's tool time: request ``i`` waits ``think_s[i]``).

    ``prefix_hashes`` (optional, one int sequence per request): the prompt's block hashes, one per
    ``hash_block_tokens`` prompt tokens (Mooncake: 512); used by tiers with prefix caching.
    ``output_hashes`` (optional, one int sequence per request): the hashes of the blocks its
    output completes after its prompt's full blocks, as the request that follows it holds them;
    a replica that caches prefixes caches those its finished final pass computed.
    ``spec_acceptance`` (optional): a draft acceptance rate per request for tiers with
    speculative decoding. ``request_key`` (optional, int64): each request's identity (the
    trace's ``request_id``), which keys its speculative draws, so a request draws the same
    tokens whichever rows are served beside it (default: its row).
    ``refused_to`` (optional, int64): the tier a request goes on to, at once, when its first
    tier refuses it at admission (longer than its context, or more KV than a replica holds);
    ``-1`` (or no array): it is dropped there.
    """

    arrival_s: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    tier: np.ndarray
    escalate_to: np.ndarray | None = None
    follows: np.ndarray | None = None
    think_s: float | np.ndarray = 0.0
    prefix_hashes: list | None = None
    output_hashes: list | None = None
    hash_block_tokens: int = 512
    spec_acceptance: np.ndarray | None = None  # per-request acceptance rate (NaN: the tier's)
    refused_to: np.ndarray | None = None  # where a first tier's refusal goes on to (-1: none)
    request_key: np.ndarray | None = None  # per-request key of speculative draws (None: row)

    def __len__(self) -> int:
        return len(self.arrival_s)


@dataclass
class SimResult:
    """Per-request arrays (index = request) and per-replica statistics."""

    first_tier: np.ndarray
    final_tier: np.ndarray
    replica: np.ndarray
    escalated: np.ndarray
    dropped: np.ndarray
    first_token_s: np.ndarray
    finish_s: np.ndarray
    queue_s: np.ndarray
    preemptions: np.ndarray
    output_tokens: np.ndarray  # emitted on the final tier (after its multiplier)
    gpu_s_first: np.ndarray  # replica-seconds attributed on the first tier (0 if not escalated)
    gpu_s_final: np.ndarray  # replica-seconds attributed on the final tier
    busy_s: dict[str, list[float]]
    kv_peak_blocks: dict[str, list[int]]
    num_blocks: dict[str, int]
    # per replica, its load series' rows (t, running, waiting, kv blocks, waiting max): exact
    # time-weighted means over [t, next row's t) on a grid of interval_s, stored as arrays
    # read as those tuples (engine/load_series.py's SeriesRows; an empty list where not kept)
    samples: dict[str, list[SeriesRows | list]]
    end_s: float
    arrival_s: np.ndarray  # when each request entered the fleet (closed loop: set by the run)
    cache_hit_tokens: np.ndarray  # prompt tokens served from a prefix cache, summed over passes
    prefix_stats: dict[str, PrefixStats] = field(default_factory=dict)  # tiers that cache
    spec_stats: dict[str, SpecStats] = field(default_factory=dict)  # speculative tiers
    busy_until_s: float = 0.0  # when the fleet's last step ended (a pass with no finish too)
    refused: np.ndarray | None = None  # first tier refused it at admission (no pass ran there)
    interval_s: float | None = 1.0  # the grid of the load series in samples (None: not kept)


@dataclass
class PrefixStats:
    """Token-level prefix caching of one tier, over the passes it admitted.

    ``hit_tokens[i]``: prompt tokens found in cache level ``levels[i]`` (``gpu`` first, then the
    offload levels) at each pass's first admission; ``bound_tokens``: what a single unbounded
    cache shared by the tier's replicas would have held, in dispatch order (the trace's bound).
    Load or recompute (:mod:`tiersim.engine.prefix_cache`), at the same admissions:
    ``offload_loads`` counts the passes that loaded the hits they found in an offload level,
    ``offload_recomputes`` those that recomputed them instead (the load was modelled slower than
    prefill), and ``recomputed_tokens`` the cached prompt tokens so recomputed (not in
    ``hit_tokens``).
    """

    levels: list[str]
    prompt_tokens: int = 0
    bound_tokens: int = 0
    hit_tokens: list[int] = field(default_factory=list)
    recomputed_tokens: int = 0
    offload_loads: int = 0
    offload_recomputes: int = 0
    seen: set = field(default_factory=set, repr=False)

    def __post_init__(self) -> None:
        if not self.hit_tokens:  # one count per level: zip() over [] counted no hit at all
            self.hit_tokens = [0] * len(self.levels)
        if len(self.hit_tokens) != len(self.levels):
            raise ValueError(f"hit_tokens has {len(self.hit_tokens)} counts for "
                             f"{len(self.levels)} levels")

    def rates(self) -> tuple[float | None, float | None, dict[str, float]]:
        """(hit rate, unbounded bound, hit rate per level): prompt-token fractions (None
        before any prompt token)."""
        total = self.prompt_tokens
        if not total:
            return None, None, {}
        by_level = {name: hit / total for name, hit in zip(self.levels, self.hit_tokens)}
        return sum(self.hit_tokens) / total, self.bound_tokens / total, by_level

    def count_admission(self, req: Req) -> None:
        """Add a pass's first admission: its hit tokens per level and its load-or-recompute
        choice."""
        self.hit_tokens = [a + b for a, b in zip(self.hit_tokens, req.level_hits,
                                                 strict=True)]
        self.recomputed_tokens += req.recomputed
        if req.offload_loaded is True:
            self.offload_loads += 1
        elif req.offload_loaded is False:
            self.offload_recomputes += 1

    def recompute_rate(self) -> float | None:
        """Cached prompt tokens recomputed instead of loaded, over prompt tokens (None before
        any prompt token)."""
        return self.recomputed_tokens / self.prompt_tokens if self.prompt_tokens else None

    def count_bound(self, req: Req, hash_block_tokens: int, block_size: int = 1) -> None:
        """Add ``req`` (admitted to the tier) to the prompt total and the unbounded bound (its
        hit in whole ``block_size`` blocks: :func:`tiersim.engine.prefix_cache.hit_tokens`)."""
        n = 0
        for h in req.hashes:
            if h not in self.seen:
                break
            n += 1
        self.prompt_tokens += req.prompt
        if req.hashes:
            self.bound_tokens += hit_tokens(n * hash_block_tokens, req.prompt, block_size)
            self.seen.update(req.hashes)


class Balancer:
    """Picks a replica of a tier for each request; override :meth:`pick`."""

    def __init__(self, replicas: list[Replica]):
        self.replicas = replicas

    def pick(self, req: Req | None) -> Replica:
        """The replica for ``req`` (None: a request the tier holds no prefix cache for, not
        made yet; :meth:`_Fleet.dispatch`)."""
        raise NotImplementedError


class RoundRobin(Balancer):
    """Replicas in turn."""

    def __init__(self, replicas: list[Replica]):
        super().__init__(replicas)
        self._next = 0

    def pick(self, req: Req | None) -> Replica:
        """The next replica in turn."""
        rep = self.replicas[self._next]
        self._next = (self._next + 1) % len(self.replicas)
        return rep


BOARD_MIN = 64
"""Replicas from which :class:`LeastTokens` and :class:`PrefixAware` (a split tier's decode
replicas' balancer too) keep their outstanding work on a board (:func:`outstanding_board`)."""


def outstanding_board(replicas: list[Replica]) -> OutstandingBoard | None:
    """A board of ``replicas``' outstanding work from :data:`BOARD_MIN` of them up, none a
    lockstep rank (whose work a request to another rank changes); else None (one loop over
    them is quicker)."""
    if len(replicas) >= BOARD_MIN and all(type(rep) is Replica for rep in replicas):
        return OutstandingBoard(replicas)
    return None


class LeastTokens(Balancer):
    """The replica with the fewest outstanding token computations (ties: lowest index).

    NOTE (speed): from :data:`BOARD_MIN` replicas up (and none a lockstep rank, whose work a
    request to another rank changes), their outstanding work is kept on an
    :class:`OutstandingBoard` and read again only where it may have changed; below, one loop
    over them is quicker. Both pick the same replica.
    """

    def __init__(self, replicas: list[Replica]):
        super().__init__(replicas)
        self.board = outstanding_board(replicas)

    def pick(self, req: Req | None) -> Replica:
        """The least-loaded replica."""
        if len(self.replicas) == 1:
            return self.replicas[0]
        if self.board is not None:
            return self.board.least(self.replicas[0].env.now)
        return Replica.least_outstanding(self.replicas, self.replicas[0].env.now)


class PrefixAware(Balancer):
    """The replica with the least outstanding work once the prompt tokens it has cached for this
    request are counted (``outstanding - cached``; ties: lowest index). Equal to
    :class:`LeastTokens` where no replica caches the prompt, so a hot prefix spreads once its
    replica's queue outgrows what the cache saves (cache-aware routing, as in SGLang's router).

    NOTE (speed): on the same condition as :class:`LeastTokens`, the outstanding work is kept on
    an :class:`OutstandingBoard`, and an index from each block hash to the replicas whose cache
    holds it (:meth:`PrefixCache.index_into`) names the only replicas where a prompt can have
    cached tokens: those holding its first hash. Every other replica scores its outstanding work
    alone, so none beats the board's least (ties to the first); the pick is the least of that one
    and the holders, scored as the loop scores them, in index order: the loop's pick.
    """

    def __init__(self, replicas: list[Replica]):
        super().__init__(replicas)
        self.board = outstanding_board(replicas)
        self.holders: dict[int, set[int]] = {}
        if self.board is not None:
            for slot, rep in enumerate(replicas):
                if rep.sched.cache is not None:
                    rep.sched.cache.index_into(self.holders, slot)

    def pick(self, req: Req | None) -> Replica:
        """The replica where this request costs the least work (None: its outstanding work
        alone, as no replica of the tier caches prefixes then)."""
        if len(self.replicas) == 1:
            return self.replicas[0]
        if self.board is None:
            return min(self.replicas, key=lambda rep: rep.outstanding() - cached(rep, req))
        least = self.board.least(self.replicas[0].env.now)
        slots = self.holders.get(req.hashes[0]) if req is not None and req.hashes else None
        if not slots:
            return least
        reps = self.replicas
        candidates = sorted(slots | {least.slot})
        # outstanding() as the loop reads it (the board's value; a lazy holder caught up)
        return min((reps[slot] for slot in candidates),
                   key=lambda rep: rep.outstanding() - cached(rep, req))


def cached(rep: Replica, req: Req | None) -> int:
    """Prompt tokens of ``req`` cached on ``rep`` (0 for None: no request made yet)."""
    return rep.sched.cached_tokens(req) if req is not None else 0


BALANCERS: dict[str, type[Balancer]] = {
    "round_robin": RoundRobin, "least_tokens": LeastTokens, "prefix_aware": PrefixAware,
}


class _Fleet:
    """Wires tiers, replicas and the per-request result arrays together for one run."""

    def __init__(self, tiers: list[TierSpec], work: Workload, max_k: int,
                 sample_every: float | None, fast_paths: bool = True):
        n = len(work)
        self.env = SimEnv(fast_paths=fast_paths)
        self.tiers, self.work, self.sample_every = tiers, work, sample_every
        self.esc = work.escalate_to if work.escalate_to is not None else np.full(n, -1)
        self.final_tier = np.asarray(work.tier, dtype=np.int64).copy()
        self.replica = np.full(n, -1, dtype=np.int64)
        self.escalated = np.zeros(n, dtype=bool)
        self.dropped = np.zeros(n, dtype=bool)
        self.refused = np.zeros(n, dtype=bool)
        self.refused_to = (work.refused_to if work.refused_to is not None
                           else np.full(n, -1, dtype=np.int64))
        self.first_token = np.full(n, np.nan)
        self.finish = np.full(n, np.nan)
        self.queue = np.zeros(n)
        self.preempt = np.zeros(n, dtype=np.int64)
        self.out_tok = np.zeros(n, dtype=np.int64)
        self.gpu_first = np.zeros(n)
        self.gpu_final = np.zeros(n)
        self.arrival = np.asarray(work.arrival_s, dtype=np.float64).copy()
        self.cache_hit = np.zeros(n, dtype=np.int64)
        self.next_of = np.full(n, -1, dtype=np.int64)  # closed loop: who follows whom
        if work.follows is not None:
            chained = np.flatnonzero(np.asarray(work.follows) >= 0)
            self.next_of[np.asarray(work.follows)[chained]] = chained
        self._views(work)
        # a finished request sets nothing in motion (no escalation, no follower): replicas of
        # plain tiers need no events (lazy; see tiersim.engine.replica)
        self.lazy = fast_paths and work.follows is None and not (np.asarray(self.esc) >= 0).any()
        self.lazy_reps: list[Replica] = []
        self._inline = False  # arrivals without events (see _arrive_without_events)
        self.prefix: dict[str, PrefixStats] = {
            spec.name: PrefixStats(["gpu"] + [lv.name for lv in spec.limits.kv_levels])
            for spec in tiers if spec.limits.enable_prefix_caching
        }
        self._prefill_memo: dict[int, dict] = {}  # per tier: its replicas' prefill times
        # per tier: no prefix cache and no prefill/decode split (dispatch makes no Req)
        self._plain = [spec.disagg is None and not spec.limits.enable_prefix_caching
                       for spec in tiers]
        self.balancers: list[Balancer] = []
        self.decode_balancers: dict[int, Balancer] = {}  # split tiers: their decode replicas
        self.full_output = np.zeros(n, dtype=np.int64)  # split tiers: outputs after prefill
        self.reps: list[list[Replica]] = []
        for t, spec in enumerate(tiers):
            model = spec.step_model
            if spec.spec_decoding is not None:
                model = SpecStepModel(spec.step_model, spec.spec_decoding)
            if spec.disagg is not None:
                self._build_disagg(t, spec, max_k, sample_every)
                continue
            if spec.lockstep > 1:
                scheds = [self._scheduler(t, spec, model) for _ in range(spec.replicas)]
                reps = lockstep_replicas(self.env, scheds, model, self._make_on_finish(t),
                                         spec.lockstep, max_k, sample_every)
            else:
                reps = [
                    Replica(self.env, self._scheduler(t, spec, model), model,
                            self._make_on_finish(t), i, max_k, sample_every)
                    for i in range(spec.replicas)
                ]
                if self.lazy:
                    for rep in reps:
                        rep.go_lazy()
                    self.lazy_reps += [rep for rep in reps if rep.lazy]
            self.reps.append(reps)
            self.balancers.append(BALANCERS[spec.balancer](reps))

    def _views(self, work: Workload) -> None:
        """Memoryviews of the per-request arrays read or written once per request.

        NOTE (speed): indexing a memoryview gives or takes a Python number (tens of ns), a
        numpy array a numpy scalar (a few hundred); no copy is made, the values are the same.
        """
        def view(a):  # whole numbers as Python ints, as int() of the array's items gave
            a = np.ascontiguousarray(a)
            return memoryview(a if a.dtype.kind in "iu" else a.astype(np.int64))

        self._in_v, self._out_v = view(work.input_tokens), view(work.output_tokens)
        self._tier_v, self._esc_v = view(work.tier), view(self.esc)
        self._refused_to_v = view(self.refused_to)
        self._next_v = view(self.next_of)
        self._followers: list[tuple[int, float]] = []  # released at once, in order
        self._releasing = False
        for name in ("replica", "escalated", "dropped", "refused", "first_token", "finish", "queue",
                     "preempt", "out_tok", "gpu_first", "gpu_final", "cache_hit", "final_tier"):
            setattr(self, f"_{name}_v", memoryview(getattr(self, name)))

    def _build_disagg(self, t: int, spec: TierSpec, max_k: int,
                      sample_every: float | None) -> None:
        """A split tier: prefill replicas first (the tier's balancer), then decode replicas
        (least outstanding tokens; no prefix cache)."""
        hbt, x = self.work.hash_block_tokens, spec.disagg.prefill
        decode_limits = replace(spec.limits, enable_prefix_caching=False, kv_levels=())
        prefill = [Replica(self.env, self._scheduler(t, spec, spec.step_model),
                           spec.step_model, self._make_on_prefilled(t), i, max_k, sample_every)
                   for i in range(x)]
        for rep in prefill:  # a prefilled request's blocks stay until its KV has moved
            rep.sched.hold_finished = True
        decode = [Replica(self.env, ReplicaScheduler(decode_limits, spec.num_blocks, hbt),
                          spec.step_model, self._make_on_finish(t), x + j, max_k, sample_every)
                  for j in range(spec.disagg.decode)]
        self.reps.append(prefill + decode)
        self.balancers.append(BALANCERS[spec.balancer](prefill))
        self.decode_balancers[t] = LeastTokens(decode)

    def _scheduler(self, t: int, spec: TierSpec, model: StepTimeModel):
        """A replica's scheduler: speculative decoders one by one, else the aggregate one; its
        prefix cache costs recomputing with ``model``, the replica's step-time model."""
        hbt = self.work.hash_block_tokens
        if spec.spec_decoding is not None:
            sched = SpecScheduler(spec.limits, spec.num_blocks, spec.spec_decoding, hbt,
                                  tier=tier_key(spec.name),
                                  accept=self.work.spec_acceptance,
                                  keys=self.work.request_key)
        else:
            sched = ReplicaScheduler(spec.limits, spec.num_blocks, hbt)
        use_prefill_model(sched.cache, model, spec.limits, self._prefill_memo.setdefault(t, {}))
        return sched

    def dispatch(self, i: int, tier: int, arrival: float) -> None:
        """Send request ``i`` to ``tier`` now."""
        spec = self.tiers[tier]
        # as tiersim.routing.capability.output_on_tier, which routing, the plan and the run's
        # notes use: half to even, at least 1 (a test holds the two equal)
        out = max(1, round(self._out_v[i] * spec.output_multiplier))
        # a lazy replica the balancer looks at (Replica.outstanding) or picks (submit) catches
        # up to now first; the others may run their steps later (tiersim.engine.replica)
        if self._plain[tier]:
            # NOTE (memory): nothing reads this request before it reaches its replica's queue
            # head, so it waits there as a packed row, not a Req (a burst: tiersim.engine
            # .request.Backlog); the balancers need no request where no replica caches prefixes
            if not self.balancers[tier].pick(None).submit(None, i, self._in_v[i], out, arrival):
                self._refuse(i, arrival)
            return
        if spec.disagg is not None:  # the prefill pass: its first token, then to a decoder
            self.full_output[i], out = out, 1
        hashes = None if self.work.prefix_hashes is None else self._hashes(i, spec)
        req = Req(i, self._in_v[i], out, arrival, hashes)
        rep = self.balancers[tier].pick(req)
        if (spec.disagg is not None and not self._decodable(i, tier)) or not rep.submit(req):
            req.state = DROPPED
            self._refuse(i, arrival)
        elif spec.name in self.prefix:
            self.prefix[spec.name].count_bound(req, self.work.hash_block_tokens,
                                               spec.limits.block_size)

    def _refuse(self, i: int, now: float) -> None:
        """Request ``i`` was refused at admission: a first pass goes on at once to its
        ``refused_to`` tier (an escalation with no first pass, so no GPU time), else it is
        dropped and its session ends."""
        nxt = self._refused_to_v[i]
        if not self._escalated_v[i]:
            self._refused_v[i] = True
            if nxt >= 0:
                self._escalated_v[i] = True
                self._final_tier_v[i] = nxt
                self.dispatch(i, nxt, now)
                return
        self._dropped_v[i] = True
        self._end_session(i, now)

    def _decodable(self, i: int, tier: int) -> bool:
        """Whether a split tier's decoders could ever hold request ``i`` whole (prompt and every
        output): one they would refuse is dropped on arrival, as an aggregated tier drops it,
        not prefilled first. True for an aggregated tier or a one-token output."""
        full = int(self.full_output[i])
        if self.tiers[tier].disagg is None or full <= 1:
            return True
        return self.decode_balancers[tier].replicas[0].sched.fits(int(self._in_v[i]), full)

    def _hashes(self, i: int, spec: TierSpec) -> list[int] | None:
        """Request ``i``'s prompt block hashes if ``spec`` caches prefixes and the workload has
        them."""
        if not spec.limits.enable_prefix_caching or self.work.prefix_hashes is None:
            return None
        hashes = self.work.prefix_hashes[i]
        return hashes.tolist() if isinstance(hashes, np.ndarray) else list(hashes)

    def _end_session(self, i: int, now: float) -> None:
        """A dropped request ends its session: the steps after it are never sent (each one's
        prompt holds its predecessors' outputs, and this one made none) and count as dropped,
        arriving ``now``. Without sessions there is no follower and nothing happens."""
        j = self._next_v[i]
        while j >= 0:
            self.arrival[j] = now
            self._dropped_v[j] = True
            j = self._next_v[j]

    def _release_follower(self, i: int, now: float) -> None:
        """Closed loop: the client of request ``i`` sends its next request."""
        j = self._next_v[i]
        if j < 0:
            return
        think = float(np.broadcast_to(self.work.think_s, (len(self.work),))[j])
        self.arrival[j] = now + think
        if think > 0:
            self.env.call_at(self.arrival[j], lambda _e, j=j: self.dispatch(
                j, int(self.work.tier[j]), self.arrival[j]), urgent=True)
            return
        # NOTE: a follower dropped at once releases its own follower: a session of thousands
        # of steps too long to serve chained that recursion past Python's limit. The chain is
        # walked in a loop instead; the order of dispatches is the recursion's.
        self._followers.append((j, now))
        if self._releasing:
            return
        self._releasing = True
        try:
            while self._followers:
                k, at = self._followers.pop()
                self.dispatch(k, int(self.work.tier[k]), at)
        finally:
            self._releasing = False

    def _account(self, req: Req, tier: int) -> None:
        """A finished pass's queueing, preemptions and prefix-cache hits."""
        i = req.idx
        self._queue_v[i] += req.admitted - req.arrival
        self._preempt_v[i] += req.preemptions
        self._cache_hit_v[i] += max(req.cached, 0)
        stats = self.prefix.get(self.tiers[tier].name) if self.prefix else None
        if stats is not None and req.level_hits is not None:
            stats.count_admission(req)

    def _make_on_prefilled(self, tier: int):
        """Split tier: a prefill pass ends with the first token; the KV moves to a decoder.

        The prefill replica keeps the request's KV blocks until the transfer ends, as vLLM's
        NixlConnector does (``NixlConnectorScheduler.request_finished`` returns
        ``delay_free_blocks``; the scheduler frees them once the decode side has read them);
        a one-token answer, which moves nothing, frees them at once."""
        on_finish = self._make_on_finish(tier)
        disagg = self.tiers[tier].disagg

        def on_prefilled(req: Req, rep: Replica) -> None:
            i = req.idx
            full = int(self.full_output[i])
            if full <= 1:
                rep.release(req)
                on_finish(req, rep)
                return
            self._account(req, tier)
            moved = Req(i, req.prompt, full, req.finish + disagg.transfer_s(req.prompt))
            moved.computed, moved.tokens, moved.n_out = req.prompt, req.prompt + 1, 1
            moved.first_token, moved.gpu_s = req.first_token, req.gpu_s
            if moved.arrival <= req.finish:  # an instant transfer: freed before the next step
                rep.release(req)

            def arrived(_e) -> None:
                if req.blocks:
                    rep.release(req)
                self._to_decoder(moved, tier)

            self.env.call_at(moved.arrival, arrived, urgent=True)

        return on_prefilled

    def _to_decoder(self, req: Req, tier: int) -> None:
        """Hand a prefilled request (its KV arrived) to a decode replica of ``tier``."""
        if not self.decode_balancers[tier].pick(req).submit(req):
            req.state = DROPPED
            self.dropped[req.idx] = True
            self._end_session(req.idx, req.arrival)

    def _make_on_finish(self, tier: int):
        def on_finish(req: Req, rep: Replica) -> None:
            i = req.idx
            self._account(req, tier)
            nxt = self._esc_v[i]
            if nxt >= 0 and not self._escalated_v[i]:
                self._escalated_v[i] = True
                self._gpu_first_v[i] = req.gpu_s
                self._final_tier_v[i] = nxt
                self.dispatch(i, nxt, req.finish)
                return
            self._gpu_final_v[i] = req.gpu_s
            self._replica_v[i] = rep.index
            self._first_token_v[i] = req.first_token
            self._finish_v[i] = req.finish
            self._out_tok_v[i] = req.output
            if self._next_v[i] >= 0:
                self._cache_output(req, rep, tier)
                self._release_follower(i, req.finish)

        return on_finish

    def _cache_output(self, req: Req, rep: Replica, tier: int) -> None:
        """A finished request's full output blocks enter its replica's prefix cache (the
        workload's ``output_hashes``; the blocks its computed tokens, all but the last output,
        complete), so its follower can hit them."""
        cache = rep.sched.cache
        if self.work.output_hashes is None or cache is None:
            return
        b = self.work.hash_block_tokens
        n = (req.prompt + req.output - 1) // b - req.prompt // b
        hashes = [int(h) for h in self.work.output_hashes[req.idx][:max(n, 0)]]
        cache.insert(hashes, req.finish)
        stats = self.prefix.get(self.tiers[tier].name) if self.prefix else None
        if stats is not None:
            stats.seen.update(hashes)

    def run(self) -> None:
        """Replay the workload: the arrivals and what they set in motion, then the lazy
        replicas' steps after the last arrival."""
        self._inline = self.lazy and all(rep.lazy for reps in self.reps for rep in reps)
        self.start_arrivals()
        if self._inline:
            self._arrive_without_events()
        else:
            self.env.run()
        for rep in self.lazy_reps:  # the steps after the last arrival
            rep.catch_up(math.inf)

    def _arrive_without_events(self) -> None:
        """Every arrival instant in turn, for a fleet of lazy replicas only.

        NOTE (speed): lazy replicas post no events (tiersim.engine.replica), so the arrivals'
        are the run's only ones; moving the clock to each instant (:meth:`SimEnv.advance`)
        and calling :meth:`_on_arrival` is what SimPy's loop does with them, without an event
        object and two heap operations per instant. The clock ends at the last arrival, as the
        loop leaves it.
        """
        env, own, times = self.env, self._own, self._own_t
        while self._pos < len(own):
            if not env.advance(times[self._pos]):
                raise RuntimeError("an event is pending in a fleet of lazy replicas")
            self._on_arrival(None)

    def start_arrivals(self) -> None:
        """Schedule the requests that arrive on their own (URGENT, one event per instant)."""
        own = np.arange(len(self.work))
        if self.work.follows is not None:
            own = np.flatnonzero(np.asarray(self.work.follows) < 0)
        # packed arrays, not lists: 16 bytes a request instead of ~68 (issue 13, memory)
        self._own = array("q", own.astype(np.int64).tobytes())
        self._own_t = array("d", self.work.arrival_s[own].astype(np.float64).tobytes())
        self._pos = 0
        if self._own:
            self._schedule_arrival()

    def _schedule_arrival(self) -> None:
        if self._inline:
            return
        self.env.call_at(self._own_t[self._pos], self._on_arrival, urgent=True)

    def _on_arrival(self, _event) -> None:
        """Every own request arriving at this instant enters the fleet, in trace order."""
        now, own, times, tier = self.env.now, self._own, self._own_t, self._tier_v
        pos, end = self._pos, len(own)
        while pos < end and times[pos] <= now:
            i = own[pos]
            pos += 1
            self._pos = pos
            self.dispatch(i, tier[i], times[pos - 1])
        if pos < end and not self._inline:  # inline: _arrive_without_events moves on
            self._schedule_arrival()

    def result(self) -> SimResult:
        """Collect the arrays and per-replica statistics."""
        names = [s.name for s in self.tiers]
        return SimResult(
            first_tier=np.asarray(self.work.tier, dtype=np.int64), final_tier=self.final_tier,
            replica=self.replica, escalated=self.escalated, dropped=self.dropped,
            refused=self.refused,
            first_token_s=self.first_token, finish_s=self.finish, queue_s=self.queue,
            preemptions=self.preempt, output_tokens=self.out_tok, gpu_s_first=self.gpu_first,
            gpu_s_final=self.gpu_final,
            busy_s={n: [r.busy_s for r in reps] for n, reps in zip(names, self.reps)},
            kv_peak_blocks={n: [r.sched.peak_blocks for r in reps]
                            for n, reps in zip(names, self.reps)},
            num_blocks={s.name: s.num_blocks for s in self.tiers},
            samples={n: [r.series.finish() if r.series else [] for r in reps]
                     for n, reps in zip(names, self.reps)},
            end_s=float(max([self.env.end_time] + [r.last_step for r in self.lazy_reps])),
            arrival_s=self.arrival,
            cache_hit_tokens=self.cache_hit,
            prefix_stats=self.prefix,
            spec_stats={s.name: SpecStats(s.spec_decoding.k,
                                          sum(r.sched.verify_steps for r in reps),
                                          sum(r.sched.spec_drawn for r in reps),
                                          sum(r.sched.spec_expected for r in reps))
                        for s, reps in zip(self.tiers, self.reps)
                        if s.spec_decoding is not None},
            busy_until_s=max((r.idle_at for reps in self.reps for r in reps), default=0.0),
            interval_s=self.sample_every,
        )


def _check_requests(work: Workload) -> None:
    """Refuse requests the engine cannot serve: a token count below 1 (a 0-token prompt is
    never admitted, so the run would not end) or an arrival that is not a finite time >= 0
    (off the event clock; a closed loop's follower arrives when its predecessor finishes, so
    its ``arrival_s`` is not read), a per-request array of another length than
    ``arrival_s``, or an acceptance rate outside [0, 1]. The message names the first such
    request's row."""
    n = len(work)
    for name in ("input_tokens", "output_tokens", "tier", "escalate_to", "spec_acceptance",
                 "request_key", "think_s", "prefix_hashes", "output_hashes"):
        given = getattr(work, name)  # (think_s may be one number for every request)
        if (given is not None and hasattr(given, "__len__") and getattr(given, "ndim", 1)
                and len(given) != n):
            raise ValueError(f"workload {name} has {len(given)} entries for {n} requests")
    for name in ("input_tokens", "output_tokens"):
        bad = np.flatnonzero(np.asarray(getattr(work, name)) < 1)
        if len(bad):
            i = int(bad[0])
            raise ValueError(f"workload {name} must be >= 1 "
                             f"(request {i} has {getattr(work, name)[i]})")
    arrival = np.asarray(work.arrival_s, dtype=np.float64)
    off = ~(np.isfinite(arrival) & (arrival >= 0))
    if work.follows is not None:
        _check_links(work)
        off &= np.asarray(work.follows) < 0
    bad = np.flatnonzero(off)
    if len(bad):
        i = int(bad[0])
        raise ValueError(f"workload arrival_s must be finite and >= 0 "
                         f"(request {i} has {arrival[i]})")
    if work.spec_acceptance is not None:
        rate = np.asarray(work.spec_acceptance, dtype=np.float64)
        bad = np.flatnonzero(~np.isnan(rate) & ~((rate >= 0) & (rate <= 1)))
        if len(bad):
            i = int(bad[0])
            raise ValueError(f"workload spec_acceptance must be NaN (the tier's rate) or in "
                             f"[0, 1] (request {i} has {rate[i]})")


def _check_links(work: Workload) -> None:
    """Refuse a closed loop that would lose or misplace a request: ``follows`` not -1 or
    another request's row, a request with two followers (the engine releases one), a loop
    of followers (none of them ever arrives), or a follower's think time that is not finite
    and >= 0."""
    n = len(work)
    f = np.asarray(work.follows, dtype=np.int64)
    if len(f) != n:
        raise ValueError(f"workload follows has {len(f)} entries for {n} requests")
    rows = np.arange(n)
    bad = np.flatnonzero((f < -1) | (f >= n) | (f == rows))
    if len(bad):
        i = int(bad[0])
        raise ValueError(f"workload follows must be -1 or another request's row "
                         f"(request {i} has {f[i]})")
    chained = np.flatnonzero(f >= 0)
    counts = np.bincount(f[chained], minlength=n)
    if len(counts) and counts.max() > 1:
        j = int(np.argmax(counts > 1))
        a, b = (int(i) for i in chained[f[chained] == j][:2])
        raise ValueError(f"workload follows gives request {j} more than one follower "
                         f"(requests {a} and {b}); a request has at most one")
    # each request's earliest predecessor, by pointer doubling: a request on a loop never
    # reaches one that arrives on its own
    top = np.where(f >= 0, f, rows)
    for _ in range(max(1, n).bit_length() + 1):
        top = top[top]
    lost = np.flatnonzero(f[top] >= 0)
    if len(lost):
        raise ValueError(f"workload follows makes a loop: request {int(lost[0])} never "
                         f"arrives (its predecessors never reach a request that arrives on "
                         f"its own)")
    think = np.asarray(work.think_s, dtype=np.float64)
    off = ~(np.isfinite(think) & (think >= 0))
    if think.ndim:  # one per request: only a follower's is read
        bad = np.flatnonzero(off & (f >= 0))
        if len(bad):
            i = int(bad[0])
            raise ValueError(f"workload think_s must be finite and >= 0 "
                             f"(request {i} has {think[i]})")
    elif off:
        raise ValueError(f"workload think_s must be finite and >= 0 (got {float(think)})")


def simulate(
    tiers: list[TierSpec],
    work: Workload,
    fast_forward: bool = True,
    max_ff_iterations: int = 4096,
    sample_every: float | None = None,
    fast_paths: bool = True,
    series: bool = True,
) -> SimResult:
    """Replay ``work`` through ``tiers``; deterministic for equal inputs.

    ``fast_forward=False`` steps every iteration as its own event (slow; for tests).
    ``fast_paths=False`` gives every plan its own event and evaluates each decode stretch on its
    own contexts (the reference the engine's speed paths are tested against; same results).
    ``sample_every`` is the interval in seconds of the load series (``SimResult.samples``: exact
    time-weighted means of running, waiting and KV blocks per interval; default: 1/500 of the
    arrival span). ``series=False`` keeps none (every replica's ``samples`` empty): for runs
    whose time series nobody reads, such as a planner's sizing runs or a sweep's points, which
    then skip the cost of recording every step.
    """
    n = len(work)
    _check_requests(work)
    own = work.arrival_s if work.follows is None else work.arrival_s[np.asarray(work.follows) < 0]
    if len(own) and np.any(np.diff(own) < 0):
        raise ValueError("workload arrivals must be sorted")
    if n and (int(np.min(work.tier)) < 0 or int(np.max(work.tier)) >= len(tiers)):
        raise ValueError("workload tier index out of range")
    if work.escalate_to is not None and n and int(np.max(work.escalate_to)) >= len(tiers):
        i = int(np.argmax(np.asarray(work.escalate_to) >= len(tiers)))
        raise ValueError(f"workload escalate_to must be -1 or a tier index below {len(tiers)} "
                         f"(request {i} has {work.escalate_to[i]})")
    if work.refused_to is not None and (len(work.refused_to) != n or (
            n and int(np.max(work.refused_to)) >= len(tiers))):
        raise ValueError("workload refused_to needs one tier index (or -1) per request")
    if not series:
        sample_every = None
    elif sample_every is None:
        span = float(own[-1] - own[0]) if len(own) else 1.0
        sample_every = max(span / 500.0, 1e-3)
    fleet = _Fleet(tiers, work, max_ff_iterations if fast_forward else 1, sample_every,
                   fast_paths)
    fleet.run()
    result = fleet.result()
    fleet.env.drop_decode_tables()  # nothing reads them now (NOTE (memory): SimEnv)
    return result

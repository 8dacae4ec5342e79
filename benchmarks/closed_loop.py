"""A closed-loop, continuous-batching replay of one replica, for the fidelity benchmark.

``concurrency`` clients each send a request (``isl`` prompt tokens, ``osl`` output tokens), wait
for it to finish and send the next at once, as load generators like ``vllm bench serve
--max-concurrency`` do. TTFT and TPOT are means over requests, as the benchmark tools report.

Start-up: with identical request lengths, clients that all start at time 0 stay in lock-step
cohorts for the whole run (every cohort arrives together and queues behind its own prefills).
Measured servers do not show that (their TTFT is close to one prompt's prefill), so by default
the clients are *staggered*: client i starts at ``i x cycle / concurrency``, where ``cycle`` is
the request's estimated time in service (one prefill plus ``osl`` decode iterations at full
batch), and each client's first request is a warm-up left out of the means.
``stagger=False`` starts every client at 0 and averages over all requests.

The replica follows vLLM V1's scheduler in miniature, per iteration:

1. Running requests first: each decoding request takes one token of the budget
   (``max_num_batched_tokens``), then partly prefilled requests take chunks of what is left.
2. KV cache in tokens (``kv_capacity_tokens``): if the running requests' new tokens do not fit,
   the newest running request is preempted (its KV freed; it goes back to the head of the queue
   and later recomputes its prompt and the tokens it already produced, as vLLM's recompute does).
3. Waiting requests are admitted in order while budget, ``max_num_seqs`` and free KV above a 1%
   watermark allow, each starting with a prefill chunk.
4. The iteration takes ``step_model.step_time(shape)``; a request whose prefill completes emits a
   token at the end of that iteration (its first token, unless it was a recompute).

While every running request is decoding and nothing can be admitted, the replica fast-forwards:
the next k decode iterations (k up to the next finish or until KV runs out) are one vectorised
``decode_times`` call, which equals stepping them one by one.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from tiersim.perf.base import StepShape


@dataclass
class _Req:
    """One request's progress."""

    isl: int
    osl: int
    arrival: float
    order: int
    target: int = 0  # tokens to prefill (prompt, or prompt + output so far after preemption)
    done: int = 0  # tokens of ``target`` prefilled
    kv: int = 0  # tokens whose KV is stored
    generated: int = 0
    first_token: float | None = None
    finish: float | None = None

    def __post_init__(self):
        self.target = self.isl


@dataclass
class LoopResult:
    """Mean latencies of a closed-loop run and what happened on the way."""

    ttft_s: float
    tpot_s: float
    requests: int
    preemptions: int
    duration_s: float
    ttfts: np.ndarray = field(repr=False)
    tpots: np.ndarray = field(repr=False)


class ClosedLoop:
    """The replica and its clients (see module docstring)."""

    def __init__(
        self,
        step_model,
        isl: int,
        osl: int,
        concurrency: int,
        kv_capacity_tokens: int,
        max_num_batched_tokens: int = 8192,
        max_num_seqs: int = 1024,
        watermark: float = 0.01,
    ):
        self.model = step_model
        self.isl, self.osl, self.concurrency = int(isl), int(osl), int(concurrency)
        self.capacity = int(kv_capacity_tokens)
        self.max_tokens, self.max_seqs = int(max_num_batched_tokens), int(max_num_seqs)
        self.watermark = watermark * self.capacity
        self.now = 0.0
        self.running: list[_Req] = []
        self.waiting: deque[_Req] = deque()
        self.finished: list[_Req] = []
        self.issued = 0
        self.preemptions = 0
        self.arrivals: deque[float] = deque()
        self._limit = 0

    @property
    def free(self) -> int:
        """KV tokens not held by running requests."""
        return self.capacity - sum(r.kv for r in self.running)

    def _issue(self) -> None:
        self.waiting.append(_Req(self.isl, self.osl, self.now, self.issued))
        self.issued += 1

    def _arrive(self) -> None:
        """Clients whose start time has come send their first request."""
        while self.arrivals and self.arrivals[0] <= self.now:
            at = self.arrivals.popleft()
            self.waiting.append(_Req(self.isl, self.osl, at, self.issued))
            self.issued += 1

    def _cycle_estimate(self) -> float:
        """One request's time in service at full batch: a prefill plus ``osl`` decodes."""
        prefill = self.model.step_time(StepShape(((min(self.isl, self.max_tokens), 0),)))
        prefill *= -(-self.isl // self.max_tokens)
        ctx = self.concurrency * (self.isl + self.osl / 2)
        decode = float(self.model.decode_times(self.concurrency, np.array([ctx]))[0])
        return prefill + self.osl * decode

    def run(self, per_client: int = 4, stagger: bool = True) -> LoopResult:
        """Serve ``per_client`` requests per client; means over the measured ones."""
        self._limit = per_client * self.concurrency
        gap = self._cycle_estimate() / self.concurrency if stagger else 0.0
        self.arrivals = deque(i * gap for i in range(self.concurrency))
        while len(self.finished) < self._limit:
            self._arrive()
            if not self.running and not self.waiting:
                self.now = self.arrivals[0]
                continue
            if not self._fast_forward():
                self._step()
        measured = self.finished
        if stagger:
            measured = [r for r in self.finished if r.order >= self.concurrency]
        ttft = np.array([r.first_token - r.arrival for r in measured])
        tpot = np.array([(r.finish - r.first_token) / max(r.osl - 1, 1) for r in measured])
        return LoopResult(
            float(ttft.mean()),
            float(tpot.mean()),
            len(measured),
            self.preemptions,
            self.now,
            ttft,
            tpot,
        )

    # ------------------------------------------------------------------ one iteration

    def _step(self) -> None:
        decodes = self._make_room()
        free = self.free - len(decodes)
        budget = self.max_tokens - len(decodes)
        chunks: list[tuple[_Req, int]] = []
        for r in self.running:
            c = min(r.target - r.done, budget, free)
            if r.done < r.target and c > 0:
                chunks.append((r, c))
                budget, free = budget - c, free - c
        self._admit(chunks, budget, free)
        if not decodes and not chunks:  # KV full of half-prefilled requests: free one
            self._preempt()
            return
        context = sum(r.kv for r in decodes)
        shape = StepShape(tuple((c, r.done) for r, c in chunks), len(decodes), context)
        self.now += self.model.step_time(shape)
        for r in decodes:
            r.kv += 1
            self._emit(r)
        for r, c in chunks:
            r.done += c
            r.kv += c
            if r.done == r.target:
                self._emit(r)
        self._retire()

    def _make_room(self) -> list[_Req]:
        """Preempt newest-first until this iteration's decode tokens fit; the decoders."""
        while True:
            decodes = [r for r in self.running if r.done == r.target]
            if not self.running or self.free >= len(decodes):
                return decodes
            self._preempt()

    def _preempt(self) -> None:
        """Free the newest running request's KV; it recomputes later from the queue's head."""
        victim = self.running.pop()
        victim.kv, victim.done = 0, 0
        victim.target = victim.isl + victim.generated
        self.waiting.appendleft(victim)
        self.preemptions += 1

    def _admit(self, chunks: list, budget: int, free: int) -> None:
        while self.waiting and budget > 0 and len(self.running) < self.max_seqs:
            r = self.waiting[0]
            c = min(r.target, budget)
            if free - c < self.watermark:
                break
            self.waiting.popleft()
            self.running.append(r)
            chunks.append((r, c))
            budget, free = budget - c, free - c

    def _emit(self, r: _Req) -> None:
        r.generated += 1
        if r.first_token is None:
            r.first_token = self.now
        if r.generated >= r.osl:
            r.finish = self.now

    def _retire(self) -> None:
        done = [r for r in self.running if r.finish is not None]
        if not done:
            return
        self.running = [r for r in self.running if r.finish is None]
        for r in done:
            self.finished.append(r)
            if self.issued < self._limit:
                self._issue()

    # ------------------------------------------------------------------ fast-forward

    def _can_admit(self) -> bool:
        if not self.waiting or len(self.running) >= self.max_seqs:
            return False
        first = min(self.waiting[0].target, self.max_tokens - len(self.running))
        return first > 0 and self.free - first >= self.watermark

    def _fast_forward(self) -> bool:
        """Run k >= 2 pure-decode iterations at once when nothing can change; False if not."""
        n = len(self.running)
        if n == 0 or any(r.done < r.target for r in self.running) or self._can_admit():
            return False
        k = min(min(r.osl - r.generated for r in self.running), self.free // n)
        if k < 2:
            return False
        k -= 1  # the last of them runs through _step, which retires finished requests
        ctx0 = sum(r.kv for r in self.running)
        times = self.model.decode_times(n, ctx0 + n * np.arange(k, dtype=np.float64))
        if self.arrivals:  # stop at the iteration during which the next client starts
            ends = self.now + np.cumsum(times)
            k = min(k, int(np.searchsorted(ends, self.arrivals[0])) + 1)
            times = times[:k]
        self.now += float(np.sum(times))
        for r in self.running:
            r.kv += k
            r.generated += k
        return True

"""Speculative decoding on a replica: a draft proposes ``k`` tokens, the target verifies them in
one step, and each decoder emits 1 to ``k + 1`` tokens per step.

Model:

- Acceptance: position ``j`` (1..k) of a draft is accepted with probability ``a_j`` given the
  ones before it were (``acceptance``: one rate for every position, or one per position; a trace
  column ``spec_acceptance`` overrides it per request with one constant rate). A step emits the
  accepted draft tokens plus the target's own next token, so the expected tokens per step are
  ``sum_{i=0..k} prod_{j<=i} a_j`` (``(1 - a^(k+1)) / (1 - a)`` for a constant rate).
- Draws are per request from its own generator (the scenario seed, the tier and the request's
  key: its trace ``request_id``, else its row), so a run is reproducible, independent of event
  order and of which other requests are served (a response cache's hits, a window).
- Cost (:class:`SpecStepModel`): the verify step is the target's step with ``k + 1`` tokens per
  decoder (the decode table at ``n (k + 1)`` rows, the same KV read); the draft adds ``k`` decode
  steps of the draft model (its own step times, same batch and context; the first of them also
  runs the step's prefill chunks, which the draft needs in its KV cache) or, for a draft head
  (EAGLE, MTP), ``k x head_cost`` of one target decode step.
- Scheduling (:class:`SpecScheduler`): vLLM v1's loop with each decoder taking ``k + 1`` tokens
  of the step's budget and KV slots for them (rejected slots are reused); the budget must cover
  ``max_num_seqs x (k + 1)``. Decoders advance by different, random amounts, so this scheduler
  keeps them one by one and plans one iteration at a time (there is no decode stretch to
  fast-forward; per-iteration and fast-forward runs are the same code path).
"""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass, field

import numpy as np

from tiersim.engine.request import DECODE, WAITING, Req, SchedulerLimits, longest_sequence
from tiersim.engine.scheduler import ReplicaQueues, StepPlan
from tiersim.perf.base import StepShape


@dataclass(frozen=True)
class SpecDecoding:
    """Speculative decoding settings of one tier.

    ``k``: draft tokens per step; ``acceptance``: one rate, or one per draft position;
    ``draft_model``: the draft's step-time model (None: a draft head costing ``head_cost`` of a
    target decode step per drafted token); ``seed``: base of the per-request draws.
    """

    k: int
    acceptance: tuple[float, ...]
    draft_model: object | None = None
    head_cost: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ValueError(f"speculative k must be >= 1 (got {self.k})")
        if len(self.acceptance) not in (1, self.k):
            raise ValueError(f"speculative acceptance needs 1 or k={self.k} rates "
                             f"(got {len(self.acceptance)})")
        if not all(0.0 <= a <= 1.0 for a in self.acceptance):
            raise ValueError("speculative acceptance rates must be in [0, 1]")
        if self.head_cost < 0:
            raise ValueError("speculative head_cost must be >= 0")

    def rates(self, override: float | None = None) -> list[float]:
        """Acceptance rate of each draft position (``override``: one rate for all)."""
        if override is not None and not np.isnan(override):
            return [float(override)] * self.k
        return list(self.acceptance) * (self.k if len(self.acceptance) == 1 else 1)

    def expected_tokens(self, override: float | None = None) -> float:
        """Expected tokens emitted per verify step: ``sum_i prod_{j<=i} a_j`` (i = 0..k)."""
        total, p = 1.0, 1.0
        for a in self.rates(override):
            p *= a
            total += p
        return total


def draw_tokens(rng: random.Random, rates: list[float]) -> int:
    """Tokens one verify step emits: the accepted draft prefix plus the target's token."""
    n = 0
    for a in rates:
        if rng.random() >= a:
            break
        n += 1
    return n + 1


KEY_SPAN = 10_000_019
"""Request keys ``0 <= key < KEY_SPAN`` seed their draws with one integer per (seed, tier, key),
``(seed x 1,000,003 + tier) x KEY_SPAN + key``; other keys with a string of the three."""


def request_rng(seed: int, tier: int, idx: int) -> random.Random:
    """The per-request generator of acceptance draws (reproducible, order independent);
    ``tier`` is the tier's :func:`tier_key`, ``idx`` the request's key (its trace
    ``request_id``, any int64, else its row).

    Within a run (one seed) no two (tier, key) pairs share a generator. A key in
    ``[0, KEY_SPAN)`` seeds it with the integer it always has (so every run of such keys draws
    what it drew before); the integer alone was not one-to-one beyond that range: key
    ``KEY_SPAN + i`` on tier ``t`` seeded what key ``i`` seeds on tier ``t + 1``, and
    ``random.Random`` seeds a negative integer as its absolute value. Any other key seeds it
    with the text ``"tiersim-spec:{seed}:{tier}:{key}"``, which ``random.Random`` turns into
    the text's bytes followed by their SHA-512 (deterministic, whatever ``PYTHONHASHSEED``):
    one-to-one, and above 2**580, beyond every integer the first rule gives (under 2**110 for
    seeds up to 2**63)."""
    if 0 <= idx < KEY_SPAN:
        return random.Random((seed * 1_000_003 + tier) * KEY_SPAN + idx)
    return random.Random(f"tiersim-spec:{seed}:{tier}:{idx}")


def tier_key(name: str) -> int:
    """A tier's key in its acceptance draws: from its name, so the same tier draws the same
    tokens wherever the scenario lists it."""
    return zlib.crc32(name.encode("utf-8"))


@dataclass
class SpecStepModel:
    """The target's step model with speculative decoding's verify and draft costs added."""

    target: object
    spec: SpecDecoding
    source: str = ""
    _sources: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.source = getattr(self.target, "source", "") + f" + speculative k={self.spec.k}"

    def _draft(self, n: int, ctx: np.ndarray) -> np.ndarray:
        k = self.spec.k
        if self.spec.draft_model is not None:
            return k * self.spec.draft_model.decode_times(n, ctx)
        return k * self.spec.head_cost * self.target.decode_times(n, ctx)

    def step_time(self, shape: StepShape) -> float:
        """A step whose decoders each verify ``k + 1`` tokens, plus their draft. A draft model
        also runs over the step's prefill chunks (it needs the prompt in its own KV cache), in
        its first proposal step; a draft head's prompt pass is not counted."""
        n = shape.decode_seqs
        verify = StepShape(shape.prefill_chunks, n * (self.spec.k + 1), shape.decode_context)
        if not shape.prefill_chunks:
            return float(self.decode_times(n, np.array([shape.decode_context]))[0])
        t = self.target.step_time(verify)
        ctx = np.array([shape.decode_context], dtype=np.float64)
        draft = self.spec.draft_model
        if draft is not None:
            t += draft.step_time(shape)  # the chunks and the first proposal of each decoder
            if n:
                t += (self.spec.k - 1) * float(draft.decode_times(n, ctx)[0])
        elif n:
            t += float(self._draft(n, ctx)[0])
        return t

    def decode_times(self, decode_seqs: int, decode_context: np.ndarray) -> np.ndarray:
        """Verify-and-draft steps of ``decode_seqs`` decoders (vectorised over contexts)."""
        ctx = np.asarray(decode_context, dtype=np.float64)
        verify = self.target.decode_times(decode_seqs * (self.spec.k + 1), ctx)
        return verify + self._draft(decode_seqs, ctx)

    def sources(self) -> dict[str, str]:
        """The target's operator sources."""
        return self.target.sources() if hasattr(self.target, "sources") else {}


@dataclass(frozen=True)
class SpecStats:
    """A speculative tier's realised draws, summed over its replicas: ``verify_steps`` decoder
    verify steps, ``tokens`` the tokens their draws gave (the accepted drafts plus the target's
    own token; counted as vLLM's metrics count them, before a request's last step is cut to its
    output length), ``expected`` the formula's expected tokens
    (:meth:`SpecDecoding.expected_tokens`, at each step's own rates) summed over the same steps,
    and ``k`` the draft tokens per step."""

    k: int
    verify_steps: int
    tokens: int
    expected: float

    @property
    def tokens_per_step(self) -> float | None:
        """Tokens the draws gave per verify step (vLLM's mean acceptance length); None with no
        step."""
        return self.tokens / self.verify_steps if self.verify_steps else None

    @property
    def expected_per_step(self) -> float | None:
        """The formula's expected tokens per verify step over the same steps."""
        return self.expected / self.verify_steps if self.verify_steps else None

    @property
    def draft_acceptance(self) -> float | None:
        """Accepted over drafted tokens (vLLM's acceptance rate): each step emits its accepted
        drafts plus the target's own token, and drafts ``k``."""
        if not self.verify_steps:
            return None
        return (self.tokens - self.verify_steps) / (self.k * self.verify_steps)


class SpecScheduler(ReplicaQueues):
    """vLLM v1's scheduling loop with speculative decoders, one request at a time (the same
    contract as :class:`tiersim.engine.scheduler.ReplicaScheduler`: ``schedule`` then
    ``complete``)."""

    def __init__(self, limits: SchedulerLimits, num_blocks: int, spec: SpecDecoding,
                 hash_block_tokens: int = 512, tier: int = 0, accept: np.ndarray | None = None,
                 keys: np.ndarray | None = None):
        if limits.max_num_batched_tokens < limits.max_num_seqs * (spec.k + 1):
            raise ValueError(
                f"speculative k={spec.k}: max_num_batched_tokens "
                f"({limits.max_num_batched_tokens}) must be >= max_num_seqs x (k + 1) "
                f"({limits.max_num_seqs * (spec.k + 1)}) so every decoder verifies each step")
        super().__init__(limits, num_blocks, hash_block_tokens)
        self.spec, self.tier, self.accept, self.keys = spec, tier, accept, keys
        self.verify_steps = 0  # decoder-steps verified (tokens per step = spec_drawn / this)
        self.spec_tokens = 0  # tokens those steps emitted
        self.spec_drawn = 0  # tokens their draws gave (before a last step is cut to the output)
        self.spec_expected = 0.0  # the formula's expected tokens, summed over those steps
        self._expected = spec.expected_tokens() if accept is None else None
        self._rng: dict[int, random.Random] = {}
        self._decoders: list[Req] = []  # the planned step's decoders
        self._preempted = False  # the step being planned preempted a request

    # ---- queries -------------------------------------------------------------------------
    def fits(self, prompt: int, output: int) -> bool:
        """Whether a request (with its draft slots) can ever run here alone, within the
        model's context."""
        if self.too_long(prompt, output):
            return False
        return prompt + output <= longest_sequence(self.limits, self.num_blocks, self.spec.k)

    def cached_tokens(self, req: Req) -> int:
        """Prompt tokens of ``req`` this replica's prefix cache holds now."""
        return self.cache.cached_tokens(req) if self.cache is not None else 0

    # ---- the contract --------------------------------------------------------------------
    def add(self, req: Req) -> bool:
        """Queue a request; False if it can never fit in this replica."""
        if not self.fits(req.prompt, req.output):
            return False
        self._queue(req)
        self.outstanding += req.prompt + req.output - 1
        return True

    def schedule(self, now: float, max_k: int = 1) -> StepPlan:
        """Plan the next iteration (always one: decoders advance by random amounts)."""
        budget, chunks, decs = self.limits.max_num_batched_tokens, [], []
        self._preempted = False
        for req in list(self.running):
            if req not in self.running or budget <= 0:
                break  # preempted as a newer request's victim, or no budget left
            decoding = req.state == DECODE
            n = self.spec.k + 1 if decoding else min(req.tokens - req.computed, budget)
            if not self._make_room(req, req.computed + n, n):
                break
            if decoding:
                decs.append(req)
            else:
                if self.cache is not None:
                    self.cache.fill(req, req.computed + n, now)
                chunks.append((req, n))
            budget -= n
        if not self._preempted:
            self._admit(now, budget, chunks)
        moved = self.cache.take_transfer() if self.cache is not None else 0.0
        self._decoders = decs
        return StepPlan(self.it, 1, len(decs), sum(r.computed + 1 for r in decs), chunks,
                        transfer_s=moved)

    def complete(self, plan: StepPlan, k: int, t_end: float, dt: float) -> list[Req]:
        """Apply the planned iteration: draws each decoder's tokens, advances the prefills."""
        decs, finished = self._decoders, []
        # the step holds every block planned for it until its finished requests free theirs
        self.peak_blocks = max(self.peak_blocks, self.num_blocks - self.free)
        n_tok = (self.spec.k + 1) * len(decs) + sum(c for _, c in plan.chunks)
        for req in decs:
            req.gpu_s += dt * (self.spec.k + 1) / n_tok
            drawn = self._draw(req)
            m = min(drawn, req.output - req.n_out)
            self.verify_steps += 1
            self.spec_tokens += m
            self.spec_drawn += drawn
            self.spec_expected += (self._expected if self._expected is not None
                                   else self.spec.expected_tokens(float(self.accept[req.idx])))
            req.n_out += m
            req.tokens += m
            req.computed += m
            self.outstanding -= m
            if req.n_out >= req.output:
                self._rng.pop(req.idx, None)  # draws no more here: a generator is ~3 kB
                self._finish(req, t_end, finished)
        for req, c in plan.chunks:
            req.gpu_s += dt * c / n_tok
            req.computed += c
            self.outstanding -= c
            if self.limits.window:
                self._release_excess(req)
            if req.computed < req.tokens:
                continue
            req.n_out += 1
            req.tokens += 1
            if req.first_token is None:
                req.first_token = t_end
            req.state = DECODE
            if req.n_out >= req.output:
                self._finish(req, t_end, finished)
        self.it += 1
        return finished

    # ---- internals -----------------------------------------------------------------------
    def _draw(self, req: Req) -> int:
        rng = self._rng.get(req.idx)
        if rng is None:
            key = req.idx if self.keys is None else int(self.keys[req.idx])
            rng = self._rng[req.idx] = request_rng(self.spec.seed, self.tier, key)
        override = None if self.accept is None else float(self.accept[req.idx])
        return draw_tokens(rng, self.spec.rates(override))

    def _make_room(self, req: Req, upto: int, new: int) -> bool:
        """Blocks for ``req``'s first ``upto`` tokens, ``new`` of them computed in this step,
        preempting the newest running requests while they are short; False if ``req`` itself
        was preempted."""
        need = self.blocks_for(upto, new) - req.blocks
        while need > self.free:
            victim = next(reversed(self.running))
            self._preempt(victim)
            self._preempted = True
            if victim is req:
                return False
        if need > 0:
            self._take(need)
            req.blocks += need
        return True

    def _admit(self, now: float, budget: int, chunks: list[tuple[Req, int]]) -> None:
        max_seqs = self.limits.max_num_seqs
        while self.waiting and budget > 0 and len(self.running) < max_seqs:
            head = self.waiting[0]
            chunk = self._admit_head(now, budget)
            if not chunk:
                break
            chunks.append((head, chunk))
            budget -= chunk

    def _preempt(self, req: Req) -> None:
        self._release(req, park=True)
        self.outstanding += req.computed
        req.computed = 0
        req.state = WAITING
        req.preemptions += 1
        del self.running[req]
        self.waiting.appendleft(req)

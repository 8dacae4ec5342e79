"""An exact-match response cache in front of the router, keyed by a prompt hash.

A request whose key is in the cache is answered from it: it costs ``lookup_s`` of latency and
no GPU time, and never reaches the router or the fleet. Two kinds:

- ``top_n``: the ``size`` most frequent keys of the trace (ties: first seen), answered from the
  start (a cache filled offline from the logs, the way operators serve their top prompts);
- ``lru``: ``size`` entries, least recently used evicted; a key enters when its first request
  arrives (so a repeat arriving before the first answer is done is counted a hit: the answer is
  shared, as a request-coalescing front end does, and the repeat waits for it: its latency is
  the first answer's remaining time, never less than ``lookup_s``).

Keys: the trace's ``prompt_hash`` column (``key``; a row whose value is null or NaN is a prompt
of its own: never a hit, never cached); else, for a trace with ``prefix_hashes``
(Mooncake), the hash of the whole block list plus the input length (the same prompt), only
where the list covers the whole prompt (one id per 512 tokens: ``ceil(input_tokens / 512)``
ids); a row with fewer, ``[]`` included, has no key (its ids, if any, name a shared prefix,
not the prompt): never a hit, never cached; else the
seeded popularity generator (``popularity``): prompt ranks drawn Zipf-like, P(rank r) proportional
to ``r ** -exponent`` over ``distinct`` prompts. Token lengths stay the trace's (they matter only
for misses). A cached answer is scored as correct as the served one would be (not counted in
the run's accuracy, which covers served requests).
"""

from __future__ import annotations

import hashlib
import warnings
from collections import OrderedDict
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tiersim.errors import Note, ScenarioError
from tiersim.metrics import percentile
from tiersim.results import ResponseCacheResult
from tiersim.text_columns import row_values
from tiersim.trace.canonical import HASH_BLOCK_TOKENS
from tiersim.trace.formats import FORMATS, KNOWN, shown_name


class PopularityConfig(BaseModel):
    """Generated prompt keys: ``distinct`` prompts with Zipf-like popularity ``exponent``."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    distinct: int = Field(ge=1, le=10_000_000)  # 10^8 built 2.5 GB of weights
    exponent: float = Field(1.0, ge=0, le=10)


class ResponseCacheConfig(BaseModel):
    """``router.response_cache``: the cache in front of the router (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    mode: Literal["top_n", "lru"] = "top_n"
    size: int = Field(ge=1, le=100_000_000)
    lookup_s: float = Field(0.005, ge=0, le=60)
    key: str = "prompt_hash"
    popularity: PopularityConfig | None = None

    @field_validator("key")
    @classmethod
    def _a_prompt_key(cls, value: str) -> str:
        """A key column names the prompt; a time or a token count does not (requests of the
        same length would count as one prompt)."""
        if value in NOT_KEYS:
            raise ValueError(f"{value!r} is not a prompt key (requests with the same value "
                             "are not the same prompt); name a column of prompt hashes, or "
                             "set popularity: {distinct: N}")
        return value

    @model_validator(mode="after")
    def _one_key_source(self) -> ResponseCacheConfig:
        """Generated keys replace the trace's: a ``key:`` set beside ``popularity:`` would be
        silently unused, so the two are refused together."""
        if self.popularity is not None and "key" in self.model_fields_set:
            raise ValueError("key and popularity both choose the keys (popularity generates "
                             "them, so key would be unused); drop one of them")
        return self


PROMPT_COLUMNS = ("prompt", "prompt_hash", "prefix_hashes")
"""The columns tiersim reads by name that say which prompt a request sent."""

NOT_KEYS = frozenset({*(c for c in KNOWN if c not in PROMPT_COLUMNS),
                      *(c for f in FORMATS.values() for c in f.required), "Total tokens"})
"""Trace columns that say nothing about which prompt a request sent: every column tiersim
reads by name but the prompt's own (:data:`PROMPT_COLUMNS`): the core columns, a session's
task, step, parent and tool time, a step or task type, a subject, a difficulty (``key:
task_type`` answered every request of a type from the first one's answer, ``key: tool_s``
every step of one tool time: 49 of 50 requests), and each format's times and token counts
(BurstGPT's total too), which a logged trace carries when ``key:`` names them (``key:
ContextTokens`` on an Azure trace answered every request of a length from the first one's
answer: a hit rate of 100%)."""


def keys(df: pd.DataFrame, cfg: ResponseCacheConfig, rng: np.random.Generator,
         source: str = "scenario") -> tuple[np.ndarray, str]:
    """One key per row and where the keys come from, in words."""
    if cfg.popularity is not None:
        p = cfg.popularity
        weights = np.arange(1, p.distinct + 1, dtype=np.float64) ** -p.exponent
        drawn = rng.choice(p.distinct, size=len(df), p=weights / weights.sum())
        return drawn.astype(np.int64), (f"generated: {p.distinct} distinct prompts, Zipf "
                                        f"exponent {p.exponent:g}")
    if cfg.key in df.columns:
        found = row_values(df[cfg.key])  # a prompt column: references, not a copy a row
        _one_value_each(found, cfg.key, source)
        if cfg.key == "prompt":  # the trace reader keeps a missing prompt as no text ("")
            found = np.where(found == "", None, found)
        none = int(missing(found).sum())
        without = f" ({none:,} rows without one: never a hit)" if none else ""
        return found, f"trace column {cfg.key}{without}"
    if "key" in cfg.model_fields_set:  # a named column the trace lacks: no silent stand-in
        raise ScenarioError(source, "router.response_cache.key", f"the trace has no "
                            f"{shown_name(cfg.key)} column; name one it has, or drop key: to use "
                            "prompt_hash / prefix_hashes")
    if "prefix_hashes" in df.columns:
        whole = whole_prompt_keys(df["prefix_hashes"], df["input_tokens"].to_numpy())
        none = int(missing(whole).sum())
        without = (f" ({none:,} rows whose ids do not cover the whole prompt: never a hit)"
                   if none else "")
        return whole, f"prefix_hashes (whole prompt) + input length{without}"
    raise ScenarioError(source, "router.response_cache", f"the trace has no {cfg.key!r} or "
                        "prefix_hashes column; add one or set popularity: {distinct: N}")


def _one_value_each(found: np.ndarray, column: str, source: str) -> None:
    """Refuse a key column holding a list or an object (a JSON array or object, a Parquet list
    or struct): no such cell is a prompt's key (nor can it be looked up). ``prompt_hash`` is
    refused when the trace is read; another column named by ``key:`` is refused here."""
    if found.dtype != object:
        return
    many = (list, tuple, dict, set, np.ndarray)
    i = next((i for i, v in enumerate(found) if isinstance(v, many)), None)
    if i is not None:
        kind = "an object" if isinstance(found[i], dict) else "a list"
        raise ScenarioError(source, "router.response_cache.key", f"the trace's column "
                            f"{shown_name(column)} holds {kind} in request {i + 1:,}; name a "
                            "column of one number or text per row (the prompt's hash)")


def whole_prompt_keys(hashes, input_tokens: np.ndarray) -> np.ndarray:
    """A key per row from its block hash list plus its input length, or None (no key: never a
    hit, never cached) where the list does not cover the whole prompt (fewer ids than its
    ``ceil(input_tokens / 512)`` blocks, ``[]`` included): two prompts sharing their first
    blocks, or having none, are not the same prompt.

    The key is a 128-bit BLAKE2b digest of the ids and the length: Python's ``hash`` of the
    tuple it once was maps -1 and -2 alike (CPython's ``hash(-1) == hash(-2)``), so prompts
    ``[-1]`` and ``[-2]`` of one length shared one key, a hit for a prompt never sent."""
    blocks = -(-np.asarray(input_tokens, dtype=np.int64) // HASH_BLOCK_TOKENS)
    lengths = np.asarray(input_tokens, dtype=np.int64)
    out = np.empty(len(blocks), dtype=object)
    for i, (h, n) in enumerate(zip(hashes, blocks.tolist())):
        ids = np.asarray(h)
        if len(ids) >= n:
            digest = hashlib.blake2b(ids.astype(np.int64).tobytes(), digest_size=16)
            digest.update(lengths[i:i + 1].tobytes())
            out[i] = digest.digest()
        else:
            out[i] = None
    return out


RESPONSE_CACHE_STREAM = 11
"""Second seed word of the generator drawing response-cache keys (independent of the others)."""


def answered(scenario, df: pd.DataFrame, source: str) -> tuple[np.ndarray, str, np.ndarray]:
    """Which rows of a run's prepared table ``scenario``'s response cache answers, where its
    keys come from (the run and the planner both size the fleet for the rest), and for each
    row the row whose answer it shares (:func:`sources`)."""
    cfg = scenario.router.response_cache
    if "follows_id" in df.columns:
        raise ScenarioError(source, "router.response_cache", "a response cache cannot sit in "
                            "front of agent sessions (a hit would break a task's chain); drop "
                            "one of them")
    key_rng = np.random.default_rng([scenario.seed, RESPONSE_CACHE_STREAM])
    found, key_source = keys(df, cfg, key_rng, source)
    hit = hits(found, cfg)
    if cfg.mode == "top_n":
        _note_sent_once(found, hit, source)
    return hit, key_source, sources(found, cfg)


def _note_sent_once(key: np.ndarray, hit: np.ndarray, source: str) -> None:
    """A note when a ``top_n`` cache answers prompts the trace sends only once: filled from
    this very trace, it holds them because ``size`` exceeds the keys that repeat, and a
    cache filled from past logs would hold no answer to a prompt never sent again."""
    unknown = missing(key)
    # codes, not the keys: a Series of text keys was a copy of each row's text (twice)
    codes, _ = pd.factorize(key[~unknown], sort=False)
    counts = np.bincount(codes)
    once = hit.copy()
    once[~unknown] &= counts[codes] == 1
    n = int(once.sum())
    if not n:
        return
    repeats = int((counts > 1).sum())
    if repeats:
        keys_that = "key that repeats" if repeats == 1 else "keys that repeat"
        why = (f"size exceeds the {repeats:,} {keys_that}); set size to at most {repeats:,}, "
               "or use mode: lru")
    else:
        why = "no key repeats); use mode: lru, or drop the cache"
    warnings.warn(Note(
        f"{source}: router.response_cache: top_n answers {n:,} of {len(key):,} requests whose "
        f"prompt the trace sends only once, as if filled from this very trace ({why}"),
        stacklevel=3)


def last_answer_s(df: pd.DataFrame, hit: np.ndarray, lookup_s: float) -> float:
    """When the response cache gives its last answer (a hit ends at its arrival plus the
    lookup); 0 without hits. A run lasts at least until then (docs/metrics.md, duration), and
    the planner sizes and prices its fleets for that long too."""
    if not hit.any():
        return 0.0
    return float(df["arrival_s"].to_numpy(np.float64)[hit].max()) + lookup_s


def missing(key: np.ndarray) -> np.ndarray:
    """Which rows have no key (a null or NaN ``prompt_hash``): an unknown prompt, never a hit
    and never cached (rows without a hash are not one prompt)."""
    return np.asarray(pd.isna(key), dtype=bool)


def hits(key: np.ndarray, cfg: ResponseCacheConfig) -> np.ndarray:
    """Which rows (in arrival order) the cache answers; never a row without a key."""
    if cfg.mode == "top_n":
        unknown = missing(key)
        rows = np.flatnonzero(~unknown)
        # one group per key in order of first sight, so a stable sort on the count breaks
        # ties by first seen (vectorised: a look-up per key took 20 s for a million keys)
        codes, _ = pd.factorize(np.asarray(key)[rows], sort=False)
        counts = np.bincount(codes)
        top = np.argsort(-counts, kind="stable")[:cfg.size]
        out = np.zeros(len(key), dtype=bool)
        out[rows] = np.isin(codes, top)
        return out
    return sources(key, cfg) >= 0  # an LRU hit is a row with an answer to share


def sources(key: np.ndarray, cfg: ResponseCacheConfig) -> np.ndarray:
    """Per row, the row whose answer an ``lru`` hit shares (the miss that put its key in the
    cache); -1 for a miss and for every ``top_n`` row (filled offline, answered at once). A row
    without a key is a miss that puts nothing in the cache."""
    out = np.full(len(key), -1, dtype=np.int64)
    if cfg.mode == "top_n":
        return out
    cache: OrderedDict = OrderedDict()
    unknown = missing(key)
    for i, k in enumerate(key.tolist()):
        if unknown[i]:
            continue
        if k in cache:
            out[i] = cache[k]
            cache.move_to_end(k)
            continue
        cache[k] = i
        if len(cache) > cfg.size:
            cache.popitem(last=False)
    return out


def hit_latency(arrival: np.ndarray, hit: np.ndarray, source: np.ndarray, served_ttft,
                served_e2e, lookup_s: float) -> tuple[np.ndarray, np.ndarray]:
    """TTFT and end-to-end latency of each hit (in row order): ``lookup_s``, or, for a hit
    whose shared answer (``source``, a served miss) is still being generated when it arrives,
    the time until that answer's first token and its end (``served_*``: the misses' latencies
    in row order). A hit sharing the answer of a dropped miss (NaN) gets none: NaN, left out
    of the latency figures as a dropped request is."""
    rows = np.flatnonzero(hit)
    ttft, e2e = np.full(len(rows), lookup_s), np.full(len(rows), lookup_s)
    src = source[rows]
    shared = src >= 0
    if not shared.any():
        return ttft, e2e
    miss_rank = np.cumsum(~hit) - 1  # a miss's position among the served rows
    at = miss_rank[src[shared]]
    since = arrival[src[shared]] - arrival[rows[shared]]
    first = np.asarray(served_ttft, np.float64)[at] + since
    end = np.asarray(served_e2e, np.float64)[at] + since
    ttft[shared] = np.maximum(lookup_s, first)  # NaN stays NaN: no answer to share
    e2e[shared] = np.maximum(lookup_s, end)
    return ttft, e2e


def _mean(values: np.ndarray) -> float | None:
    values = values[np.isfinite(values)]
    return float(values.mean()) if len(values) else None


def cache_result(cfg: ResponseCacheConfig, key_source: str, hit: np.ndarray, served,
                 without, source: np.ndarray | None = None,
                 arrival: np.ndarray | None = None) -> ResponseCacheResult:
    """Compare the run with the cache (``served``: the RunResult of the misses, with its
    request table) against the run without it; both are ``(RunResult, requests table)``.
    ``source`` / ``arrival``: each row's shared answer and arrival time, for the hits that
    wait for an answer still being generated (:func:`hit_latency`)."""
    run, req = served
    base, base_req = without
    served_ttft, served_e2e = req["ttft_s"].to_numpy(np.float64), req["e2e_s"].to_numpy(
        np.float64)
    if source is None or arrival is None:
        source, arrival = np.full(len(hit), -1), np.zeros(len(hit))
    hit_ttft, hit_e2e = hit_latency(np.asarray(arrival, np.float64), hit, source, served_ttft,
                                    served_e2e, cfg.lookup_s)
    e2e = np.concatenate([served_e2e, hit_e2e])
    ttft = np.concatenate([served_ttft, hit_ttft])
    e2e0, ttft0 = base_req["e2e_s"].to_numpy(np.float64), base_req["ttft_s"].to_numpy(np.float64)
    cost = run.cost_usd
    cost0 = base.cost_usd
    unanswered = int(np.isnan(hit_ttft).sum())  # hits sharing the answer of a dropped request
    if unanswered:
        warnings.warn(Note(
            f"{unanswered:,} request(s) repeat the prompt of a request the fleet dropped: the "
            "response cache has no answer to give them, so they count as dropped, not as "
            "hits"), stacklevel=2)
    hits = int(hit.sum()) - unanswered
    return ResponseCacheResult(
        mode=cfg.mode, size=cfg.size, lookup_s=cfg.lookup_s, key_source=key_source,
        requests=len(hit), hits=hits, hit_rate=hits / len(hit) if len(hit) else 0.0,
        unanswered=unanswered,
        gpu_hours_busy=run.gpu_hours_busy, gpu_hours_busy_without=base.gpu_hours_busy,
        gpu_hours_saved=base.gpu_hours_busy - run.gpu_hours_busy,
        cost_usd=cost, cost_without_usd=cost0,
        cost_saved_usd=None if cost is None or cost0 is None else cost0 - cost,
        attributed_saved_usd=base.attributed_cost_usd - run.attributed_cost_usd,
        e2e_mean_s=_mean(e2e), e2e_mean_without_s=_mean(e2e0),
        e2e_p50_s=percentile(e2e, 50), e2e_p50_without_s=percentile(e2e0, 50),
        e2e_p99_s=percentile(e2e, 99), e2e_p99_without_s=percentile(e2e0, 99),
        ttft_p50_s=percentile(ttft, 50), ttft_p50_without_s=percentile(ttft0, 50),
    )

"""Prefill/decode disaggregation: a tier split into prefill replicas and decode replicas.

A request is prefilled on a prefill replica (which emits its first token, so TTFT ends there),
then its prompt's KV moves to a decode replica over a link: ``latency_s + prompt x
kv_bytes_per_token / bandwidth`` (per GPU: each GPU sends its own shard over its own link, in
parallel; transfers do not contend). The prefill replica keeps the request's KV blocks until
the transfer ends (vLLM's NixlConnector delays freeing them until the decode side has read
them: ``NixlConnectorScheduler.request_finished``'s ``delay_free_blocks``), so they occupy its
KV cache meanwhile. The decode replica admits it with the prompt's KV present:
its first step computes only the newest token, so the transfer delays the first decode, not
the first token. Prefill replicas keep the tier's prefix cache; decode replicas have none. A
decode replica that preempts a request recomputes its prompt there (as vLLM would).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Disagg:
    """How a tier is split: ``prefill`` + ``decode`` replicas (their sum is the tier's
    replicas) and the KV link between them (per GPU)."""

    prefill: int
    decode: int
    bandwidth_bytes_per_s: float
    latency_s: float = 0.0
    kv_bytes_per_token: float = 0.0
    state_bytes: float = 0.0  # a delta-net model's per-sequence state, moved with the KV

    def __post_init__(self) -> None:
        if self.prefill < 1 or self.decode < 1:
            raise ValueError(f"disaggregation needs >= 1 prefill and >= 1 decode replica "
                             f"(got {self.prefill} + {self.decode})")
        if self.bandwidth_bytes_per_s <= 0 or self.latency_s < 0:
            raise ValueError("disaggregation link: bandwidth must be > 0 and latency >= 0")

    def transfer_s(self, prompt_tokens: int) -> float:
        """Seconds to move a prompt's KV (and a delta-net model's recurrent state) from its
        prefill replica to a decode replica."""
        moved = prompt_tokens * self.kv_bytes_per_token + self.state_bytes
        return self.latency_s + moved / self.bandwidth_bytes_per_s

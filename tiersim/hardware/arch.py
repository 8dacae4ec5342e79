"""The architecture record of a decoder-only transformer and its parameter counts by group."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelArch:
    """A decoder-only transformer, dense or mixture-of-experts (every layer MoE).

    intermediate: dense MLP width (0 for an all-MoE model).
    num_experts / expert_intermediate / top_k: routed experts (0 for a dense model).
    tie_embeddings: ``lm_head`` shares the embedding matrix (stored once).
    qk_norm: per-head RMS norms on queries and keys (Qwen3).
    sliding_window / sliding_layers: how many layers attend only to the last
        ``sliding_window`` tokens (gpt-oss alternates them); 0 when all attention is full.
    source: "catalogue" or the config.json path it was read from.
    """

    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    intermediate: int = 0
    num_experts: int = 0
    expert_intermediate: int = 0
    top_k: int = 0
    tie_embeddings: bool = False
    qk_norm: bool = False
    sliding_window: int = 0
    sliding_layers: int = 0
    source: str = "catalogue"

    @property
    def is_moe(self) -> bool:
        """True when the MLPs are routed experts."""
        return self.num_experts > 0

    @property
    def q_dim(self) -> int:
        """Width of the query projection (heads x head_dim)."""
        return self.heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        """Width of the key (or value) projection (kv_heads x head_dim)."""
        return self.kv_heads * self.head_dim

    def attention_params_per_layer(self) -> int:
        """q, k, v and o projection weights of one layer."""
        return self.hidden * (self.q_dim + 2 * self.kv_dim) + self.q_dim * self.hidden

    def mlp_params_per_layer(self) -> int:
        """Dense gate, up and down projections of one layer (0 for MoE)."""
        return 3 * self.hidden * self.intermediate

    def expert_params_per_layer(self) -> int:
        """All routed experts of one layer (gate, up, down each)."""
        return self.num_experts * 3 * self.hidden * self.expert_intermediate

    def norm_params_per_layer(self) -> int:
        """The two RMS norms of a block, plus q/k norms where the model has them."""
        return 2 * self.hidden + (2 * self.head_dim if self.qk_norm else 0)

    def param_groups(self) -> dict[str, int]:
        """Parameter counts of the whole model by group (the groups precisions quantise)."""
        return {
            "embedding": self.vocab * self.hidden,
            "lm_head": 0 if self.tie_embeddings else self.vocab * self.hidden,
            "attention": self.layers * self.attention_params_per_layer(),
            "mlp": self.layers * self.mlp_params_per_layer(),
            "experts": self.layers * self.expert_params_per_layer(),
            "router": self.layers * self.hidden * self.num_experts,
            "norms": self.layers * self.norm_params_per_layer() + self.hidden,
        }

    @property
    def total_params(self) -> int:
        """All stored parameters."""
        return sum(self.param_groups().values())

    @property
    def active_params(self) -> int:
        """Parameters one token passes through (top-k experts only; embeddings counted once)."""
        groups = self.param_groups()
        experts = self.layers * self.top_k * 3 * self.hidden * self.expert_intermediate
        return self.total_params - groups["experts"] + experts

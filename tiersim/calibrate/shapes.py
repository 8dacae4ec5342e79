"""Model shapes the harness measures, with no dependency beyond the standard library.

The harness runs on a GPU machine that has torch and numpy but none of tiersim's other
dependencies, so it keeps its own small table of architectures (the numbers of each model's
Hugging Face ``config.json``) and reads any other model from a ``config.json`` path.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from tiersim.calibrate.errors import CalibrateError
from tiersim.errors import shown as _shown
from tiersim.errors import shown_json
from tiersim.hf_text import (
    ALIASES,
    GPT_OSS_TOP_K,
    MISTRAL_PARAMS,
    SUPPORTED_TYPES,
    TEXT_CONFIG_KEYS,
    class_defaults_left_out,
    defaults_note,
    holds_mistral_params,
    kv_heads_left_out,
    language_model_key,
    mistral_params_words,
    served_type,
    type_not_a_name,
)
from tiersim.jsonio import HF_BOM, read_json


@dataclass(frozen=True)
class ModelShapes:
    """The dimensions of a decoder-only transformer that fix its GEMM and attention shapes."""

    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    intermediate: int = 0  # dense FFN width; 0 when every layer is MoE
    num_experts: int = 0
    expert_intermediate: int = 0
    top_k: int = 0
    shared_intermediate: int = 0  # a MoE layer's shared expert's width (Qwen2-MoE); 0: none
    #: what reading the config took that the file does not say (a wrapper's class defaults);
    #: the profile's ``provenance.notes`` carries them
    notes: tuple[str, ...] = field(default=(), compare=False)

    @property
    def is_moe(self) -> bool:
        """True when the FFN of the model is a mixture of experts."""
        return self.num_experts > 0


BUILTIN: dict[str, ModelShapes] = {
    "qwen3-coder-30b-a3b": ModelShapes(
        "Qwen3-Coder-30B-A3B", layers=48, hidden=2048, heads=32, kv_heads=4, head_dim=128,
        vocab=151936, intermediate=0, num_experts=128, expert_intermediate=768, top_k=8,
    ),
    "llama-3.1-8b": ModelShapes(
        "Llama-3.1-8B", layers=32, hidden=4096, heads=32, kv_heads=8, head_dim=128,
        vocab=128256, intermediate=14336,
    ),
    # The two block-FP8 checkpoints of NVIDIA's vLLM silicon sample (their -FP8 names resolve
    # here too), so that a GPU run can time block-FP8 GEMMs at the shapes of those rows.
    "qwen3-235b-a22b": ModelShapes(
        "Qwen3-235B-A22B", layers=94, hidden=4096, heads=64, kv_heads=4, head_dim=128,
        vocab=151936, intermediate=0, num_experts=128, expert_intermediate=1536, top_k=8,
    ),
    "minimax-m2.5": ModelShapes(
        "MiniMax-M2.5", layers=62, hidden=3072, heads=48, kv_heads=8, head_dim=128,
        vocab=200064, intermediate=0, num_experts=256, expert_intermediate=1536, top_k=8,
    ),
    "llama-3.1-70b": ModelShapes(
        "Llama-3.1-70B", layers=80, hidden=8192, heads=64, kv_heads=8, head_dim=128,
        vocab=128256, intermediate=28672,
    ),
}

# Shapes for --quick: small enough that a CPU measures every table in seconds, yet with every
# feature the real models have (GQA, experts, top-k), so the same code paths run.
TINY = ModelShapes(
    "tiny", layers=2, hidden=256, heads=4, kv_heads=2, head_dim=64, vocab=1024,
    intermediate=0, num_experts=16, expert_intermediate=128, top_k=2,
)


def _normalise(name: str) -> str:
    """Lower-case a model name and drop an organisation prefix and an '-Instruct' suffix."""
    key = name.strip().lower().split("/")[-1]
    for suffix in ("-instruct", "-fp8", "-base"):
        key = key.removesuffix(suffix)
    return key


def resolve_model(name: str) -> ModelShapes:
    """Shapes of a built-in model by name (case-insensitive, 'Qwen/' and '-Instruct' optional)."""
    key = _normalise(name)
    if key == "tiny":
        return TINY
    if key not in BUILTIN:
        known = ", ".join(m.name for m in BUILTIN.values())
        raise CalibrateError(
            f"--model {_shown(name, 64)}: unknown model; use one of {known}, or --config "
            "path/to/config.json"
        )
    return BUILTIN[key]


# Largest value accepted for each size of a config.json: far above any released model, low
# enough that a typo (an extra digit) is refused instead of asking the device for terabytes.
LIMITS = {
    "hidden_size": 65536,
    "num_attention_heads": 1024,
    "num_key_value_heads": 1024,
    "head_dim": 1024,
    "num_hidden_layers": 1024,
    "vocab_size": 10_000_000,
    "intermediate_size": 262144,
    "moe_intermediate_size": 262144,
    "shared_expert_intermediate_size": 262144,
    "num_experts": 4096,
    "num_local_experts": 4096,
    "num_experts_per_tok": 4096,
    "experts_per_token": 4096,
}


def _get(cfg: dict, path: str, *keys: str, default: int | None = None,
         low: int = 1) -> int:
    """First of ``keys`` present in a config dict: a JSON integer (not true/false, not 2.5)
    from ``low`` to ``LIMITS[key]``; a one-line error naming the file and key otherwise, or if
    none is present and there is no ``default``."""
    for key in keys:
        value = cfg.get(key)
        if value is None:
            continue
        top = LIMITS[key]
        if type(value) is not int or not low <= value <= top:
            raise CalibrateError(f"{path}: {key} must be a whole number from {low} to {top} "
                                 f"(got {shown_json(value)}); fix it in the config.json")
        return value
    if default is not None:
        return default
    raise CalibrateError(f"{path}: missing {keys[0]!r}; add it to the config.json")


def _text_config(cfg: dict, path: str) -> tuple[dict, tuple[str, ...]]:
    """The language model's part of a config, as the simulator finds it
    (:func:`tiersim.hf_text.language_model_key`: a wrapper's ``text_config``, InternVL's
    ``llm_config``, DeepSeek-VL2's ``language_config``), with the transformers class defaults
    a sub-config written as a diff leaves out filled in, and a note naming them; a config
    read itself gets its type's ``num_key_value_heads`` default likewise
    (:func:`tiersim.hf_text.kv_heads_left_out`)."""
    key = language_model_key(cfg)
    if key is None:
        own = cfg.get("model_type")  # a wrapper whose only sub-config key holds no object
        if ALIASES.get(str(own), own) not in SUPPORTED_TYPES:  # (null is absent, as in
            for key in TEXT_CONFIG_KEYS:  # transformers and the simulator)
                if cfg.get(key) is not None:
                    raise CalibrateError(
                        f"{path}: {key} must be a JSON object of the language model's sizes "
                        f"(got {type(cfg[key]).__name__}); fix the config.json")
        missing = kv_heads_left_out(cfg)  # its type's number (Mixtral's 8), as the simulator
        cfg.update(missing)  # fills it (in place: the config is still the outer one)
        return cfg, (defaults_note(None, cfg.get("model_type"), missing),) if missing else ()
    inner = cfg[key]
    missing = class_defaults_left_out(inner)
    if not missing:
        return inner, ()
    return {**inner, **missing}, (defaults_note(key, inner.get("model_type"), missing),)


#: Architectures whose shapes :func:`from_config` reads right (MLA, linear attention, Mamba
#: and other layouts have keys it does not read, so their shapes would be wrong, not refused),
#: each also under the types the simulator reads as it (:func:`tiersim.hf_text.served_type`:
#: Qwen3-VL's ``qwen3_vl_text``, ``mimo``, ``phi3``, ``phimoe``, a flat ``qwen2_vl``).
HARNESS_TYPES = ("llama", "mistral", "qwen2", "qwen3", "qwen3_moe", "qwen2_moe", "mixtral",
                 "gpt_oss", "minimax_m2")


def _config_in(path: Path) -> Path:
    """``path``, or the ``config.json`` in it where it is a folder (one line where the folder
    holds none, as ``tiersim run`` says of a scenario's ``model:`` folder)."""
    if not path.is_dir():
        return path
    inside = path / "config.json"
    if not (inside.exists() or inside.is_symlink()):
        if holds_mistral_params(path):
            raise CalibrateError(f"{path}: a folder with no config.json in it; its "
                                 f"{mistral_params_words()}")
        raise CalibrateError(f"{path}: a folder with no config.json in it; give the model's "
                             "config.json or the folder holding it (Hugging Face's layout)")
    return inside


def from_config(path: str | Path, name: str | None = None) -> ModelShapes:
    """Shapes from a Hugging Face ``config.json`` of a :data:`HARNESS_TYPES` model (Llama /
    Qwen dense, Qwen3-MoE, Qwen2-MoE, Mixtral, gpt-oss, MiniMax-M2), read as the simulator
    reads the same file (:mod:`tiersim.hf_text`: a wrapper's language model, type aliases).

    Every size must be a JSON integer within ``LIMITS``; the heads must split into whole KV
    groups and whole head widths, and top-k must not exceed the experts (one line otherwise).
    ``path`` may be the folder holding the ``config.json`` (Hugging Face's layout), as a
    scenario's ``model:`` may: ``--config Llama-3.1-8B/`` read 'not a regular file; a
    config.json is a JSON file'.
    """
    p = _config_in(Path(path))
    cfg = read_json(p, "a config.json", CalibrateError, bom=HF_BOM,  # regular file, size cap
                    floats_as_written=True)  # a refused 1e308 quoted so, not as 1e+308
    if not isinstance(cfg, dict):
        raise CalibrateError(f"{p}: not a JSON object; pass a config.json")
    where = str(p)
    if p.name == MISTRAL_PARAMS and "model_type" not in cfg:
        raise CalibrateError(f"{where}: {mistral_params_words()}")
    outer = cfg
    bad = type_not_a_name(cfg)  # as the simulator, and transformers' AutoConfig, refuse it
    if bad is not None:
        raise CalibrateError(f"{where}: key '{bad[0]}': must be a name such as 'llama' "
                             f"(got {shown_json(bad[1])}); fix the config.json")
    cfg, notes = _text_config(cfg, where)
    kind = cfg.get("model_type")
    if served_type(cfg, cfg is outer) not in HARNESS_TYPES:  # an alias as the simulator reads it
        shown = "no model_type" if kind is None else f"model_type {kind!r}"
        if cfg is not outer:  # a wrapper: its own type, and the key path of the inner one
            inner = "missing" if kind is None else repr(kind)
            shown = (f"model_type {outer.get('model_type')!r} (key "
                     f"'{language_model_key(outer)}.model_type': {inner})")
        raise CalibrateError(f"{where}: {shown}: the harness measures the shapes of "
                             f"{', '.join(HARNESS_TYPES)} models (dense attention, a dense or "
                             "Qwen3-style MoE FFN); pass one of those, or --model")
    hidden = _get(cfg, where, "hidden_size")
    heads = _get(cfg, where, "num_attention_heads")
    kv_heads = _get(cfg, where, "num_key_value_heads", default=heads)
    if heads % kv_heads:
        raise CalibrateError(f"{where}: num_key_value_heads {kv_heads} does not divide "
                             f"num_attention_heads {heads}; fix the config.json")
    if cfg.get("head_dim") is None and hidden % heads:
        raise CalibrateError(f"{where}: hidden_size {hidden} is not a multiple of "
                             f"num_attention_heads {heads}; add head_dim to the config.json")
    kind = served_type(cfg, cfg is outer)
    if kind == "gpt_oss" and cfg.get("head_dim") is None:  # GptOssConfig's default is 64,
        raise CalibrateError(f"{where}: missing 'head_dim'; add it to the config.json")  # not h/n
    head_dim = _get(cfg, where, "head_dim", default=hidden // heads)
    experts, top_k, expert_inter, inter = _ffn(cfg, where, kind)
    shared = 0  # Qwen2-MoE's shared expert: its width required, as the simulator requires it
    if kind == "qwen2_moe":  # (0: none; left out, transformers would build one of 5632)
        shared = _get(cfg, where, "shared_expert_intermediate_size", low=0)
    given = outer.get("_name_or_path")  # a wrapper's own, not its language model's base
    return ModelShapes(
        name=name or (given if isinstance(given, str) and given.strip() else None)
        or (p.parent.name if p.name == "config.json" and p.parent.name  # as tiersim run
            else p.stem),  # names it; --config . or config.json: 'config', not ''
        layers=_get(cfg, where, "num_hidden_layers"),
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        vocab=_get(cfg, where, "vocab_size"),
        intermediate=0 if experts else inter,
        num_experts=experts,
        expert_intermediate=expert_inter,
        top_k=top_k,
        shared_intermediate=shared,
        notes=notes,
    )


#: The keys of the experts' count and width each MoE type is read by, as the simulator
#: (:mod:`tiersim.hardware.hf_config`) and vLLM's model of that type read them: a key of
#: another type's beside them (Mixtral's ``num_experts``, a ``moe_intermediate_size``) is not
#: read, and a dense type's FFN is dense whatever expert keys it carries.
MOE_KEYS = {"qwen3_moe": ("num_experts", "moe_intermediate_size"),
            "qwen2_moe": ("num_experts", "moe_intermediate_size"),
            "mixtral": ("num_local_experts", "intermediate_size"),
            "minimax_m2": ("num_local_experts", "intermediate_size"),
            "gpt_oss": ("num_local_experts", "intermediate_size")}


def _ffn(cfg: dict, where: str, kind: str) -> tuple[int, int, int, int]:
    """(experts, top-k, expert width, dense width) of a config read as type ``kind``, each
    from the key the simulator reads for that type (:data:`MOE_KEYS`) and required where it
    requires it: left out, transformers would build the model with its class default (a
    Qwen3-MoE of 128 experts of 768, not a dense one), so none is guessed."""
    if kind not in MOE_KEYS:
        return 0, 0, 0, _get(cfg, where, "intermediate_size")  # a dense model's FFN width
    count, width = MOE_KEYS[kind]
    experts = _get(cfg, where, count)
    top_k, key = _top_k(cfg, where, kind)
    if top_k > experts:
        raise CalibrateError(f"{where}: {key} {top_k} is more than the {experts} experts; "
                             f"fix the config.json")
    return experts, top_k, _get(cfg, where, width), 0


def _top_k(cfg: dict, where: str, kind: str) -> tuple[int, str]:
    """Experts per token and the key they came from, as vLLM reads them: ``num_experts_per_tok``;
    a gpt-oss config without it takes transformers' default (4), so OpenAI's
    ``experts_per_token`` alone is read only where it says the same (the simulator's rule)."""
    if kind != "gpt_oss" or cfg.get("num_experts_per_tok") is not None:
        return _get(cfg, where, "num_experts_per_tok"), "num_experts_per_tok"
    said = _get(cfg, where, "experts_per_token")
    if said != GPT_OSS_TOP_K:
        raise CalibrateError(
            f"{where}: missing 'num_experts_per_tok'; vLLM reads the experts per token from it "
            f"(transformers' default {GPT_OSS_TOP_K} where absent), not from experts_per_token "
            f"({said}): add it to the config.json")
    return said, "experts_per_token"


def shard(model: ModelShapes, tp: int) -> ModelShapes:
    """Per-GPU shapes under tensor parallelism ``tp`` (heads, widths and vocab split; KV heads
    split down to one per GPU, then replicated, as vLLM does)."""
    if tp < 1:
        raise CalibrateError(f"--tp {_shown(tp)}: must be >= 1")
    if tp == 1:
        return model
    for what, value in (("heads", model.heads), ("intermediate", model.intermediate),
                        ("expert_intermediate", model.expert_intermediate),
                        ("shared_intermediate", model.shared_intermediate)):
        if value % tp:
            raise CalibrateError(f"--tp {_shown(tp)}: {model.name} {what}={value} is not "
                                 "divisible; use a tp that divides it")
    return replace(
        model,
        heads=model.heads // tp,
        kv_heads=max(1, model.kv_heads // tp),
        vocab=-(-model.vocab // tp),
        intermediate=model.intermediate // tp,
        expert_intermediate=model.expert_intermediate // tp,
        shared_intermediate=model.shared_intermediate // tp,
    )


@dataclass(frozen=True)
class GemmShape:
    """One dense GEMM of a layer: out = x[m, k] @ W[n, k].T; ``layers`` names who uses it."""

    n: int
    k: int
    layers: tuple[str, ...]


def gemm_shapes(model: ModelShapes, tp: int = 1) -> list[GemmShape]:
    """The distinct (n, k) dense GEMMs one GPU runs for ``model`` at tensor parallelism ``tp``.

    Column-parallel layers (qkv, gate_up, lm_head) split n; row-parallel ones (o, down) split k.
    MoE expert GEMMs are not here: they are measured as a whole layer (see ``moe``).
    """
    s = shard(model, tp)
    named = [
        ("qkv", (s.heads + 2 * s.kv_heads) * s.head_dim, model.hidden),
        ("o", model.hidden, s.heads * s.head_dim),
        ("lm_head", s.vocab, model.hidden),
    ]
    if model.is_moe:
        named.append(("router", model.num_experts, model.hidden))
        if model.shared_intermediate:  # column- then row-parallel, as a dense MLP
            named += [("shared_gate_up", 2 * s.shared_intermediate, model.hidden),
                      ("shared_down", model.hidden, s.shared_intermediate)]
    else:
        named += [("gate_up", 2 * s.intermediate, model.hidden),
                  ("down", model.hidden, s.intermediate)]
    merged: dict[tuple[int, int], list[str]] = {}
    for layer, n, k in named:
        merged.setdefault((n, k), []).append(layer)
    return [GemmShape(n, k, tuple(layers)) for (n, k), layers in merged.items()]

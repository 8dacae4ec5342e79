"""Model architectures: the shapes that memory and step time are computed from.

The catalogue holds the models tiersim ships scenarios for; any other Llama/Qwen dense,
Qwen3-MoE or gpt-oss model can be named by its Hugging Face ``config.json``
(:mod:`tiersim.hardware.hf_config`). Shapes are taken from each model's published
``config.json`` on the Hugging Face Hub:

- Qwen/Qwen3-Coder-30B-A3B-Instruct (same shapes as Qwen3-30B-A3B): 48 layers, hidden 2048,
  32 query / 4 KV heads of 128 (with q/k RMS norms), 128 experts of intermediate 768, top-8,
  vocabulary 151,936, untied embeddings. 30.5 B parameters, 61.1 GB in BF16.
- meta-llama/Llama-3.1-8B: 32 layers, hidden 4096, 32/8 heads of 128, MLP 14,336, vocab 128,256.
- meta-llama/Llama-3.1-70B: 80 layers, hidden 8192, 64/8 heads of 128, MLP 28,672, vocab 128,256.

Context (``max_position_embeddings``): Qwen3-Coder-30B-A3B 262,144; Qwen3-30B-A3B 40,960 (the
2507 releases read 262,144: they are not catalogue names, so give their config.json); Llama-3.1
131,072.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tiersim.errors import TiersimError
from tiersim.hardware.arch import ModelArch
from tiersim.hardware.hf_config import load_hf_config
from tiersim.paths import LINK_TO_NOTHING, expand_user, leads_nowhere

__all__ = ["MODELS", "ModelArch", "catalogue_key", "get_model", "is_catalogue_name"]


_QWEN3_30B_A3B = ModelArch(
    name="Qwen3-Coder-30B-A3B",
    layers=48,
    hidden=2048,
    heads=32,
    kv_heads=4,
    head_dim=128,
    vocab=151936,
    num_experts=128,
    expert_intermediate=768,
    top_k=8,
    qk_norm=True,
    max_context=262144,
)

MODELS: dict[str, ModelArch] = {
    "qwen3-coder-30b-a3b": _QWEN3_30B_A3B,
    "qwen3-30b-a3b": dataclasses.replace(_QWEN3_30B_A3B, name="Qwen3-30B-A3B", max_context=40960),
    "llama-3.1-8b": ModelArch(
        name="Llama-3.1-8B",
        layers=32,
        hidden=4096,
        heads=32,
        kv_heads=8,
        head_dim=128,
        vocab=128256,
        intermediate=14336,
        max_context=131072,
    ),
    "llama-3.1-70b": ModelArch(
        name="Llama-3.1-70B",
        layers=80,
        hidden=8192,
        heads=64,
        kv_heads=8,
        head_dim=128,
        vocab=128256,
        intermediate=28672,
        max_context=131072,
    ),
}


MODEL_WANTED = "a catalogue model or the path of a Hugging Face config.json"
"""What a scenario's ``model`` (or ``draft_model``) names, as error lines say it."""


def catalogue_key(name: str) -> str:
    """Normalise a Hub-style name: drop the org, case, ``meta-`` and ``-instruct``."""
    key = name.strip().lower().rsplit("/", 1)[-1]
    return key.removeprefix("meta-").removesuffix("-instruct")


def is_catalogue_name(name: str) -> bool:
    """Whether :func:`get_model` reads ``name`` from the catalogue (not from a file)."""
    return not is_local_path(str(name)) and catalogue_key(str(name)) in MODELS


def _explicit_path(name: str) -> bool:
    """A name that can only be a path: absolute, from home (``~``), relative with ``./`` or
    ``../``, or ending in ``/`` (a Hub id such as ``Org/Name`` is none of these)."""
    text = name.strip()
    return (text.startswith(("/", "~", "./", "../", ".\\", "..\\")) or text.endswith("/")
            or (len(text) > 2 and text[1] == ":" and text[2] in "/\\"))


def is_local_path(name: str) -> bool:
    """A name written as a path (with a folder part, or ``~``/``.``) that is a file or a folder
    holding a ``config.json``: read as the config it points at, even where its last part is
    also a catalogue name (a local ``/models/Llama-3.1-8B`` is the user's checkpoint, not the
    catalogue's; an empty ``Org/Name`` folder does not hide the catalogue model)."""
    text = name.strip()
    written_as_path = "/" in text or "\\" in text or text.startswith(("~", "."))
    if not written_as_path:
        return False
    path = expand_user(text)
    return path.is_file() or (path / "config.json").is_file()


def _looks_like_path(name: str) -> bool:
    """A name that ends in .json (a blank after it too: its reader says the blank is the
    difference, where "unknown model 'c.json '" named none) or names an existing file or
    folder is a config path."""
    return name.rstrip().endswith(".json") or Path(name).exists()


def get_model(name_or_path: str | Path | ModelArch) -> ModelArch:
    """A catalogue model by name, or the model a Hugging Face ``config.json`` describes.

    Names are case-insensitive and may carry the Hub org and an ``-Instruct`` suffix
    ("Qwen/Qwen3-Coder-30B-A3B-Instruct"). A path may be the config file or its folder.
    """
    if isinstance(name_or_path, ModelArch):
        return name_or_path
    text = str(name_or_path)
    if not text.strip():
        raise TiersimError(f"model name is empty; name {MODEL_WANTED}")
    try:
        return _model_named(text, name_or_path)
    except OSError as err:  # a name the file system refuses to look up (one over 255 bytes)
        shown = text if len(text) <= 60 else f"{text[:57]}..."
        raise TiersimError(f"{shown!r} ({len(text):,} characters) is no catalogue model, and "
                           f"no file can have that name ({err.strerror}); name "
                           f"{MODEL_WANTED}") from None


def _model_named(text: str, name_or_path: str | Path) -> ModelArch:
    """:func:`get_model` of a non-empty name or path (an OSError where the file system refuses
    to look the name up)."""
    if is_local_path(text):
        return load_hf_config(expand_user(text))
    if leads_nowhere(expand_user(text)):
        raise TiersimError(f"{text}: {LINK_TO_NOTHING}; point it at a config.json")
    if _explicit_path(text) and not expand_user(text).exists():
        if text.startswith("~") and str(expand_user(text)).startswith("~"):
            raise TiersimError(f"{text}: model config not found (a path starts with ~ and a "
                               "user that does not exist); write the path in full")
        raise TiersimError(f"{text}: model config not found (a path, so not a catalogue name); "
                           "check the path")
    key = catalogue_key(text)
    if key in MODELS:
        return MODELS[key]
    if isinstance(name_or_path, Path) or _looks_like_path(text):
        return load_hf_config(expand_user(text))
    known = ", ".join(m.name for m in MODELS.values())
    shipped = shipped_config(text)
    where = ("" if shipped is None else
             f" (aiconfigurator-core, installed here, ships its config: {shipped})")
    raise TiersimError(
        f"unknown model {text!r}; known models: {known}, or give the path of a Hugging Face "
        f"config.json{where}"
    )


def shipped_config(name: str) -> Path | None:
    """The config.json of the model ``name`` names (its Hugging Face id, ``Qwen/Qwen3-235B-A22B``,
    or the name after the organisation, ``Qwen3-235B-A22B``, read as :func:`catalogue_key`
    reads a name: ``Llama-3.1-405B-Instruct`` finds ``Meta-Llama-3.1-405B``) among the configs
    aiconfigurator-core ships (``aiconfigurator_core/model_configs/<org>--<name>_config.json``,
    docs/models.md), where that package is installed; None elsewhere. Found without importing
    the package, for an unknown model's error line: a user naming a model tiersim's catalogue
    lacks learnt only to "give the path of a Hugging Face config.json"."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("aiconfigurator_core")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    want = {name.strip().replace("/", "--").lower(), catalogue_key(name)}
    for folder in spec.submodule_search_locations:
        configs = Path(folder) / "model_configs"
        try:
            files = sorted(configs.glob("*_config.json"))
        except OSError:
            return None
        for file in files:
            stem = file.name[:-len("_config.json")].lower()
            keys = {stem, catalogue_key(stem.split("--")[-1])}
            if not stem.endswith("_hf_quant") and want & keys:
                return file
    return None

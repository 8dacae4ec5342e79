"""The modules a quantisation block's lists name, and how much of each group they weigh.

:class:`Span` holds a model's decoder layers and, per parameter group, its member modules
with their share of the group's weights (:func:`_members`); :class:`_Patterns` matches an
ignore / exclude / target list against their names (plain names, wildcards, ``re:``
regexes, under the CPU-time budget of :func:`regex_budget`); :func:`_by_module` gives each
group the format of most of its weights and the bits they average.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fnmatch
import re
import signal
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tiersim.errors import TiersimError, shown_json
from tiersim.hardware.hf_fields import EveryButNth
from tiersim.hardware.hf_formats import QUANT_KEY, _fmt

#: Member-name prefixes of attention modules: a hybrid's softmax and delta-net layers each hold
#: their own (:meth:`Span.holds`).
ATTENTION_MODULES = ("self_attn.", "linear_attn.")
_LAYER_PREFIXES = ("model.layers.{i}.", "language_model.model.layers.{i}.",
                   "model.language_model.layers.{i}.")


class RegexTimeout(Exception):
    """An ignore-list regex ran past :data:`~tiersim.hardware.hf_config.REGEX_BUDGET_S` (see
    :func:`regex_budget`)."""


@contextlib.contextmanager
def regex_budget(seconds: float):
    """Raise :class:`RegexTimeout` in the block once it has spent ``seconds`` of CPU time, so
    a pattern that backtracks without end (``re:(.|.)*X``) cannot hang the command.

    Python's ``re`` has no timeout, but its matcher checks for signals, so a timer interrupts
    it. The timer counts the process's user CPU time (``ITIMER_VIRTUAL``), not wall time: a
    real-time timer ran out on a busy machine while the process waited for a CPU, and refused
    configs that match in 0.4 s of CPU. ``SIGPROF`` is left to the memory guard
    (:mod:`tiersim.memory`). Only the main thread of a process can take signals: elsewhere (a
    thread pool), or where the timer is already running or the platform has none, the block
    runs without a budget. The signal can land in code that swallows exceptions (a
    garbage-collector callback, such as hypothesis' or the memory guard's, or a ``__del__``):
    the block then runs to its end and the timeout is raised there.
    """
    usable = (hasattr(signal, "setitimer") and hasattr(signal, "SIGVTALRM")
              and threading.current_thread() is threading.main_thread()
              and signal.getitimer(signal.ITIMER_VIRTUAL)[0] == 0)
    if not usable:
        yield
        return

    fired = []

    def expired(signum, frame):
        fired.append(True)
        raise RegexTimeout

    previous = signal.signal(signal.SIGVTALRM, expired)
    signal.setitimer(signal.ITIMER_VIRTUAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, previous)
    if fired:  # raised where it was swallowed (a garbage-collector callback, a __del__)
        raise RegexTimeout


def _matches(pattern: str, name: str) -> bool:
    """An ignore-list entry against a module name: ``re:`` regex, ``*`` wildcard, or a name
    that equals the module, one of its parents, or its trailing components."""
    if pattern.startswith("re:"):
        return re.match(pattern[3:], name) is not None
    if "*" in pattern or "?" in pattern:
        return fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(name, pattern + ".*")
    return (name == pattern or name.startswith(pattern + ".") or name.endswith("." + pattern)
            or f".{pattern}." in name)


@dataclasses.dataclass(frozen=True)
class Span:
    """The decoder layers a checkpoint's groups live in: ``total`` layers, the first ``dense``
    of them with a dense MLP before the MoE ones (0: every layer is of one kind); and, per
    group, its member modules with their share of the group's weights (:func:`_members`)."""

    total: int = 1
    dense: int = 0
    members: dict[str, tuple[tuple[tuple[str, ...], float], ...]] = dataclasses.field(
        default_factory=dict, hash=False, compare=False)
    prefixes: tuple[str, ...] = _LAYER_PREFIXES
    extra: int = 0  # multi-token-prediction layers after them (not served, not weighed)
    # gated delta-net layers (their own attention members): a set of indices, or EveryButNth
    linear: frozenset[int] | EveryButNth = frozenset()
    start: int = 0  # the index of the first layer (the MTP layers': the model's layer count)
    # the multi-token-prediction layers only (:func:`~tiersim.hardware.hf_config._mtp_formats`):
    # whether the config names this model's layers was checked on the model's own span
    mtp: bool = False

    def holds(self, layer: int, names: tuple[str, ...]) -> bool:
        """Whether decoder layer ``layer`` has the member ``names``: a hybrid's
        ``linear_attn.*`` members live in its delta-net layers, ``self_attn.*`` in the others;
        every other member (an MLP's, an expert's) in every layer."""
        if not self.linear or not names or not names[0].startswith(ATTENTION_MODULES):
            return True
        return names[0].startswith("linear_attn.") == (layer in self.linear)

    def members_of(self, group: str, each_expert: bool):
        """``group``'s members; for the experts, every expert only when ``each_expert`` (a
        list singles some out), else the first expert's projections standing for all. A group
        without listed members is one module no entry names."""
        members = self.members.get(group) or (((), 1.0),)
        if group != "experts" or each_expert or len(members) <= 3:
            return members
        scale = len(members) / 3
        return tuple((names, share * scale) for names, share in members[:3])

    def module_names(self, layer: int, names: tuple[str, ...]) -> list[str]:
        """Full names of one member module in decoder layer ``layer``."""
        return [p.format(i=layer) + n for p in self.prefixes for n in names]

    def layers(self, group: str) -> range:
        """The layers holding ``group``."""
        first = self.start
        if group == "mlp":
            return range(first, first + (self.dense or self.total))
        if group in ("experts", "shared_experts"):
            return range(first + self.dense, first + self.total) or range(first, first + 1)
        return range(first, first + self.total)


def runs(name: str):
    """Every run of ``name``'s dotted components (``a.b.c``: a, a.b, a.b.c, b, b.c, c): the
    module names a plain list entry names ``name`` by."""
    parts = name.split(".")
    return (".".join(parts[a:b]) for a in range(len(parts)) for b in range(a + 1, len(parts) + 1))


class _Patterns:
    """An ignore / target list, matched as :func:`_matches` matches one entry: plain names
    by set lookup (a plain name matches a module when it is a run of the module's dotted
    components), every wildcard in one compiled pattern, ``re:`` entries one by one, so a list
    of thousands of names stays fast."""

    def __init__(self, patterns):
        if isinstance(patterns, str):  # one module name written without its list
            patterns = [patterns]
        if patterns is None:
            patterns = []
        if not isinstance(patterns, (list, tuple)):
            raise TypeError(f"an ignore / exclude list must be a list of module names (got "
                            f"{shown_json(patterns)})")
        bad = [p for p in patterns if not isinstance(p, str)]
        if bad:
            raise TypeError(f"an ignore / exclude entry must be a module name (got "
                            f"{shown_json(bad[0])})")
        listed = list(patterns)
        self.plain = {p for p in listed if not p.startswith("re:") and "*" not in p
                      and "?" not in p}
        self.other = [p for p in listed if p not in self.plain]
        wild = [p for p in self.other if not p.startswith("re:")]
        self.regexes = [p for p in self.other if p.startswith("re:")]
        # every wildcard at once, as _matches reads each (the pattern, or a parent of the name)
        either = (f"(?:{fnmatch.translate(w)})|(?:{fnmatch.translate(w + '.*')})" for w in wild)
        self.wild = re.compile("|".join(either)) if wild else None

    def __bool__(self) -> bool:
        return bool(self.plain or self.other)

    def names_experts(self) -> bool:
        """Whether an entry may single out some experts (``experts.3``, or a regex or wildcard
        mentioning experts): only then is every expert matched, else expert 0 stands for all."""
        return any(_SINGLES_OUT_EXPERTS.search(p) for p in (*self.plain, *self.other))

    def match(self, name: str) -> bool:
        """True when an entry names module ``name``."""
        if self.plain and any(run in self.plain for run in runs(name)):
            return True
        if self.wild is not None and self.wild.match(name):
            return True
        return any(_matches(p, name) for p in self.regexes)


def _by_module(span: Span, format_of, each_expert: bool = True,
               groups: tuple[str, ...] = ()) -> tuple:
    """``(group, format, bits)`` per group of ``groups`` (default: every linear group), each
    member module of each layer in the format ``format_of(layer, full names)`` gives it
    (``None``: BF16), weighed by its share of the group: the format of most of its weights (its
    kernels), and the bits they average (its memory); no entry for a group all BF16."""
    out = []
    for g in groups or _LINEAR_GROUPS:
        members = span.members_of(g, each_expert)
        tally: dict[tuple[str, float], float] = {}
        for i in span.layers(g):
            for names, share in members:
                if not span.holds(i, names):
                    continue
                fmt = format_of(i, span.module_names(i, names)) or _fmt("bf16")
                tally[fmt] = tally.get(fmt, 0.0) + share
        weight = sum(tally.values())
        if weight <= 0 or all(f[0] == "bf16" for f in tally):
            continue
        name = max(tally, key=lambda f: (tally[f], f[0] != "bf16"))[0]
        out.append((g, name, sum(f[1] * w for f, w in tally.items()) / weight))
    return tuple(out)


#: Expert module names by model type: ``{j}`` the expert (none: gpt-oss's fused tensors).
EXPERT_NAMES = {
    "mixtral": ("block_sparse_moe.experts.{j}.w1", "block_sparse_moe.experts.{j}.w3",
                "block_sparse_moe.experts.{j}.w2"),
    "minimax_m2": ("block_sparse_moe.experts.{j}.w1", "block_sparse_moe.experts.{j}.w3",
                   "block_sparse_moe.experts.{j}.w2"),
    "gpt_oss": ("mlp.experts.gate_up_proj", "mlp.experts.gate_up_proj", "mlp.experts.down_proj"),
}
DEFAULT_EXPERT_NAMES = ("mlp.experts.{j}.gate_proj", "mlp.experts.{j}.up_proj",
                        "mlp.experts.{j}.down_proj")


def _expert_members(fields: dict[str, Any], model_type: str = "") -> ExpertMembers:
    """Every routed expert's three projections, a third of an expert each (gpt-oss: its
    fused tensors, the same for every expert, so one stands for all)."""
    spelled = EXPERT_NAMES.get(model_type, DEFAULT_EXPERT_NAMES)
    experts = 1 if "{j}" not in spelled[0] else max(1, int(fields.get("num_experts") or 1))
    return ExpertMembers(spelled, experts)


class ExpertMembers(Sequence):
    """The members of the routed experts, ``(names, share)`` for each projection of each of
    ``experts`` experts, spelled as they come: a config may declare any number of experts,
    and most readings look at the first expert's three only (:meth:`Span.members_of`)."""

    def __init__(self, spelled: tuple[str, ...], experts: int):
        self.spelled, self.experts = spelled, experts

    def __len__(self) -> int:
        return self.experts * len(self.spelled)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        if not -len(self) <= index < len(self):
            raise IndexError(index)
        j, k = divmod(index % len(self), len(self.spelled))
        return (self.spelled[k].format(j=j),), 1.0 / self.experts


#: The fused projections a checkpoint of :data:`FUSED_TYPES` names where Llama's has three or
#: two modules: each of q / k / v and gate / up also answers to it there (only there: in a
#: Llama checkpoint ``re:.*v_proj`` must not reach q and k through ``qkv_proj``).
FUSED_QKV, FUSED_GATE_UP = "self_attn.qkv_proj", "mlp.gate_up_proj"
#: Model types whose checkpoints store q/k/v and gate/up fused (Phi-3, Phi-4).
FUSED_TYPES = ("phi3",)


def _members(fields: dict[str, Any], model_type: str = "", fused: bool = False
             ) -> dict[str, tuple[tuple[tuple[str, ...], float], ...]]:
    """Per group, its member modules (alternative names) and their weights' share: attention's
    projections by their shapes (MLA's low-rank ones included), an MLP's gate, up and down a
    third each; ``fused``: the checkpoint also names them :data:`FUSED_QKV` / ``_GATE_UP``."""
    hidden, heads = fields["hidden"], fields["heads"]
    if fields.get("kv_lora_rank"):
        nope, rope, v = fields["qk_nope_head_dim"], fields["qk_rope_head_dim"], fields["v_head_dim"]
        q_lora, kv_lora = fields.get("q_lora_rank", 0), fields["kv_lora_rank"]
        q = ((("self_attn.q_a_proj",), hidden * q_lora),
             (("self_attn.q_b_proj",), q_lora * heads * (nope + rope))) if q_lora else (
             (("self_attn.q_proj",), hidden * heads * (nope + rope)),)
        attention = (*q, (("self_attn.kv_a_proj_with_mqa",), hidden * (kv_lora + rope)),
                     (("self_attn.kv_b_proj",), kv_lora * heads * (nope + v)),
                     (("self_attn.o_proj",), heads * v * hidden), *_indexer_members(fields))
    else:
        width, kv = heads * fields["head_dim"], fields.get("kv_heads", heads) * fields["head_dim"]
        q = 2 * width if fields.get("attn_gate") else width
        qkv = (FUSED_QKV,) if fused else ()
        attention = ((("self_attn.q_proj", *qkv), q), (("self_attn.k_proj", *qkv), kv),
                     (("self_attn.v_proj", *qkv), kv), (("self_attn.o_proj",), width))
    if fields.get("linear_layers"):
        attention = _hybrid_members(fields, attention)
    gate_up = (FUSED_GATE_UP,) if fused else ()
    mlp = ((("mlp.gate_proj", *gate_up), 1.0), (("mlp.up_proj", *gate_up), 1.0),
           (("mlp.down_proj",), 1.0))
    shared = tuple(((f"mlp.shared_experts.{p}", f"mlp.shared_expert.{p}"), 1.0)
                   for p in ("gate_proj", "up_proj", "down_proj"))
    return {"attention": tuple((names, float(share)) for names, share in attention),
            "mlp": mlp, "shared_experts": shared,
            "experts": _expert_members(fields, model_type)}


def _indexer_members(fields: dict[str, Any]) -> tuple:
    """A DSA indexer's projections, weighed by their widths (none without an indexer;
    GLM-5 spells ``weights_proj`` as ``indexers_proj``)."""
    if not fields.get("index_topk"):
        return ()
    hidden, dim, n = fields["hidden"], fields["index_head_dim"], fields["index_heads"]
    q_in = fields.get("q_lora_rank") or hidden
    return ((("self_attn.indexer.wq_b",), q_in * n * dim),
            (("self_attn.indexer.wk",), hidden * dim),
            (("self_attn.indexer.weights_proj", "self_attn.indexers_proj"), hidden * n))


def _hybrid_members(fields: dict[str, Any], softmax: tuple) -> tuple:
    """Attention's members of a gated delta-net hybrid: the softmax layers' projections and
    the linear layers' (Qwen3-Next's fused ``in_proj_qkvz`` / ``in_proj_ba``, or Qwen3.5's
    ``in_proj_qkv``, ``in_proj_z``, ``in_proj_b``, ``in_proj_a``: each member names both
    spellings), weighed by its width (:meth:`Span.holds` matches each layer against its own
    kind's)."""
    qk = fields["linear_k_heads"] * fields["linear_k_dim"]
    v = fields["linear_v_heads"] * fields["linear_v_dim"]
    heads = fields["linear_v_heads"]
    gdn = ((("linear_attn.in_proj_qkv", "linear_attn.in_proj_qkvz"), 2 * qk + v),
           (("linear_attn.in_proj_z", "linear_attn.in_proj_qkvz"), v),
           (("linear_attn.in_proj_b", "linear_attn.in_proj_ba"), heads),
           (("linear_attn.in_proj_a", "linear_attn.in_proj_ba"), heads),
           (("linear_attn.out_proj",), v))
    return softmax + gdn


#: Groups a checkpoint may quantise. ``lm_head`` is not among them: vLLM's FP8, ModelOpt and
#: compressed-tensors methods quantise linear and fused-MoE layers only, so it loads in BF16.
_LINEAR_GROUPS = ("attention", "mlp", "shared_experts", "experts")


def _module_list(path: Path, quant: dict, *keys: str, prefix: str = QUANT_KEY) -> list[str]:
    """The module names under the first of ``keys`` that holds any in ``quant`` (a skip or
    target list; one name written without its list is that list, none is ``[]``), or one line
    naming the file and the key (at key path ``prefix``) of what is not a name."""
    key = next((k for k in keys if quant.get(k)), keys[0])
    value = quant.get(key) or []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise TiersimError(f"{path}: key '{prefix}{key}': must be a list of module names (got "
                           f"{shown_json(value)})")
    bad = next((i for i, v in enumerate(value) if not isinstance(v, str)), None)
    if bad is not None:
        raise TiersimError(f"{path}: key '{prefix}{key}[{bad}]': must be a module name (got "
                           f"{shown_json(value[bad])})")
    for i, entry in enumerate(value):  # one named, not "'quantization_config': not in a layout
        if entry.startswith("re:"):    # tiersim reads (error: unterminated character set ...)"
            try:
                re.compile(entry[3:])
            except re.error as err:
                raise TiersimError(f"{path}: key '{prefix}{key}[{i}]': {shown_json(entry, 80)} "
                                   f"is not a regular expression ({err}); fix the pattern, or "
                                   "name the modules plainly") from None
    return value


def _uniform(fmt, skip, span: Span, groups=_LINEAR_GROUPS):
    """Every group of ``groups`` in ``fmt``, but the modules a ``skip`` entry names (BF16);
    with nothing to skip, no module needs looking at (a config of any depth reads at once)."""
    listed = _Patterns(skip)
    if not listed:
        return tuple((g, *fmt) for g in groups)

    def format_of(_layer: int, names: list[str]):
        return None if any(listed.match(n) for n in names) else fmt

    return _by_module(span, format_of, listed.names_experts(), groups)


#: A routed expert's module name (``mlp.experts.3.up_proj``; gpt-oss's ``mlp.experts.down_proj``),
#: not a shared expert's.
_ROUTED_EXPERT = re.compile(r"(?<!shared_)experts\.")


#: An entry naming particular experts: ``experts.`` (or regex ``experts\.``) then an index, a
#: character class, a group or a wildcard character (``shared_experts`` are no routed experts).
_SINGLES_OUT_EXPERTS = re.compile(r"(?<!shared_)experts(\\?\.)?[\d\[\(\{?]")

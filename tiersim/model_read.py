"""What tiersim read from each tier's model config, so that a wrong reading can be noticed.

Per tier: the model's parameters, the weights on each GPU, the KV-cache bytes per token and
the KV dtype, and the weight format of each module group, each from the accessor the
simulation itself sizes the tier with (:func:`tiersim.hardware.get_model`,
:func:`tiersim.hardware.precisions.weight_formats`, :func:`tiersim.perf.memory.weight_bytes`,
:func:`tiersim.perf.memory.kv_bytes_per_token`) at the tier's layout and KV dtype
(:func:`tiersim.fleet.parallel`, :func:`tiersim.fleet.tier_kv`); and, for a model given as a
path, the SHA-256 of the ``config.json`` read. summary.json, report.html and ``tiersim run``
show them (:class:`tiersim.results.ModelRead`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tiersim.fleet import parallel, tier_kv
from tiersim.hardware import get_model
from tiersim.hardware.models import is_catalogue_name
from tiersim.hardware.precisions import FORMAT_GROUPS, resolve_kv_dtype, weight_formats
from tiersim.paths import expand_user, file_sha256
from tiersim.perf.memory import GB, kv_bytes_per_token, weight_bytes
from tiersim.results import ModelRead

if TYPE_CHECKING:
    from tiersim.scenario import Scenario, TierConfig

SHOWN_GROUPS = FORMAT_GROUPS[:5]
"""Module groups whose weight format is recorded: attention, dense MLP, shared experts,
experts and ``lm_head`` (the token embedding, a lookup table, is left out)."""


def model_read(scenario: Scenario, tier: TierConfig) -> ModelRead:
    """What tiersim read from the config of the model ``tier`` serves (see module doc)."""
    ref = scenario.tier_model_ref(tier)
    model = get_model(ref)
    tp, dp, ep = parallel(tier)
    formats = weight_formats(model, tier.precision)
    groups = model.param_groups()
    kv_dtype = tier_kv(tier, ref)
    return ModelRead(
        params=model.total_params, active_params=model.active_params,
        weights_per_gpu_gb=weight_bytes(model, formats, tp, dp, ep) / GB,
        kv_bytes_per_token=kv_bytes_per_token(model, kv_dtype, tp),
        kv_dtype=resolve_kv_dtype(model, kv_dtype),
        weight_formats={g: formats.of(g).label for g in SHOWN_GROUPS if groups.get(g)},
        config_sha256=config_digest(ref),
    )


def config_digest(ref: str) -> str | None:
    """SHA-256 of the ``config.json`` a model reference reads (the file, or the one in the
    folder it names, as :func:`tiersim.hardware.hf_config.load_hf_config` reads it); None for
    a catalogue name."""
    if is_catalogue_name(ref):
        return None
    path = expand_user(ref)
    return file_sha256(path / "config.json" if path.is_dir() else path)

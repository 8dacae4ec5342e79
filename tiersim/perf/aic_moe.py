"""The MoE tables of the aiconfigurator importer (:class:`MoeTables`, mixed into
:class:`tiersim.perf.aic_importer.Importer`): the newest folder that timed a split, else a
smaller ``tp`` scaled, else the nearest measured shape scaled by the roofline, an older
folder's curve carried to the newer kernel where it is read."""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from tiersim.perf.aic_data import Source
from tiersim.perf.aic_formats import (
    MOE_DISTRIBUTION,
    MOE_DTYPES,
    NATIVE_MOE_DTYPES,
)
from tiersim.perf.aic_tables import _log_interp, _moe_medians, _table, moe_latency
from tiersim.perf.profile import Table


def _moe_roofline(model, precision: str, tp: int, ep: int, tokens, gpu: str) -> np.ndarray:
    """The roofline's MoE layer time for ``model`` split ``tp`` x ``ep`` (experts in
    ``precision``) at each token count."""
    from tiersim.perf.roofline import RooflineOps

    ops = RooflineOps(model, precision, gpu, tp=1, dp=tp * ep, ep=ep)  # moe_tp = tp
    return ops.moe(np.asarray(tokens, np.float64))


class MoeTables:
    """The importer's ``moe`` tables. A mixin of :class:`tiersim.perf.aic_importer.Importer`:
    it reads the importer's ``engine``, ``gpu`` and ``aic`` and calls its ``_native``,
    ``_sources``, ``_frame`` and ``_with_proxy``."""

    def moe(self, precision: str, model, tp: int, ep: int = 1) -> Table | None:
        """The ``moe`` table for ``model`` split ``tp`` x ``ep``, newest folder that has it.

        Where no folder has that split but one has the same shape with the same ``ep`` at a
        smaller ``tp0``, the ``tp0`` curve is scaled by ``tp0 / tp`` (the expert widths, hence
        the per-GPU work and weight bytes, split ``tp`` ways), never below the ``tp0`` curve's
        own minimum (launch floor); the table's notes say so. ``None`` when neither exists.
        """
        dtype = MOE_DTYPES.get(precision)
        if self._native(precision):
            dtype = NATIVE_MOE_DTYPES.get(self.engine, {}).get(precision, dtype)
        if dtype is None:
            return None
        shape = (model.hidden, model.expert_intermediate, model.num_experts, model.top_k)
        key = dict(zip(("hidden", "inter", "num_experts", "top_k"), shape, strict=True))
        key.update(ep=ep, tp=tp)
        sources = self._sources("moe", "moe_perf.parquet")
        for source in sources:
            found = moe_latency(self._frame(source), dtype, *shape, tp, ep)
            if found is None:
                continue
            tokens, lat, kernel = found
            note = self._with_proxy(f"{dtype}, {MOE_DISTRIBUTION} routing", precision)
            return self._moe_table(precision, dtype, key, (tokens, lat, kernel), note, source,
                                   sources)
        for source in sources:
            for tp0 in sorted((t for t in (1, 2, 4, 8, 16) if t < tp), reverse=True):
                found = moe_latency(self._frame(source), dtype, *shape, tp0, ep)
                if found is None:
                    continue
                tokens, lat, kernel = found
                scaled = np.maximum(lat * tp0 / tp, lat.min())
                note = (f"{dtype}, {MOE_DISTRIBUTION} routing; measured at moe tp={tp0}, "
                        f"scaled by {tp0}/{tp} (no tp={tp} rows)")
                note = self._with_proxy(note, precision)
                return self._moe_table(precision, dtype, key, (tokens, scaled, kernel), note,
                                       source, sources)
        return self._moe_anchored(precision, dtype, model, tp, ep, key, sources[0])

    def _moe_table(self, precision, dtype, key, curve, note, source, sources) -> Table:
        """A MoE table of ``curve`` (tokens, seconds, kernel) read from ``source``; from an
        older folder than the newest, carried to the newer kernel by :meth:`_moe_bridge`
        (notes and ``engine_version`` say so)."""
        tokens, lat, kernel = curve
        bridge = None
        if source is not sources[0]:
            note += f"; from an older {self.engine} folder (newer ones lack this shape)"
            bridge = self._moe_bridge(dtype, source, sources)
        if bridge is not None:
            newer, ratio, summary = bridge
            lat = lat * ratio(tokens)
            note += (f"; carried to {self.engine} {newer.version}'s kernel by the ratio the two "
                     f"folders measured at the shapes both timed ({summary})")
        table = _table("moe", precision, key, {"tokens": tokens}, lat, source, self.aic, kernel,
                       note)
        if bridge is not None:
            table.extra["engine_version"] = f"{source.version} bridged to {bridge[0].version}"
        return table

    def _moe_bridge(self, dtype: str, older: Source, sources: list[Source]):
        """``(newer source, ratio(tokens), summary)`` carrying ``older``'s curves of ``dtype``
        to the newest folder that timed that dtype at shapes ``older`` also timed: the median,
        token count by token count, of newer / older latency over those shapes (interpolated in
        log tokens, flat beyond). NVIDIA's folders differ by 0.15-6x for one shape where a
        kernel was replaced (4-bit Marlin, MXFP4, per-tensor FP8 MoE), so an older folder's
        curve alone would describe a kernel the newer engine no longer runs. ``None`` when no
        newer folder shares a shape with ``older``."""
        cols = ["hidden_size", "inter_size", "num_experts", "topk", "moe_tp_size", "moe_ep_size",
                "num_tokens"]
        old = _moe_medians(self._frame(older), dtype, cols)
        for newer in sources[: sources.index(older)]:
            new = _moe_medians(self._frame(newer), dtype, cols)
            both = new.to_frame("new").join(old.rename("old"), how="inner")
            if both.empty:
                continue
            per_token = (both["new"] / both["old"]).groupby(level="num_tokens").median()
            x = np.log(per_token.index.to_numpy(np.float64))
            y = per_token.to_numpy(np.float64)
            common = both.reset_index()
            shapes = len(common[cols[:4]].drop_duplicates())
            splits = len(common[cols[:6]].drop_duplicates())
            summary = (f"{shapes} expert shape(s) at {splits} tp/ep splits; x{y.min():.2f}-"
                       f"{y.max():.2f} by token count, median x{np.median(y):.2f}")
            return newer, functools.partial(_log_interp, x=x, y=y), summary
        return None

    def _moe_anchored(self, precision, dtype, model, tp, ep, key, source) -> Table | None:
        """A MoE shape the data lacks: the nearest measured shape of the same kernel dtype
        (log distance in hidden, per-GPU expert width, experts per GPU and top-k), its curve
        scaled token by token by the roofline's ratio between the two shapes. The kernel's
        measured efficiency is kept; only the physics (bytes, FLOPs) is rescaled."""
        df = self._frame(source)
        rows = df[(df["moe_dtype"] == dtype) & (df["distribution"] == MOE_DISTRIBUTION)]
        if rows.empty:
            return None
        cols = ["hidden_size", "inter_size", "num_experts", "topk", "moe_tp_size", "moe_ep_size"]
        shapes = rows[cols].drop_duplicates().to_numpy(np.float64)
        want = np.array([model.hidden, model.expert_intermediate / tp,
                         model.num_experts / ep, model.top_k], np.float64)
        have = np.column_stack([shapes[:, 0], shapes[:, 1] / shapes[:, 4],
                                shapes[:, 2] / shapes[:, 5], shapes[:, 3]])
        best = shapes[int(np.argmin(np.abs(np.log(have / want)).sum(axis=1)))].astype(int)
        hidden, inter, experts, top_k, tp0, ep0 = (int(x) for x in best)
        found = moe_latency(df, dtype, hidden, inter, experts, top_k, tp0, ep0)
        if found is None:
            return None
        tokens, lat, kernel = found
        near = dataclasses.replace(model, hidden=hidden, expert_intermediate=inter,
                                   num_experts=experts, top_k=top_k)
        ratio = _moe_roofline(model, precision, tp, ep, tokens, self.gpu) / _moe_roofline(
            near, precision, tp0, ep0, tokens, self.gpu)
        note = (f"{dtype}, {MOE_DISTRIBUTION} routing; shape not measured: nearest measured "
                f"(hidden={hidden} inter={inter} experts={experts} top_k={top_k} tp={tp0} "
                f"ep={ep0}) scaled by the roofline ratio of the two shapes")
        note = self._with_proxy(note, precision)
        return _table("moe", precision, key, {"tokens": tokens}, lat * ratio, source, self.aic,
                      kernel, note)

"""The harness's measurement choices, shared by its command line and its runner: the sections
(``--ops``), weight formats (``--precisions``), KV-cache dtypes (``--kv-dtypes``) and default
model, and the checks both make of them (:func:`choose`, :func:`model_shapes`,
:func:`quick_problem`).

Standard library only (torch is never imported here): :mod:`tiersim.calibrate.cli` checks the
options with it before a run starts, and :mod:`tiersim.calibrate.quant` and
:mod:`tiersim.calibrate.runner` read it without importing the command line.
"""

from __future__ import annotations

SECTIONS = ("overhead", "gemm", "moe", "attn_decode", "attn_prefill", "allreduce")
PRECISIONS = ("bf16", "fp8", "fp8_block", "w4a16", "nvfp4")
"""The weight formats the harness measures (``--precisions``; ``quant`` builds each)."""
KV_DTYPES = ("bf16", "fp8")
"""The KV-cache dtypes the attention tables are measured at (``--kv-dtypes``)."""
DEFAULT_MODEL = "Qwen3-Coder-30B-A3B"
"""The model measured when neither ``--model`` nor ``--config`` is given."""


def quick_problem(quick: bool, model: str | None, config: str | None) -> str | None:
    """Refuse --quick with --model or --config: --quick measures the built-in tiny shapes, so
    the model asked for would be silently ignored."""
    if quick and (model or config):
        flag = f"--config {config}" if config else f"--model {model}"
        return (f"--quick measures built-in tiny shapes and cannot measure {flag}; drop "
                f"--quick to measure that model, or drop {flag.split()[0]}")
    return None


def choose(what: str, values: tuple[str, ...], allowed: tuple[str, ...]) -> tuple[str, ...]:
    """Validate a comma list option against its allowed values, each named once (a repeat
    would measure its tables twice, and a profile with a table twice does not load)."""
    from tiersim.calibrate.errors import CalibrateError
    from tiersim.errors import shown

    if not values:  # the option held only commas and spaces: no name to echo
        raise CalibrateError(f"--{what}: names no value (only commas and spaces); give one or "
                             f"more of {','.join(allowed)}, comma-separated, or leave it out "
                             "to measure them all")
    bad = [v for v in values if v not in allowed]
    if bad:
        raise CalibrateError(f"--{what} {shown(','.join(values), 64)}: each must be one of "
                             f"{','.join(allowed)}")
    twice = next((v for i, v in enumerate(values) if v in values[:i]), None)
    if twice is not None:
        raise CalibrateError(f"--{what} {shown(','.join(values), 64)}: names {twice} twice; "
                             "name each once")
    return tuple(values)


def model_shapes(model: str | None, config: str | None, quick: bool):
    """The shapes to measure (a ``shapes.ModelShapes``): tiny for --quick (which takes neither
    --model nor --config), else the config file (named by ``model`` if given) or the built-in
    model (:data:`DEFAULT_MODEL`)."""
    from tiersim.calibrate import shapes
    from tiersim.calibrate.errors import CalibrateError

    problem = quick_problem(quick, model, config)
    if problem:
        raise CalibrateError(problem)
    if quick:
        return shapes.TINY
    if config:
        return shapes.from_config(config, name=model)
    return shapes.resolve_model(model or DEFAULT_MODEL)

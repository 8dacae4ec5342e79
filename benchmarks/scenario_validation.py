"""Benchmark: how long validating one scenario takes, as ``tiersim run`` and a sweep point do.

A sweep validates every point before it runs (``tiersim sweep`` checks each axis value with
the real validator) and again in the worker, so thousands of validations per sweep. Timed
here, on bundled scenarios read once (the YAML parse is left out):

- ``raw checks``: the checks of the raw data before pydantic reads it, as a file's load runs
  them (a YAML boolean, quoted text, a misspelt or near-whole number where a number goes:
  :func:`tiersim.scenario.number_problem` with the file's node tree, one walk; in a tiersim
  without it, :func:`tiersim.scenario.boolean_problem` and
  :func:`tiersim.scenario.refuse_text_numbers`, four walks);
- ``load``: the whole validation of the file's data with its node tree (what
  :func:`tiersim.scenario.load_scenario` does after reading the YAML);
- ``sweep point``: :func:`tiersim.scenario.scenario_from_dict` of one sweep point (the base
  with an axis value applied, no node tree), as a sweep's default validator reads it.

Each figure is the median, over ``--repeats`` repeats, of the mean microseconds per call over
``--calls`` calls (the least of the repeats beside it: on a busy machine the steadier figure).

Run: ``python benchmarks/scenario_validation.py [--calls 300] [--repeats 9]
[--scenario default.yaml ...]``. Numbers depend on the machine (and on what else runs on it).
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

AXIS = {"default.yaml": ("tiers.bf16.replicas", 8), "routing.yaml": ("router.confusion.fpr", 0.2),
        "cascade.yaml": ("router.cascade.signal_noise", 0.4), "tiny.yaml": ("seed", 3)}
"""The sweep axis and value a point of each scenario sets (``seed`` for any other)."""


def per_call_us(calls: int, repeats: int, call, *args) -> tuple[float, float]:
    """Median and least, over ``repeats`` repeats, of the mean microseconds ``call(*args)``
    takes over ``calls`` calls."""
    call(*args)  # warm caches and imports
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            call(*args)
        times.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(times), min(times)


def raw_checks(data, source: str, root) -> None:
    """The raw-data checks a file's load runs before pydantic (none refuses a bundled file)."""
    from tiersim import scenario as sc

    if hasattr(sc, "number_problem"):
        assert sc.number_problem(data, root) is None
    else:  # before the checks were one walk (to compare)
        assert sc.boolean_problem(data, root) is None
        sc.refuse_text_numbers(data, source, root)


def main() -> None:
    """Time the raw checks, a load and a sweep point of the bundled scenarios; print us per call."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--scenario", nargs="*", default=["default.yaml", "routing.yaml"],
                        help="bundled scenario files (tiersim/scenarios/)")
    args = parser.parse_args()

    from tiersim import scenario as sc
    from tiersim.sweep import axes as ax

    warnings.simplefilter("ignore")  # a scenario's notes, raised on every validation
    print(f"{'us per call':<16} {'raw checks':>14} {'load':>14} {'sweep point':>14}"
          "   (median of the repeats, least in brackets)")
    for name in args.scenario:
        path = ROOT / "tiersim" / "scenarios" / name
        data, root = sc.read_yaml(path)
        source = str(path)

        path_key, value = AXIS.get(name, ("seed", 3))
        point = ax.apply(data, {path_key: value}, source)
        figures = [per_call_us(args.calls * 4, args.repeats, raw_checks, data, source, root),
                   per_call_us(args.calls, args.repeats, sc._validate, data, source, root),
                   per_call_us(args.calls, args.repeats, sc.scenario_from_dict, point, source)]
        print(f"{name:<16} " + " ".join(f"{f'{median:.0f} ({least:.0f})':>14}"
                                        for median, least in figures))


if __name__ == "__main__":
    main()

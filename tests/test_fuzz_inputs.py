"""Property-based fuzzing of the CLI with scenario and trace files mutated from valid examples.

Every generated input must either succeed (exit 0) with self-consistent output, or fail with
exit 1 and exactly one ``Error:`` line on stderr, no traceback. The CLI runs in this process
(``tiersim.cli.main``) for speed; examples are few and derandomised so CI stays within about a
minute and never flakes.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import tempfile
from pathlib import Path

import pandas as pd
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tiersim.cli import main

ROOT = Path(__file__).resolve().parents[1]
# tiny.yaml over a 30 s window (a few dozen requests) so a valid mutant simulates quickly
TINY = (ROOT / "tiersim" / "scenarios" / "tiny.yaml").read_text().replace(
    "window: [240, 360]", "window: [240, 270]")
FUZZ = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def call(argv: list[str]) -> tuple[int, str, str]:
    """``tiersim ARGV`` in this process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def assert_clean_failure(code: int, err: str) -> None:
    """Exit 1 with one ``Error:`` line and no traceback."""
    assert "Traceback" not in err, err[-2000:]
    assert code == 1, f"exit {code}: {err[-1000:]}"
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), lines


# ---------------------------------------------------------------------------------------------
# Mutations

ODD_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
    st.lists(st.integers(-3, 3), max_size=3), st.dictionaries(st.text(max_size=4),
                                                              st.integers(), max_size=2),
)
ODD_BYTES = st.binary(max_size=6) | st.sampled_from(
    [b":", b"- ", b"[", b"]", b"{", b"&a ", b"*a", b"\t", b"\n  ", b"\xe9", b"\x00", b"0", b"9",
     b".nan", b"-1", b'"', b",", b"e308"])


def _leaves(node, path=()):
    """Paths of every scalar in a YAML document."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _leaves(value, (*path, i))
    else:
        yield path


def _set(doc, path, value):
    node = doc
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value


@st.composite
def value_mutation(draw, text: str) -> bytes:
    """Parse, replace one scalar (or delete one key), dump again."""
    doc = yaml.safe_load(text)
    path = draw(st.sampled_from(list(_leaves(doc))))
    if draw(st.booleans()) and isinstance(path[-1], str):
        node = doc
        for part in path[:-1]:
            node = node[part]
        del node[path[-1]]
    else:
        _set(doc, path, draw(ODD_VALUES))
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True).encode()


@st.composite
def byte_mutation(draw, data: bytes) -> bytes:
    """Delete, duplicate or insert a few bytes at one to three places."""
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(data)))
        size = draw(st.integers(0, 8))
        kind = draw(st.sampled_from(["delete", "insert", "duplicate"]))
        if kind == "delete":
            data = data[:at] + data[at + size:]
        elif kind == "insert":
            data = data[:at] + draw(ODD_BYTES) + data[at:]
        else:
            data = data[:at] + data[at:at + size] * 2 + data[at + size:]
    return data


def mutants(text: str) -> st.SearchStrategy[bytes]:
    return value_mutation(text) | byte_mutation(text.encode())


# ---------------------------------------------------------------------------------------------
# Scenario files through `tiersim run --out`


def check_run_outputs(out: Path) -> None:
    """The written summary agrees with itself and with the request table."""
    summary = json.loads((out / "summary.json").read_text())
    assert summary["completed"] + summary["dropped"] == summary["requests"] > 0
    assert summary["cost_usd"] is None or summary["cost_usd"] >= 0
    requests = pd.read_parquet(out / "requests.parquet")
    assert len(requests) == summary["requests"]
    numbers = [v for v in pd.json_normalize(summary).iloc[0] if isinstance(v, float)]
    assert all(math.isfinite(v) for v in numbers)


@FUZZ
@given(mutants(TINY))
def test_mutated_scenario_runs_or_fails_in_one_line(data):
    with tempfile.TemporaryDirectory() as tmp:
        path, out = Path(tmp) / "s.yaml", Path(tmp) / "out"
        path.write_bytes(data)
        code, _, err = call(["run", str(path), "--out", str(out), "--no-report"])
        event(f"exit {code}")
        if code == 0:
            check_run_outputs(out)
        else:
            assert_clean_failure(code, err)


# ---------------------------------------------------------------------------------------------
# Trace files through `tiersim trace inspect --json`


def _small_traces() -> dict[str, bytes]:
    """Small valid traces in every container: canonical and Azure CSV, Mooncake JSON lines,
    canonical Parquet (with prefix hashes)."""
    azure = pd.read_parquet(ROOT / "tiersim" / "traces" / "azure2023_code.parquet").head(20)
    canonical = azure[["arrival_s", "input_tokens", "output_tokens"]].to_csv(index=False)
    stamps = pd.Timestamp("2023-11-16 18:15:46") + pd.to_timedelta(azure["arrival_s"], unit="s")
    azure_csv = pd.DataFrame({"TIMESTAMP": stamps.astype(str),
                              "ContextTokens": azure["input_tokens"],
                              "GeneratedTokens": azure["output_tokens"]}).to_csv(index=False)
    mooncake = pd.read_parquet(ROOT / "tiersim" / "traces" / "mooncake_synthetic.parquet")
    lines = [json.dumps({"timestamp": int(r.arrival_s * 1000), "input_length": int(r.input_tokens),
                         "output_length": int(r.output_tokens),
                         "hash_ids": [int(h) for h in r.prefix_hashes]})
             for r in mooncake.head(15).itertuples()]
    parquet = io.BytesIO()
    mooncake.head(15).to_parquet(parquet, index=False)
    return {"trace.csv": canonical.encode(), "azure.csv": azure_csv.encode(),
            "trace.jsonl": ("\n".join(lines) + "\n").encode(), "trace.parquet": parquet.getvalue()}


TRACES = _small_traces()


@st.composite
def trace_mutant(draw) -> tuple[str, bytes]:
    name = draw(st.sampled_from(sorted(TRACES)))
    return name, draw(byte_mutation(TRACES[name]))


@settings(FUZZ, max_examples=80)
@given(trace_mutant())
def test_mutated_trace_inspects_or_fails_in_one_line(case):
    name, data = case
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_bytes(data)
        code, out, err = call(["trace", "inspect", "--json", str(path)])
        event(f"exit {code}")
        if code != 0:
            assert_clean_failure(code, err)
            return
        stats = json.loads(out)
        assert 1 <= stats["rows"] <= (30 if name.endswith(".parquet") else data.count(b"\n") + 1)
        assert stats["span_s"] is None or stats["span_s"] >= 0
        assert all(v is None or v > 0 for v in stats["input_tokens"].values())


# ---------------------------------------------------------------------------------------------
# Sweep maps through the sweep planner (expansion and the check of every axis)

SWEEP_PATHS = st.sampled_from([
    "seed", "tiers.bf16.replicas", "tiers.w4a16.cost_per_gpu_hour", "router.fractions",
    "slo.ttft_p99_s", "trace.time_scale", "tiers.nope.replicas", "seed.x", "", "tiers.5",
    "a..b", "tiers.0.name", "limits.max_replicas"])
AXIS_VALUES = (st.lists(st.integers(1, 4), min_size=1, max_size=3)
               | st.lists(ODD_VALUES, max_size=4) | ODD_VALUES)
SWEEPS = st.dictionaries(SWEEP_PATHS, AXIS_VALUES, max_size=3) | st.builds(
    lambda grid, group: {**grid, "zip": group}, st.dictionaries(SWEEP_PATHS, AXIS_VALUES,
                                                                max_size=2),
    st.dictionaries(SWEEP_PATHS, st.lists(ODD_VALUES, min_size=2, max_size=2), max_size=2)
    | ODD_VALUES)


@settings(FUZZ, max_examples=80)
@given(SWEEPS)
def test_any_sweep_map_expands_or_fails_in_one_line(sweep):
    from tiersim.errors import TiersimError
    from tiersim.sweep.run import prepare

    doc = {**yaml.safe_load(TINY), "sweep": sweep}
    try:
        plan = prepare(doc, source="fuzz.yaml")
    except TiersimError as error:
        assert "\n" not in str(error) and str(error).startswith("fuzz.yaml")
        event("refused")
        return
    event("expanded")
    ids = [p.id for p in plan.points]
    assert len(set(ids)) == len(ids) >= 1
    assert [p.index for p in plan.points] == list(range(len(ids)))

"""Round 56 (prov56): every figure ``tiersim analytic`` prints says where it comes from, and a
profile that does not say where its tables come from (``provenance.source``) is refused."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiersim.analytic import TwoType, summary
from tiersim.cli import main
from tiersim.cli.analytic_text import figure_sources, render

EVERY = "two-type closed form of p / eps / delta, c0 / dc and the top tier's accuracy"


def _analytic(capsys, *flags: str) -> list[str]:
    """The lines ``tiersim analytic`` prints for ``flags``."""
    capsys.readouterr()
    assert main(["analytic", *flags]) == 0
    return capsys.readouterr().out.splitlines()


def test_analytic_from_flags_names_each_lines_source(capsys):
    """The bare closed form printed dC*, the kink and both frontiers with no word of where
    they come from, nor that c0, dc and the top tier's accuracy were defaults."""
    lines = _analytic(capsys, "--p", "0.8", "--eps", "0.01", "--delta", "0.3", "--floor", "0.95")
    assert lines == [
        "p = 0.8   eps = 0.01   delta = 0.3   c0 = 0   dc = 1; source: --p / --eps / --delta "
        "as given, c0 0 by default, dc 1 by default, top tier's accuracy taken as 1 "
        "(accuracies relative to it)",
        "dC* = 0.682353 per request (68.2 % of dc) at the kink; source: two-type closed form "
        "of p / eps / delta and dc",
        f"kink: 20.0% on the top tier, cost 0.2, accuracy 0.9920; source: {EVERY}",
        "oracle frontier (cost, accuracy): (0, 0.9320), (0.2, 0.9920), (1, 1.0000); source: "
        f"{EVERY}",
        f"static split frontier (cost, accuracy): (0, 0.9320), (1, 1.0000); source: {EVERY}",
        "at floor 0.9500: oracle 0.06, cheapest uniform 1, static split 0.264706; saving vs "
        f"uniform 0.94, vs static 0.204706; source: {EVERY}",
    ]


def test_analytic_names_the_prices_given(capsys):
    lines = _analytic(
        capsys, "--p", "0.8", "--eps", "0.01", "--delta", "0.3", "--c0", "0.5", "--dc", "2"
    )
    assert lines[0].endswith(
        "; source: --p / --eps / --delta / --c0 / --dc as given, top "
        "tier's accuracy taken as 1 (accuracies relative to it)"
    )
    lines = _analytic(capsys, "--p", "0.8", "--eps", "0.01", "--delta", "0.3", "--dc", "2")
    assert lines[0].endswith(
        "; source: --p / --eps / --delta / --dc as given, c0 0 by "
        "default, top tier's accuracy taken as 1 (accuracies relative "
        "to it)"
    )


def test_analytic_json_carries_a_source_for_every_figure(capsys):
    out = json.loads(
        "\n".join(
            _analytic(
                capsys, "--p", "0.8", "--eps", "0.01", "--delta", "0.3", "--floor", "0.95", "--json"
            )
        )
    )
    figures = set(out) - {"params", "sources"}
    assert set(out["sources"]) == figures | {"params"}
    assert out["sources"]["dC_star"] == "two-type closed form of p / eps / delta and dc"


def test_analytic_on_a_labelled_trace_says_its_prices_were_assumed(tmp_path, capsys):
    import numpy as np
    import pandas as pd

    path = tmp_path / "labels.csv"
    rng = np.random.default_rng(0)
    weak = (rng.random(200) < 0.7).astype(int)
    strong = np.maximum(weak, (rng.random(200) < 0.5).astype(int))
    pd.DataFrame(
        {
            "arrival_s": np.arange(200) * 0.1,
            "input_tokens": 100,
            "output_tokens": 10,
            "correct_weak": weak,
            "correct_strong": strong,
        }
    ).to_csv(path, index=False)
    lines = _analytic(capsys, "--trace", str(path), "--cheap", "weak", "--top", "strong")
    params = next(line for line in lines if line.startswith("p = "))
    assert params.endswith(
        f"; source: p / eps / delta and the top tier's accuracy estimated "
        f"from {path} (above); c0 = 1, dc = 1 assumed"
    )
    assert all("; source: " in line for line in lines[lines.index(params) :])


@settings(max_examples=60, deadline=None)
@given(
    p=st.floats(0.0, 1.0),
    eps=st.floats(0.0, 0.5),
    extra=st.floats(0.0, 0.5),
    dc=st.floats(1e-6, 1e6),
    floor=st.none() | st.floats(0.0, 1.0),
)
def test_every_line_of_the_closed_form_has_a_source(p, eps, extra, dc, floor):
    """Whatever the inputs, no line of the closed form's answer prints without its source."""
    out = summary(TwoType(p, eps, eps + extra, dc=dc), floor)
    out["sources"] = figure_sources(out, ("--dc",))
    assert all("; source: " in line for line in render(out).splitlines())


# --------------------------------------------------------------------- provenance.source


def _profile_doc(**provenance) -> dict:
    """A one-table harness profile with ``provenance`` as given."""
    return {
        "schema": "tiersim.profile/1",
        "name": "mine",
        "gpu": "H200",
        "provenance": provenance,
        "overhead_s": {"value": 1e-3, "source": "harness"},
        "tables": [
            {
                "op": "gemm",
                "precision": "bf16",
                "source": "harness",
                "key": {"n": 256, "k": 256},
                "axes": {"m": [1, 64]},
                "latency_s": [1e-5, 2e-5],
            }
        ],
    }


FIX = (
    'add "source": "harness" (timed by tiersim calibrate), "public" (published measured '
    'data) or "roofline" to its "provenance"'
)


@pytest.mark.parametrize(
    ("provenance", "said"),
    [
        ({}, "missing"),
        ({"date": "2026-01-01"}, "missing"),
        ({"source": None}, "missing"),
        ({"source": "  "}, 'must name where its tables come from (got "  ")'),
        ({"source": 5}, "must name where its tables come from (got 5)"),
    ],
)
def test_a_profile_that_does_not_say_where_it_comes_from_is_refused(provenance, said):
    """A profile with no provenance.source was read, its figures labelled by the tables' own
    word alone and its step model named "profile:mine" with no kind."""
    from tiersim.errors import ProfileError
    from tiersim.perf.profile import profile_from_json

    with pytest.raises(ProfileError) as err:
        profile_from_json(_profile_doc(**provenance), "mine.json")
    assert str(err.value) == f"mine.json: provenance.source: {said}; {FIX}"


def test_a_run_on_such_a_profile_is_one_line(tmp_path, capsys, monkeypatch):
    from pathlib import Path

    from test_hostile_inputs import one_error_line, run_cli

    monkeypatch.chdir(tmp_path)
    tiny = (Path(__file__).parents[1] / "tiersim" / "scenarios" / "tiny.yaml").read_text()
    (tmp_path / "p.json").write_text(json.dumps(_profile_doc(date="2026-01-01")))
    (tmp_path / "s.yaml").write_text(tiny.replace("profile: null", "profile: p.json", 1))
    line = one_error_line(*run_cli(capsys, "run", "s.yaml", "--out", "o"))
    assert line == f"Error: s.yaml: line 7: profile: p.json: provenance.source: missing; {FIX}"


@pytest.mark.parametrize("source", ["harness", "public", "roofline", "my lab's bench"])
def test_a_profile_that_says_where_it_comes_from_is_read(source):
    from tiersim.perf.profile import profile_from_json

    assert profile_from_json(_profile_doc(source=source)).provenance["source"] == source


def test_every_shipped_profile_says_where_it_comes_from():
    from tiersim.perf import resolve_profile

    for name in (
        "h200_aiconfigurator_vllm",
        "h100_aiconfigurator_vllm",
        "b200_aiconfigurator_vllm",
    ):
        assert resolve_profile(name).provenance["source"] == "public"


# --------------------------------------------------------------------- tiersim run's tier table

#: Each figure column of ``tiersim run``'s tier table, and the words in its title or caption
#: that say where it comes from (counts need none: ``reqs``, ``share``).
TIER_COLUMN_SOURCES = {
    "TTFT p99": "p99s, util and KV peak simulated on the step times below",
    "TPOT p99": "p99s, util and KV peak simulated on the step times below",
    "util": "p99s, util and KV peak simulated on the step times below",
    "KV peak": "p99s, util and KV peak simulated on the step times below",
    "cost $": "cost $ = provisioned",
    "attrib. $": "attrib. $ = busy GPU time",
}


def test_each_figure_of_the_tier_table_names_its_source():
    """The tier table's KV peak (and its p99s, in the title) had no word of where it came from:
    its caption named the step times alone, which KV use is not."""
    from pathlib import Path

    from tiersim.cli.run_summary import tier_table
    from tiersim.results import RunResult

    run = RunResult.read(Path(__file__).parent / "golden" / "tiny_summary.json")
    table = tier_table(run)
    said = f"{table.title} {table.caption}"
    figures = [c.header for c in table.columns if c.header not in ("tier", "reqs", "share")]
    assert figures == list(TIER_COLUMN_SOURCES)
    for column in figures:
        assert TIER_COLUMN_SOURCES[column] in said, column
    assert all(f"{t.name}: {t.step_time_source}" in said for t in run.tiers)


# --------------------------------------------------------------------- tiersim plan's margins


def test_each_plan_margin_says_it_is_modelled(tmp_path, capsys):
    """The plan's "ttft_p99_s: 0.334 vs limit 2" had no source on its line (the step times
    were named only at the end of the plan's lines), where the accuracy line beside it names
    its own; the report's margin table had none at all."""
    import html
    import re

    capsys.readouterr()
    assert main(["plan", "tiny", "--out", str(tmp_path / "p"), "--check-seeds", "0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("plan ("))
    assert lines[start + 1 : start + 4] == [
        "  ttft_p99_s: 0.334 vs limit 2 (modelled)",
        "  tpot_p99_s: 0.0782 vs limit 0.1 (modelled)",
        "  dropped: 0 vs limit 0 (modelled)",
    ]
    assert lines[start + 4].endswith("; source: prior")
    page = html.unescape(re.sub(r"<[^>]+>", "|", (tmp_path / "p" / "report.html").read_text()))
    assert "|constraint||limit||value (modelled)||margin (+ is slack)||met|" in page


# --------------------------------------------------------------------- a sweep point's saving


def test_each_sweep_points_saving_names_what_it_is_against():
    """A point's simulated saving read bare ("costs 3.20 % more per hour vs bf16") beside an
    estimate's label: nothing said its baseline was simulated, as the run's source column
    says ("provisioned; uniform fleets simulated"). Each saving now names its basis."""
    import pandas as pd

    from tiersim.report.page import point_verdicts
    from tiersim.results_savings import SIMULATED_WORDS

    sweep = pd.DataFrame(
        {
            "point_id": ["p0", "p1", "p2"],
            "status": ["ok"] * 3,
            "savings.routed_slo_met": [True] * 3,
            "savings.routed_floor_met": [None] * 3,
            "savings.vs_uniform_frac": [0.25, -0.032, 0.1],
            "savings.vs_uniform_usd": [1.0, -0.1, 0.5],
            "savings.saving_basis": ["trace", "per_hour", "per_hour"],
            "savings.method": ["estimated", "simulated", "simulated"],
            "savings.cost_model": ["attributed", "provisioned", "provisioned"],
            "savings.baseline_uniform_tier": ["bf16"] * 3,
        }
    )
    cells = point_verdicts(sweep)["saved vs uniform"]
    assert cells[1:] == [
        "costs 3.20 % more per hour vs bf16 (uniform fleets simulated)",
        "10.0 % per hour vs bf16 (uniform fleets simulated)",
    ]
    assert all(("(estimate" in cell) != cell.endswith(f"({SIMULATED_WORDS})") for cell in cells)

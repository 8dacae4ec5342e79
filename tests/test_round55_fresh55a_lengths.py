"""fresh55a (a capacity planner new to tiersim): a summarisation product's lengths come from a
file of token lengths (Sarathi-Serve's arxiv summarisation CSV), its arrivals from a logged
trace. The error for a lengths file named as a trace offered Poisson arrivals alone, and no doc
said how to keep a logged trace's times. tiersim/traces/README.md now shows it, the error points
there, and the snippet there runs as written."""

from __future__ import annotations

import os
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _snippet() -> str:
    text = (REPO / "tiersim" / "traces" / "README.md").read_text(encoding="utf-8")
    section = text.split("## Token lengths at a logged trace's arrival times", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readme_snippet_writes_a_trace_at_the_logged_times(tmp_path):
    from tiersim.paths import bundled
    from tiersim.trace import load_trace

    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        exec(compile(_snippet(), "traces/README.md", "exec"), {})  # noqa: S102 - our doc
    finally:
        os.chdir(here)
    made = load_trace(tmp_path / "mytrace.csv")
    logged = load_trace(bundled("traces", "azure2023_conv"))
    assert len(made) == len(logged) == 19_366
    assert (made["arrival_s"].to_numpy() == logged["arrival_s"].to_numpy()).all()


def test_the_lengths_error_points_to_that_section():
    from tiersim.trace.loader import LENGTHS_FIX

    assert LENGTHS_FIX.endswith(
        "or give its lengths a logged trace's arrival times (tiersim/traces/README.md, "
        "\"Token lengths at a logged trace's arrival times\")")
    assert "## Token lengths at a logged trace's arrival times" in (
        REPO / "tiersim" / "traces" / "README.md").read_text(encoding="utf-8")

"""Round 30 (helper lbl): labels a planner reads say each fact once and parse."""
import json
from pathlib import Path

import pytest

GOLDEN = Path(__file__).parent / "golden"


def test_latency_source_names_each_origin_once():
    """The headline latency rows read "fitted on measured serving rows + public measured +
    public measured, points below the physical limit from the roofline": the kinds, which hold
    commas, were joined with " + ", so "public measured" read twice. Now each origin is named
    once, its readings bracketed, those only some of its tables have after "some tables:"."""
    from tiersim.summary import kinds_words

    kinds = {"fitted on measured serving rows", "public measured",
             "public measured, points below the physical limit from the roofline"}
    assert kinds_words(kinds) == [
        "fitted on measured serving rows",
        "public measured (some tables: points below the physical limit from the roofline)"]


def test_latency_source_readings_every_table_has_come_first():
    """A reading every table of an origin has is said without "some tables:"; a label none of
    the origins match keeps its own commas."""
    from tiersim.summary import kinds_words

    kinds = {"public measured, rescaled to the shape",
             "public measured, rescaled to the shape, launch floor removed in CUDA graphs",
             "profile:x (a, b)", "roofline"}
    assert kinds_words(kinds) == [
        "profile:x (a, b)",
        "public measured (rescaled to the shape; some tables: launch floor removed in CUDA "
        "graphs)",
        "roofline"]


@pytest.mark.parametrize("name", ["agentic", "cascade_models", "response_cache"])
def test_golden_latency_source_says_public_measured_once(name):
    """The bundled examples' summaries name "public measured" once in sources.latency."""
    latency = json.loads((GOLDEN / f"{name}_summary.json").read_text())["sources"]["latency"]
    assert latency.count("public measured") == 1, latency

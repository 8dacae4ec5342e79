"""Round 30 hostile input: sweep folders whose stored files were edited by hand or by another
tool (a point record's fields of the wrong kind, a version text no release has), resumed or
reported."""

from __future__ import annotations

import json

import pytest

from tiersim import versions
from tiersim.sweep import run as sweep_run
from tiersim.sweep.store import points_dir
from tiersim.sweep.testing import synthetic_runner


def _sweep(out):
    """A three-point synthetic sweep into ``out``; returns its table."""
    doc = {"name": "s", "sweep": {"seed": [1, 2, 3]}}
    return sweep_run.run_sweep(doc, out, workers=1, runner=synthetic_runner, validator=None,
                               progress=False, report=False, source="s.yaml")


def _edit_first_point(out, **fields):
    """Set ``fields`` in the first stored point's record; returns its id."""
    path = sorted(points_dir(out).glob("*.json"))[0]
    record = json.loads(path.read_text())
    record.update(fields)
    path.write_text(json.dumps(record))
    return path.stem


@pytest.mark.parametrize("fields", [
    {"runner": ["synthetic_runner"]},  # TypeError: unhashable type: 'list'
    {"error": {"a": 1}},  # ArrowTypeError: Expected bytes, got a 'dict' object
    {"base_digest": ["x"]},
])
def test_a_point_record_with_a_field_of_the_wrong_kind_is_run_again(tmp_path, fields):
    """A point file whose text fields (runner, error, tiersim, digests) hold a list or a map is
    no record a sweep wrote: it was kept, and a resume ended in a traceback (a set of the
    runners, the table's error column). It is run again now, as a truncated file is."""
    out = tmp_path / "o"
    _sweep(out)
    point = _edit_first_point(out, **fields)
    frame = _sweep(out)
    assert list(frame["status"]) == ["ok"] * 3
    record = json.loads((points_dir(out) / f"{point}.json").read_text())
    assert record["runner"] == "synthetic_runner" and record["error"] is None
    assert record["tiersim"] == sweep_run.tiersim_version()


def test_a_version_of_thousands_of_digits_names_no_release():
    """``release`` made an int of each part: a part of more than 4,300 digits (a point record
    or run manifest edited to say it) raised Python's ValueError (a traceback from ``tiersim
    sweep`` resuming, or ``tiersim report``). No release number is that long: it names none."""
    huge = "1" + "0" * 5000 + ".0"
    assert versions.release(huge) is None
    assert not versions.later_than_this(huge)
    assert versions.release("0.2.10+abc") == (0, 2, 10)


def test_a_point_run_by_a_version_of_thousands_of_digits_is_run_again(tmp_path, recwarn):
    """A resume read the stored point's version (ValueError, a traceback); the point now runs
    again with this tiersim, and the note names the other version in a few characters (it
    quoted all 5,000 digits)."""
    out = tmp_path / "o"
    _sweep(out)
    point = _edit_first_point(out, tiersim="1" + "0" * 5000 + ".0")
    recwarn.clear()
    _sweep(out)
    record = json.loads((points_dir(out) / f"{point}.json").read_text())
    assert record["tiersim"] == sweep_run.tiersim_version()
    notes = [str(w.message) for w in recwarn if "were run by tiersim 1000" in str(w.message)]
    assert len(notes) == 1 and len(notes[0]) < 200


def test_a_run_manifest_naming_a_version_of_thousands_of_digits_is_read(tmp_path):
    """``tiersim report`` of a run folder whose manifest.json says such a version ended in
    Python's ValueError traceback (the later-release check); the version names no release."""
    from tiersim.manifest import check_manifest

    (tmp_path / "manifest.json").write_text(json.dumps(
        {"run_id": "r1", "files": {}, "tiersim": "1" + "0" * 5000 + ".0"}))
    assert check_manifest(tmp_path) == "r1"


HUGE = 10 ** 400  # a JSON number of 401 digits: an int to Python, beyond any float


@pytest.mark.parametrize(("change", "message"), [
    ({"runners_up": [{"design": "bf16", "replicas": {"bf16": 1}, "gpus_per_replica": [1]}]},
     "runners_up[0].gpus_per_replica: expected an object, got a list"),  # AttributeError
    ({"uniform": [HUGE]},
     f"uniform[0]: expected an object, got the number {str(HUGE)[:37]}..."),  # OverflowError
    ({"evaluated": [{"design": "bf16", "replicas": {"bf16": 1}, "cost_usd": HUGE}]},
     f"evaluated[0].cost_usd: expected a number >= 0, got the number {str(HUGE)[:37]}..."),
])  # the last was drawn (exit 0); plan.savings.vs_uniform_frac's ended the page (OverflowError)
def test_a_plan_json_with_a_list_of_counts_or_a_huge_number_is_one_line(capsys, tmp_path,
                                                                        change, message):
    """``tiersim report`` of a plan folder whose plan.json holds a list where a design's GPUs
    per replica go (AttributeError), or a whole number beyond a float's range where a number
    goes (let through: drawn, or an OverflowError traceback in the page) or where another kind
    goes (OverflowError in the error line itself). Each is one line naming the key now."""
    from test_round5_analytic_report_plan import PLAN, error_line

    folder = tmp_path / "pl"
    folder.mkdir()
    (folder / "plan.json").write_text(json.dumps({**PLAN, **change}))
    assert error_line(capsys, "report", folder) == (
        f"Error: {folder / 'plan.json'}: {message}; rerun `tiersim plan` to rewrite it")


def test_a_run_folders_scenario_slo_beyond_a_float_is_one_line(tmp_path):
    """A run folder's scenario.yaml (no manifest covers it) with ``slo.ttft_p99_s`` a whole
    number of 401 digits passed the report's check as a number, and ``tiersim report`` ended
    in OverflowError: int too large to convert to float. The check refuses it, naming it."""
    from tiersim.errors import TiersimError
    from tiersim.report.load import check_scenario_shape

    path = tmp_path / "scenario.yaml"
    with pytest.raises(TiersimError) as caught:
        check_scenario_shape({"slo": {"ttft_p99_s": HUGE}}, path)
    assert str(caught.value) == (f"{path}: slo.ttft_p99_s: expected a number, got the number "
                                 f"{str(HUGE)[:37]}...; rerun the command that wrote it")

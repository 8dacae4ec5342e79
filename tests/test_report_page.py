"""The report page: written atomically (a unique temporary name, then a rename; a failed write
leaves the previous report intact, no temporary file behind, one error line), and its savings
section sets the simulated saving beside the closed form."""

from __future__ import annotations

import errno
import os

import pytest

from tiersim.errors import TiersimError
from tiersim.report import page


def test_report_write_replaces_the_page_and_leaves_no_temp(tmp_path):
    target = tmp_path / "report.html"
    target.write_text("old")
    page._write_atomic(target, "new")
    assert target.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]


def test_failed_report_write_keeps_the_old_page_and_no_temp(tmp_path, monkeypatch):
    target = tmp_path / "report.html"
    target.write_text("old")

    def full_disk(src, dst):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(page.os, "replace", full_disk)
    with pytest.raises(TiersimError) as err:
        page._write_atomic(target, "new")
    assert str(err.value) == (f"{target}: cannot write the report (No space left on device); "
                              "free some space or choose another folder")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]


def test_a_read_only_folder_is_one_line_naming_the_report(tmp_path, monkeypatch):
    """`tiersim report DIR` on a read-only folder said `DIR/.report-mi_ivmlu.html.tmp:
    Operation not permitted`: a temporary name no user knows, and a fix about space."""
    target = tmp_path / "report.html"
    target.write_text("old")

    def read_only(*args, **kwargs):
        raise PermissionError(errno.EPERM, os.strerror(errno.EPERM))

    monkeypatch.setattr(page, "create_temp", read_only)
    with pytest.raises(TiersimError) as err:
        page._write_atomic(target, "new")
    assert str(err.value) == (f"{target}: cannot write the report (Operation not permitted); "
                              "check the folder's permissions, or copy the run elsewhere and "
                              "report there")
    assert target.read_text() == "old"


def test_savings_section_sets_the_simulated_saving_beside_the_closed_form():
    from pathlib import Path

    from tiersim.results import RunResult

    golden = Path(__file__).parent / "golden" / "tiny_summary.json"
    run = RunResult.read(golden)
    section = page.savings_section(run)
    assert "<h3>Against the closed form</h3>" in section
    assert page.fmt(run.analytic["params"]["dC_star_usd"]) in section
    assert "replica counts are whole numbers" in section
    assert "GPUs per replica" in section and "meets SLOs" in section


def test_a_fleet_that_misses_its_slos_gets_no_saving_on_the_page():
    """As in the terminal: no saving (against the uniform tier, a static split, or in the
    closed-form table) for a run whose own fleet missed the SLOs its baselines were held to;
    the routed row shows the run's own replicas."""
    import dataclasses
    from pathlib import Path

    from tiersim.results import RunResult

    run = RunResult.read(Path(__file__).parent / "golden" / "tiny_summary.json")
    missed = dataclasses.replace(run, savings=dataclasses.replace(run.savings,
                                                                  routed_slo_met=False))
    section = page.savings_section(missed)
    assert section.count("not comparable: this fleet misses its SLOs") == 3
    assert page.fmt(page.percent(run.savings.vs_static_split_frac)) not in section
    assert page.fmt(page.percent(run.savings.vs_static_split_frac)) in page.savings_section(run)
    assert "<td>routed (this run)</td><td>1 + 1</td><td>1 + 1</td>" in section

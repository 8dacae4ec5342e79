"""Invoking tiersim as an installed user does: folder names the file system allows but UTF-8
does not (a Latin-1 name, or any non-ASCII name under a C locale with Python's UTF-8 mode off),
``--out`` links that name no folder, and the lines a run prints about its files."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest
from conftest import TINY

from tiersim.cli import main

LATIN1 = os.fsdecode(b"caf\xe9")
"""A folder name that is not UTF-8: Python holds it with a surrogate (``caf\\udce9``)."""


def small_trace(folder: Path) -> Path:
    """A canonical 40-request trace in ``folder`` (written through a Python file handle, which
    takes any name the file system does)."""
    count = 40
    df = pd.DataFrame({"arrival_s": [0.5 * i for i in range(count)],
                       "input_tokens": [500] * count, "output_tokens": [40] * count})
    path = folder / "tr.parquet"
    with open(path, "wb") as handle:
        df.to_parquet(handle, index=False)
    return path


def scenario_in(folder: Path) -> Path:
    """The tiny scenario in ``folder``, replaying :func:`small_trace` written beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    small_trace(folder)
    text = TINY.read_text().replace("path: azure2023_code.parquet", "path: tr.parquet", 1)
    path = folder / "s.yaml"
    path.write_text(text.replace("window: [240, 360]", "window: [0, 30]", 1))
    return path


@pytest.mark.parametrize("name, shown", [("esc\x1b[31mred", "esc\\x1b[31mred")])
def test_the_wrote_lines_show_a_folder_name_escaped(tmp_path, capsys, monkeypatch, name, shown):
    monkeypatch.chdir(tmp_path)
    scenario = scenario_in(tmp_path / "in")
    assert main(["run", str(scenario), "--out", name, "--no-baselines"]) == 0
    assert capsys.readouterr().out.splitlines()[-2].startswith(f"wrote {shown}/requests.parquet")
    assert main(["report", name]) == 0
    assert capsys.readouterr().out == f"wrote {shown}/report.html\n"
    sweep = ["sweep", str(scenario), "--out", f"{name}-sweep", "--workers", "1", "--no-baselines"]
    assert main(sweep) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[-2].endswith(f"-> {shown}-sweep/sweep.parquet")
    assert err[-1] == f"report: {shown}-sweep/report.html"


def test_a_name_byte_that_is_not_utf8_is_written_as_its_escape():
    from tiersim.errors import escaped

    assert escaped(f"{LATIN1}/o\x1b") == "caf\\udce9/o\\x1b"

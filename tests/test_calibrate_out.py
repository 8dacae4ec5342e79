"""``tiersim calibrate --out`` checks that need no torch (they run before it is imported)."""

from __future__ import annotations

import pytest

from tiersim.cli import main


@pytest.mark.parametrize("command", [["calibrate", "--device", "cpu", "--quick"],
                                     ["calibrate", "--from", "aiconfigurator"]])
@pytest.mark.parametrize("name,tail,whole", [("x.partial.json", ".partial.json", "x.json"),
                                             ("x.partial", ".partial", "x")])
def test_an_out_named_as_a_cut_runs_file_is_refused(tmp_path, capsys, command, name, tail,
                                                    whole):
    """`--out x.partial.json` was taken, and a budget-cut run then wrote
    x.partial.partial.json; the harness names its cut runs' files so."""
    out = tmp_path / name
    assert main([*command, "--out", str(out)]) == 1
    assert capsys.readouterr().err.strip() == (
        f"Error: --out {out}: a name ending in {tail} is the harness's own for what a run that "
        f"does not finish measured (P.partial.json for P.json); give another name, such as "
        f"{tmp_path / whole}")
    assert list(tmp_path.iterdir()) == []

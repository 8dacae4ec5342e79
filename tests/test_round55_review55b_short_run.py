"""review55b: the plan's first line says what its cost is paid over, "over the run's N s",
rounded to whole seconds: a run of 0.7 s read "over the run's 1 s" (43 % off the figure its
cost is over), and one under half a second would read "0 s". Below 10 s the span is given to
3 significant figures, as the plan's other figures are; from 10 s on, whole seconds as before."""

from __future__ import annotations

import json

from conftest import tiny_doc, write_yaml

from tiersim.cli import main
from tiersim.results_figures import figure_text


def test_a_run_under_a_second_is_not_read_as_a_whole_second(tmp_path, capsys):
    doc = tiny_doc(tiers=[tiny_doc()["tiers"][1]], router={"policy": "uniform"})
    doc["trace"]["window"] = [261.1, 261.5]  # a few requests of the Azure code trace
    code = main(["plan", str(write_yaml(tmp_path / "s.yaml", doc)), "--out",
                 str(tmp_path / "p"), "--no-report"])
    first = capsys.readouterr().out.splitlines()[0]
    assert code == 0
    span = json.loads((tmp_path / "p" / "plan.json").read_text())["plan"]["duration_s"]
    assert 0.5 < span < 1.0  # modelled: the premise (a run under a second, over half of one)
    # the span as the cost beside it is over: 3 significant figures, not "1 s"
    assert f"(provisioned) over the run's {figure_text(span)} s, " in first
    assert "over the run's 1 s" not in first

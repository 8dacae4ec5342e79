"""The report lists a tier's prefix-cache levels top first (gpu, then its offload levels as
the scenario lists them), as the console does: summary.json sorts its keys, so the report,
which reads it back, listed them alphabetically (disk before gpu before host)."""

from __future__ import annotations

import re

import yaml
from conftest import REPO, write_yaml

from tiersim.cli import main
from tiersim.results import RunResult

LEVELS = [{"name": "host", "capacity_gb": 1, "read_gb_s": 50, "write_gb_s": 50},
          {"name": "disk", "capacity_gb": 20, "read_gb_s": 6, "write_gb_s": 3}]


def offload_doc() -> dict:
    """The kv_offload example on one minute of its trace, one replica, levels host and disk."""
    doc = yaml.safe_load((REPO / "scenarios" / "kv_offload.yaml").read_text())
    doc["trace"] = {"path": str(REPO / "tiersim" / "traces" / "mooncake_synthetic.parquet"),
                    "window": [0, 60]}
    tier = doc["tiers"][0]
    tier.update(replicas=1, gpu_memory_utilization=0.5)
    tier["scheduler"]["kv_offload"] = LEVELS
    return doc


def test_the_report_lists_cache_levels_top_first(tmp_path, capsys):
    path = write_yaml(tmp_path / "kv.yaml", offload_doc())
    out = tmp_path / "o"
    assert main(["run", str(path), "--out", str(out), "--no-baselines"]) == 0
    console = re.search(r"\((gpu [^)]*)\); unbounded", " ".join(capsys.readouterr().out.split()))
    assert [part.split()[0] for part in console.group(1).split(", ")] == ["gpu", "host", "disk"]
    cell = re.search(r"<td>(gpu [^<]*)</td>", (out / "report.html").read_text()).group(1)
    assert [part.split()[0] for part in cell.split(", ")] == ["gpu", "host", "disk"]
    back = RunResult.read(out / "summary.json").tiers[0].prefix_hit_by_level
    assert list(back) == ["gpu", "host", "disk"]

"""What tiersim read from each tier's model config is recorded and shown: summary.json's
``tiers.<name>.model_read``, one ``model of <tier>:`` line of ``tiersim run`` per tier, and the
report's "Model as read, per tier" table; a model given as a path carries its config.json's
SHA-256, so a rerun after the file was edited is told apart."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from conftest import REPO, tiny_doc, write_yaml

from tiersim.cli import main
from tiersim.cli.run import model_lines
from tiersim.errors import TiersimError
from tiersim.report.load import ReportData
from tiersim.report.page import provenance
from tiersim.results import RunResult

GPT_OSS = REPO / "benchmarks" / "data" / "configs" / "gpt-oss-120b"
GOLDEN = Path(__file__).parent / "golden" / "tiny_summary.json"


@pytest.fixture(scope="module")
def gpt_oss_run(tmp_path_factory) -> tuple[Path, str]:
    """A B200 run of gpt-oss-120b given as a relative path: tier ``ck`` serves its checkpoint
    (MXFP4 experts) on 2 GPUs, tier ``bf16`` BF16 on 4; (out folder, stdout)."""
    folder = tmp_path_factory.mktemp("gpt_oss")
    shutil.copytree(GPT_OSS, folder / "gpt-oss-120b")
    doc = tiny_doc(model="./gpt-oss-120b", gpu="B200")
    doc["trace"]["window"] = [240, 270]
    doc["tiers"] = [{**doc["tiers"][0], "name": "ck", "precision": "checkpoint",
                     "gpus_per_replica": 2},
                    {**doc["tiers"][1], "gpus_per_replica": 4}]
    out = folder / "out"
    code = main(["run", str(write_yaml(folder / "s.yaml", doc)), "--out", str(out),
                 "--no-baselines"])
    assert code == 0
    return out, folder


def _digest(folder: Path) -> str:
    return hashlib.sha256((folder / "gpt-oss-120b" / "config.json").read_bytes()).hexdigest()


def test_summary_records_what_was_read_from_a_path_models_config(gpt_oss_run):
    out, folder = gpt_oss_run
    tiers = json.loads((out / "summary.json").read_text())["tiers"]
    assert tiers["ck"]["model_read"] == {
        "params": 116789048640, "active_params": 5710443840,
        "weights_per_gpu_gb": 32.59778112,
        "kv_bytes_per_token": 36864.0,  # 36 layers x 2 x (8 KV heads / 2 GPUs) x 64 x 2 bytes
        "kv_dtype": "bf16",
        "weight_formats": {"attention": "BF16", "experts": "MXFP4", "lm_head": "BF16"},
        "config_sha256": _digest(folder),
    }
    assert tiers["bf16"]["model_read"]["weight_formats"] == {
        "attention": "BF16", "experts": "BF16", "lm_head": "BF16"}
    assert tiers["bf16"]["model_read"]["kv_bytes_per_token"] == 18432.0  # 4 GPUs: 2 heads each


def test_run_prints_one_model_line_per_tier(gpt_oss_run, capsys):
    out, folder = gpt_oss_run
    lines = model_lines(RunResult.read(out / "summary.json"))
    short = _digest(folder)[:12]
    assert lines == [
        f"model of ck: ./gpt-oss-120b (config.json sha256 {short}): 117 billion parameters "
        "(5.71 billion active); weights 32.6 GB per GPU (attention BF16, experts MXFP4, lm_head "
        "BF16); KV cache 36,864 bytes per token per GPU (bf16)",
        f"model of bf16: ./gpt-oss-120b (config.json sha256 {short}): 117 billion parameters "
        "(5.71 billion active); weights 58.4 GB per GPU (attention BF16, experts BF16, lm_head "
        "BF16); KV cache 18,432 bytes per token per GPU (bf16)"]
    capsys.readouterr()
    assert main(["run", str(folder / "s.yaml"), "--no-baselines"]) == 0
    printed = " ".join(capsys.readouterr().out.split())  # the console wraps long lines
    for line in lines:
        assert line in printed


def test_report_shows_the_model_as_read(gpt_oss_run):
    out, folder = gpt_oss_run
    page = (out / "report.html").read_text()
    assert "<h3>Model as read, per tier</h3>" in page
    assert (f"<tr><td>ck</td><td>./gpt-oss-120b</td><td>config.json sha256 {_digest(folder)}"
            '</td><td class="num">116,789,048,640</td><td class="num">5,710,443,840</td>'
            '<td class="num">32.6</td><td class="num">36,864</td><td>bf16</td>'
            "<td>attention BF16, experts MXFP4, lm_head BF16</td></tr>") in page


def test_an_edited_config_gives_another_digest(gpt_oss_run, tmp_path):
    from tiersim.model_read import config_digest

    _, folder = gpt_oss_run
    copy = shutil.copytree(folder / "gpt-oss-120b", tmp_path / "gpt-oss-120b")
    assert config_digest(str(copy)) == _digest(folder)
    assert config_digest(str(copy / "config.json")) == _digest(folder)
    config = json.loads((copy / "config.json").read_text())
    (copy / "config.json").write_text(json.dumps({**config, "num_hidden_layers": 24}))
    assert config_digest(str(copy)) != _digest(folder)


def test_a_catalogue_model_has_no_digest_and_says_so():
    run = RunResult.read(GOLDEN)
    assert "config_sha256" not in json.loads(GOLDEN.read_text())["tiers"]["bf16"]["model_read"]
    assert model_lines(run)[1] == (
        "model of bf16: Qwen3-Coder-30B-A3B (tiersim's catalogue): 30.5 billion parameters "
        "(3.35 billion active); weights 61.1 GB per GPU (attention BF16, experts BF16, lm_head "
        "BF16); KV cache 98,304 bytes per token per GPU (bf16)")


def test_a_summary_written_before_model_read_still_reads_and_shows_nothing():
    data = json.loads(GOLDEN.read_text())
    for tier in data["tiers"].values():
        del tier["model_read"]
    run = RunResult.from_json(data)
    assert all(t.model_read is None for t in run.tiers)
    assert model_lines(run) == []
    assert "Model as read" not in provenance(ReportData(Path("."), run=run))
    assert "model_read" not in run.to_json()["tiers"]["bf16"]


def test_a_malformed_model_read_names_its_key():
    data = json.loads(GOLDEN.read_text())
    data["tiers"]["bf16"]["model_read"]["params"] = "many"
    with pytest.raises(TiersimError) as err:
        RunResult.from_json(data, "out/summary.json")
    assert str(err.value) == ("out/summary.json: malformed summary ('tiers.bf16.model_read."
                              "params': input should be a valid integer, got \"many\"); rerun "
                              "`tiersim run` to rewrite it")

"""Shared test helpers: scenario files written from keyword overrides, and CLI invocation."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

try:  # no per-example deadline: these machines are noisy, and no test here is a timing test
    from hypothesis import settings

    settings.register_profile("tiersim", deadline=None)
    settings.load_profile("tiersim")
except ImportError:  # pragma: no cover - hypothesis is in the test extra
    pass

REPO = Path(__file__).resolve().parent.parent
TINY = REPO / "scenarios" / "tiny.yaml"


def tiny_doc(**overrides) -> dict:
    """The tiny scenario as a dict; keyword arguments replace top-level keys."""
    doc = yaml.safe_load(TINY.read_text())
    doc = copy.deepcopy(doc)
    doc.update(overrides)
    return doc


def cheap_first_tiers() -> list[dict]:
    """tiny's tiers with w4a16 at 2.50 USD a GPU-hour, so that it is the cheaper per request,
    as listed: round 53 prices tiny's tiers at the decode batch its load gives a replica,
    where W4A16 at one price is the dearer (as its runs are), and a run of tiny's own tiers
    notes their order. For tests whose stderr must hold their own lines alone."""
    w4a16, bf16 = tiny_doc()["tiers"]
    return [{**w4a16, "cost_per_gpu_hour": 2.5}, bf16]



BUNDLED_H200_PROFILE = REPO / "tiersim" / "profiles" / "h200_aiconfigurator_vllm.json"


def edited_profile(tmp_path: Path, gpu: str | None = None, **provenance) -> Path:
    """The bundled H200 profile copied to ``tmp_path/p.json``, its ``gpu`` field and
    provenance fields set as given."""
    import json

    doc = json.loads(BUNDLED_H200_PROFILE.read_text())
    if gpu is not None:
        doc["gpu"] = gpu
    doc["provenance"].update(provenance)
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    return path


def scenario_naming_profile(tmp_path: Path, profile) -> tuple[Path, int]:
    """The tiny scenario on H200 naming ``profile``; its path and the profile key's line."""
    text = (REPO / "scenarios" / "tiny.yaml").read_text()
    path = tmp_path / "s.yaml"
    path.write_text(text.replace("profile: null", f"profile: {profile}", 1))
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1)
                if t.startswith("profile:"))
    return path, line

def disagg_file(path: Path, *edits: tuple[str, str]) -> Path:
    """The bundled ``disagg.yaml`` with each ``(old, new)`` text edit made and its trace path
    absolute, written to ``path``."""
    text = (REPO / "tiersim" / "scenarios" / "disagg.yaml").read_text()
    for old, new in edits:
        text = text.replace(old, new)
    trace = REPO / "tiersim" / "traces" / "azure2023_code.parquet"
    path.write_text(text.replace("path: azure2023_code.parquet", f"path: {trace}"))
    return path


def write_yaml(path: Path, doc: dict) -> Path:
    """Write ``doc`` as YAML (block style, keys in insertion order) and return the path."""
    path.write_text(yaml.safe_dump(doc, sort_keys=False, default_flow_style=False))
    return path


def agentic_file(folder: Path, tasks: int = 60, **slo) -> Path:
    """The bundled agentic.yaml with ``tasks`` generated agent tasks and ``slo`` keys set,
    written to ``folder/s.yaml``."""
    doc = yaml.safe_load((REPO / "tiersim" / "scenarios" / "agentic.yaml").read_text())
    doc["workload"]["sessions"]["generate"]["tasks"] = tasks
    doc["slo"].update(slo)
    path = folder / "s.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def write_frame(df, path: Path) -> Path:
    """Write ``df`` as the trace format its suffix names (``.csv``, ``.jsonl``, else Parquet)
    and return the path."""
    if path.suffix == ".csv":
        df.to_csv(path, index=False)
    elif path.suffix == ".jsonl":
        df.to_json(path, orient="records", lines=True)
    else:
        df.to_parquet(path, index=False)
    return path


@pytest.fixture
def scenario_file(tmp_path):
    """``scenario_file(text=None, name="s.yaml", **overrides)``: a scenario in a temp folder.

    With ``text``, that YAML verbatim; else the tiny scenario with top-level overrides.
    """

    def make(text: str | None = None, name: str = "s.yaml", **overrides) -> Path:
        path = tmp_path / name
        if text is not None:
            path.write_text(text)
            return path
        return write_yaml(path, tiny_doc(**overrides))

    return make


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``python -m tiersim ARGS`` in a subprocess (the real entry point, real stderr)."""
    env = dict(os.environ, COLUMNS="120", PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "tiersim", *args], capture_output=True,
                          text=True, cwd=cwd or REPO, env=env, timeout=300)


@pytest.fixture(scope="module")
def hand_edited_run(tmp_path_factory) -> Path:
    """A run folder of the tiny scenario without its manifest.json, as if edited by hand (the
    manifest would refuse any edit): tests copy it and tamper with the copy."""
    from tiersim.cli.app import main

    out = tmp_path_factory.mktemp("run") / "o"
    assert main(["run", str(TINY), "--out", str(out), "--no-report", "--no-baselines"]) == 0
    (out / "manifest.json").unlink()
    return out


@pytest.fixture(scope="module")
def manifested_run(tmp_path_factory) -> Path:
    """A run folder of the tiny scenario, manifest and all: tests copy it and tamper with the
    copy."""
    from tiersim.cli.app import main

    out = tmp_path_factory.mktemp("run") / "o"
    assert main(["run", "tiny", "--out", str(out), "--no-report", "--no-baselines"]) == 0
    return out


def copy_folder(run: Path, folder: Path) -> Path:
    """A copy of the (flat) run folder ``run`` at ``folder``, to tamper with."""
    folder.mkdir()
    for f in run.iterdir():
        (folder / f.name).write_bytes(f.read_bytes())
    return folder


def axis_line(path: Path, axis: str) -> int:
    """The 1-based line of sweep axis ``axis``'s key in the scenario file ``path`` (found by
    reading the text, independently of tiersim's YAML node tree)."""
    lines = Path(path).read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("sweep:"))
    for i in range(start, len(lines)):
        key = lines[i].strip().split(":", 1)[0].strip("'\"")
        if key == axis:
            return i + 1
    raise AssertionError(f"no sweep axis {axis!r} in {path}")


def run_nothing_answered(tmp_path):
    """``tiersim run`` (no baselines) of the tiny scenario's two minutes with every request
    longer than ``max_model_len`` (16): a run that answers nothing; its finished process."""
    doc = tiny_doc(trace={"path": "azure2023_code.parquet", "window": [240, 300]})
    for tier in doc["tiers"]:
        tier["scheduler"] = {"max_model_len": 16}
    path = write_yaml(tmp_path / "s.yaml", doc)
    done = run_cli("run", str(path), "--out", str(tmp_path / "o"), "--no-baselines")
    assert done.returncode == 0, done.stderr
    return done


@pytest.fixture
def decoded(monkeypatch):
    """The ``columns`` of every Parquet read of rows (None: all of them)."""
    import pyarrow.parquet as pq

    asked = []
    batches, table = pq.ParquetFile.iter_batches, pq.read_table

    def spy_batches(self, *args, **kwargs):
        asked.append(kwargs.get("columns"))
        return batches(self, *args, **kwargs)

    def spy_table(*args, **kwargs):
        asked.append(kwargs.get("columns"))
        return table(*args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", spy_batches)
    monkeypatch.setattr(pq, "read_table", spy_table)
    return asked


@pytest.fixture
def tiny_short(tmp_path) -> Path:
    """scenarios/tiny.yaml copied next to the test, on a short window (240-270 s)."""
    import shutil

    path = tmp_path / "tiny.yaml"
    shutil.copy(Path(__file__).resolve().parents[1] / "scenarios" / "tiny.yaml", path)
    doc = yaml.safe_load(path.read_text())
    doc["trace"]["window"] = [240, 270]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.fixture
def calibration_file(tmp_path, monkeypatch):
    """The path of a roofline calibration file a run reads in place of the shipped one (not
    written yet; the cache of the shipped one cleared before and after)."""
    from tiersim.perf import roofline_calibration as rc

    path = tmp_path / "cal" / "roofline_calibration.json"
    path.parent.mkdir()
    monkeypatch.setattr(rc, "CALIBRATION_FILE", path)
    rc.shipped.cache_clear()
    yield path
    rc.shipped.cache_clear()


def fake_plan_notes(tiers: list, floor: float, choose: dict | None = None):
    """Plan ``tiers`` (``tiersim.plan.testing.FakeTier``) on the fake scenario at accuracy
    ``floor``, 90% easy requests, one GPU a replica: the result and the planner's notes."""
    import warnings

    from tiersim.errors import Note
    from tiersim.plan.planner import Constraints, Planner
    from tiersim.plan.testing import FakeEvaluator, fake_scenario

    scenario = fake_scenario(tiers, floor=floor)
    planner = Planner(scenario, Constraints.of(scenario), FakeEvaluator(tiers, p_easy=0.9),
                      gpu_options=(1,), choose=choose)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = planner.plan()
    return result, [str(w.message) for w in caught if issubclass(w.category, Note)]

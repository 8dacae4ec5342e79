"""Round 24, the Ray sweep backend: how Ray is chosen and joined (``RAY_ADDRESS``, a local Ray
on a machine where one runs already), and what Ray prints in the user's terminal."""

from __future__ import annotations

import os
import shutil
import socket
import time
from pathlib import Path

import pandas as pd
import pytest
from test_round19 import error_line, run_cli

from tiersim.sweep import executors

ROOT = Path(__file__).resolve().parents[1]
TINY = (ROOT / "tiersim" / "scenarios" / "tiny.yaml").read_text().replace("[240, 360]",
                                                                          "[240, 270]")


def _scenario(tmp_path: Path) -> Path:
    """tiny.yaml on a short window, swept over two seeds."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(TINY + "\nsweep:\n  seed: [0, 1]\n")
    return scenario


def _closed_port() -> int:
    """A local TCP port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class RecordingRay:
    """Enough of ``ray`` for :func:`executors.ray_session`: records what ``init`` is given."""

    def __init__(self):
        self.calls: list[dict] = []

    def is_initialized(self):
        return False

    def init(self, **kw):
        self.calls.append(kw)

    def shutdown(self):
        pass


def test_a_dead_ray_address_in_the_environment_is_refused_at_once(tmp_path, capsys,
                                                                  monkeypatch):
    """``RAY_ADDRESS`` (which ``ray job submit`` sets, and which ``ray.init`` reads) skipped the
    probe that refuses a dead ``--address`` at once: Ray retried it for minutes (a sweep under
    ``timeout 60`` was still waiting). With ``--workers`` the error said ``--address None: cannot
    join the Ray cluster (When connecting to an existing cluster, num_cpus ... must not be
    provided.)``, naming an option never given. Both name the variable now, at once."""
    fake = RecordingRay()
    monkeypatch.setattr(executors, "_ray", lambda: fake)
    port = _closed_port()
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{port}")
    out = tmp_path / "o"
    started = time.monotonic()
    line = error_line(*run_cli(capsys, "sweep", _scenario(tmp_path), "--out", out,
                               "--executor", "ray", "--no-report"))
    assert line == (f"Error: RAY_ADDRESS='127.0.0.1:{port}' (in the environment): nothing answers "
                    "there (Connection refused); set it to host:port of a running Ray cluster, "
                    "or unset it to start a local Ray")
    assert time.monotonic() - started < 10 and not fake.calls and not out.exists()
    line = error_line(*run_cli(capsys, "sweep", _scenario(tmp_path), "--out", out,
                               "--executor", "ray", "-w", "2", "--no-report"))
    assert line == (f"Error: --workers 2: a Ray cluster joined at RAY_ADDRESS='127.0.0.1:{port}' "
                    "(in the environment) runs as many points at once as it has CPUs, so it is "
                    "not read; drop it, or unset RAY_ADDRESS to start a local Ray of that many "
                    "CPUs")
    assert not fake.calls and not out.exists()


def test_ray_address_in_the_environment_is_joined(monkeypatch):
    """The address in ``RAY_ADDRESS`` is the one joined (and probed), as Ray itself reads it;
    ``--address`` given beside it wins, as in Ray."""
    fake = RecordingRay()
    monkeypatch.setattr(executors, "_ray", lambda: fake)
    monkeypatch.setattr(executors, "probe_address", lambda address, *a: None)
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    with executors.ray_session(None, None):
        pass
    with executors.ray_session("10.0.0.2:6379", None):
        pass
    assert [call["address"] for call in fake.calls] == ["10.0.0.1:6379", "10.0.0.2:6379"]
    assert all("num_cpus" not in call for call in fake.calls)
    monkeypatch.setenv("RAY_ADDRESS", "local")  # Ray's word for a local Ray of its own
    with executors.ray_session(None, 2):
        pass
    assert fake.calls[-1]["num_cpus"] == 2


def test_a_local_ray_is_started_not_one_running_joined(monkeypatch):
    """Without ``--address`` (or ``RAY_ADDRESS``) a sweep starts its own local Ray of
    ``--workers`` CPUs, as the docs say. ``ray.init(address=None)`` joins a cluster that
    ``ray start`` left running on the machine instead, and there refuses ``num_cpus``: the sweep
    failed with ``--address None: cannot join the Ray cluster (When connecting to an existing
    cluster, num_cpus ... must not be provided.)``. It asks Ray for a local one by name."""
    fake = RecordingRay()
    monkeypatch.setattr(executors, "_ray", lambda: fake)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with executors.ray_session(None, 2):
        pass
    assert fake.calls[0]["address"] == "local" and fake.calls[0]["num_cpus"] == 2


def test_a_local_ray_sweep_prints_only_its_own_lines(tmp_path, capfd, monkeypatch):
    """Every Ray sweep printed Ray's log lines among its own: ``WARNING
    authentication_token_setup.py:85 -- Token authentication is enabled for this Ray cluster.
    ...`` and ``INFO worker.py:2038 -- Started a local Ray instance.`` (and, joining a cluster,
    ``Connecting to existing Ray cluster at address: ...``). Ray's logger in the sweep's
    process now shows its errors only; the sweep prints what it prints on local workers."""
    pytest.importorskip("ray")
    from test_sweep_run import make_scenario, sweep

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    path = make_scenario(tmp_path, **{"seed": [1, 2]})
    capfd.readouterr()
    sweep(path, tmp_path / "ray", executor="ray", workers=1)
    lines = [line for line in capfd.readouterr().err.splitlines() if line.strip()]
    assert lines == [f"sweep: 2 points (2 run, 0 already done, 0 failed) -> "
                     f"{tmp_path / 'ray' / 'sweep.parquet'}"]


class ElsewhereRay:
    """Enough of ``ray`` for :func:`executors.run_ray`: a running cluster whose workers run each
    task in another working folder (the one ``ray start`` ran in), as a cluster joined at
    ``--address`` does."""

    def __init__(self, folder: Path):
        self.folder = folder

    def is_initialized(self):
        return True

    def cluster_resources(self):
        return {"CPU": 1}

    def remote(self, fn):
        folder = self.folder

        class Remote:
            @staticmethod
            def remote(task):
                here = os.getcwd()
                os.chdir(folder)
                try:
                    return type("Ref", (), {"record": fn(task)})()
                finally:
                    os.chdir(here)

        return Remote

    def wait(self, pending, num_returns):
        return pending[:num_returns], pending[num_returns:]

    def get(self, ref):
        return ref.record


def test_a_ray_worker_in_another_folder_reads_what_the_command_names(tmp_path, capsys,
                                                                     monkeypatch):
    """``tiersim sweep sub/s.yaml --executor ray --address ...`` from the folder holding
    ``sub/``: the cluster's workers (started by ``ray start`` in another folder) read the
    scenario's relative paths from their own working folder, so every point failed with
    ``sub/s.yaml: line 10: trace.path: data/t.parquet: trace file not found in the bundled
    traces/`` (the trace was beside the scenario). A Ray point reads paths from the folder
    the command ran in, as a local worker does."""
    sub = tmp_path / "run" / "sub"
    (sub / "data").mkdir(parents=True)
    shutil.copy(ROOT / "tiersim" / "traces" / "azure2023_code.parquet", sub / "data" / "t.parquet")
    (sub / "s.yaml").write_text(_scenario(tmp_path).read_text().replace(
        "path: azure2023_code.parquet", "path: data/t.parquet"))
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.setattr(executors, "_ray", lambda: ElsewhereRay(tmp_path / "elsewhere"))
    monkeypatch.chdir(tmp_path / "run")
    code, err = run_cli(capsys, "sweep", "sub/s.yaml", "--out", "o", "--executor", "ray",
                        "--no-baselines", "--no-report")
    assert code == 0, err
    assert (pd.read_parquet(tmp_path / "run" / "o" / "sweep.parquet")["status"] == "ok").all()


class OtherBuildRay(ElsewhereRay):
    """A running Ray cluster whose workers have another tiersim build installed."""

    def remote(self, fn):
        from tiersim.sweep import build  # where tiersim_version reads the digest

        class Remote:
            @staticmethod
            def remote(task):
                real = build._package_digest
                build._package_digest = lambda: "0ther0build00"
                try:
                    return type("Ref", (), {"record": fn(task)})()
                finally:
                    build._package_digest = real

        return Remote


def test_points_a_cluster_of_another_tiersim_build_ran_are_not_stored_as_this_ones(
        tmp_path, capsys, monkeypatch):
    """A sweep stamps each point with the tiersim build that ran it, so a resume runs a point
    of another build again (one table, one build). The stamp was the command's own, made
    before the point was sent: points a Ray cluster with another tiersim installed computed
    were stored as this build's, and kept by every resume. The worker stamps the point now,
    and a point of another build ends the sweep with one line; nothing of it is stored."""
    from tiersim.sweep.run import tiersim_version

    monkeypatch.setattr(executors, "_ray", lambda: OtherBuildRay(tmp_path))
    out = tmp_path / "o"
    line = error_line(*run_cli(capsys, "sweep", _scenario(tmp_path), "--out", out,
                               "--executor", "ray", "--no-baselines", "--no-report"))
    version = tiersim_version()
    assert line.startswith(f"Error: {out}: point ")
    assert line.endswith(f" was run by tiersim {version.split('+')[0]}+0ther0build00, this "
                         f"command is tiersim {version} (a Ray cluster's workers need this "
                         "tiersim installed); run the same build on both, then rerun to resume "
                         "(points of the other build are not stored)")
    assert not list((out / "points").glob("*.json"))


class OlderBuildRay(ElsewhereRay):
    """A running Ray cluster whose workers run a tiersim from before points said their build:
    the record is the task's digests and what the point made, nothing more."""

    def remote(self, fn):
        class Remote:
            @staticmethod
            def remote(task):
                record = fn(task)
                record.pop("tiersim", None)
                return type("Ref", (), {"record": record})()

        return Remote


def test_points_a_cluster_of_an_older_build_ran_are_not_stored_either(tmp_path, capsys,
                                                                      monkeypatch):
    """A worker of a build that does not stamp its points returned the command's own version
    (sent with the task); none is sent now, so a point that comes back without one is another
    build's."""
    monkeypatch.setattr(executors, "_ray", lambda: OlderBuildRay(tmp_path))
    out = tmp_path / "o"
    line = error_line(*run_cli(capsys, "sweep", _scenario(tmp_path), "--out", out,
                               "--executor", "ray", "--no-baselines", "--no-report"))
    assert " was run by tiersim of a build older than this one (which does not say its " \
           "version), this command is tiersim " in line
    assert not list((out / "points").glob("*.json"))


@pytest.mark.parametrize(("failure", "shown"), [
    (ValueError("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION bogus is not supported. Please set to "
                "'python', 'cpp' or 'upb'."),
     "ValueError: PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION bogus is not supported. Please set "
     "to 'python', 'cpp' or 'upb'."),
    (ImportError("cannot import name '_message' from 'google.protobuf.pyext'", name="google"),
     "ImportError: cannot import name '_message' from 'google.protobuf.pyext'")])
def test_a_ray_that_is_installed_but_does_not_import_is_one_line(tmp_path, capsys, monkeypatch,
                                                                 failure, shown):
    """``import ray`` failing inside Ray (``PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=bogus`` in the
    environment: a ValueError; ``=cpp`` without protobuf's C++ part, or a dependency of another
    version: an ImportError of another module) was a traceback, or said ``--executor ray needs
    Ray: pip install 'tiersim[ray]'`` of a Ray that is installed. It says what failed."""
    import builtins

    real = builtins.__import__

    def failing(name, *args, **kwargs):
        if name == "ray":
            raise failure
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", failing)
    out = tmp_path / "o"
    line = error_line(*run_cli(capsys, "sweep", _scenario(tmp_path), "--out", out,
                               "--executor", "ray", "--no-report"))
    assert line == (f"Error: --executor ray: Ray is installed but does not import ({shown}); fix "
                    "what that names, or reinstall Ray: pip install --force-reinstall "
                    "'tiersim[ray]'")
    assert not out.exists()


def test_ray_not_installed_is_still_said_so(monkeypatch):
    """Ray missing (not a module of it) is named as before."""
    monkeypatch.setitem(__import__("sys").modules, "ray", None)
    with pytest.raises(executors.TiersimError) as caught:
        executors._ray()
    assert str(caught.value) == "--executor ray needs Ray: pip install 'tiersim[ray]'"


class MismatchedRay(RecordingRay):
    """A Ray whose cluster runs other versions: ``init`` raises as Ray's version check does."""

    def init(self, **kw):
        raise RuntimeError("Version mismatch: The cluster was started with:\n    Ray: 2.9.0\n"
                           "    Python: 3.10.12\nThis process on node 10.0.0.1 was started "
                           "with:\n    Ray: 2.60.0\n    Python: 3.11.9\n")


def test_a_cluster_of_other_ray_or_python_versions_is_one_line(tmp_path, capsys, monkeypatch):
    """Joining a cluster started with another Ray or Python version: Ray refuses it with a
    RuntimeError, which was a traceback (only its ValueError and ConnectionError were said in
    one line). It is one line now, naming the versions, and the folder is left as it was."""
    monkeypatch.setattr(executors, "_ray", lambda: MismatchedRay())
    monkeypatch.setattr(executors, "probe_address", lambda address, *a: None)
    out = tmp_path / "o"
    line = error_line(*run_cli(capsys, "sweep", _scenario(tmp_path), "--out", out,
                               "--executor", "ray", "--address", "10.0.0.1:6379", "--no-report"))
    assert line == ("Error: --address '10.0.0.1:6379': cannot join the Ray cluster (Version "
                    "mismatch: The cluster was started with: Ray: 2.9.0 Python: 3.10.12 This "
                    "process on node 10.0.0.1 was started with: Ray: 2.60.0 Python: 3.11.9); "
                    "run this command with the cluster's Ray and Python versions, give host:port "
                    "of a running cluster, or leave it out")
    assert not out.exists()

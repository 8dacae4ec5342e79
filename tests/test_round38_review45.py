"""Round 38, review of the day's changes (helper review45): what a reviewer found in them,
each test naming what a user saw before its fix."""

from __future__ import annotations

import pytest
from test_hostile_inputs import TINY, one_error_line, run_cli
from test_round38_fuzz11 import NoRay

from tiersim.sweep import executors


class PortParsingRay(NoRay):
    """A ``ray`` whose ``init`` refuses a port it cannot parse, as Ray 2.60 does."""

    def init(self, address=None, **kw):
        raise ValueError(f"Unable to parse port number from {address.rpartition(':')[2]}")


@pytest.mark.parametrize("port", ["\u00b2", "1\u00b2", "-\u00b2"])
def test_a_ray_address_of_a_superscript_port_is_no_traceback(tmp_path, capsys, monkeypatch,
                                                            port):
    """``tiersim sweep s.yaml --executor ray --address localhost:²`` ended in a ValueError
    traceback ('invalid literal for int() with base 10'): the port check took ``isdigit``,
    which a superscript digit passes, for what Python's ``int`` (Ray's) reads, which is
    ``isdecimal``. Such a port is now left to Ray, as any address that is not host:port is,
    and Ray's refusal is the one line it is for another malformed address; nothing is
    written."""
    monkeypatch.setattr(executors, "_ray", PortParsingRay)
    assert executors._host_port(f"localhost:{port}") is None
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(TINY + "sweep: {seed: [0, 1]}\n")
    line = one_error_line(*run_cli(capsys, "sweep", "s.yaml", "--out", "o", "--executor", "ray",
                                   "--address", f"localhost:{port}", "--no-report"))
    assert line == (f"Error: --address 'localhost:{port}': cannot join the Ray cluster (Unable "
                    f"to parse port number from {port}); give host:port of a running cluster, "
                    "or leave it out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.yaml"]


def test_a_ray_address_of_a_decimal_port_in_another_script_is_read_as_int_reads_it():
    """A port in another script's decimal digits (Arabic-Indic ``٦٣٧٩``) is a whole number to
    Python's ``int``, as to Ray: it is read as that port, and checked as one."""
    assert executors._host_port("localhost:\u0666\u0663\u0667\u0669") == ("localhost", 6379)
    with pytest.raises(executors.TiersimError, match="port -\u0661 is no TCP port"):
        executors._host_port("localhost:-\u0661")


@pytest.mark.parametrize("config", [".", "config.json", "./config.json"])
def test_a_config_in_the_working_folder_is_named_as_tiersim_run_names_it(tmp_path, capsys,
                                                                         monkeypatch, config):
    """``python -m tiersim.calibrate --config .`` (the folder form the harness reads since
    today), or ``--config config.json``, from inside the model's folder named the model ''
    (``Path('config.json').parent.name`` is empty): the profile read ``provenance.model: ''``
    and was named ``cpu_harness__tp1``. tiersim run names the same reference ``config`` (the
    file's stem, ``hf_file._model_name``); the harness now does too."""
    import json

    from test_round38_fuzz11 import SMALL_LLAMA, run_harness

    from tiersim.hardware.models import get_model

    folder = tmp_path / "llama"
    folder.mkdir()
    (folder / "config.json").write_text(SMALL_LLAMA)
    monkeypatch.chdir(folder)
    code, err = run_harness(capsys, "--device", "cpu", "--config", config, "--ops", "overhead",
                            "--out", str(tmp_path / "p.json"))
    assert code == 0, err
    model = json.loads((tmp_path / "p.json").read_text())["provenance"]["model"]
    with pytest.warns(UserWarning):  # the one-layer config names no context length
        assert model == get_model(config).name == "config"


def test_a_harness_profile_of_a_b300_sxm_is_read_as_b300():
    """On an HGX B300 torch and nvidia-smi name the device "NVIDIA B300 SXM6 AC" (public
    run logs of 8-GPU B300 nodes, 275,040 MiB each: the catalogue's B300), so the harness
    writes ``gpu: B300 SXM6 AC``, and a B300 scenario refused its own GPU's profile as
    "unknown GPU 'B300 SXM6 AC'"; with ``gpu: B300`` written by hand, as "another part than the
    SXM B300". The name is now the catalogue's B300, as H100's "H100 80GB HBM3" is."""
    from types import SimpleNamespace

    from tiersim.hardware import get_gpu
    from tiersim.perf import profile_gpu_problem

    assert get_gpu("B300 SXM6 AC").name == "B300"
    for gpu in ("B300 SXM6 AC", "B300"):
        profile = SimpleNamespace(gpu=gpu, provenance={"gpu_name": "NVIDIA B300 SXM6 AC"})
        assert profile_gpu_problem(profile, "B300", "p.json") is None
        assert profile_gpu_problem(profile, "B200", "p.json") == (
            "p.json: gpu: measured on B300, not B200; use a B200 profile")

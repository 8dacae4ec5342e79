"""Round 38, hostile input (helper fuzz11): paths the system refuses to look up, given to
``python -m tiersim.calibrate`` and to every command; a Ray address of a signed port. Each
test names what a user saw before its fix."""

from __future__ import annotations

import pytest
from test_hostile_inputs import ROOT, TINY, one_error_line, run_cli

from tiersim.calibrate.cli import main as harness_main
from tiersim.sweep import executors

LONG_NAME = "b" * 300
"""A file name over the 255 bytes a name may have."""

LONG_PATH = "a/" * 2100 + "x"
"""A path of 4,201 bytes, each of its names one byte: over the 4,095 a path may have."""

NAME_FIX = "use a shorter name (at most 255 bytes for each folder or file name)"
PATH_FIX = ("use a shorter path (at most 4,095 bytes in all: fewer or shorter folder names, or "
            "a relative path from a folder nearer the file)")


def cut(path: str) -> str:
    """``path`` as an error line names it: its first 117 characters, then ``...``."""
    return f"{path[:117]}..."


def run_harness(capsys, *argv: str) -> tuple[int, str]:
    """``python -m tiersim.calibrate ARGV`` in this process: (exit status, stderr)."""
    capsys.readouterr()
    code = harness_main(list(argv))
    return code, capsys.readouterr().err


HARNESS_PATHS = {
    "--out of a long name": (["--quick", "--out", f"{LONG_NAME}.json"], f"{LONG_NAME}.json",
                             NAME_FIX),
    "--config under a long name": (["--out", "p.json", "--config",
                                    f"{LONG_NAME}/config.json"],
                                   f"{LONG_NAME}/config.json", NAME_FIX),
    "--out of a long path": (["--quick", "--out", f"{LONG_PATH}.json"], f"{LONG_PATH}.json",
                             PATH_FIX),
}


@pytest.mark.parametrize(("args", "named", "fix"), HARNESS_PATHS.values(), ids=HARNESS_PATHS)
def test_a_path_the_system_refuses_is_one_line_from_the_harness(tmp_path, capsys, monkeypatch,
                                                                args, named, fix):
    """``python -m tiersim.calibrate --out NAME`` (or ``--config NAME/config.json``) of a name
    over 255 bytes ended in an OSError traceback ('[Errno 36] File name too long', from the
    check that --out is no link to nothing), where ``tiersim calibrate`` printed one line. The
    harness now prints that line itself, before anything is measured, and writes nothing."""
    monkeypatch.chdir(tmp_path)
    line = one_error_line(*run_harness(capsys, "--device", "cpu", *args))
    assert line == f"Error: {cut(named)}: File name too long; {fix}"
    assert list(tmp_path.iterdir()) == []


COMMAND_PATHS = {
    "run --out": (["run", str(ROOT / "tiersim" / "scenarios" / "tiny.yaml"), "--out", LONG_PATH],
                  LONG_PATH),
    "trace inspect": (["trace", "inspect", f"{LONG_PATH}.csv"], None),
    "report": (["report", LONG_PATH], LONG_PATH),
}


@pytest.mark.parametrize(("argv", "named"), COMMAND_PATHS.values(), ids=COMMAND_PATHS)
def test_a_path_too_long_in_all_is_not_told_to_shorten_its_names(tmp_path, capsys, monkeypatch,
                                                                 argv, named):
    """A path of 4,201 bytes whose every name is one byte read 'File name too long; use a
    shorter name (at most 255 bytes for each folder or file name)', a fix every name already
    met: the system's limit passed is the whole path's. The line now says so (a name over 255
    bytes keeps its own fix, above), and nothing is written."""
    monkeypatch.chdir(tmp_path)
    line = one_error_line(*run_cli(capsys, *argv))
    named = named if named is not None else str(tmp_path / f"{LONG_PATH}.csv")
    assert line == f"Error: {cut(named)}: File name too long; {PATH_FIX}"
    assert list(tmp_path.iterdir()) == []


def test_an_out_name_whose_partial_name_is_too_long_says_so(tmp_path, capsys, monkeypatch):
    """``--out`` of a 255-byte name (the most a name may have) read 'ccc...: File name too
    long; use a shorter name (at most 255 bytes for each folder or file name)': the name the
    system refused was the partial one (``.partial`` added, 263 bytes), cut where it still
    looked like ``--out``'s. The line now names the partial name and the room --out has."""
    monkeypatch.chdir(tmp_path)
    out = "c" * 250 + ".json"
    line = one_error_line(*run_harness(capsys, "--device", "cpu", "--quick", "--out", out))
    assert line == (f"Error: --out '{'c' * 56}...: its partial name (where a run that does not "
                    "finish writes what it measured: .partial added) would be 263 bytes, over "
                    "the 255 a file name may have; give --out a name of at most 247 bytes")
    assert list(tmp_path.iterdir()) == []


class NoRay:
    """A ``ray`` that must not be reached (``tests/test_ray_address_ports.py``'s)."""

    def is_initialized(self):
        return False

    def init(self, **kw):
        raise AssertionError(f"ray.init reached with {kw}")


@pytest.mark.parametrize(("address", "port"), [("localhost:-1", "-1"),
                                               ("127.0.0.1:-6379", "-6379"),
                                               ("ray://head:-1", "-1")])
def test_a_ray_address_of_a_negative_port_is_refused_at_once(tmp_path, capsys, monkeypatch,
                                                             address, port):
    """``tiersim sweep s.yaml --executor ray --address localhost:-1`` hung (Ray retried it for
    minutes, holding the sweep's folder; ``timeout 60`` ended it): a port of 0 or above
    65535 was refused at once, but ``-1`` was no whole number to the check (``isdigit``), so
    Ray, whose ``int`` reads it, was left to judge it. A signed port is now read as Ray reads
    it, and refused as any port outside 1 to 65535; nothing is written."""
    monkeypatch.setattr(executors, "_ray", NoRay)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(TINY + "sweep: {seed: [0, 1]}\n")
    line = one_error_line(*run_cli(capsys, "sweep", "s.yaml", "--out", "o", "--executor", "ray",
                                   "--address", address, "--no-report"))
    assert line == (f"Error: --address {address!r}: port {port} is no TCP port (1 to 65535); "
                    "give host:port of a running Ray cluster, or leave it out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.yaml"]


SMALL_LLAMA = ('{"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, '
               '"num_hidden_layers": 1, "intermediate_size": 128, "vocab_size": 100}')
"""A config.json of a one-layer Llama the harness measures in a second on a CPU."""


def test_a_model_folder_given_to_config_is_read_as_a_scenario_reads_it(tmp_path, capsys,
                                                                     monkeypatch):
    """``python -m tiersim.calibrate --config llama`` of a Hugging Face model folder (the
    config.json in it) read 'llama: not a regular file; a config.json is a JSON file', where a
    scenario's ``model: llama`` reads the same folder. The harness now reads the config.json
    in it, and names the model after the folder, as tiersim run does."""
    import json

    monkeypatch.chdir(tmp_path)
    (tmp_path / "llama").mkdir()
    (tmp_path / "llama" / "config.json").write_text(SMALL_LLAMA)
    code, err = run_harness(capsys, "--device", "cpu", "--config", "llama", "--ops", "overhead",
                            "--out", "p.json")
    assert code == 0, err
    assert json.loads((tmp_path / "p.json").read_text())["provenance"]["model"] == "llama"


def test_a_folder_without_a_config_given_to_config_is_one_line(tmp_path, capsys, monkeypatch):
    """A folder holding no config.json is named so, with the fix, and nothing is written."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    line = one_error_line(*run_harness(capsys, "--device", "cpu", "--config", "empty",
                                       "--ops", "overhead", "--out", "p.json"))
    assert line == ("Error: empty: a folder with no config.json in it; give the model's "
                    "config.json or the folder holding it (Hugging Face's layout)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"]

"""Round 36, hostile input (helper fuzz9): a calibrate ``--out`` that is, or lies under, a
symbolic link leading to nothing; a long command-line value quoted whole in its error line."""

from __future__ import annotations

import pytest
from test_hostile_inputs import one_error_line, run_cli, tiny_with

CALIBRATE_OUT_LINKS = {
    "a loop of links": ("l1", "--out l1: a link that leads to no file (or the links loop); "
                        "point the link at a file, remove it, or give another file path"),
    "a link to nothing": ("gone.json", "--out gone.json: a link that leads to no file (or the "
                          "links loop); point the link at a file, remove it, or give another "
                          "file path"),
    "under a loop of links": ("l1/p.json", "--out l1/p.json: l1 is a link that leads to no "
                              "folder (or the links loop); point it at a folder, remove it, or "
                              "give another file path"),
}


@pytest.mark.parametrize("importer", [False, True], ids=["harness", "aiconfigurator"])
@pytest.mark.parametrize(("out", "expected"), CALIBRATE_OUT_LINKS.values(),
                         ids=CALIBRATE_OUT_LINKS)
def test_a_calibrate_out_link_to_nothing_is_one_line(tmp_path, capsys, monkeypatch, importer,
                                                     out, expected):
    """``tiersim calibrate --quick --out l1`` where l1 and l2 link to each other ended in a
    RuntimeError traceback ('Symlink loop from ...', from Path.resolve), and ``--from
    aiconfigurator --out l1`` replaced the link with the profile, as both did a link to a file
    that does not exist; run, sweep and plan refuse such an ``--out``. Both now refuse it,
    before anything is measured or imported, and the links are left as they were."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "l1").symlink_to("l2")
    (tmp_path / "l2").symlink_to("l1")
    (tmp_path / "gone.json").symlink_to("nowhere.json")
    argv = (["calibrate", "--from", "aiconfigurator", "--out", out] if importer
            else ["calibrate", "--quick", "--device", "cpu", "--out", out])
    line = one_error_line(*run_cli(capsys, *argv))
    assert line == f"Error: {expected}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gone.json", "l1", "l2"]
    assert all(p.is_symlink() for p in tmp_path.iterdir())


LONG = "x" * 5000
CUT = f"'{'x' * 60}..."
"""A 5,000-character value, and how an error line quotes it: its first 60 characters."""

LONG_VALUES = {
    "plan --choose": (["plan", "{s}", "--choose", LONG], f"--choose {CUT}: write PATH=VALUE1,"
                      "VALUE2, a list value in brackets (e.g. router.lambda=0.1,0.2 or "
                      "router.thresholds=[0.2,0.5],[0.3,0.6])"),
    "plan --choose values": (["plan", "{s}", "--choose", f"router.floor=[{LONG}"],
                             f"--choose router.floor: cannot read '[{'x' * 59}... as YAML "
                             "values; quote a text value that holds brackets, braces, commas or "
                             "a colon ('a[1]'); write PATH=VALUE1,VALUE2, a list value in "
                             "brackets (e.g. router.lambda=0.1,0.2 or router.thresholds="
                             "[0.2,0.5],[0.3,0.6])"),
    "plan --cost-model": (["plan", "{s}", "--cost-model", LONG], f"--cost-model {CUT}: choose "
                          "one of attributed, provisioned, fixed_per_request"),
    "sweep --executor": (["sweep", "{s}", "--out", "{o}", "--executor", LONG], "--executor: "
                         f"must be 'local' or 'ray' (got {CUT})"),
    "trace inspect --format": (["trace", "inspect", "{t}", "--format", LONG], f"{{t}}: unknown "
                               f"format {CUT}; use one of auto, azure, burstgpt, mooncake, "
                               "canonical"),
    "calibrate --device": (["calibrate", "--device", LONG, "--out", "{p}"], f"--device {CUT}: "
                           "must be cuda or cpu"),
    "calibrate --ops": (["calibrate", "--quick", "--device", "cpu", "--ops", LONG, "--out",
                         "{p}"], f"--ops {CUT}: each must be one of overhead,gemm,moe,"
                        "attn_decode,attn_prefill,allreduce"),
    "calibrate --from": (["calibrate", "--from", LONG, "--out", "{p}"], f"--from {CUT}: the "
                         "only importer is 'aiconfigurator'"),
}


@pytest.mark.parametrize(("argv", "expected"), LONG_VALUES.values(), ids=LONG_VALUES)
def test_a_long_command_line_value_is_quoted_cut(tmp_path, capsys, argv, expected):
    """A 5,000-character value given to ``--choose``, ``--cost-model``, ``--executor``,
    ``trace inspect --format`` or calibrate's ``--device``, ``--ops``, ``--from`` (and
    ``--precisions``, ``--kv-dtypes``, ``--model``, ``--gpu``, ``--engine``) was quoted whole:
    an error line of 5,000 characters and more. Round 34 cut the tier flags' names; each of
    these now quotes the value's first 60 characters too, as a scenario's values are cut."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(tiny_with(extra="sweep:\n  seed: [0, 1]\n"))
    trace = tmp_path / "t.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,10,2\n")
    names = {"s": scenario, "o": tmp_path / "o", "t": trace, "p": tmp_path / "p.json"}
    line = one_error_line(*run_cli(capsys, *[a.format(**names) for a in argv]))
    assert line == "Error: " + expected.format(**names)
    assert len(line) < 400
    assert not (tmp_path / "o").exists() and not (tmp_path / "p.json").exists()

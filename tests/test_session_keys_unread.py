"""A ``workload.sessions`` key its ``source`` never reads is refused in one line naming it and
the fix, as a router key its policy never reads is (found by a tester: ``generate: {...}``
under ``source: off``, and ``system_prompt_tokens`` or ``context`` under it, ran without a
word); a sweep keeps a key some point's source reads."""

from __future__ import annotations

import pytest
from conftest import tiny_doc, write_yaml

from tiersim.cli import main
from tiersim.errors import TiersimError
from tiersim.sweep.run import prepare


def line_of(path, needle: str) -> int:
    """The 1-based line of the first line of ``path`` holding ``needle``."""
    lines = path.read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if needle in line)


@pytest.mark.parametrize("sessions,key,expected", [
    ({"source": "off", "generate": {"tasks": 5}}, "generate",
     "source off does not read it (only generate does); remove it, or set source: generate"),
    ({"generate": {"tasks": 5}}, "generate",
     "source auto does not read it (only generate does); remove it, or set source: generate"),
    ({"source": "off", "system_prompt_tokens": 2000}, "system_prompt_tokens",
     "source off does not read it (only auto, trace and generate do); remove it, or set one "
     "of those sources"),
    ({"source": "off", "context": "logged"}, "context",
     "source off does not read it (only auto and trace do); remove it, or set one of those "
     "sources"),
    ({"source": "generate", "context": "logged"}, "context",
     "source generate does not read it (only auto and trace do); remove it, or set one of "
     "those sources"),
])
@pytest.mark.parametrize("command", ["run", "plan", "sweep"])
def test_a_session_key_its_source_does_not_read_is_refused(tmp_path, capsys, sessions, key,
                                                           expected, command):
    doc = tiny_doc(workload={"sessions": sessions})
    if command == "sweep":
        doc["sweep"] = {"seed": [1, 2]}
    path = write_yaml(tmp_path / "x.yaml", doc)
    line = line_of(path, f"{key}:")
    assert main([command, str(path), "--out", str(tmp_path / "o")]) == 1
    assert capsys.readouterr().err == (
        f"Error: {path}: line {line}: workload.sessions.{key}: {expected}\n")
    assert not (tmp_path / "o").exists()


def test_a_sweep_over_the_source_keeps_the_keys_some_point_reads():
    doc = tiny_doc(workload={"sessions": {"source": "generate", "system_prompt_tokens": 100,
                                          "generate": {"tasks": 5}}})
    doc["sweep"] = {"workload.sessions.source": ["generate", "off"]}
    assert len(prepare(doc, "x.yaml").points) == 2
    doc = tiny_doc(workload={"sessions": {"source": "off"}})
    doc["sweep"] = {"workload.sessions.context": ["accumulate", "logged"]}
    with pytest.raises(TiersimError) as caught:
        prepare(doc, "x.yaml")
    assert str(caught.value) == (
        "x.yaml: sweep: 'workload.sessions.context': source off does not read it (only auto "
        "and trace do); remove it, or set one of those sources")
    doc = tiny_doc(workload={"sessions": {"generate": {"tasks": 5}}})
    doc["sweep"] = {"workload.sessions.source": ["auto", "off"]}
    with pytest.raises(TiersimError) as caught:
        prepare(doc, "x.yaml")
    assert str(caught.value) == (
        "x.yaml: workload.sessions.generate: none of the sources used (auto, off) reads it "
        "(only generate does); remove it, or set source: generate")

"""Round 57, review57: a scenario key written in full-width letters (``ｓｅｅｄ``, as a CJK
input method types them) or in capitals (``SEED``) is told the key it stands for. Each letter
of ``ｓｅｅｄ`` is non-ASCII, so round 56's look-alike rule read it as any four letters, which
``name``, ``plan`` and ``seed`` all fit, and difflib finds ``SEED`` too unlike ``seed``: both
read "unknown key (known keys: ...)" with no key suggested.
"""

from __future__ import annotations

from test_hostile_inputs import run_cli

from tiersim.scenario_explain import _look_alike


def test_a_full_width_key_is_told_the_key_it_reads_as(tmp_path, capsys):
    bad = tmp_path / "s.yaml"
    bad.write_text("name: t\nｓｅｅｄ: 0\n", encoding="utf-8")
    code, err = run_cli(capsys, "run", bad, "--out", tmp_path / "o")
    assert code == 1
    assert err.splitlines()[-1] == (
        f"Error: {bad}: line 2: ｓｅｅｄ: unknown key (did you mean 'seed'? its 'ｓ' is U+FF53 "
        "FULLWIDTH LATIN SMALL LETTER S, not an ASCII character)"
    )


def test_a_key_in_capitals_is_told_the_key():
    assert _look_alike("SEED", ["name", "plan", "seed"]) == ["seed"]
    assert _look_alike("ｓｅｅｄ", ["name", "plan", "seed"]) == ["seed"]
    assert _look_alike("seed", ["seed"]) == []  # no unknown key: nothing to suggest

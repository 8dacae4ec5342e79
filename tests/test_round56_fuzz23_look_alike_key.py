"""Round 56, hostile-input round (fuzz23): a short key written with look-alike letters.

``sееd`` (its two ``е`` Cyrillic, as a key copied from a chat or a document may be) is too
unlike ``seed`` for difflib, so the line was "unknown key (known keys: accuracy_floor, ...)"
with ``seed`` among them, no difference to be seen. A key that is a known key but for its
non-ASCII characters is now told that key, and the first such character named.
"""

from __future__ import annotations

from test_hostile_inputs import run_cli

from tiersim.scenario_explain import _look_alike


def test_a_key_with_look_alike_letters_is_told_the_key_it_reads_as(tmp_path, capsys):
    """The exact line of ``sееd: 0``."""
    bad = tmp_path / "s.yaml"
    bad.write_text("name: t\nsееd: 0\n", encoding="utf-8")
    code, err = run_cli(capsys, "run", bad, "--out", tmp_path / "o")
    assert code == 1
    assert err.splitlines()[-1] == (
        f"Error: {bad}: line 2: sееd: unknown key (did you mean 'seed'? its 'е' is U+0435 "
        "CYRILLIC SMALL LETTER IE, not an ASCII character)"
    )
    assert not (tmp_path / "o").exists()


def test_only_one_key_of_the_same_shape_is_suggested():
    """An ASCII key, or one that two known keys fit, suggests nothing this way."""
    assert _look_alike("sееd", ["seed", "name"]) == ["seed"]
    assert _look_alike("seed", ["seed"]) == []
    assert _look_alike("ееее", ["seed", "need"]) == []
    assert _look_alike("sееds", ["seed"]) == []

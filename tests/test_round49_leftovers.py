"""Round 49, the leftovers of round 48 (helper left49). Each test names what a user saw before
its fix."""

from __future__ import annotations

import json

import pytest

from tiersim.cli import main
from tiersim.cli.plan_choose import _parse_choose
from tiersim.errors import TiersimError


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    """``tiersim ARGV`` in this process: (exit status, stdout, stderr)."""
    capsys.readouterr()
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_one_request_in_a_cut_window_has_no_rate(tmp_path, capsys):
    """One request in a window cut to the trace's last arrival read '1.79e+04 req/s': one
    request over the 56 us from the window's start to itself. A rate needs at least two
    arrivals spanning time; the row now says there is one request and a note says why."""
    trace = tmp_path / "t.csv"
    trace.write_text("arrival_s,input_tokens,output_tokens\n0,10,5\n1.5,10,5\n3.000056,20,7\n")
    code, out, err = cli(capsys, "trace", "inspect", trace, "--window", "3", "100", "--json")
    assert code == 0, err
    stats = json.loads(out)
    assert (stats["rows"], stats["rate_rps"]) == (1, None)
    assert stats["notes"] == ["one request: a rate needs at least two arrivals spanning time, "
                              "so none is given"]
    code, out, err = cli(capsys, "trace", "inspect", trace, "--window", "3", "100")
    assert code == 0, err
    rows = {line.split("│")[1].strip(): line.split("│")[2].strip()
            for line in out.splitlines() if line.count("│") == 3}
    assert rows["rate (requests / window)"] == "n/a (one request)"
    assert "req/s" not in out
    # two requests in the same window still have a rate
    code, out, err = cli(capsys, "trace", "inspect", trace, "--window", "1", "100", "--json")
    assert json.loads(out)["rate_rps"] == 2 / 2.000056


CHOOSE_FORM = ("write PATH=VALUE1,VALUE2, a list value in brackets (e.g. router.lambda=0.1,0.2 "
               "or router.thresholds=[0.2,0.5],[0.3,0.6])")


@pytest.mark.parametrize(("option", "said"), [
    ("router.lambda=0.1,1e-400", "--choose router.lambda: value 2: 1e-400 is nearer 0 than any "
                                 "number tiersim holds (the least is about 5e-324), so it would "
                                 "read as 0; write 0 if that is meant"),
    ("router.lambda={a: 1, a: 2}", "--choose router.lambda: value 1.a: duplicate key (remove "
                                   "one of them)"),
    # the form wrong: the hint stays
    ("router.lambda", f"--choose 'router.lambda': {CHOOSE_FORM}"),
    ("router.lambda=", f"--choose 'router.lambda=': {CHOOSE_FORM}"),
    ("router.lambda=0.1,,0.2", "--choose router.lambda: cannot read '0.1,,0.2' as YAML values; "
                               "quote a text value that holds brackets, braces, commas or a "
                               f"colon ('a[1]'); {CHOOSE_FORM}"),
])
def test_a_choose_value_refused_ends_with_its_own_fix(option, said):
    """``--choose router.lambda=0.1,1e-400`` said what to write for 1e-400 and then 'write
    PATH=VALUE1,VALUE2, a list value in brackets (...)', though PATH=VALUES was written right:
    the form's hint now follows only a wrong form."""
    with pytest.raises(TiersimError) as err:
        _parse_choose([option])
    assert str(err.value) == said

"""Round 49, the leftovers of round 48 (helper left49). Each test names what a user saw before
its fix."""

from __future__ import annotations

import json

from tiersim.cli import main


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

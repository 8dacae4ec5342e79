"""Round 25 of hostile input, output safety (outputsafety): what tiersim writes to the terminal,
the report page and its tables when a path, a name or a label comes from hostile input
(the exact line or cell a user sees)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pandas as pd
from conftest import REPO, tiny_doc, write_yaml

from tiersim.cli import main

#: A small llama config.json (0.107 billion parameters): quick to size and to run.
SMALL_LLAMA = {"model_type": "llama", "hidden_size": 1024, "num_hidden_layers": 4,
               "num_attention_heads": 8, "num_key_value_heads": 8, "intermediate_size": 2048,
               "vocab_size": 32000, "max_position_embeddings": 4096, "torch_dtype": "bfloat16"}

#: A folder name holding a terminal escape (red) and a right-to-left override.
HOSTILE = "m\x1b[31mRED\u202eevil"


def _model_scenario(tmp_path, folder: str = HOSTILE):
    """The tiny scenario served by SMALL_LLAMA from ``tmp_path/folder/config.json``."""
    (tmp_path / folder).mkdir()
    config = tmp_path / folder / "config.json"
    config.write_text(json.dumps(SMALL_LLAMA))
    doc = tiny_doc(model=str(config))
    doc["tiers"][0]["precision"] = "fp8"
    return write_yaml(tmp_path / "s.yaml", doc), config


def test_a_model_path_holding_a_terminal_escape_is_printed_escaped(tmp_path, capsys):
    """A model's config.json in a folder whose name holds a terminal escape and a
    right-to-left override: ``tiersim run`` printed the path raw in its 'model of' lines (and
    a tier's own model in the tier table), so the terminal turned red and the line read
    backwards, though every error, note and 'wrote' line escapes a path."""
    scenario, config = _model_scenario(tmp_path)
    assert main(["run", str(scenario), "--out", str(tmp_path / "o"), "--no-baselines",
                 "--no-report"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out
    shown = str(config).replace("\x1b", "\\x1b").replace("\u202e", "\\u202e")
    assert f"model of w4a16: {shown} (config.json sha256" in out.replace("\n", "")


def test_a_tiers_own_model_path_is_escaped_in_the_tier_table(tmp_path, capsys):
    """A tier's own ``model:`` is shown beside its name in the tier table: raw there too."""
    scenario, config = _model_scenario(tmp_path)
    doc = tiny_doc()
    doc["tiers"][1].update(model=str(config), accuracy=0.9)
    write_yaml(scenario, doc)
    assert main(["run", str(scenario), "--out", str(tmp_path / "o"), "--no-baselines",
                 "--no-report"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out
    assert "\\x1b[31mRED\\u202eevil" in out.replace("\n", "").replace("│", "").replace(" ", "")


def test_a_sweep_over_a_trace_whose_name_is_not_utf8_writes_its_table(tmp_path, capsys):
    """A trace file whose name holds a byte that is not UTF-8 (a Latin-1 ``café``, read and
    written as any other file): ``tiersim sweep`` ran its points, then ended in a
    UnicodeEncodeError traceback writing sweep.parquet (Arrow text is UTF-8 and the path, held
    as ``caf\\udce9``, went into the table's trace column), so no table was written. The byte
    is written as its escape, as the report page shows it."""
    trace = os.fsencode(tmp_path) + b"/caf\xe9.parquet"
    shutil.copy(os.fsencode(REPO / "tiersim" / "traces" / "azure2023_code.parquet"), trace)
    doc = tiny_doc(sweep={"tiers.bf16.replicas": [1]})
    doc["trace"]["path"] = os.fsdecode(trace)
    scenario = write_yaml(tmp_path / "s.yaml", doc)
    out = tmp_path / "o"
    assert main(["sweep", str(scenario), "--out", str(out), "--no-report"]) == 0
    table = pd.read_parquet(out / "sweep.parquet")
    texts = {v for col in table.columns for v in table[col] if isinstance(v, str) and "caf" in v}
    assert texts and all("caf\\udce9.parquet" in v for v in texts)


def test_the_report_page_shows_a_paths_control_characters_as_escapes(tmp_path):
    """The report page quoted the model's path, the trace's and the run folder's raw: a
    right-to-left override in a folder name reversed the rest of its cell ('.../RED' then the
    file name backwards), and a terminal escape went into the page as a control character
    HTML does not allow. Each is shown as its escape, as the terminal shows it."""
    scenario, _ = _model_scenario(tmp_path)
    out = tmp_path / f"out{HOSTILE}"
    assert main(["run", str(scenario), "--out", str(out), "--no-baselines"]) == 0
    page = (out / "report.html").read_text()
    body = page[page.index("</script></head>"):]
    assert "\x1b" not in body and "\u202e" not in body
    assert f"<td>model</td><td>{tmp_path}/m\\x1b[31mRED\\u202eevil/config.json</td>" in body
    assert f"out{HOSTILE}".replace("\x1b", "\\x1b").replace("\u202e", "\\u202e") in body


def test_a_figures_text_shows_control_characters_as_escapes():
    """A sweep over ``trace.path`` (or ``model``) labels its points with the path: a
    right-to-left override in a folder name reversed the label in the figure and a terminal
    escape was drawn as a control character, though the tables show both escaped. A figure's
    text shows them as escapes too; a newline is still the label's break."""
    import plotly.graph_objects as go

    from tiersim.report.figures import plain_text

    label = f"trace.path = /t/{HOSTILE}/t.parquet\nsecond line"
    fig = plain_text(go.Figure(go.Scatter(x=[1], y=[2], name=HOSTILE, text=[label]),
                               layout={"xaxis": {"title": {"text": HOSTILE}}}))
    shown = "m\\x1b[31mRED\\u202eevil"
    assert fig.data[0].text == (f"trace.path = /t/{shown}/t.parquet<br>second line",)
    assert fig.data[0].name == shown and fig.layout.xaxis.title.text == shown


def test_analytics_lines_show_a_paths_control_characters_as_escapes(tmp_path, capsys):
    """``tiersim analytic --scenario S --trace T`` quoted both paths raw in its note and its
    'estimated from' line: a right-to-left override in their folder's name reversed the rest
    of each line (a terminal escape reached a terminal too; click strips it only from a pipe).
    Every line a command writes shows them as escapes now, as its Error and note lines did."""
    folder = tmp_path / HOSTILE
    folder.mkdir()
    trace = folder / "t.parquet"
    shutil.copy(REPO / "tiersim" / "traces" / "azure2023_code.parquet", trace)
    scenario = write_yaml(folder / "s.yaml", tiny_doc())
    assert main(["analytic", "--scenario", str(scenario), "--trace", str(trace)]) == 0
    captured = capsys.readouterr()
    shown = f"{tmp_path}/m\\x1b[31mRED\\u202eevil"
    assert captured.err.startswith(f"note: --trace replaces {shown}/s.yaml's trace, so its "
                                   f"trace.window is not applied (set for its own trace): the "
                                   f"whole of {shown}/t.parquet is read as it is; ")
    assert captured.out.startswith(f"estimated from {shown}/t.parquet (8,819 requests, ")
    assert "\u202e" not in captured.out + captured.err


def test_long_unbroken_names_do_not_widen_the_report_page(tmp_path):
    """A scenario name of 200 letters and a tier name of 64 without a space (both allowed)
    made the report page 5,389 pixels wide in a 1,280-pixel window: the title and the
    provenance and tier tables could not wrap them. Text wraps anywhere where it must now;
    numbers are never cut."""
    import tempfile
    import time

    browser_test = __import__("test_report_browser")  # skips where Chromium is absent

    doc = tiny_doc(name="N" * 200)
    doc["tiers"][0]["name"] = "A" * 64
    scenario = write_yaml(tmp_path / "s.yaml", doc)
    out = tmp_path / "o"
    assert main(["run", str(scenario), "--out", str(out), "--no-baselines"]) == 0
    browser = browser_test.Browser(Path(tempfile.mkdtemp(dir=tmp_path)))
    try:
        browser.call("Page.enable")
        browser.call("Page.navigate", url=(out / "report.html").as_uri())
        browser.wait_for("Page.loadEventFired")
        time.sleep(0.5)
        widths = browser.call("Runtime.evaluate", returnByValue=True, expression=(
            "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"))
    finally:
        browser.close()
    scroll, client = widths["result"]["value"]
    assert scroll <= client


def test_a_model_path_holding_a_nul_names_the_file_and_the_fix(tmp_path, capsys):
    """A relative model or draft path holding a NUL (YAML's ``"\\0"``) said only
    ``tiers[1].model: embedded null byte`` (Python's open() refusing it), where an absolute
    one said the config was not found; it names the path and the fix now."""
    doc = tiny_doc()
    doc["tiers"][1].update(model="m\x00/config.json", accuracy=0.9)
    scenario = write_yaml(tmp_path / "s.yaml", doc)
    assert main(["run", str(scenario)]) == 1
    line = capsys.readouterr().err
    assert line == (f"Error: {scenario}: line 20: tiers[1].model: m\\x00/config.json: a file "
                    "name cannot hold the character U+0000 (NUL); check the path\n")

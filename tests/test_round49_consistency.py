"""Round 49 (consistency audit): the numbers a planner reads of a run are recomputed here from
what the run itself simulated, not only read back from summary.json (test_round29_agree holds
the console, summary.json and report.html to each other's digits).

- requests.parquet: its rows are the requests; its percentiles (numpy's linear, finite values,
  dropped requests left out) are the headline's and each tier's p99s; its correctness is the
  accuracy, request-weighted over the tiers; its counts are the tiers'.
- the scenario's fleet and prices: GPU-hours = replicas x GPUs x duration, the provisioned
  cost = GPU-hours x price (each tier's too), USD/hour = GPUs x price for the run and each
  sized uniform fleet; the saving = 1 - routed / baseline on its basis, the baseline the
  cheapest uniform fleet meeting the SLOs and the floor, its sign the printed sign; the static
  split's cost and accuracy from its mix of the uniform fleets.
- the workload's realised draws: FPR and FNR counted by hand, and the two-tier identity
  accuracy = A_cheap + p_need (1 - FPR) - q (q: requests on the top tier that the cheap tier
  answered right and the top tier wrong), with the two-type closed form's own figures (c0, dc,
  dC*, the kink) against the uniform fleets it names.
- ``tiersim report`` on the folder writes the page the run wrote; a sweep's rows are, column
  for column, each point's own ``tiersim run``.
- the console's uniform fleets table keeps every column at the console's least width (100).
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import REPO, run_cli

from tiersim.results import RunResult

SCENARIOS = REPO / "tiersim" / "scenarios"
TRACES = REPO / "tiersim" / "traces"


# --------------------------------------------------------------------------- reading outputs


class _Page(HTMLParser):
    """report.html's tables (each under the heading before it) and its text."""

    def __init__(self, page: str):
        super().__init__()
        self.tables: list[tuple[str, list[list[str]]]] = []
        self.text: list[str] = []
        self._heading, self._in_heading, self._skip = "", False, 0
        self._rows, self._cell = None, None
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self._skip += 1
        elif tag in ("h1", "h2", "h3"):
            self._in_heading, self._heading = True, ""
        elif tag == "table":
            self._rows = []
            self.tables.append((self._heading.strip(), self._rows))
        elif tag == "tr" and self._rows is not None:
            self._rows.append([])
        elif tag in ("td", "th") and self._rows is not None:
            self._cell = []
        if tag in ("tr", "p", "li", "div", "h1", "h2", "h3", "br", "caption", "pre"):
            self.text.append("\n")

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self._skip -= 1
        elif tag in ("h1", "h2", "h3"):
            self._in_heading = False
        elif tag in ("td", "th") and self._cell is not None:
            self._rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "table":
            self._rows = None

    def handle_data(self, data):
        if self._skip:
            return
        self.text.append(data)
        if self._in_heading:
            self._heading += data
        if self._cell is not None:
            self._cell.append(data)

    def table(self, heading: str, first: str | None = None) -> list[list[str]]:
        return next(rows for head, rows in self.tables
                    if head == heading and (first is None or rows[0][0] == first))

    def rows(self, heading: str, first: str | None = None) -> dict[str, list[str]]:
        return {row[0]: row[1:] for row in self.table(heading, first)}


def page_text(folder: Path) -> list[str]:
    """report.html's text, line by line, without its one line that names the time it was
    written and the folder's path (which differs between two writes of one run)."""
    text = "".join(_Page((folder / "report.html").read_text(encoding="utf-8")).text)
    return [line for line in re.sub(r"\n\s*\n+", "\n", text).splitlines()
            if "written by" not in line and "(run " not in line]


def console_table(text: str, title_start: str) -> list[list[str]]:
    """The rich table whose title starts ``title_start`` in console ``text``, header first,
    each row's wrapped lines joined (a continued row has an empty second cell)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title_start))
    top = next(i for i in range(start, len(lines)) if lines[i].startswith("┏"))
    rows: list[list[str]] = []
    header: list[list[str]] = []
    i = top + 1
    while not lines[i].startswith("┡"):
        header.append([c.strip() for c in lines[i].strip().strip("┃").split("┃")])
        i += 1
    rows.append([" ".join(x for x in col if x) for col in zip(*header, strict=True)])
    for line in lines[i + 1:]:
        if line.startswith("└"):
            break
        cells = [c.strip() for c in line.strip().strip("│").split("│")]
        if len(rows) > 1 and not (cells[0] and cells[1]):
            rows[-1] = [f"{a} {b}".strip() for a, b in zip(rows[-1], cells, strict=True)]
        else:
            rows.append(cells)
    return rows


NUMBER = re.compile(r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")


def shows(text: str, value: float | None, scale: float = 1.0) -> bool:
    """``text``'s first number is ``value * scale`` to the digits it shows; "-" for None."""
    if value is None:
        return text.strip().startswith("-") and not NUMBER.match(text.strip())
    found = NUMBER.search(text)
    digits = found.group().replace(",", "")
    places = len(digits.split(".")[1]) if "." in digits else 0
    return abs(float(digits) - value * scale) <= 0.5 * 10 ** -places * (1 + 1e-9) + 1e-12


close = dict(rel_tol=1e-8, abs_tol=1e-12)


# --------------------------------------------------------------------------- the checks


def parquet_problems(folder: Path) -> list[str]:
    """summary.json against the requests it was computed from (requests.parquet)."""
    s = json.loads((folder / "summary.json").read_text())
    rq = pd.read_parquet(folder / "requests.parquet")
    out = []
    if len(rq) != s["requests"] or int((~rq.completed).sum()) != s["dropped"]:
        out.append(f"{len(rq)} rows, {int((~rq.completed).sum())} dropped: summary "
                   f"{s['requests']}, {s['dropped']}")
    done = rq[rq.completed]

    def p(values, q):
        values = values.to_numpy(float)
        values = values[np.isfinite(values)]
        return float(np.percentile(values, q)) if len(values) else None

    for col in ("ttft", "tpot", "e2e", "queue"):
        for q in (50, 99):
            want, got = p(done[f"{col}_s"], q), s[f"{col}_p{q}_s"]
            if not (want is None and got is None or math.isclose(got, want, **close)):
                out.append(f"{col}_p{q}_s {got}, requests.parquet's {want}")
    if int(done.output_tokens.sum()) != s["output_tokens"]:
        out.append(f"output tokens {s['output_tokens']}, rows {int(done.output_tokens.sum())}")
    weighted = 0.0
    for name, t in s["tiers"].items():
        mine = rq[rq.final_tier == name]
        if len(mine) != t["requests"] or int((~mine.completed).sum()) != t.get("dropped", 0):
            out.append(f"tier {name}: {len(mine)} rows ({int((~mine.completed).sum())} dropped),"
                       f" summary {t['requests']} ({t.get('dropped', 0)})")
        weighted += mine.expected_accuracy.mean() * len(mine) if len(mine) else 0.0
        for col in ("ttft", "tpot"):
            want, got = p(mine[mine.completed][f"{col}_s"], 99), t[f"{col}_p99_s"]
            if not (want is None and got is None or math.isclose(got, want, **close)):
                out.append(f"tier {name} {col}_p99_s {got}, its rows' {want}")
    if sum(t["requests"] for t in s["tiers"].values()) != s["requests"]:
        out.append("the tiers' requests do not sum to the requests")
    if not math.isclose(weighted / s["requests"], s["accuracy"], **close):
        out.append(f"accuracy {s['accuracy']}, the tiers' request-weighted "
                   f"{weighted / s['requests']}")
    return out


def fleet_problems(folder: Path) -> list[str]:
    """summary.json's GPU-hours, costs, rates and savings against the scenario's fleet and
    prices and the simulated uniform fleets."""
    s = json.loads((folder / "summary.json").read_text())
    doc = yaml.safe_load((folder / "scenario.yaml").read_text())
    price = {t["name"]: t["cost_per_gpu_hour"] for t in doc["tiers"]}
    tiers, d = s["tiers"], s["duration_s"]
    out = []
    gpus = {n: t["replicas"] * t["gpus_per_replica"] for n, t in tiers.items()}
    for name, want, got in (
            ("gpu_hours", sum(gpus.values()) * d / 3600, s["gpu_hours"]),
            ("provisioned_cost_usd", sum(gpus[n] * price[n] for n in tiers) * d / 3600,
             s["provisioned_cost_usd"]),
            ("tiers' cost_usd", sum(t["cost_usd"] for t in tiers.values()), s["cost_usd"]),
            ("cost_per_1m_output_tokens", s["cost_usd"] / s["output_tokens"] * 1e6,
             s["cost_per_1m_output_tokens"])):
        if not math.isclose(got, want, **close):
            out.append(f"{name} {got}, from its parts {want}")
    busy = sum(t["attributed_cost_usd"] / price[n] for n, t in tiers.items())
    if not math.isclose(s["gpu_hours_busy"], busy, rel_tol=1e-8):
        out.append(f"gpu_hours_busy {s['gpu_hours_busy']}, attributed / price {busy}")
    for n, t in tiers.items():  # busy time over the time paid for: attributed / provisioned
        if not math.isclose(t["utilization"], t["attributed_cost_usd"] * 3600
                            / (gpus[n] * price[n] * d), rel_tol=1e-8, abs_tol=1e-12):
            out.append(f"tier {n} utilization {t['utilization']}")
    if s["cost_model"] == "provisioned":
        for n, t in tiers.items():
            if not math.isclose(t["cost_usd"], gpus[n] * price[n] * d / 3600, **close):
                out.append(f"tier {n} cost {t['cost_usd']}, GPUs x price x duration")
    sv = s["savings"]
    if not sv or sv["method"] != "simulated":
        return out
    uni = sv["uniform"]
    per_hour = sv["saving_basis"] == "per_hour"
    key = "cost_per_hour_usd" if per_hour else "cost_usd"
    if per_hour and not math.isclose(sv["routed_cost_per_hour_usd"],
                                     sum(gpus[n] * price[n] for n in tiers), **close):
        out.append(f"routed USD/hour {sv['routed_cost_per_hour_usd']}")
    for n, u in uni.items():
        if u.get("replicas") and u.get("cost_per_hour_usd") is not None and not math.isclose(
                u["cost_per_hour_usd"], u["replicas"] * u["gpus_per_replica"] * price[n], **close):
            out.append(f"uniform {n} USD/hour {u['cost_per_hour_usd']}")
    meeting = {n: u for n, u in uni.items() if u["slo_met"] and u["cost_usd"] is not None
               and u["accuracy"] >= sv["accuracy_floor"] - 1e-9}
    if meeting:
        cheapest = min(meeting, key=lambda n: (meeting[n][key], meeting[n]["cost_usd"]))
        if sv["baseline_uniform_tier"] != cheapest:
            out.append(f"baseline {sv['baseline_uniform_tier']}, cheapest meeting the floor "
                       f"{cheapest}")
    if sv["vs_uniform_frac"] is not None:
        base = uni[sv["baseline_uniform_tier"]]
        routed = sv["routed_cost_per_hour_usd"] if per_hour else sv["routed_cost_usd"]
        if not math.isclose(sv["vs_uniform_frac"], 1 - routed / base[key], **close):
            out.append(f"saving {sv['vs_uniform_frac']}, 1 - {routed} / {base[key]}")
        if not math.isclose(sv["vs_uniform_usd"], base["cost_usd"] - sv["routed_cost_usd"],
                            **close):
            out.append(f"saving in USD {sv['vs_uniform_usd']}")
    mix = sv["static_split_mix"]
    if mix:
        accuracy = sum(share * uni[n]["accuracy"] for n, share in mix.items())
        cost = sum(share * uni[n]["cost_usd"] for n, share in mix.items())
        if accuracy < sv["accuracy"] - 1e-9:
            out.append(f"the split's accuracy {accuracy} under the run's {sv['accuracy']}")
        if not math.isclose(cost, sv["static_split_cost_usd"], **close):
            out.append(f"the split's cost {sv['static_split_cost_usd']}, its mix's {cost}")
    return out


def console_problems(folder: Path, console: str) -> list[str]:
    """The console's saving row and uniform fleets table against summary.json: the share, its
    sign (a dearer fleet "costs ... more", as tiersim plan words it) and basis, the baseline
    named; each fleet's size, accuracy, cost and rate."""
    s = json.loads((folder / "summary.json").read_text())
    sv = s["savings"]
    out = []
    head = {row[0]: row[1] for row in console_table(console, "tiersim run")[1:]}
    label = next(k for k in head if k.startswith("saved vs uniform"))
    if sv["vs_uniform_frac"] is not None:
        shown = head[label]
        dearer = shown.startswith("costs ") and " more" in shown  # round 49: "-100 %" before
        if not shows(shown, -sv["vs_uniform_frac"] if dearer else sv["vs_uniform_frac"], 100):
            out.append(f"{label} {shown}, summary {sv['vs_uniform_frac']}")
        if shown.startswith("-") or dearer != (sv["vs_uniform_frac"] < 0):
            out.append(f"{label} {shown}: the sign of {sv['vs_uniform_frac']}")
        if not label.endswith(sv["baseline_uniform_tier"]):
            out.append(f"{label} names no {sv['baseline_uniform_tier']}")
        if shown.endswith("per hour") != (sv["saving_basis"] == "per_hour"):
            out.append(f"{label} {shown} on basis {sv['saving_basis']}")
    table = console_table(console, "uniform fleets")
    header, rows = table[0], {row[0]: dict(zip(table[0], row, strict=True)) for row in table[1:]}
    accuracy = next(h for h in header if "accuracy" in h)
    for name, u in sv["uniform"].items():
        row = rows[f"all {name}"]
        for col, value, scale in ((accuracy, u["accuracy"], 100), ("cost USD", u["cost_usd"], 1),
                                  ("USD/hour", u.get("cost_per_hour_usd"), 1)):
            if col in row and not shows(row[col], value, scale):
                out.append(f"all {name} {col} {row[col]}, summary {value}")
        if u["replicas"] is not None and row["replicas x GPUs"].split(" (")[0] != (
                f"{u['replicas']} x {u['gpus_per_replica']}"):
            out.append(f"all {name} {row['replicas x GPUs']}")
    # a fleet of one tier routes nothing: "this run (one tier)" (round 56, fresh56)
    routed = rows["routed (this run)" if len(s["tiers"]) > 1 else "this run (one tier)"]
    for col, value, scale in ((accuracy, s["accuracy"], 100), ("cost USD", s["cost_usd"], 1),
                              ("USD/hour", sv.get("routed_cost_per_hour_usd"), 1)):
        if col in routed and not shows(routed[col], value, scale):
            out.append(f"routed {col} {routed[col]}, summary {value}")
    return out


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> tuple[Path, str]:
    """``tiersim run tiny --out DIR`` (uniform fleets simulated, report written): the folder
    and the console's text."""
    out = tmp_path_factory.mktemp("r49") / "tiny"
    done = run_cli("run", "tiny", "--out", str(out))
    assert done.returncode == 0, done.stderr
    return out, done.stdout


def routing_example_point(folder: Path, fpr: float | None = None) -> Path:
    """The bundled routing_example.yaml (oracle routing NVFP4 / BF16 priced per request, the
    two-type model's setting) on its first 300 s, its trace path absolute; ``fpr`` sets its
    router's injected confusion, else a sweep of it over 0 and 0.4."""
    doc = yaml.safe_load((SCENARIOS / "routing_example.yaml").read_text())
    doc["trace"] = {"path": str(TRACES / "azure2023_conv.parquet"), "window": [0, 300]}
    if fpr is None:
        doc["sweep"] = {"router.confusion.fpr": [0.0, 0.4]}
        name = "sweep.yaml"
    else:
        doc.pop("sweep")
        doc["router"]["confusion"] = {"fpr": fpr}
        name = f"fpr{fpr}.yaml"
    path = folder / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def swept(tmp_path_factory) -> tuple[Path, dict[float, tuple[Path, str, Path]]]:
    """``tiersim sweep --baselines`` of routing_example over FPR 0 and 0.4, and a ``tiersim run``
    of each point: the sweep folder, and per FPR the point's scenario, console and folder."""
    base = tmp_path_factory.mktemp("r49sweep")
    done = run_cli("sweep", str(routing_example_point(base)), "--out", str(base / "sweep"),
                   "--workers", "1", "--baselines")
    assert done.returncode == 0, done.stderr
    points = {}
    for fpr in (0.0, 0.4):
        path = routing_example_point(base, fpr)
        out = base / f"run{fpr}"
        run = run_cli("run", str(path), "--out", str(out))
        assert run.returncode == 0, run.stderr
        points[fpr] = (path, run.stdout, out)
    return base / "sweep", points


def realised_draws(path: Path):
    """The workload a run of ``path`` draws (its requests with every tier's ``correct_<tier>``)
    and its tiers' names, drawn as the run draws them, without simulating it."""
    from tiersim import runner
    from tiersim.scenario import load_scenario

    scenario = load_scenario(path)
    fleet = runner.build_fleet(scenario)
    infos = runner.tier_infos(scenario, fleet)
    loaded = runner.load_scenario_trace(scenario, str(path))
    prepared = runner.prepare_all(loaded, [*infos, *runner.baseline_infos(scenario)], scenario,
                                  runner.workload_rng(scenario), str(path))
    return prepared.df, [t.name for t in infos]


# --------------------------------------------------------------------------- the tests


def test_tiny_agrees_with_its_requests_its_fleet_and_its_prices(tiny_run):
    """tiny (static split 50/50 over W4A16 and BF16, one H200 each at 3.50 USD/hour): its
    percentiles, counts and accuracy are its requests'; its 0.0588 GPU-hours and 0.206 USD are
    2 GPUs x 106 s and x 3.50 USD; its saving is -100 % per hour against uniform BF16 (7.00
    against 3.50 USD/hour: the routed fleet has two GPUs, each uniform fleet one), which the
    console words as tiersim plan does: "costs 100 % more per hour" (round 49)."""
    out, console = tiny_run
    assert parquet_problems(out) == []
    assert fleet_problems(out) == []
    assert console_problems(out, console) == []
    s = json.loads((out / "summary.json").read_text())["savings"]
    assert (s["routed_cost_per_hour_usd"], s["uniform"]["bf16"]["cost_per_hour_usd"]) == (7.0, 3.5)
    assert s["vs_uniform_frac"] == -1.0
    head = {row[0]: row[1] for row in console_table(console, "tiersim run")[1:]}
    assert head["saved vs uniform bf16"] == "costs 100 % more per hour"


def test_tiersim_report_on_the_folder_writes_the_runs_page(tiny_run, tmp_path):
    """``tiersim report DIR`` on a copy of the run's folder writes the page ``tiersim run``
    wrote, line for line but the time it was written and the folder's name."""
    out, _ = tiny_run
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    (copy / "report.html").unlink()
    done = run_cli("report", str(copy))
    assert done.returncode == 0, done.stderr
    assert page_text(copy) == page_text(out)


def test_each_figure_names_where_it_comes_from(tiny_run):
    """Every headline row of the console and the report has a source, the same in both: the
    trace for the counts, the step times' sources for latency, the cost's ledger for costs,
    the accuracy's source for the accuracy."""
    out, console = tiny_run
    s = json.loads((out / "summary.json").read_text())
    rows = console_table(console, "tiersim run")
    assert rows[0] == ["metric", "value", "source"]
    page = _Page((out / "report.html").read_text(encoding="utf-8")).rows("Headline", "metric")
    sources = s["sources"]
    for metric, _, source in rows[1:]:
        assert source, metric
    by_console = {metric: source for metric, _, source in rows[1:]}
    for console_name, page_name, source in (
            ("duration", "simulated duration", sources["latency"]),
            ("TTFT p50 / p99", "TTFT p99", sources["latency"]),
            ("SLO attainment", "SLO attainment", sources["latency"]),
            ("cost (provisioned)", "cost (provisioned)", sources["cost"]),
            ("cost per 1M output tokens", "cost per 1M output tokens", sources["cost"]),
            ("expected accuracy", "expected accuracy", sources["accuracy"])):
        assert by_console[console_name] == page[page_name][2] == source


def test_the_uniform_fleets_table_keeps_every_column_at_100_columns(tiny_run, capsys,
                                                                    monkeypatch):
    """tiny's run with a third tier and uniform fleet (FP8, 1 x 1): "1 x 1 + 1 x 1 + 1 x 1"
    and the USD/hour column make the table 105 columns at its narrowest. At the console's 100
    (its least width: a pipe, or a terminal of 100 or fewer) rich cut it at the edge: the
    header read "USD/h", the title "the scena", and with a fourth tier (plan_default) the
    accuracy column had no width at all. It is printed whole now, wider than the console."""
    from tiersim.cli.run_summary import print_summary

    out, _ = tiny_run
    run = RunResult.read(out / "summary.json")
    tier = dataclasses.replace(run.tiers[0], name="fp8")
    fleet = dataclasses.replace(run.savings.uniform[0], tier="fp8", accuracy=0.9478)
    run = dataclasses.replace(run, tiers=(run.tiers[0], tier, run.tiers[1]),
                              savings=dataclasses.replace(
                                  run.savings, uniform=(*run.savings.uniform, fleet),
                                  routed_cost_per_hour_usd=10.5))
    monkeypatch.setenv("COLUMNS", "100")
    capsys.readouterr()
    print_summary(run, None)
    text = capsys.readouterr().out
    table = console_table(text, "uniform fleets")
    assert table[0] == ["fleet", "replicas x GPUs", "meets SLOs", "meets floor",
                        "expected accuracy", "cost USD", "USD/hour"]
    assert table[-1] == ["routed (this run)", "1 x 1 + 1 x 1 + 1 x 1", "yes", "-", "94.40 %",
                         "0.206", "10.5"]
    assert ["all fp8", "1 x 1", "yes", "yes", "94.78 %", "0.103", "3.50"] in table
    assert "the scenario sets no accuracy_floor" in " ".join(text.split())
    assert max(len(line) for line in text.splitlines()) == 105


def test_a_sweeps_rows_are_its_points_own_runs(swept):
    """Each row of sweep.parquet (uniform fleets simulated) holds, column for column, what a
    ``tiersim run`` of that point writes to its summary.json; and each point's run agrees with
    its requests, fleet, prices and baselines."""
    folder, points = swept
    table = pd.read_parquet(folder / "sweep.parquet")
    assert len(table) == 2
    for _, row in table.iterrows():
        _, console, out = points[row["router.confusion.fpr"]]
        s = json.loads((out / "summary.json").read_text())
        flat = pd.json_normalize(s, sep=".").iloc[0].to_dict()
        differ = []
        for key, value in flat.items():
            if key.startswith("profile.") or key not in row.index:
                continue
            got = row[key]
            if isinstance(value, list):
                value, got = json.loads(json.dumps(value)), json.loads(got)
            if key == "notes":  # a note names its scenario file: the point's, or the sweep's
                value, got = ([n.split(": ", 1)[-1] for n in notes] for notes in (value, got))
            if value is None or (isinstance(value, float) and math.isnan(value)):
                if not (got is None or (isinstance(got, float) and math.isnan(got))):
                    differ.append((key, value, got))
            elif isinstance(value, float):
                if not math.isclose(value, got, rel_tol=1e-12):
                    differ.append((key, value, got))
            elif value != got:
                differ.append((key, value, got))
        assert differ == []
        missing = [k for k in flat if not k.startswith("profile.") and k not in row.index]
        assert missing == []
        assert parquet_problems(out) == []
        assert fleet_problems(out) == []
        assert console_problems(out, console) == []


def test_fpr_fnr_and_accuracy_are_the_realised_draws(swept):
    """routing_example's oracle at injected FPR 0 and 0.4: FPR and FNR counted by hand on the
    realised draws are the router's; with two tiers the accuracy is A_cheap + p_need (1 - FPR)
    - q exactly (q, requests the top tier answered wrong that the cheap tier had right, is 0
    here: on two types the top tier is never wrong where the cheap one is right); and the two-
    type closed form's a_top - (1 - p) delta FPR reads the same accuracy."""
    _, points = swept
    for fpr, (path, _, out) in points.items():
        s = json.loads((out / "summary.json").read_text())
        df, names = realised_draws(path)
        rq = pd.read_parquet(out / "requests.parquet")
        assert (rq.request_id.to_numpy() == df.request_id.to_numpy()).all()
        right = np.column_stack([df[f"correct_{n}"].to_numpy(float) for n in names])
        final = rq.final_tier.map({n: k for k, n in enumerate(names)}).to_numpy()
        need = (right[:, 0] < right[:, 1]).astype(int)  # the cheap tier wrong, the top right
        fp = ((final < need) & (need == 1)).sum() / (need == 1).sum()
        fn = ((final > need) & (need == 0)).sum() / (need == 0).sum()
        r = s["router"]
        assert r["basis"] == "realised"
        assert fpr > 0 or fp == 0  # the oracle makes no false positive of its own
        assert math.isclose(r["fpr"], fp, **close) and math.isclose(r["fnr"], fn, **close)
        q = ((final == 1) & (right[:, 0] > right[:, 1])).mean()
        assert q == 0
        p_need = (need == 1).mean()
        assert math.isclose(s["accuracy"], right[:, 0].mean() + p_need * (1 - fp) - q, **close)
        uniform = s["savings"]["uniform"]
        assert math.isclose(uniform["nvfp4"]["accuracy"], right[:, 0].mean(), **close)
        assert math.isclose(uniform["bf16"]["accuracy"], right[:, 1].mean(), **close)
        m = s["analytic"]["params"]
        loss = m["p"] * m["eps"] + (1 - m["p"]) * m["delta"]
        assert math.isclose(loss, p_need, rel_tol=1e-8)  # the cheap tier's mean loss
        a_top = uniform["bf16"]["accuracy"]
        assert math.isclose(s["accuracy"], a_top - m["p"] * m["eps"] - loss * fp, rel_tol=1e-8)
        # the closed form's prices are the uniform fleets' costs, its dC* its own formula
        assert math.isclose(m["c0_usd"], uniform["nvfp4"]["cost_usd"], rel_tol=1e-9)
        assert math.isclose(m["dc_usd"], uniform["bf16"]["cost_usd"] - m["c0_usd"], rel_tol=1e-8)
        star = m["p"] * (1 - m["p"]) * (m["delta"] - m["eps"]) / loss * m["dc_usd"]
        assert math.isclose(m["dC_star_usd"], star, rel_tol=1e-8)
    assert points[0.0][2] != points[0.4][2]


def test_the_sweeps_report_reads_its_rows(swept):
    """The sweep report's points table shows each row's accuracy (4 figures) and cost (3) as
    sweep.parquet holds them."""
    folder, _ = swept
    table = pd.read_parquet(folder / "sweep.parquet")
    page = _Page((folder / "report.html").read_text(encoding="utf-8"))
    rows = page.table("Points")
    header = rows[0]
    cost = next(h for h in header if h.startswith("cost of the run"))
    accuracy = next(h for h in header if h.startswith("accuracy"))
    cells = {float(row[0]): dict(zip(header, row, strict=True)) for row in rows[1:]}
    for _, row in table.iterrows():
        shown = cells[row["router.confusion.fpr"]]
        assert shows(shown[cost], row["cost_usd"]) and len(shown[cost].replace(".", "")) >= 3
        assert shows(shown[accuracy], row["accuracy"])
        assert len(shown[accuracy].split(".")[1]) == 4


def test_the_realised_draws_are_the_runs(swept):
    """The helper above draws what the run drew: the run's expected_accuracy column is the
    realised correctness of each request's final tier (a router that reads the draws scores
    on them)."""
    _, points = swept
    path, _, out = points[0.4]
    df, names = realised_draws(path)
    rq = pd.read_parquet(out / "requests.parquet")
    right = np.column_stack([df[f"correct_{n}"].to_numpy(float) for n in names])
    final = rq.final_tier.map({n: k for k, n in enumerate(names)}).to_numpy()
    assert np.array_equal(right[np.arange(len(rq)), final] * rq.completed,
                          rq.expected_accuracy.to_numpy())


def test_the_console_table_reader_joins_wrapped_rows():
    """console_table joins a row's wrapped lines (the router row wraps its name)."""
    text = ("tiersim run: x\n┏━┳━┓\n┃ metric ┃ value ┃\n┡━╇━┩\n"
            "│ router (floor): FPR / FNR / │ 1 % / 2 % / 0 % │\n│ escalated │  │\n└─┴─┘\n")
    assert console_table(text, "tiersim run")[1] == ["router (floor): FPR / FNR / escalated",
                                                     "1 % / 2 % / 0 %"]


def test_the_tier_tables_say_their_requests_include_the_dropped(tiny_run):
    """A tier's requests are those whose last tier it was, dropped or answered (so the tiers
    sum to the run's requests), and its p99s are over those it answered. tiny with both tiers'
    max_model_len cut (2,048 and 4,096) drops 50 of its 317 requests, 22 on W4A16 and 28 on
    BF16: the headline read "317 (267 / 50)" and the tier table "w4a16 91", "bf16 226", with
    nothing saying 22 and 28 of those were dropped. The console's tier table and the report's
    say it under the table; a run that dropped nothing says nothing."""
    from tiersim.cli.run_summary import tier_table
    from tiersim.report.page import run_headline

    out, _ = tiny_run
    run = RunResult.read(out / "summary.json")
    assert run.tier_dropped_words() is None
    w4a16, bf16 = run.tiers
    run = dataclasses.replace(run, tiers=(dataclasses.replace(w4a16, dropped=22),
                                          dataclasses.replace(bf16, dropped=28)))
    words = ("requests include the 50 dropped (w4a16 22, bf16 28); each tier's p99s are over "
             "those it answered")
    assert run.tier_dropped_words() == words
    assert tier_table(run).caption.splitlines()[-1] == words
    assert (" Requests include the 50 dropped (w4a16 22, bf16 28); each tier&#x27;s p99s are "
            "over those it answered.</p>") in run_headline(run)


def test_the_reports_uniform_fleets_are_in_the_consoles_order(tiny_run):
    """The uniform fleets read back from summary.json (whose keys are sorted) come in the run's
    tier order, cheapest first, as the console printed them: the report listed tiny's bf16
    above w4a16 (the default job's bf16 above fp8) where the console lists w4a16 first, and
    the routed row's "1 + 1" (default's "10 + 7": fp8's 10, bf16's 7) is in tier order."""
    out, console = tiny_run
    fleets = [row[0].removeprefix("all ") for row in console_table(console, "uniform fleets")[1:]]
    page = _Page((out / "report.html").read_text(encoding="utf-8"))
    assert fleets == ["w4a16", "bf16", "routed (this run)"]
    assert [row[0] for row in page.table("Savings (uniform fleets simulated)", "fleet")[1:]] == (
        fleets)
    assert [u.tier for u in RunResult.read(out / "summary.json").savings.uniform] == fleets[:2]


def _bundled_run(name: str, tmp_path):
    """A bundled scenario run without baselines or report: its summary.json and its
    requests.parquet, checked whole (:func:`parquet_problems`)."""
    out = tmp_path / name
    done = run_cli("run", name, "--out", str(out), "--no-baselines", "--no-report")
    assert done.returncode == 0, done.stderr
    assert parquet_problems(out) == []
    return json.loads((out / "summary.json").read_text()), pd.read_parquet(out / "requests.parquet")


def test_a_cascades_rates_are_its_requests_and_draws(tmp_path):
    """The bundled cascade (NVFP4 -> BF16 on a noisy confidence signal, three request types):
    its escalation rate is the share of requests.parquet's escalated rows, its tiers' passes
    are every first pass on NVFP4 and every escalation on BF16, and its FPR, FNR and accuracy
    are the realised draws' (A_cheap + p_need (1 - FPR) - q, as for routing_example)."""
    s, rq = _bundled_run("cascade", tmp_path)
    assert math.isclose(s["router"]["escalation_rate"], rq.escalated.mean(), **close)
    assert s["tiers"]["nvfp4"]["passes"] == int((rq.tier == "nvfp4").sum() - rq.refused.sum())
    assert s["tiers"]["bf16"]["passes"] == int(rq.escalated.sum())
    df, names = realised_draws(SCENARIOS / "cascade.yaml")
    assert names == ["nvfp4", "bf16"]
    right = np.column_stack([df[f"correct_{n}"].to_numpy(float) for n in names])
    final = rq.final_tier.map({n: k for k, n in enumerate(names)}).to_numpy()
    need = (right[:, 0] < right[:, 1]).astype(int)
    fp = ((final < need) & (need == 1)).sum() / (need == 1).sum()
    fn = ((final > need) & (need == 0)).sum() / (need == 0).sum()
    assert math.isclose(s["router"]["fpr"], fp, **close)
    assert math.isclose(s["router"]["fnr"], fn, **close)
    q = ((final == 1) & (right[:, 0] > right[:, 1])).mean()
    assert math.isclose(s["accuracy"], right[:, 0].mean() + (need == 1).mean() * (1 - fp) - q,
                        **close)


def test_an_agentic_runs_task_figures_are_its_steps(tmp_path):
    """The bundled agentic run: each per-task figure is recomputed from requests.parquet's
    steps (a task's latency is its first arrival to its last finish, its success the product
    of its steps' correctness, its cost its steps' share of the headline cost), and each step
    type's count, accuracy and final tiers are its rows'."""
    s, rq = _bundled_run("agentic", tmp_path)
    se = s["sessions"]
    tasks = rq.groupby("session_id").agg(first=("arrival_s", "min"), last=("finish_s", "max"),
                                         done=("completed", "all"),
                                         success=("expected_accuracy", "prod"),
                                         cost=("cost_usd", "sum"), steps=("step", "size"))
    latency = (tasks["last"] - tasks["first"])[tasks.done].to_numpy()
    for key, want in (("tasks", len(tasks)), ("completed_tasks", int(tasks.done.sum())),
                      ("steps_per_task_mean", tasks.steps.mean()),
                      ("steps_per_task_max", int(tasks.steps.max())),
                      ("task_latency_p50_s", np.percentile(latency, 50)),
                      ("task_latency_p99_s", np.percentile(latency, 99)),
                      ("task_latency_mean_s", latency.mean()),
                      ("task_success", tasks.success.mean()),
                      ("per_request_accuracy", rq.expected_accuracy.mean()),
                      ("cost_per_task_usd", tasks.cost.mean() * s["cost_usd"] / rq.cost_usd.sum()),
                      ("request_e2e_p50_s", np.percentile(rq.e2e_s[rq.completed], 50))):
        assert math.isclose(se[key], want, **close), key
    assert sum(t["requests"] for t in se["step_types"].values()) == s["requests"]
    for kind, rows in rq.groupby("step_type"):
        t = se["step_types"][kind]
        assert t["requests"] == len(rows)
        assert math.isclose(t["accuracy"], rows.expected_accuracy.mean(), **close)
        shares = rows.final_tier.value_counts(normalize=True).to_dict()
        assert t["final_tier_shares"].keys() == shares.keys()
        assert all(math.isclose(t["final_tier_shares"][n], v, **close) for n, v in shares.items())


def test_a_percent_on_the_console_reads_as_the_reports_fraction(tiny_run, capsys, monkeypatch):
    """An SLO attainment of 213 of 2,000 requests (0.1065; the float just under it): the
    console multiplied by 100 first (the float just over 10.65) and printed "10.7 %", the
    report rounded the fraction, "0.106". The console now rounds the value as the report does
    and moves the point: "10.6 %". Every k / 2,000 and k / 10,000 reads alike in both (as the
    report shows an SLO attainment: a fraction that is not 1 is never shown as 1, nor on the
    console as 100 %; 1,999 / 2,000 reads 0.9995 and 99.95 %, round 49)."""
    from tiersim.cli.run_summary import print_summary
    from tiersim.report.page import fmt, run_headline, to_figures
    from tiersim.results import figure_text

    out, _ = tiny_run
    run = dataclasses.replace(RunResult.read(out / "summary.json"), slo_attainment=213 / 2000)
    monkeypatch.setenv("COLUMNS", "120")
    capsys.readouterr()
    print_summary(run, None)
    head = {row[0]: row[1] for row in console_table(capsys.readouterr().out, "tiersim run")[1:]}
    assert head["SLO attainment"] == "10.6 %"
    page = _Page(run_headline(run)).rows("Headline", "metric")
    assert page["SLO attainment"][0] == "0.106"
    for n in (2000, 10000):
        for k in range(n + 1):
            console = figure_text(k / n, " %", 100).removesuffix(" %").replace(",", "")
            report = fmt(to_figures(k / n, 3))
            assert float(console) / 100 == pytest.approx(float(report), abs=1e-12), (k, n)
    assert figure_text(0.0065, " ms", 1e3) == "6.50 ms"  # milliseconds likewise
    assert figure_text(30532122624, " billion", 1e-9) == "30.5 billion"
    assert figure_text(12.3456, " ms", 1e3) == "12,346 ms"  # from 1,000 up, whole

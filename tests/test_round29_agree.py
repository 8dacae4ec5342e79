"""Round 29 (agree): every figure a planner reads of one run agrees with itself in the console
(``tiersim run``), summary.json and report.html; a sweep's table with its points and a run of
one; a plan's saving in its lines and its report.

Each figure shown is read back from the text the user sees and held to summary.json's value: it
must be that value correctly rounded to the digits it shows (so no place rounds a figure another
way than another: never 10.5 here and 10.4 there), and the same figure shown to the same digits
reads the same everywhere. The identities a planner relies on are checked on the way: tiers'
costs sum to the headline, shares to 100%, completed + dropped = requests, the saving is
1 - cost / the named baseline's cost, attributed <= provisioned, each p99 >= its p50.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import re
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tiersim.cli import main
from tiersim.cli.run import print_summary
from tiersim.report.agentic import cache_rows, session_rows, step_type_rows
from tiersim.report.page import run_headline
from tiersim.results import RunResult, basis_words

GOLDEN = Path(__file__).parent / "golden"
SCENARIOS = Path(__file__).resolve().parents[1] / "tiersim" / "scenarios"

NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?(?:e[-+]?\d+)?")
"""A number as tiersim prints one: thousands separators, a decimal point, e-notation."""


# --------------------------------------------------------------------------- numbers


def numbers(text: str) -> list[str]:
    """The numbers in ``text``, in order, as written."""
    return NUMBER.findall(text)


def rounds_to(shown: str, value: float | None, scale: float = 1.0) -> bool:
    """Whether ``shown`` is ``value * scale`` rounded to the digits ``shown`` has (a value
    within 1e-9 of 0 may read 0; a value half way between two roundings, either; a missing
    value reads as a dash)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return shown.strip() in ("-", "")
    text = shown.replace(",", "")
    exact = value * scale
    if float(text) == 0 and abs(exact) < 1e-9:
        return True
    half = 0.5 * 10.0 ** -_decimals(text)
    return abs(float(text) - exact) <= half * (1 + 1e-9) + 1e-12 * abs(exact)


def _decimals(text: str) -> int:
    """Decimal places ``text`` shows (negative for e-notation's whole tens)."""
    mantissa, _, exponent = text.lower().partition("e")
    return len(mantissa.partition(".")[2]) - (int(exponent) if exponent else 0)


def read_as(longer: str, shorter: str) -> str:
    """``longer`` as a reader rounds it (half up) to the decimals ``shorter`` shows: 12.75 to
    one decimal reads 12.8, so 12.75 beside 12.7 are two figures (both plain decimals)."""
    places = Decimal(1).scaleb(-_decimals(shorter))
    return str(Decimal(longer).quantize(places, rounding=ROUND_HALF_UP))


@dataclass
class Figures:
    """Every figure read from the places a run is shown: ``(place, name) -> (text, value,
    scale)``; :meth:`problems` lists those that disagree."""

    seen: dict[tuple[str, str], tuple[str, float | None, float]] = field(default_factory=dict)

    def add(self, place: str, name: str, text: str | None, value: float | None,
            scale: float = 1.0) -> None:
        """The figure ``name`` as ``place`` shows it (``text``: the number alone)."""
        assert text is not None, f"{place}: {name} is not shown"
        self.seen[(place, name)] = (text.strip(), value, scale)

    def problems(self) -> list[str]:
        """A line for each figure that is not its value's rounding, and for each figure two
        places show as a reader would not round alike (to the same digits but not alike, or
        12.75 beside 12.7); e-notation is left to the first check."""
        out = [f"{place}: {name} reads {text!r}, summary.json {value!r} (x{scale:g})"
               for (place, name), (text, value, scale) in self.seen.items()
               if not rounds_to(text, value, scale)]
        by_name: dict[str, set[tuple[int, str]]] = {}
        for (_, name), (text, _, scale) in self.seen.items():
            if text not in ("-", "") and "e" not in text.lower():
                unscaled = Decimal(text.replace(",", "")).scaleb(-round(math.log10(scale)))
                by_name.setdefault(name, set()).add((_decimals(f"{unscaled:f}"),
                                                     f"{unscaled:f}"))
        for name, texts in by_name.items():
            for (_, short), (_, long) in itertools.combinations(sorted(texts), 2):
                if read_as(long, short) != short:
                    out.append(f"{name} reads {short!r} in one place, {long!r} in another")
        return out


# --------------------------------------------------------------------------- the console


def console_rows(text: str) -> dict[str, list[str]]:
    """Each row of the console's tables by its first cell: the other cells' text (a row rich
    wrapped onto several lines joined into one)."""
    rows: dict[str, list[str]] = {}
    last = None
    for line in text.splitlines():
        if not line.startswith("│"):
            last = None
            continue
        cells = [c.strip() for c in line.strip("│").split("│")]
        if cells[0] and (last is None or not _continues(cells)):
            rows[cells[0]] = cells[1:]
            last = cells[0]
        elif last is not None:  # a wrapped cell's next line
            rows[last] = [f"{a} {b}".strip() for a, b in zip(rows[last], cells[1:])]
    return rows


def _continues(cells: list[str]) -> bool:
    """Whether ``cells`` is the next line of a wrapped row, not a row of its own: its first
    value cell is empty (a row of its own always has a value there)."""
    return not cells[1] if len(cells) > 1 else True


# --------------------------------------------------------------------------- the report


class PageTables(HTMLParser):
    """The report's tables, each under the heading before it: ``(heading, rows of cells)``."""

    def __init__(self, page: str):
        super().__init__()
        self.tables: list[tuple[str, list[list[str]]]] = []
        self._heading: str | None = None
        self._last_heading = ""
        self._cell: str | None = None
        self._script = False
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        """A table, row or cell opens (a heading or a script, to be kept or skipped)."""
        if tag == "script":
            self._script = True
        elif tag in ("h2", "h3"):
            self._heading = ""
        elif tag == "table":
            self.tables.append((self._last_heading, []))
        elif tag == "tr":
            self.tables[-1][1].append([])
        elif tag in ("td", "th"):
            self._cell = ""

    def handle_endtag(self, tag):
        """A heading or a cell closes."""
        if tag == "script":
            self._script = False
        elif tag in ("h2", "h3"):
            self._last_heading, self._heading = self._heading or "", None
        elif tag in ("td", "th"):
            self.tables[-1][1][-1].append(self._cell)
            self._cell = None

    def handle_data(self, data):
        """Text, into the open cell or heading (never a script's)."""
        if self._script:
            return
        if self._cell is not None:
            self._cell += data
        if self._heading is not None:
            self._heading += data

    def table(self, heading: str, first_header: str | None = None) -> dict[str, list[str]]:
        """The table under a heading ``heading`` (a pattern) matches at its start (the one
        whose first header is ``first_header``) as rows by their first cell."""
        for head, rows in self.tables:
            if re.match(heading, head) and first_header in (None, rows[0][0]):
                return {row[0]: row[1:] for row in rows}
        raise AssertionError(f"report.html has no table under {heading!r}")


# --------------------------------------------------------------------------- one run


def run_figures(run: RunResult, console: str, page: str) -> Figures:
    """Every figure of ``run`` read from the console's text and the report's page."""
    figures = Figures()
    _console_headline(figures, run, console_rows(console))
    _console_lines(figures, run, console)
    _report_headline(figures, run, PageTables(page))
    _shared_rows(figures, run, console_rows(console), PageTables(page))
    return figures


def _one(text: str, k: int = 0) -> str:
    """The ``k``-th number of ``text``."""
    found = numbers(text)
    assert len(found) > k, f"no number {k} in {text!r}"
    return found[k]


def _parts(text: str) -> list[str]:
    """The figures of a cell that shows several as ``a / b / c``: each one's number, or its
    dash."""
    return [(numbers(part) or ["-"])[0] for part in text.split(" / ")]


def _console_headline(figures: Figures, run: RunResult, rows: dict[str, list[str]]) -> None:
    """The console's headline, tier and uniform-fleet tables."""
    add = functools.partial(figures.add, "console")
    scope = run.served_scope
    counts = numbers(rows["requests (completed / dropped)"][0])
    cache = run.response_cache
    add("requests", counts[0], run.requests if cache is None else cache.requests)
    add("completed", counts[1], run.completed)
    add("dropped", counts[2], run.dropped + (0 if cache is None else cache.unanswered))
    add("duration", _one(rows["duration"][0]), run.duration_s)
    for name, ms, p50, p99 in (("TTFT", 1, run.ttft_p50_s, run.ttft_p99_s),
                               ("TPOT", 1e3, run.tpot_p50_s, run.tpot_p99_s)):
        pair = _parts(rows[f"{name} p50 / p99{scope}"][0])
        add(f"{name} p50", pair[0], p50, ms)
        add(f"{name} p99", pair[1], p99, ms)
    add("end-to-end p99", _one(rows[f"end-to-end p99{scope}"][0]), run.e2e_p99_s)
    add("SLO attainment", _one(rows[f"SLO attainment{scope}"][0]), run.slo_attainment, 100)
    add("throughput", _one(rows[f"throughput{scope}"][0]), run.throughput_tok_s)
    add("cost", _one(rows[f"cost ({run.cost_model})"][0]), run.cost_usd)
    add("attributed", _one(rows["attributed (busy GPU time only)"][0]),
        run.attributed_cost_usd)
    add("cost per 1M output tokens", _one(rows[f"cost per 1M output tokens{scope}"][0]),
        run.cost_per_1m_output_tokens)
    add("GPU-hours", _one(rows["GPU-hours provisioned"][0]), run.gpu_hours)
    add("accuracy", _one(rows[f"{run.accuracy_label}{scope}"][0]), run.accuracy, 100)
    r = run.router
    rates = _parts(rows[f"router ({r.policy}): FPR / FNR / escalated"][0])
    for k, (name, value) in enumerate((("FPR", r.fpr), ("FNR", r.fnr),
                                       ("escalation rate", r.escalation_rate))):
        add(name, rates[k], value, 100)
    floor_row = next((k for k in rows if k.startswith("accuracy floor ")), None)
    if floor_row is not None:
        add("accuracy floor", _one(floor_row), r.accuracy_floor, 100)
        lo, hi = numbers(rows[floor_row][0].partition("CI")[2])
        add("accuracy CI low", lo, r.accuracy_ci95[0], 100)
        add("accuracy CI high", hi, r.accuracy_ci95[1], 100)
    _console_saving(figures, run, rows)
    _tier_figures(add, rows, run, tpot_scale=1e3)  # the console prints TPOT in ms
    s = run.savings
    if s is not None and s.method == "simulated":
        tasks = run.sessions is not None  # a task success column before the cost (round 57)
        for u in s.uniform:
            cells = rows[f"all {u.tier}"]
            add(f"uniform {u.tier} accuracy", cells[3].split()[0], u.accuracy, 100)
            if tasks:
                add(f"uniform {u.tier} task success", cells[4].split()[0], u.task_success, 100)
            add(f"uniform {u.tier} cost", cells[4 + tasks], u.cost_usd)
        cells = rows[run.fleet_label()]  # "this run (one tier)" for one tier (round 56)
        add("routed accuracy", cells[3].split()[0], s.accuracy, 100)
        add("routed cost", cells[4 + tasks], s.routed_cost_usd)


def _console_saving(figures: Figures, run: RunResult, rows: dict[str, list[str]]) -> None:
    """The console's saving row: the baseline it names and the share saved against it."""
    s = run.savings
    if s is None or s.baseline_uniform_tier is None or not s.comparable \
            or s.vs_uniform_frac is None:
        return
    name = "estimated saving" if s.estimated else "saved"
    cells = rows[f"{name} vs uniform {s.baseline_uniform_tier}"]
    figures.add("console", "saved vs uniform", _signed(cells[0]), s.vs_uniform_frac, 100)


def _signed(text: str) -> str:
    """A saving's number, signed: a dearer fleet's "costs 79.0 % more" (worded as tiersim plan
    words it, round 49; "-79.0 %" before) is -79.0."""
    return f"-{_one(text)}" if text.startswith("costs ") and " more" in text else _one(text)


def _console_lines(figures: Figures, run: RunResult, console: str) -> None:
    """The console's prefix-cache lines."""
    for t in run.tiers:
        if t.prefix_hit_rate is None:
            continue
        line = re.search(rf"^prefix cache {re.escape(t.name)}: (.*)$", console, re.M)
        assert line, f"no prefix cache line of tier {t.name}"
        text = line.group(1)
        figures.add("console", f"tier {t.name} prefix hit rate", _one(text), t.prefix_hit_rate,
                    100)
        for level, value in (t.prefix_hit_by_level or {}).items():
            shown = re.search(rf"\b{re.escape(level)} ({NUMBER.pattern}) %", text)
            figures.add("console", f"tier {t.name} prefix hit {level}",
                        shown and shown.group(1), value, 100)
        bound = re.search(rf"unbounded cache ({NUMBER.pattern})", text)
        figures.add("console", f"tier {t.name} prefix hit bound", bound and bound.group(1),
                    t.prefix_hit_bound, 100)


def _report_headline(figures: Figures, run: RunResult, page: PageTables) -> None:
    """The report's headline, per-tier, router, prefix-cache and savings tables."""
    add = functools.partial(figures.add, "report")
    head = {k: v[0] for k, v in page.table("Headline").items()}
    cache = run.response_cache
    scope = run.served_scope
    add("requests", head["requests"], run.requests if cache is None else cache.requests)
    add("completed", head["completed"], run.completed)
    add("dropped", head["dropped"], run.dropped + (0 if cache is None else cache.unanswered))
    add("duration", head["simulated duration"], run.duration_s)
    for name, value in (("TTFT p50", run.ttft_p50_s), ("TTFT p99", run.ttft_p99_s),
                        ("TPOT p50", run.tpot_p50_s), ("TPOT p99", run.tpot_p99_s),
                        ("end-to-end p99", run.e2e_p99_s),
                        ("throughput", run.throughput_tok_s)):
        add(name, head[f"{name}{scope}"], value)
    _fraction_or_percent(add, "SLO attainment", head[f"SLO attainment{scope}"],
                         run.slo_attainment)
    _fraction_or_percent(add, "accuracy", head[f"{run.accuracy_label}{scope}"], run.accuracy)
    add("cost", head[f"cost ({run.cost_model})"], run.cost_usd)
    add("attributed", head["attributed (busy GPU time only)"], run.attributed_cost_usd)
    add("cost per 1M output tokens", head[f"cost per 1M output tokens{scope}"],
        run.cost_per_1m_output_tokens)
    add("GPU-hours", head["GPU-hours provisioned"], run.gpu_hours)
    tiers = page.table("Per tier")
    _tier_figures(add, tiers, run, tpot_scale=1, accuracy=True)
    r = run.router
    router = {k: v[0] for k, v in page.table("Router").items()}
    _fraction_or_percent(add, "accuracy", router["accuracy"], r.accuracy)
    if r.accuracy_floor is not None:
        _fraction_or_percent(add, "accuracy floor", router["accuracy floor"], r.accuracy_floor)
    interval = router["accuracy 95% interval"]
    if r.accuracy_ci95[0] is not None:
        lo, hi = interval.split(" - ")
        _fraction_or_percent(add, "accuracy CI low", lo, r.accuracy_ci95[0])
        _fraction_or_percent(add, "accuracy CI high", hi, r.accuracy_ci95[1])
    for name, value in (("FPR", r.fpr), ("FNR", r.fnr), ("escalation rate", r.escalation_rate),
                        ("silent failure rate", r.silent_failure_rate)):
        add(name, router[name].split()[0], value, 100)
    _report_prefix(add, run, page)
    _report_savings(add, run, page)


def _fraction_or_percent(add, name: str, text: str, value: float | None) -> None:
    """A rate the report shows as a fraction, or as a percent ("94.40 %")."""
    if text.endswith("%"):
        add(name, text.removesuffix("%"), value, 100)
    else:
        add(name, text, value)


def _report_prefix(add, run: RunResult, page: PageTables) -> None:
    """The report's prefix-cache table."""
    if all(t.prefix_hit_rate is None for t in run.tiers):
        return
    rows = page.table("Prefix cache")
    for t in run.tiers:
        if t.prefix_hit_rate is None:
            continue
        cells = rows[t.name]
        _fraction_or_percent(add, f"tier {t.name} prefix hit rate", cells[0], t.prefix_hit_rate)
        for level, value in (t.prefix_hit_by_level or {}).items():
            shown = re.search(rf"\b{re.escape(level)} ({NUMBER.pattern}) ?%", cells[1])
            add(f"tier {t.name} prefix hit {level}", shown and shown.group(1), value, 100)
        _fraction_or_percent(add, f"tier {t.name} prefix hit bound", cells[2],
                             t.prefix_hit_bound)


SAVINGS = "(Estimated s|S)avings"
"""The heading of the report's savings tables, simulated or estimated."""


def _report_savings(add, run: RunResult, page: PageTables) -> None:
    """The report's savings tables: the saving against the named baseline, each fleet."""
    s = run.savings
    if s is None:
        return
    summary = {k: v[0] for k, v in page.table(SAVINGS, "item").items()}
    if s.baseline_uniform_tier is not None:
        assert summary["cheapest uniform tier meeting the floor"] == s.baseline_uniform_tier
        if s.comparable and s.vs_uniform_frac is not None:
            # "saved vs that tier per hour" under provisioned cost (round 31)
            per = basis_words(s.saving_basis, s.vs_uniform_frac)
            # a dearer fleet: "saved vs that tier" reads "costs 79.0 % more per hour", the
            # basis in the cell, as tiersim plan words it (round 49)
            label = f"saved vs that tier{per}" if f"saved vs that tier{per}" in summary else \
                "saved vs that tier"
            assert per in summary[label] or label.endswith(per)
            add("saved vs uniform", _signed(summary[label]), s.vs_uniform_frac, 100)
    fleets = page.table(SAVINGS, "fleet")
    tasks = run.sessions is not None  # a task success column before the cost (round 57)
    for u in s.uniform:
        _fraction_or_percent(add, f"uniform {u.tier} accuracy", fleets[u.tier][4], u.accuracy)
        if tasks:
            _fraction_or_percent(add, f"uniform {u.tier} task success", fleets[u.tier][5],
                                 u.task_success)
        add(f"uniform {u.tier} cost", fleets[u.tier][5 + tasks], u.cost_usd)
    _fraction_or_percent(add, "routed accuracy", fleets[run.fleet_label()][4], s.accuracy)
    add("routed cost", fleets[run.fleet_label()][5 + tasks], s.routed_cost_usd)


SHARED_TABLES = (("Agentic tasks", "figure", session_rows), ("Agentic tasks", "step type",
                                                             step_type_rows),
                 ("Response cache", "figure", cache_rows))
"""The tables the console and the report both build from one list of rows (their heading in
the report, their first header, the rows)."""


def _shared_rows(figures: Figures, run: RunResult, console: dict[str, list[str]],
                 page: PageTables) -> None:
    """Each number of the agentic and response-cache tables, in the console and the report."""
    for heading, first, rows in SHARED_TABLES:
        shown = rows(run)
        report = page.table(heading, first) if shown else {}
        for row in shown:
            for k, value in enumerate(row[1:]):
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    name = f"{first} {row[0]} [{k}]"
                    figures.add("console", name, console[row[0]][k], value)
                    figures.add("report", name, report[row[0]][k], value)


# --------------------------------------------------------------------------- identities


def identity_problems(run: RunResult) -> list[str]:
    """A line for each identity of summary.json's figures that does not hold."""
    out = []
    close = functools.partial(math.isclose, rel_tol=1e-6, abs_tol=1e-9)
    if run.cost_usd is not None and not close(sum(t.cost_usd for t in run.tiers), run.cost_usd):
        out.append(f"tiers' costs sum to {sum(t.cost_usd for t in run.tiers)}, "
                   f"headline {run.cost_usd}")
    served = sum(t.requests for t in run.tiers)
    if served and not close(sum(t.share for t in run.tiers), 1.0):
        out.append(f"tiers' shares sum to {sum(t.share for t in run.tiers)}")
    if run.completed + run.dropped != run.requests:
        out.append(f"completed {run.completed} + dropped {run.dropped} != {run.requests}")
    if run.attributed_cost_usd > run.provisioned_cost_usd * 1.000001:
        out.append(f"attributed {run.attributed_cost_usd} > provisioned "
                   f"{run.provisioned_cost_usd}")
    if not close(sum(t.attributed_cost_usd for t in run.tiers), run.attributed_cost_usd):
        out.append(f"tiers' attributed costs sum to "
                   f"{sum(t.attributed_cost_usd for t in run.tiers)}, {run.attributed_cost_usd}")
    for name, value, expected in (
            ("cost per 1M output tokens", run.cost_per_1m_output_tokens,
             run.cost_usd / run.output_tokens * 1e6 if run.output_tokens else None),
            ("GPU-hours", run.gpu_hours, sum(t.gpus for t in run.tiers) * run.duration_s / 3600),
            ("throughput", run.throughput_tok_s, run.output_tokens / run.duration_s)):
        if expected is not None and not close(value, expected):
            out.append(f"{name} {value}, from its parts {expected}")
    for name, p50, p99 in (("TTFT", run.ttft_p50_s, run.ttft_p99_s),
                           ("TPOT", run.tpot_p50_s, run.tpot_p99_s),
                           ("end-to-end", run.e2e_p50_s, run.e2e_p99_s)):
        if p50 is not None and p99 is not None and p99 < p50:
            out.append(f"{name} p99 {p99} < p50 {p50}")
    s = run.savings
    if (s is not None and s.baseline_uniform_tier is not None
            and s.vs_uniform_over_trace_frac is not None):  # the share per hour has no rates here
        base = next(u for u in s.uniform if u.tier == s.baseline_uniform_tier).cost_usd
        if not close(s.vs_uniform_over_trace_frac, 1 - s.routed_cost_usd / base):
            out.append(f"saving {s.vs_uniform_over_trace_frac} != 1 - {s.routed_cost_usd} / "
                       f"{base}")
        if not close(s.routed_cost_usd, run.cost_usd):
            out.append(f"routed cost {s.routed_cost_usd} != headline {run.cost_usd}")
    return out


# --------------------------------------------------------------------------- the tests


def run_once(tmp_path: Path, capsys, monkeypatch, scenario: str, *flags: str):
    """``tiersim run SCENARIO --out DIR``: (the run as summary.json holds it, the console's
    text, report.html)."""
    monkeypatch.setenv("COLUMNS", "300")  # no wrapped cell
    out = tmp_path / scenario
    capsys.readouterr()
    assert main(["run", str(SCENARIOS / f"{scenario}.yaml"), "--out", str(out), *flags]) == 0
    console = capsys.readouterr().out
    return (RunResult.read(out / "summary.json"), console,
            (out / "report.html").read_text(encoding="utf-8"))


@pytest.mark.parametrize("scenario", ["tiny", "routing_example", "spec_decode", "agentic",
                                      "response_cache"])
def test_every_figure_of_a_run_agrees_everywhere_it_is_shown(tmp_path, capsys, monkeypatch,
                                                              scenario):
    """tiny (a static split, no floor), routing_example (oracle routing priced per request, a
    positive saving), spec_decode, agentic (per-task tables) and response_cache: console,
    summary.json and report.html agree. Before, the report showed 4 figures where the console
    shows 3, and a figure whose 4th was a 5 read twice: spec_decode's attributed cost 1.77 USD
    in the console and 1.775 in the report, agentic's end-to-end p99 12.7 s and 12.75 s."""
    run, console, page = run_once(tmp_path, capsys, monkeypatch, scenario)
    figures = run_figures(run, console, page)
    assert len(figures.seen) > 60
    assert figures.problems() == []
    assert identity_problems(run) == []


def test_a_figure_whose_fourth_figure_is_5_reads_alike(capsys, monkeypatch):
    """tiny's summary with figures whose 4th significant figure is a 5 (12.7498 s, 0.20349
    GPU-hours, 38.549 USD per 1M tokens): the console prints 12.7, 0.203, 38.5 and the report
    read 12.75, 0.2035, 38.55, which a reader rounds to 12.8, 0.204, 38.6."""
    monkeypatch.setenv("COLUMNS", "300")
    run = dataclasses.replace(RunResult.read(GOLDEN / "tiny_summary.json"), e2e_p99_s=12.7498,
                              gpu_hours=0.20349, cost_per_1m_output_tokens=38.549)
    capsys.readouterr()
    print_summary(run, None)
    figures = run_figures(run, capsys.readouterr().out, run_headline(run))
    assert figures.problems() == []
    for name, text in (("end-to-end p99", "12.7"), ("GPU-hours", "0.203"),
                       ("cost per 1M output tokens", "38.5")):
        assert figures.seen[("report", name)][0] == figures.seen[("console", name)][0] == text


def test_prefix_cache_levels_read_as_on_the_console(capsys, monkeypatch):
    """A tier whose prompt tokens were found 9.87 % on the GPU and 0.0123 % on the host: the
    console printed "gpu 9.87 %, host 0.0123 %" and the report's prefix-cache table "gpu 9.9%,
    host 0.0%" (one decimal place), the host's hits read as none."""
    monkeypatch.setenv("COLUMNS", "300")
    run = RunResult.read(GOLDEN / "tiny_summary.json")
    tier = dataclasses.replace(run.tiers[0], prefix_hit_rate=0.0988,
                               prefix_hit_by_level={"gpu": 0.0987, "host": 0.000123},
                               prefix_hit_bound=0.65)
    run = dataclasses.replace(run, tiers=(tier, *run.tiers[1:]))
    capsys.readouterr()
    print_summary(run, None)
    figures = run_figures(run, capsys.readouterr().out, run_headline(run))
    assert figures.problems() == []
    assert figures.seen[("report", f"tier {tier.name} prefix hit host")][0] == "0.0123"


SWEEP_FIGURES = {"accuracy": "accuracy", "cost_usd": "cost",
                 "cost_per_1m_output_tokens": "cost per 1M output tokens",
                 "ttft_p99_s": "TTFT p99", "tpot_p99_s": "TPOT p99",
                 "slo_attainment": "SLO attainment",
                 "router.silent_failure_rate": "silent failure rate"}
"""The sweep table's metrics (sweep.parquet's columns), by the name a run's figures go by."""


def test_a_sweeps_table_reads_as_its_points_and_a_run_of_one(tmp_path, capsys, monkeypatch):
    """tiny.yaml swept over w4a16's replicas (1, 2): the report's points table shows each
    metric as sweep.parquet holds it, and the point of 1 replica (tiny.yaml itself) as a
    ``tiersim run`` of it shows its figures, console and report."""
    import pandas as pd
    from conftest import tiny_doc, write_yaml

    monkeypatch.setenv("COLUMNS", "300")
    doc = tiny_doc(sweep={"tiers.w4a16.replicas": [1, 2]})
    path = write_yaml(tmp_path / "tiny.yaml", doc)
    capsys.readouterr()
    assert main(["sweep", str(path), "--out", str(tmp_path / "sweep")]) == 0
    assert main(["run", str(path), "--out", str(tmp_path / "run"), "--no-baselines"]) == 0
    run = RunResult.read(tmp_path / "run" / "summary.json")
    figures = run_figures(run, capsys.readouterr().out,
                          (tmp_path / "run" / "report.html").read_text(encoding="utf-8"))
    points = pd.read_parquet(tmp_path / "sweep" / "sweep.parquet")
    page = PageTables((tmp_path / "sweep" / "report.html").read_text(encoding="utf-8"))
    header = next(rows[0] for head, rows in page.tables if head == "Points")
    table = page.table("Points")
    for _, point in points.iterrows():
        cells = dict(zip(header[1:], table[f"{point['tiers.w4a16.replicas']:,}"], strict=True))
        names = {column: next(h for h in header if h.startswith(short)) for column, short in (
            ("accuracy", run.accuracy_label), ("cost_usd", "cost of the run"),
            ("cost_per_1m_output_tokens", "cost per 1M"), ("ttft_p99_s", "TTFT p99"),
            ("tpot_p99_s", "TPOT p99"), ("slo_attainment", "SLO attainment"),
            ("router.silent_failure_rate", "silent failure rate"))}
        for column, name in SWEEP_FIGURES.items():
            place = f"sweep point {point['tiers.w4a16.replicas']}"
            figures.add(place, name if place.endswith(" 1") else f"{place} {name}",
                        cells[names[column]], point[column])
    assert figures.problems() == []
    # the accuracy to 4 figures, as the run prints it (94.40 %)
    assert figures.seen[("sweep point 1", "accuracy")][0] == "0.9440"


def _plan_saving(frac: float) -> tuple[str, str]:
    """A plan saving ``frac`` against its uniform baseline: (the number ``tiersim plan``
    prints on its saving line, the report's "saved vs it" cell)."""
    from tiersim.cli.plan import format_plan
    from tiersim.report.page import plan_section
    from tiersim.results import PlanResult

    savings = {"accuracy_floor": 0.8, "baseline_uniform_tier": "bf16", "drain_gap": None,
               "baseline_uniform_cost_usd": 6.0, "routed_cost_usd": 6.0 * (1 - frac),
               "vs_uniform_frac": frac, "vs_uniform_usd": 6.0 * frac}
    chosen = {"design": "fp8+bf16", "replicas": {"fp8": 8, "bf16": 9},
              "gpus_per_replica": {"fp8": 1, "bf16": 1}, "cost_usd": 6.0 * (1 - frac),
              "cost_model": "provisioned", "cost_per_hour_usd": 59.5, "savings": savings}
    plan = PlanResult(scenario="s", constraints={}, plan=chosen)
    line = next(x for x in format_plan(plan).splitlines() if "cheapest sized uniform" in x)
    saved = PageTables(plan_section(plan)).table("Against uniform fleets")["saved vs it"][0]
    return _one(line), _signed(saved)  # a dearer plan's cell "costs 5.95 % more" (round 49)


@pytest.mark.parametrize("frac", [0.05949, -0.05949, 8.499316155e-05])
def test_a_plans_saving_reads_alike_in_its_lines_and_its_report(frac):
    """`tiersim plan` printed its saving to one decimal place and the report (as `tiersim run`)
    to 3 figures: 5.949 % read "saves 5.9%" beside the report's "5.95 %" (a reader's 6.0),
    -5.949 % "costs 5.9% more" beside "-5.95 %", plan_default's 0.0085 % "saves 0.0%" beside
    "0.00850 %". The plan's line now prints it as `tiersim run` does."""
    console, report = _plan_saving(frac)
    figures = Figures()
    figures.add("console", "saving", console, abs(frac), 100)
    figures.add("report", "saving", report.removeprefix("-"), abs(frac), 100)
    assert figures.problems() == []
    assert console == report.removeprefix("-")


@pytest.mark.parametrize("accuracy", [0.9440381595, 0.95, 0.798])
def test_a_floor_that_is_this_runs_accuracy_reads_as_the_accuracy(accuracy):
    """With no accuracy_floor the uniform fleets are held to this run's accuracy, which the
    console and the report print as "94.40 %"; the floor words beside it read "floor 94.4 %"
    (prefix_cache: "floor 95 %" above "95.00 %", cascade "floor 79.8 %" above "79.80 %"), one
    figure with its zeros dropped in one place and kept in the other."""
    from tiersim.cli.run import fmt

    run = RunResult.read(GOLDEN / "tiny_summary.json")
    run = dataclasses.replace(run, accuracy=accuracy, savings=dataclasses.replace(
        run.savings, accuracy_floor=accuracy, accuracy=accuracy))
    assert run.floor_words().startswith(f"floor {fmt(accuracy, ' %', 100, digits=4)}: this "
                                        "run's accuracy")


def _tier_figures(add, rows, run, tpot_scale, accuracy: bool = False):
    """Add each tier's row of a per-tier table (console or report; TPOT at ``tpot_scale``;
    ``accuracy``: the table has the tier's accuracy after its share, as the report's has)."""
    for t in run.tiers:
        cells = rows[t.name if t.model is None else f"{t.name} ({t.model})"]
        for k, (name, value, scale) in enumerate((
                ("requests", t.requests, 1), ("share", t.share, 100),
                *([("accuracy", t.accuracy, 100)] if accuracy else []),
                ("TTFT p99", t.ttft_p99_s, 1), ("TPOT p99", t.tpot_p99_s, tpot_scale),
                ("utilization", t.utilization, 100), ("KV peak", t.kv_peak_frac, 100),
                ("cost", t.cost_usd, 1), ("attributed", t.attributed_cost_usd, 1))):
            add(f"tier {t.name} {name}", cells[k].split()[0], value, scale)

"""Round 55, review55: the month's hours as given, beside the month's saving.

The saving against today's fleet per month is the saving per hour times ``hours_per_month``,
and the line names those hours; it wrote them to 3 significant figures (``figure_text``), so
``--hours-per-month 730.5`` (a month of 365.25 days) read "2,557 USD less a month of 730
hours", where 3.50 USD/hour x 730 hours is 2,555, and 743.5 read "a month of 744 hours". The
console, the report's paragraph and its table row now give the hours as set (``as_given``, 10
digits, as an SLO is given).

Modelled figures (tiny, roofline): the plan bf16 1 x 1 GPU at 3.50 USD/hour; today's bf16 2 x
1 GPU at 7.00 USD/hour.
"""

from __future__ import annotations

import html

import pytest
from conftest import tiny_doc, write_yaml

from tiersim.cli.plan import format_plan, plan_capacity


@pytest.mark.parametrize(("hours", "usd"), [(730.5, "2,557"), (743.5, "2,602")])
def test_the_month_names_the_hours_it_was_priced_at(tmp_path, hours, usd):
    path = write_yaml(tmp_path / "s.yaml", tiny_doc(
        plan={"current": [{"tier": "bf16", "replicas": 2}], "hours_per_month": hours}))
    result = plan_capacity(path, out_dir=tmp_path / "plan", report=True)
    assert result.current["vs_current_per_month_usd"] == 3.5 * hours  # modelled, 3.50 USD/hour
    line = next(x for x in format_plan(result).splitlines() if "a month of" in x)
    assert line == (f"  the plan saves 50.0 % per hour against today's fleet: 3.50 USD/hour "
                    f"less, {usd} USD less a month of {hours} hours (both fleets provisioned "
                    "for the trace's load; modelled)")
    page = html.unescape((tmp_path / "plan" / "report.html").read_text())
    assert f"a month of {hours} hours (both fleets" in page
    assert f"saved vs it (USD a month of {hours} hours)" in page

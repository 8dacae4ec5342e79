"""Large figures read in the report as on the console: whole numbers with thousands separators,
not e-notation ("-2.40e+03 %" where `tiersim run` printed "-2,399 %")."""

from __future__ import annotations

from tiersim.cli.run import fmt as console_fmt
from tiersim.report.page import fmt, percent


def test_large_figures_are_not_in_e_notation():
    saving = -23.98786245  # a 1 x 1 + 3 x 8 GPU fleet against one GPU: -2,399 %
    assert fmt(percent(saving)) == console_fmt(saving, " %", 100) == "-2,399 %"
    assert fmt(12345.678) == "12,346"  # a USD cost: "1.235e+04" before
    assert fmt(1234.5678) == "1,235"
    # small figures keep the console's 3 figures (the report's 4, 0.0001235, read 0.000124)
    assert fmt(0.000123456) == console_fmt(0.000123456) == "0.000123"


def test_a_figure_rounding_up_to_the_next_power_of_ten_is_whole():
    assert fmt(9999.7) == "10,000"  # "1e+04" by the figures alone
    assert fmt(percent(9.996)) == "1,000 %"
    assert console_fmt(9.996, " %", 100) == "1,000 %"  # "1.00e+03 %" before

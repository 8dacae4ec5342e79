"""Round 54 (helper check54): :meth:`tiersim.inputs.Arrivals.busy_batch` reads the replicas as
the table's rate over the rate a replica receives; a rate above the table's (fewer than one
replica) is one replica on both of its paths. Before, the closed form (under
:data:`~tiersim.inputs.MIN_ARRIVALS` arrivals) took it as one replica while the count took
``min(N, 0.5)`` busy and doubled the batch (a rate a billion times the table's gave 1.5e11
sequences). The price never asks so (its rate is the table's over a whole replica count), so
no figure moves. Arithmetic on made-up arrivals; nothing modelled.
"""

from __future__ import annotations

import numpy as np
import pytest

from tiersim.inputs import Arrivals, pooled_busy_batch


def test_a_rate_above_the_table_s_is_one_replica_on_both_paths():
    """Under one replica the count is one replica's, as the closed form is."""
    counted = Arrivals.of(np.linspace(0.0, 1.0, 300))
    closed = Arrivals(rate=counted.rate)
    for over in (2.0, 1e9):
        rate = counted.rate * over
        assert counted.busy_batch(1.0, rate) == counted.busy_batch(1.0, counted.rate)
        assert closed.busy_batch(1.0, rate) == pytest.approx(pooled_busy_batch(rate, 1))

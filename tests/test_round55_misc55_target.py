"""Round 55, misc55: the router's AUROC target names the classes the workload has.

On drawn difficulty the AUROC is for "not easy"; it read "hard or hopeless" on a two-type
workload too, which has no hopeless class. It now names the classes drawn other than easy
(:func:`tiersim.routing.quality.drawn_target`): "hard" on ``two_type``, "hard or hopeless" on
``three_type``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tiersim.routing.quality import drawn_target, realised_quality


def _quality(classes: list[str]):
    classes_arr = np.array(classes)
    rng = np.random.default_rng(0)
    score = (classes_arr != "easy") * 1.0 + rng.standard_normal(len(classes_arr))
    df = pd.DataFrame({"difficulty_class": pd.Categorical(
        classes_arr, categories=["easy", "hard", "hopeless"]),
        "correct_fp8": (classes_arr == "easy").astype(np.float32)})
    return realised_quality(df, score, "fp8", "floor", False, None, 0.72)


def test_a_two_type_workload_reads_hard():
    q = _quality(["easy"] * 150 + ["hard"] * 150)
    assert q.target == "hard" and q.positives == 150
    assert q.scored_words().startswith("hard, against the drawn difficulty of 300 requests")


def test_a_three_type_workload_reads_hard_or_hopeless():
    q = _quality(["easy"] * 100 + ["hard"] * 100 + ["hopeless"] * 100)
    assert q.target == "hard or hopeless" and q.positives == 200


def test_one_class_and_none_drawn():
    assert _quality(["hard"] * 40).no_auroc == ("all 40 requests are hard: one class only, "
                                                "and an AUROC needs both")
    q = _quality(["easy"] * 40)
    assert (q.target, q.no_auroc) == ("not easy", "all 40 requests are easy: one class only, "
                                                  "and an AUROC needs both")
    assert drawn_target(None) == "not easy"
    assert drawn_target(pd.Series(["hopeless", "easy"])) == "hopeless"

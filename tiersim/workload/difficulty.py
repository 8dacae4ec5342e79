"""Difficulty generators for traces that carry no correctness labels.

Three models, all drawn from a caller's ``numpy.random.Generator``:

- two types: easy with probability ``p_easy``, else hard;
- three types: hopeless (wrong on every tier) with probability ``p_hopeless``, the rest easy with
  probability ``p_easy`` or hard (on RouteLLM's MMLU labels 14% of questions are hopeless);
- continuous: difficulty ~ Beta(a, b) on [0, 1].

Classes are coded ``EASY = 0``, ``HARD = 1``, ``HOPELESS = 2``; a continuous workload has class
``-1`` (none). Every request also gets a ``difficulty`` in [0, 1]: the class's position on the
difficulty axis (hopeless = 1.0) or the Beta draw.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

EASY, HARD, HOPELESS, NO_CLASS = 0, 1, 2, -1
CLASS_NAMES = ("easy", "hard", "hopeless")


@dataclass(frozen=True)
class Difficulty:
    """Per-request difficulty: ``value`` in [0, 1] and ``cls`` (class code, -1 when continuous)."""

    value: np.ndarray
    cls: np.ndarray

    @property
    def hopeless(self) -> np.ndarray:
        """True where the request is wrong on every tier."""
        return self.cls == HOPELESS


def two_type(n: int, p_easy: float, rng: np.random.Generator) -> np.ndarray:
    """Class codes of n requests: easy with probability ``p_easy``, else hard."""
    return np.where(rng.random(n) < p_easy, EASY, HARD).astype(np.int8)


def three_type(n: int, p_easy: float, p_hopeless: float, rng: np.random.Generator) -> np.ndarray:
    """Class codes: hopeless with probability ``p_hopeless``, else easy (``p_easy``) or hard."""
    u_hopeless, u_easy = rng.random(n), rng.random(n)
    cls = np.where(u_easy < p_easy, EASY, HARD).astype(np.int8)
    cls[u_hopeless < p_hopeless] = HOPELESS
    return cls


def class_values(cls: np.ndarray, easy: float, hard: float) -> np.ndarray:
    """Difficulty values of class codes: ``easy``, ``hard`` and 1.0 for hopeless."""
    return np.choose(cls.astype(np.int64), [easy, hard, 1.0]).astype(np.float64)


def generate(n: int, cfg, rng: np.random.Generator) -> Difficulty:
    """Draw difficulty for n requests from a :class:`tiersim.routing.config.DifficultyConfig`."""
    if cfg.kind == "continuous":
        value = rng.beta(cfg.beta_a, cfg.beta_b, size=n)
        return Difficulty(value=value, cls=np.full(n, NO_CLASS, dtype=np.int8))
    if cfg.kind == "two_type":
        cls = two_type(n, cfg.p_easy, rng)
    else:
        cls = three_type(n, cfg.p_easy, cfg.p_hopeless, rng)
    easy, hard = cfg.class_difficulty.get("easy", 0.2), cfg.class_difficulty.get("hard", 0.8)
    return Difficulty(value=class_values(cls, easy, hard), cls=cls)


def hint(diff: Difficulty, auroc: float, rng: np.random.Generator) -> np.ndarray:
    """A noisy surface feature of difficulty, as informative as ``auroc`` says.

    Discrete workloads: ``s x [not easy] + N(0, 1)``, whose AUROC for "not easy" is
    ``Phi(s / sqrt 2)``, so ``s = sqrt(2) Phi^-1(auroc)``. Continuous: ``s x z + N(0, 1)`` with
    ``z`` the standardised difficulty (the same ``s``). It stands for what prompt length, task
    type or subject reveal about difficulty in real traffic (about 0.72 on RouteLLM's MMLU).
    """
    from scipy.special import ndtri  # the normal quantile, Phi^-1 (lazy: issue 13)

    s = np.sqrt(2.0) * ndtri(auroc)
    if np.all(diff.cls == NO_CLASS):
        sd = diff.value.std()
        signal = (diff.value - diff.value.mean()) / (sd if sd > 0 else 1.0)
    else:
        signal = (diff.cls != EASY).astype(np.float64)
    return s * signal + rng.standard_normal(len(signal))

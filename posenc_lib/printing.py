"""How the notebooks print a number whose digits mean nothing beyond a bound.

A float64 rounding error comes out as 6.7e-16 on one run and 1.2e-15 on the next (another CPU, another
thread count, another BLAS kernel); printing those digits would make the stored output of a notebook
differ from machine to machine, and it would teach nothing: the claim is "below 1e-12". `below` prints
the claim, and the value itself when the claim is false, so a stored output still shows a regression.
Results of live training are printed at 2-3 significant digits in the notebooks themselves (`:.3g`).

`seed_stats` summarises one number measured once per seed (mean, std, min, max).
"""
from __future__ import annotations

import math
import re

import torch


def below(value, bound: float) -> str:
    """"< bound" when |value| < bound, else the value with two significant digits.

    below(6.7e-16, 1e-12) == "< 1e-12";  below(3e-9, 1e-12) == "3.0e-9";  below(2e-7, 1e-5) == "< 1e-5".
    `value` is a Python number or a one-element tensor; `bound` a positive number.
    """
    if isinstance(bound, bool) or not isinstance(bound, (int, float)) or not bound > 0:
        raise ValueError(f"bound must be a positive number, got {bound!r}")
    number = float(value)
    if math.isnan(number):
        return "nan"
    text = f"< {bound:.0e}" if abs(number) < bound else f"{number:.1e}"
    return re.sub(r"e([+-])0(\d)", r"e\1\2", text)  # 1e-05 -> 1e-5


def seed_stats(values: list, *, decimals: int | None = 5) -> dict | None:
    """{"mean", "std", "min", "max", "n"} of one value per seed, in float64 (std 0 for one seed), each
    rounded to `decimals` (None: not rounded); None if there is no value or any is None. The one place
    the course summarises seeds: the stored summaries (experiments.runner), experiments.summary's
    comparisons and the figures' bands (plots.extension). Sample std (n - 1), as torch.std."""
    if not values or any(v is None for v in values):
        return None
    t = torch.tensor(values, dtype=torch.float64)
    stats = {"mean": float(t.mean()), "std": float(t.std()) if len(values) > 1 else 0.0,
             "min": float(t.min()), "max": float(t.max())}
    if decimals is not None:
        stats = {k: round(v, decimals) for k, v in stats.items()}
    return {**stats, "n": len(values)}

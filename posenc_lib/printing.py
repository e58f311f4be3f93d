"""How the notebooks print a number whose digits mean nothing beyond a bound.

A float64 rounding error comes out as 6.7e-16 on one run and 1.2e-15 on the next (another CPU, another
thread count, another BLAS kernel); printing those digits would make the stored output of a notebook
differ from machine to machine, and it would teach nothing: the claim is "below 1e-12". `below` prints
the claim, and the value itself when the claim is false, so a stored output still shows a regression.
Results of live training are printed at 2-3 significant digits in the notebooks themselves (`:.3g`).

`seed_stats` summarises one number measured once per seed (mean, std, min, max).
"""
from __future__ import annotations

import functools
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


def t_quantile(p: float, df: int) -> float:
    """The p-quantile of Student's t distribution with `df` degrees of freedom (0.5 < p < 1): the x > 0 with
    1/2 + integral_0^x f(t) dt = p, f(t) = Gamma((df+1)/2) / (sqrt(df pi) Gamma(df/2)) (1 + t^2/df)^(-(df+1)/2);
    the integral by Simpson's rule on 4096 intervals, x by bisection (about 1e-9 relative)."""
    if isinstance(df, bool) or not isinstance(df, int) or df < 1:
        raise ValueError(f"df must be an int >= 1, got {df!r}")
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.5 < p < 1:
        raise ValueError(f"p must be a number in (0.5, 1), got {p!r}")
    return _t_quantile(float(p), df)


@functools.lru_cache(maxsize=64)   # a table asks for the same (p, df) once per cell: about 220 times
def _t_quantile(p: float, df: int) -> float:
    log_norm = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    steps = torch.arange(4097, dtype=torch.float64, device="cpu")
    weights = torch.where(steps % 2 == 1, 4.0, 2.0).index_fill_(0, torch.tensor([0, 4096], device="cpu"), 1.0)

    def cdf(x: float) -> float:   # P(T <= x) for x >= 0
        t = steps * (x / 4096)
        density = torch.exp(log_norm - (df + 1) / 2 * torch.log1p(t * t / df))
        return 0.5 + float((weights * density).sum()) * x / (3 * 4096)

    low, high = 0.0, 1.0
    while cdf(high) < p:
        low, high = high, 2 * high
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if cdf(mid) < p else (low, mid)
    return (low + high) / 2


def mean_ci(values: list, level: float = 0.95) -> dict | None:
    """{"mean", "half_width", "low", "high", "n"}: the mean of one value per seed and its `level` confidence
    interval from Student's t, mean +- t_{(1 + level) / 2, n - 1} * s / sqrt(n) (s: the sample std, n - 1);
    half_width None for a single value (no interval from one seed); None if there is no value or any is None."""
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise ValueError(f"level must be a number in (0, 1), got {level!r}")
    stats = seed_stats(values, decimals=None)
    if stats is None:
        return None
    n = stats["n"]
    half = None if n < 2 else t_quantile((1 + level) / 2, n - 1) * stats["std"] / math.sqrt(n)
    return {"mean": stats["mean"], "half_width": half, "low": None if half is None else stats["mean"] - half,
            "high": None if half is None else stats["mean"] + half, "n": n}

"""Shared test settings and independent float64 references.

The reference functions below are written from the papers' formulas, on purpose in a different
style from posenc_lib (explicit per-pair loops, plain Python where the sizes are small), so that a
bug in the library is not silently repeated by its own reference. Test modules import them with
`from conftest import ...` (pytest puts tests/ on sys.path).
"""
from __future__ import annotations

import math
import os
import warnings

import matplotlib
import pytest
import torch

matplotlib.use("Agg")  # figure tests draw off-screen, with or without MPLBACKEND=Agg
import matplotlib.pyplot as plt  # noqa: E402
from hypothesis import HealthCheck, settings

# Modest and deterministic: the whole unit suite must stay fast on 2 shared cores, and CI must not
# flake. derandomize=True still explores many inputs; it just picks the same ones every run.
settings.register_profile("posenc", max_examples=20, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.differing_executors])
settings.load_profile("posenc")

# One thread per pytest-xdist worker when the workers already fill the cores (make test: -n auto), else two.
_workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
_threads = max(1, min(2, (os.cpu_count() or 1) // _workers))
torch.set_num_threads(_threads)
if _workers > 1:
    # the same for the processes a worker starts: nbval's notebook kernels (each would take every core, while
    # the other worker runs too) and the tests' subprocesses; a value set by hand is kept
    os.environ.setdefault("OMP_NUM_THREADS", str(_threads))
warnings.filterwarnings("ignore", message=".*rope_parameters.*")  # HF config chatter in the reference tests

@pytest.fixture(autouse=True)
def _close_figures():
    """Every test starts without open figures and leaves none behind."""
    yield
    plt.close("all")


@pytest.fixture(autouse=True)
def _readable_figures(request, monkeypatch):
    """Every figure a plot or widget test draws has no text under MIN_TEXT_PX pixels (8 pt at 100 dpi), and
    none that reaches past the figure's edge (cut in the PNG): the figures notebooks show are these figures."""
    if not request.module.__name__.startswith(("test_plots_", "test_widgets_")):
        yield
        return
    from matplotlib.figure import Figure

    from posenc_lib.plots._style import MIN_TEXT_PX, clipped_texts, smallest_text
    made, original_init = [], Figure.__init__

    def recording_init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(Figure, "__init__", recording_init)
    yield
    monkeypatch.undo()
    for fig in made:
        if fig.axes:
            px, text = smallest_text(fig)
            assert px >= MIN_TEXT_PX, f"text {text!r} is {px:.1f} px high (< {MIN_TEXT_PX} px) at dpi {fig.dpi:g}"
            cut = clipped_texts(fig, laid_out=True)  # smallest_text has just laid it out: not done twice
            size = tuple(round(v) for v in (fig.bbox.width, fig.bbox.height))
            assert not cut, f"text past the edge of a {size[0]} x {size[1]} px figure (x0, y0, x1, y1): {cut}"


DEVICE_NAMES = ["cpu", "meta"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.fixture(params=["cpu", "meta", "cuda"])
def device(request):
    """cpu, meta (catches tensors created on the CPU behind the caller's back), cuda when present."""
    if request.param == "cuda" and not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    return torch.device(request.param)


def is_meta(t: torch.Tensor) -> bool:
    return t.device.type == "meta"


# --------------------------------------------------------------------------- sinusoidal
def ref_frequencies(dim: int, base: float) -> list[float]:
    """omega_i = 1 / base ** (2i / dim), i = 0 .. dim/2 - 1 (Vaswani et al. 2017, section 3.5)."""
    return [1.0 / base ** (2 * i / dim) for i in range(dim // 2)]


def ref_sinusoidal(num_positions: int, dim: int, base: float = 10000.0, layout: str = "interleaved") -> torch.Tensor:
    """The (num_positions, dim) table in float64, filled column by column from the formula."""
    omega = ref_frequencies(dim, base)
    pos = torch.arange(num_positions, dtype=torch.float64)
    table = torch.zeros(num_positions, dim, dtype=torch.float64)
    half = dim // 2
    for i, w in enumerate(omega):
        sin_col, cos_col = (2 * i, 2 * i + 1) if layout == "interleaved" else (i, half + i)
        table[:, sin_col] = torch.sin(pos * w)
        table[:, cos_col] = torch.cos(pos * w)
    return table


# --------------------------------------------------------------------------- RoPE
def pair_indices(dim: int, layout: str) -> list[tuple[int, int]]:
    """Which dims form pair i: (2i, 2i+1) interleaved (RoFormer), (i, i + dim/2) half (GPT-NeoX/HF)."""
    half = dim // 2
    return [(2 * i, 2 * i + 1) if layout == "interleaved" else (i, i + half) for i in range(half)]


def ref_rope(x: torch.Tensor, positions, *, base: float = 10000.0, layout: str = "half",
             inv_freq=None, attention_factor: float = 1.0) -> torch.Tensor:
    """Rotate each pair (a, b) of x (..., T, dim) counter-clockwise by position * theta_i, in float64:

        a' = a cos - b sin,   b' = a sin + b cos   (times attention_factor)

    positions: (T,) or (B, T) ints; for (B, T), x is (B, ..., T, dim).
    """
    dim = x.shape[-1]
    theta = torch.tensor(ref_frequencies(dim, base) if inv_freq is None else [float(v) for v in inv_freq],
                         dtype=torch.float64)
    pos = torch.as_tensor(positions).to(torch.float64)
    if pos.dim() == 2:  # (B, T) -> (B, 1, ..., 1, T)
        pos = pos.reshape(pos.shape[0], *([1] * (x.dim() - 3)), pos.shape[1])
    xd = x.detach().to(torch.float64).cpu()
    out = xd.clone()
    for i, (a, b) in enumerate(pair_indices(dim, layout)):
        angle = pos * theta[i]
        c, s = torch.cos(angle) * attention_factor, torch.sin(angle) * attention_factor
        out[..., a] = xd[..., a] * c - xd[..., b] * s
        out[..., b] = xd[..., a] * s + xd[..., b] * c
    return out


def eager_rotate_half(x, cos, sin):
    """The eager Hugging Face form x * cos + rotate_half(x) * sin, cos/sin of x's full width."""
    h = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., h:], x[..., :h]), dim=-1) * sin


# --------------------------------------------------------------------------- T5
def ref_t5_bucket(r: int, bidirectional: bool, num_buckets: int, max_distance: int) -> tuple[int, int]:
    """T5's bucket rule for one relative position r = key - query, in plain Python (float64 logs).

    Returns (low, high): the bucket, and the bucket if the float64 value of the log expression sits
    within 1e-9 of an integer boundary (there float32 and float64 may round to different sides;
    T5 and HF compute the log in float32, so the library must match THEM there -- checked exactly
    against HF in test_relative.py). Away from boundaries low == high.
    """
    n = num_buckets // 2 if bidirectional else num_buckets
    offset = n if (bidirectional and r > 0) else 0
    d = abs(r) if bidirectional else max(-r, 0)
    exact = n // 2
    if d < exact:
        return offset + d, offset + d
    value = exact + math.log(d / exact) / math.log(max_distance / exact) * (n - exact)
    lo, hi = int(math.floor(value - 1e-9)), int(math.floor(value + 1e-9))
    return offset + min(lo, n - 1), offset + min(hi, n - 1)


# --------------------------------------------------------------------------- ALiBi
def ref_alibi_slopes(n: int) -> list[float]:
    """Press et al. 2022 for n a power of 2: m_h = 2 ** (-8h/n), h = 1..n; otherwise the authors' get_slopes
    workaround (their code, not the paper): the slopes of the
    largest power of two p < n, then every other slope (h = 1, 3, 5, ...) of 2p until there are n."""
    p = 1
    while p * 2 <= n:
        p *= 2
    slopes = [2.0 ** (-8.0 * h / p) for h in range(1, p + 1)]
    h = 1
    while len(slopes) < n:
        slopes.append(2.0 ** (-8.0 * h / (2 * p)))
        h += 2
    return slopes


def float32_ulp(x: torch.Tensor) -> torch.Tensor:
    """Distance from |x| (float32) to the next float32 up, as float64."""
    x32 = x.to(torch.float32).abs()
    return (torch.nextafter(x32, torch.full_like(x32, math.inf)) - x32).to(torch.float64)


# --------------------------------------------------------------------------- what another project's rotary module does
def measured_rope_frequencies(rotary, head_dim: int, *, longest: int | None = None, **forward_kwargs):
    """(inv_freq in float64, attention factor) read from what a transformers rotary-embedding module
    *returns*, not from its private buffers (`inv_freq`, `attention_scaling`), which come and go
    between releases (GPT-J's module keeps a sin/cos table and has no inv_freq at all).

    The module is called at positions 0 and 1 (and `longest - 1`, which sets the length a dynamic or
    LongRoPE module scales for). At position 0 one of the two returned tables is all zero: that one is
    sin, so the order (cos, sin) or (sin, cos) is found, not assumed. At position 1 the angle is the
    frequency itself: atan2(sin, cos), and the amplitude hypot(cos, sin) is the attention factor. A
    table that repeats its frequencies (`[f, f]` for the half-split layout, `f0 f0 f1 f1 ...` for the
    interleaved one) is reduced to one copy; GPT-J's table holds each frequency once. Llama 4's module
    returns one complex tensor, factor * e^(i angle): its real and imaginary parts are cos and sin."""
    positions = [0, 1] + ([longest - 1] if longest is not None and longest > 2 else [])
    x = torch.zeros(1, 1, len(positions), head_dim, dtype=torch.float32)
    out = rotary(x, torch.tensor([positions]), **forward_kwargs)
    if isinstance(out, torch.Tensor) and out.is_complex():  # Llama 4: e^(i angle) in one complex tensor
        out = (out.real, out.imag)
    a, b = (t.reshape(len(positions), -1).double() for t in out)
    if torch.all(a[0] == 0):
        a, b = b, a                          # GPT-J returns (sin, cos)
    cos, sin = a, b
    assert torch.all(sin[0] == 0), "neither returned table is sin (zero at position 0)"
    angle, amplitude = torch.atan2(sin[1], cos[1]), torch.hypot(cos[1], sin[1])
    n = angle.numel()
    if n % 2 == 0 and torch.equal(angle[: n // 2], angle[n // 2:]):
        angle, amplitude = angle[: n // 2], amplitude[: n // 2]
    elif n % 2 == 0 and torch.equal(angle[0::2], angle[1::2]):
        angle, amplitude = angle[0::2], amplitude[0::2]
    factor = amplitude.mean().item()
    assert torch.allclose(amplitude, torch.full_like(amplitude, factor), rtol=1e-6, atol=0), "one factor for all pairs"
    return angle, factor

"""xPos (posenc_lib.xpos) against a per-element float64 reference written from the paper's formula, its decay,
its registration, bad input and the meta device."""
import math

import pytest
import torch

from posenc_lib.encoding_rules import encoding_rule_problems
from posenc_lib.model import ENCODINGS, TinyLMConfig, make_encoding
from posenc_lib.xpos import XPos, xpos_float32_limit, xpos_zeta


def _reference(x, positions, sign, *, base=10000.0, scale_base=512.0, gamma=0.4, layout="half"):
    """Loops: pair i of the vector at position p rotated by p * base ** (-2i/d), both members times
    zeta_i ** (sign * p / B), zeta_i = (i / (d/2) + gamma) / (1 + gamma)."""
    *lead, seq, d = x.shape
    out = torch.empty_like(x, dtype=torch.float64)
    flat, res = x.reshape(-1, seq, d).double(), out.view(-1, seq, d)
    for row in range(flat.shape[0]):
        for t in range(seq):
            p = int(positions[t])
            for i in range(d // 2):
                a, b = (i, i + d // 2) if layout == "half" else (2 * i, 2 * i + 1)
                angle = p * base ** (-2 * i / d)
                zeta = (i / (d // 2) + gamma) / (1 + gamma)
                scale = zeta ** (sign * p / scale_base)
                x1, x2 = float(flat[row, t, a]), float(flat[row, t, b])
                res[row, t, a] = scale * (x1 * math.cos(angle) - x2 * math.sin(angle))
                res[row, t, b] = scale * (x2 * math.cos(angle) + x1 * math.sin(angle))
    return out


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_xpos_matches_a_per_element_reference(layout):
    torch.manual_seed(0)
    q, k = torch.randn(2, 3, 5, 8, dtype=torch.float64), torch.randn(2, 3, 5, 8, dtype=torch.float64)
    positions = torch.tensor([0, 3, 40, 700, 1500])
    enc = XPos(8, scale_base=256.0, layout=layout)
    got_q, got_k = enc(q, k, positions)
    torch.testing.assert_close(got_q, _reference(q, positions, 1.0, scale_base=256.0, layout=layout))
    torch.testing.assert_close(got_k, _reference(k, positions, -1.0, scale_base=256.0, layout=layout))


def _torchscale_scores(q, k, scale_base):
    """q k^T after torchscale's XPOS (xpos_relative_position.py, ported): interleaved pairs, angles at 0 .. T-1, the
    decay powers at positions centred on the sequence (t - T // 2 ...), q with zeta ** (p / B), k with its inverse."""
    T, d = q.shape[-2:]
    low = -T // 2
    centred = torch.arange(low, low + T, dtype=torch.float64)[:, None]                 # (T, 1)
    zeta = (torch.arange(0, d, 2, dtype=torch.float64) + 0.4 * d) / (1.4 * d)          # (d/2,)
    power = zeta ** (centred / scale_base)                                             # (T, d/2)
    inv_freq = 10000.0 ** (-torch.arange(d // 2, dtype=torch.float64) / (d // 2))     # (d/2,)
    angle = torch.arange(T, dtype=torch.float64)[:, None] * inv_freq
    sin, cos = (t.repeat_interleave(2, -1) for t in (angle.sin(), angle.cos()))

    def xpos(x, scale):
        swapped = torch.stack((-x[..., 1::2], x[..., ::2]), -1).flatten(-2)              # rotate every two
        return x * cos * scale.repeat_interleave(2, -1) + swapped * sin * scale.repeat_interleave(2, -1)

    return xpos(q, power) @ xpos(k, 1 / power).transpose(-2, -1)


def test_scores_equal_torchscales_xpos():
    """torchscale centres the positions before the powers; the centre cancels in q k^T, so the scores are ours
    (interleaved layout, positions 0 .. T-1)."""
    torch.manual_seed(3)
    q, k = torch.randn(2, 11, 8, dtype=torch.float64), torch.randn(2, 11, 8, dtype=torch.float64)
    ours_q, ours_k = XPos(8, scale_base=16.0, layout="interleaved")(q, k)
    torch.testing.assert_close(ours_q @ ours_k.transpose(-2, -1), _torchscale_scores(q, k, 16.0))


def test_zeta_is_torchscales_scale():
    """torchscale: scale = (arange(0, d, 2) + 0.4 d) / (1.4 d)."""
    d = 12
    expected = torch.tensor([(2 * i + 0.4 * d) / (1.4 * d) for i in range(d // 2)], dtype=torch.float64)
    torch.testing.assert_close(xpos_zeta(d), expected)


def test_scores_depend_on_the_distance_and_decay_with_it():
    """<q'_n, k'_m> is a function of n - m (shifting both positions keeps it), and a query equal to its key scores
    less the farther back the key is (zeta < 1 damps every pair)."""
    torch.manual_seed(1)
    enc = XPos(16, scale_base=64.0)
    q = torch.randn(1, 1, 1, 16, dtype=torch.float64)

    def score(n, m):
        a, _ = enc(q, q, torch.tensor([n]))
        _, b = enc(q, q, torch.tensor([m]))
        return float((a * b).sum())

    assert score(30, 10) == pytest.approx(score(130, 110), rel=1e-9)
    zero_angle = XPos(16, base=1e12, scale_base=64.0)   # (almost) no rotation: only the decay is left

    def damped(n, m):
        a, _ = zero_angle(q, q, torch.tensor([n]))
        _, b = zero_angle(q, q, torch.tensor([m]))
        return float((a * b).sum())

    assert damped(100, 100) > damped(100, 90) > damped(100, 40) > damped(100, 0) > 0


def test_xpos_is_registered_and_keeps_the_rules():
    assert ENCODINGS["xpos"] is XPos
    enc = make_encoding("xpos", d_model=64, num_heads=4, rope_base=500.0)
    assert enc.dim == 16 and enc.rope.base == 500.0
    assert encoding_rule_problems("xpos") == []
    assert encoding_rule_problems("xpos", TinyLMConfig(encoding="nope", d_model=64, num_heads=2)) == []


def test_xpos_keeps_dtype_and_leaves_inputs_alone():
    q = torch.randn(1, 2, 4, 8, dtype=torch.bfloat16)
    k = q.clone()
    before = q.clone()
    out_q, out_k = XPos(8)(q, k)
    assert out_q.dtype == out_k.dtype == torch.bfloat16 and torch.equal(q, before)


def test_xpos_on_the_meta_device():
    q = torch.empty(2, 3, 7, 8, device="meta")
    out_q, out_k = XPos(8)(q, q, torch.arange(7, device="meta"))
    assert out_q.device.type == out_k.device.type == "meta" and out_q.shape == q.shape


def test_float32_limit():
    """zeta_0 ** (n / B) at the stated limit is float32's largest number (and no further)."""
    limit = xpos_float32_limit(512.0)
    zeta0 = 0.4 / 1.4
    assert zeta0 ** (-limit / 512.0) == pytest.approx(torch.finfo(torch.float32).max, rel=1e-9)
    assert 34_000 < limit < 37_000


@pytest.mark.parametrize("call, error, message", [
    (lambda: XPos(7), ValueError, "dim must be even"),
    (lambda: XPos(8, scale_base=0.0), ValueError, "scale_base must be > 0"),
    (lambda: XPos(8, gamma=-1.0), ValueError, "gamma must be > 0"),
    (lambda: XPos(8, layout="pairs"), ValueError, "layout must be one of"),
    (lambda: XPos(8)(torch.randn(1, 1, 3, 6), torch.randn(1, 1, 3, 6)), ValueError, "dim=8"),
    (lambda: XPos(8)(torch.randn(1, 1, 3, 8), torch.randn(1, 1, 3, 8), torch.arange(3.0)), TypeError, "integer"),
    (lambda: xpos_zeta(8, dtype=torch.int64), TypeError, "floating-point dtype"),
    (lambda: make_encoding("xpos", d_model=12, num_heads=4), ValueError, "even head_dim"),
])
def test_bad_input_is_named(call, error, message):
    with pytest.raises(error, match=message):
        call()

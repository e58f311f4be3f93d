"""Sinusoidal and learned absolute encodings against the formulas (float64) and their properties."""
import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from conftest import ref_frequencies, ref_sinusoidal
from posenc_lib import (LearnedEncoding, SinusoidalEncoding, layout_permutation, sinusoidal_frequencies,
                        sinusoidal_table)
from posenc_lib.absolute import offset_matrix

even_dims = st.integers(1, 48).map(lambda h: 2 * h)
bases = st.sampled_from([10.0, 100.0, 10000.0, 500000.0])


@pytest.mark.parametrize("layout", ["interleaved", "concat"])
@pytest.mark.parametrize("num_positions,dim,base", [(1, 2, 10000.0), (50, 16, 10000.0), (300, 64, 10000.0),
                                                     (7, 6, 100.0), (129, 128, 500000.0), (2048, 512, 10000.0)])
def test_table_matches_float64_formula(num_positions, dim, base, layout):
    ref = ref_sinusoidal(num_positions, dim, base, layout)
    table = sinusoidal_table(num_positions, dim, base=base, layout=layout)
    assert table.dtype == torch.float32 and table.shape == (num_positions, dim)
    torch.testing.assert_close(table.double(), ref, atol=1e-5, rtol=0)  # DESIGN section 3
    exact = sinusoidal_table(num_positions, dim, base=base, layout=layout, dtype=torch.float64)
    torch.testing.assert_close(exact, ref, atol=1e-12, rtol=0)


def test_table_far_positions_match_formula():
    # positions in the millions: the angles are float64 in the library, so float32 output is still accurate
    table = sinusoidal_table(1_000_010, 8, dtype=torch.float64)[-10:]
    pos = torch.arange(1_000_000, 1_000_010, dtype=torch.float64)
    ref = torch.stack([f(pos * w) for w in ref_frequencies(8, 10000.0) for f in (torch.sin, torch.cos)], dim=1)
    torch.testing.assert_close(table, ref, atol=1e-9, rtol=0)


@given(dim=even_dims, base=bases)
def test_frequencies_and_wavelengths(dim, base):
    omega = sinusoidal_frequencies(dim, base=base)
    assert omega.dtype == torch.float64
    torch.testing.assert_close(omega, torch.tensor(ref_frequencies(dim, base), dtype=torch.float64),
                               atol=0, rtol=1e-14)
    wavelength = 2 * math.pi / omega
    assert wavelength[0].item() == pytest.approx(2 * math.pi)  # the fastest pair: one turn per 2*pi tokens
    assert wavelength[-1].item() < 2 * math.pi * base + 1e-6  # the slowest: just under 2*pi*base
    if dim > 2:  # geometric: every ratio is base ** (2/dim)
        ratios = wavelength[1:] / wavelength[:-1]
        torch.testing.assert_close(ratios, torch.full_like(ratios, base ** (2 / dim)), atol=0, rtol=1e-12)


@given(num_positions=st.integers(1, 64), dim=even_dims, base=bases)
def test_layouts_agree_up_to_layout_permutation(num_positions, dim, base):
    inter = sinusoidal_table(num_positions, dim, base=base, layout="interleaved")
    concat = sinusoidal_table(num_positions, dim, base=base, layout="concat")
    perm = layout_permutation(dim)
    assert sorted(perm.tolist()) == list(range(dim))
    assert torch.equal(concat, inter[:, perm])  # the same numbers, columns moved
    assert torch.equal(inter, concat[:, torch.argsort(perm)])


def _test_offset_matrix(k: float, dim: int, base: float) -> torch.Tensor:
    """M_k built from k and the frequencies alone: on each (sin, cos) pair [[cos b, sin b], [-sin b, cos b]]."""
    m = torch.zeros(dim, dim, dtype=torch.float64)
    for i, w in enumerate(ref_frequencies(dim, base)):
        b = k * w
        m[2 * i, 2 * i], m[2 * i, 2 * i + 1] = math.cos(b), math.sin(b)
        m[2 * i + 1, 2 * i], m[2 * i + 1, 2 * i + 1] = -math.sin(b), math.cos(b)
    return m


@given(pos=st.integers(0, 5000), k=st.integers(-300, 300), dim=st.integers(1, 16).map(lambda h: 2 * h), base=bases)
def test_offset_is_a_fixed_linear_map(pos, k, dim, base):
    """PE(pos + k) = M_k PE(pos) with M_k independent of pos (the angle-sum identities)."""
    if pos + k < 0:
        k = -pos
    table = sinusoidal_table(pos + max(k, 0) + 1, dim, base=base, dtype=torch.float64)
    m = _test_offset_matrix(k, dim, base)
    torch.testing.assert_close(m @ table[pos], table[pos + k], atol=1e-9, rtol=0)
    # and the library's own M_k agrees with the one built here, in both layouts
    torch.testing.assert_close(offset_matrix(k, dim, base=base), m, atol=1e-12, rtol=0)
    perm = layout_permutation(dim)
    torch.testing.assert_close(offset_matrix(k, dim, base=base, layout="concat"), m[perm][:, perm], atol=1e-12, rtol=0)


@given(p=st.integers(0, 2000), q=st.integers(0, 2000), shift=st.integers(0, 2000), dim=even_dims)
def test_dot_product_depends_only_on_distance(p, q, shift, dim):
    """PE(p).PE(q) = sum_i cos((p - q) omega_i): a function of p - q, symmetric in its sign."""
    table = sinusoidal_table(max(p, q) + shift + 1, dim, dtype=torch.float64)
    dot = table[p] @ table[q]
    assert dot.item() == pytest.approx(sum(math.cos((p - q) * w) for w in ref_frequencies(dim, 10000.0)), abs=1e-9)
    assert dot.item() == pytest.approx((table[p + shift] @ table[q + shift]).item(), abs=1e-9)


def test_sinusoidal_encoding_adds_the_table_without_a_max_length():
    torch.manual_seed(0)
    enc = SinusoidalEncoding(32, base=100.0, layout="concat")
    x = torch.randn(2, 5, 32)
    x_before = x.clone()
    out = enc(x)
    assert torch.equal(x, x_before)  # not modified in place
    torch.testing.assert_close(out, x + sinusoidal_table(5, 32, base=100.0, layout="concat"), atol=1e-6, rtol=0)
    far = torch.tensor([[100_000, 100_001, 250_000, 7, 0], [3, 2, 1, 0, 1_000_000]])
    out = enc(x, far)
    omega = torch.tensor(ref_frequencies(32, 100.0), dtype=torch.float64)
    angles = far.double()[..., None] * omega
    ref = torch.cat((angles.sin(), angles.cos()), dim=-1)
    torch.testing.assert_close(out.double(), x.double() + ref, atol=1e-5, rtol=0)


def test_sinusoidal_encoding_keeps_half_precision_dtype():
    x = torch.zeros(1, 4, 8, dtype=torch.bfloat16)
    out = SinusoidalEncoding(8)(x, torch.tensor([0, 1, 70_000, 70_001]))
    assert out.dtype == torch.bfloat16
    angles = torch.tensor([0, 1, 70_000, 70_001], dtype=torch.float64)[:, None] * torch.tensor(ref_frequencies(8, 1e4))
    ref = torch.stack((angles.sin(), angles.cos()), dim=-1).flatten(-2)
    torch.testing.assert_close(out[0].double(), ref, atol=2 ** -8, rtol=0)  # bf16 rounding of values in [-1, 1]


def test_learned_encoding_is_a_lookup():
    torch.manual_seed(0)
    enc = LearnedEncoding(10, 6)
    x = torch.randn(3, 4, 6)
    positions = torch.tensor([[0, 1, 2, 3], [9, 8, 7, 6], [5, 5, 5, 5]])
    out = enc(x, positions)
    torch.testing.assert_close(out, x + enc.table.weight[positions])
    torch.testing.assert_close(enc(x), x + enc.table.weight[:4])
    out.sum().backward()  # trainable: the used rows get a gradient, the others none
    grad = enc.table.weight.grad
    assert grad[[0, 1, 2, 3, 5, 6, 7, 8, 9]].abs().sum() > 0 and grad[4].abs().sum() == 0

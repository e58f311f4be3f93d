"""Sinusoidal and learned absolute encodings against the formulas (float64) and their properties."""
import math

import pytest
import torch
from conftest import ref_frequencies, ref_sinusoidal
from hypothesis import given, strategies as st

from posenc_lib import (
    LearnedEncoding,
    SinusoidalEncoding,
    layout_permutation,
    rope_matrix,
    sinusoidal_frequencies,
    sinusoidal_table,
)
from posenc_lib.absolute import (
    offset_matrix,
    position_similarity,
    relative_part,
    relative_share,
    similarity_by_distance,
)

even_dims = st.integers(1, 48).map(lambda h: 2 * h)
bases = st.sampled_from([10.0, 100.0, 10000.0, 500000.0])


@pytest.mark.parametrize("layout", ["interleaved", "half"])
@pytest.mark.parametrize("num_positions,dim,base", [(1, 2, 10000.0), (50, 16, 10000.0), (300, 64, 10000.0),
                                                     (7, 6, 100.0), (129, 128, 500000.0), (2048, 512, 10000.0)])
def test_table_matches_float64_formula(num_positions, dim, base, layout):
    ref = ref_sinusoidal(num_positions, dim, base, layout)
    table = sinusoidal_table(num_positions, dim, base=base, layout=layout)
    assert table.dtype == torch.float32 and table.shape == (num_positions, dim)
    torch.testing.assert_close(table.double(), ref, atol=1e-5, rtol=0)  # the course-wide tolerance for float32 tables
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
    half = sinusoidal_table(num_positions, dim, base=base, layout="half")
    perm = layout_permutation(dim)
    assert sorted(perm.tolist()) == list(range(dim))
    assert torch.equal(half, inter[:, perm])  # the same numbers, columns moved
    assert torch.equal(inter, half[:, torch.argsort(perm)])


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
    torch.testing.assert_close(offset_matrix(k, dim, base=base, layout="half"), m[perm][:, perm], atol=1e-12, rtol=0)


@given(p=st.integers(0, 2000), q=st.integers(0, 2000), shift=st.integers(0, 2000), dim=even_dims)
def test_dot_product_depends_only_on_distance(p, q, shift, dim):
    """PE(p).PE(q) = sum_i cos((p - q) omega_i): a function of p - q, symmetric in its sign."""
    table = sinusoidal_table(max(p, q) + shift + 1, dim, dtype=torch.float64)
    dot = table[p] @ table[q]
    assert dot.item() == pytest.approx(sum(math.cos((p - q) * w) for w in ref_frequencies(dim, 10000.0)), abs=1e-9)
    assert dot.item() == pytest.approx((table[p + shift] @ table[q + shift]).item(), abs=1e-9)


def test_sinusoidal_encoding_adds_the_table_without_a_max_length():
    torch.manual_seed(0)
    enc = SinusoidalEncoding(32, base=100.0, layout="half")
    x = torch.randn(2, 5, 32)
    x_before = x.clone()
    out = enc(x)
    assert torch.equal(x, x_before)  # not modified in place
    torch.testing.assert_close(out, x + sinusoidal_table(5, 32, base=100.0, layout="half"), atol=1e-6, rtol=0)
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


@pytest.mark.parametrize("call", [lambda enc: enc(torch.zeros(1, 5, 8)),
                                  lambda enc: enc(torch.zeros(1, 3, 8), torch.tensor([2, 3, 4]))],
                         ids=["too long", "position past the table"])
def test_learned_wall_message_does_not_promise_that_relative_encodings_generalise(call):
    """The max_len error says what is true: no row there; other encodings compute a value there, which is
    not generalising (notebook 07 measures RoPE and T5 degrading past the trained length too)."""
    with pytest.raises(ValueError) as error:
        call(LearnedEncoding(4, 8))
    message = str(error.value)
    assert "max_len=4" in message and "no row" in message
    assert "relative encoding" not in message and "go further" not in message
    assert "do not necessarily generalise" in message and "notebook 07" in message
    assert "Longformer copies" in message and "ViT interpolates" in message  # how practice extends a table


def test_table_of_no_positions_is_empty():
    assert sinusoidal_table(0, 8).shape == (0, 8)
    assert SinusoidalEncoding(8)(torch.zeros(2, 0, 8)).shape == (2, 0, 8)
    assert LearnedEncoding(4, 8)(torch.zeros(2, 0, 8)).shape == (2, 0, 8)


def test_sinusoidal_encoding_computes_only_the_rows_asked_for():
    """Position 2**40: a table up to it would need 2**40 rows; the encoding computes these two only."""
    far = torch.tensor([2 ** 40, 2 ** 40 + 3])
    out = SinusoidalEncoding(8)(torch.zeros(1, 2, 8), far)[0]
    ref = torch.tensor([[f(p * w) for w in ref_frequencies(8, 10000.0) for f in (math.sin, math.cos)]
                        for p in far.tolist()])
    # float64 angles of ~1e12 rad carry an absolute error of ~1e-4 rad (the spacing of float64 there)
    torch.testing.assert_close(out.double(), ref.double(), atol=1e-3, rtol=0)


def test_sinusoidal_encoding_batched_positions_per_row():
    x = torch.zeros(2, 3, 8)
    positions = torch.tensor([[0, 1, 2], [5, 6, 7]])
    out = SinusoidalEncoding(8)(x, positions)
    table = sinusoidal_table(8, 8)
    torch.testing.assert_close(out, table[positions])
    assert torch.equal(SinusoidalEncoding(8)(x, positions[:1]), table[:3].expand(2, 3, 8))  # batch 1 is shared


def test_offset_matrix_of_a_tensor_of_offsets():
    ks = torch.tensor([-3, 0, 5])
    m = offset_matrix(ks, 8)
    assert m.shape == (3, 8, 8) and m.dtype == torch.float64
    for i, k in enumerate(ks.tolist()):
        torch.testing.assert_close(m[i], _test_offset_matrix(k, 8, 10000.0), atol=1e-12, rtol=0)


# ------------------------------------------------------------------ bad input: (id, call, exception, message)
X3 = torch.randn(2, 5, 8)
BAD = [
    ("table odd dim", lambda: sinusoidal_table(4, 5), ValueError, r"dim must be even.*got 5"),
    ("frequencies odd dim", lambda: sinusoidal_frequencies(3), ValueError, r"dim must be even"),
    ("SinusoidalEncoding odd", lambda: SinusoidalEncoding(7), ValueError, r"dim must be even"),
    ("layout_permutation odd", lambda: layout_permutation(3), ValueError, r"dim must be even"),
    ("offset_matrix odd", lambda: offset_matrix(1, 5), ValueError, r"dim must be even"),
    ("dim zero", lambda: sinusoidal_table(4, 0), ValueError, r"dim must be >= 1"),
    ("dim float", lambda: sinusoidal_table(4, 8.0), TypeError, r"dim must be an int"),
    ("table negative length", lambda: sinusoidal_table(-1, 4), ValueError, r"num_positions must be >= 0"),
    ("table layout", lambda: sinusoidal_table(4, 4, layout="paper"), ValueError,
     r"layout must be one of \['half', 'interleaved'\], got 'paper'"),
    ("SinusoidalEncoding layout", lambda: SinusoidalEncoding(4, layout="concat"), ValueError,
     r"layout must be one of \['half', 'interleaved'\]"),
    ("offset_matrix layout", lambda: offset_matrix(1, 4, layout="concat"), ValueError, r"layout must be one of"),
    ("base <= 1", lambda: sinusoidal_table(4, 4, base=1.0), ValueError, r"base must be > 1.0"),
    ("base NaN", lambda: sinusoidal_frequencies(8, base=float("nan")), ValueError, r"base must be a finite number"),
    ("base inf", lambda: SinusoidalEncoding(8, base=float("inf")), ValueError, r"base must be a finite number"),
    ("base string", lambda: sinusoidal_table(4, 8, base="10000"), TypeError, r"base must be a number"),
    ("table long dtype", lambda: sinusoidal_table(3, 4, dtype=torch.long), TypeError,
     r"dtype must be a floating-point dtype.*int64"),
    ("frequencies int dtype", lambda: sinusoidal_frequencies(4, dtype=torch.int32), TypeError,
     r"dtype must be a floating-point dtype"),
    ("offset_matrix bool dtype", lambda: offset_matrix(1, 4, dtype=torch.bool), TypeError,
     r"dtype must be a floating-point dtype"),
    ("table dtype string", lambda: sinusoidal_table(3, 4, dtype="float32"), TypeError, r"dtype must be a torch.dtype"),
    ("offset_matrix k NaN", lambda: offset_matrix(float("nan"), 4), ValueError, r"k must be a finite offset"),
    ("offset_matrix k inf tensor", lambda: offset_matrix(torch.tensor([1.0, float("inf")]), 4), ValueError,
     r"k must hold finite numbers"),
    ("offset_matrix k string", lambda: offset_matrix("3", 4), TypeError, r"k must be a number or a 1-D tensor"),
    ("offset_matrix k 2-D", lambda: offset_matrix(torch.zeros(2, 2), 4), TypeError, r"k must be a number or a 1-D"),
    ("offset_matrix k bool", lambda: offset_matrix(torch.tensor([True]), 4), TypeError, r"k must be a number"),
    # x and positions that do not fit
    ("Sinusoidal x dim", lambda: SinusoidalEncoding(16)(X3), ValueError, r"x's last dimension must be dim=16"),
    ("Sinusoidal x 1-D", lambda: SinusoidalEncoding(8)(torch.zeros(8)), ValueError,
     r"x must have shape \(seq, dim\) or \(batch, seq, dim\), got \(8,\)"),
    ("Sinusoidal x 4-D", lambda: SinusoidalEncoding(8)(torch.zeros(1, 2, 5, 8)), ValueError, r"x must have shape"),
    ("Learned x 1-D", lambda: LearnedEncoding(4, 8)(torch.zeros(8)), ValueError, r"x must have shape"),
    ("Learned x dim", lambda: LearnedEncoding(8, 4)(X3), ValueError, r"x's last dimension must be dim=4"),
    ("Sinusoidal int x", lambda: SinusoidalEncoding(8)(torch.ones(2, 5, 8, dtype=torch.long)), TypeError,
     r"x must be a floating-point tensor"),
    ("Learned int x", lambda: LearnedEncoding(8, 8)(torch.ones(2, 5, 8, dtype=torch.long)), TypeError,
     r"x must be a floating-point tensor"),
    ("Sinusoidal x list", lambda: SinusoidalEncoding(2)([[0.0, 1.0]]), TypeError, r"x must be a torch.Tensor"),
    ("Sinusoidal positions length", lambda: SinusoidalEncoding(8)(X3, torch.arange(7)), ValueError,
     r"positions must have shape \(seq,\) or \(batch, seq\) with seq=5"),
    ("Sinusoidal positions batch", lambda: SinusoidalEncoding(8)(X3, torch.zeros(3, 5, dtype=torch.long)),
     ValueError, r"positions of shape \(3, 5\) does not fit: expected batch 1 or 2"),
    ("Sinusoidal positions batch for 2-D x", lambda: SinusoidalEncoding(8)(X3[0], torch.zeros(2, 5, dtype=torch.long)),
     ValueError, r"positions of shape \(2, 5\) does not fit: expected no batch dimension"),
    ("Sinusoidal positions 3-D", lambda: SinusoidalEncoding(8)(X3, torch.zeros(2, 1, 5, dtype=torch.long)),
     ValueError, r"positions must have shape"),
    ("Sinusoidal float positions", lambda: SinusoidalEncoding(8)(X3, torch.arange(5.0)), TypeError,
     r"positions must be an integer tensor"),
    ("Sinusoidal bool positions", lambda: SinusoidalEncoding(8)(X3, torch.ones(5, dtype=torch.bool)), TypeError,
     r"positions must be an integer tensor"),
    ("Sinusoidal list positions", lambda: SinusoidalEncoding(8)(X3, [0, 1, 2, 3, 4]), TypeError,
     r"positions must be a torch.Tensor, got list"),
    ("Learned positions batch", lambda: LearnedEncoding(10, 8)(X3, torch.zeros(4, 5, dtype=torch.long)),
     ValueError, r"positions of shape \(4, 5\) does not fit"),
    ("Learned float positions", lambda: LearnedEncoding(10, 8)(X3, torch.arange(5.0)), TypeError,
     r"positions must be an integer tensor"),
    # the learned table has max_len rows
    ("Learned max_len negative", lambda: LearnedEncoding(-5, 4), ValueError, r"max_len must be >= 1"),
    ("Learned init_std NaN", lambda: LearnedEncoding(4, 4, init_std=float("nan")), ValueError,
     r"init_std must be a finite number"),
    ("learned past max_len", lambda: LearnedEncoding(4, 8)(X3), ValueError, r"sequence length 5 exceeds max_len=4"),
    ("learned position past max_len", lambda: LearnedEncoding(10, 8)(X3, torch.tensor([0, 1, 2, 3, 10])),
     ValueError, r"positions must lie in \[0, max_len=10\).*max 10"),
    ("learned huge position", lambda: LearnedEncoding(10, 8)(X3, torch.tensor([0, 1, 2, 3, 2 ** 40])),
     ValueError, r"positions must lie in \[0, max_len=10\)"),
    ("learned negative position", lambda: LearnedEncoding(10, 8)(X3, torch.tensor([-1, 1, 2, 3, 4])), ValueError,
     r"positions must lie in \[0, max_len=10\)"),
]


@pytest.mark.parametrize("call,exc,pattern", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_input_is_named(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()


# ------------------------------------------------------------------ devices: cpu, meta, cuda when present
def _x(device, dtype, shape=(2, 5, 8)):
    return torch.full(shape, 0.5, device=device, dtype=dtype)


ON_DEVICE = {  # name -> f(device, dtype): every tensor returned must be on `device`, in `dtype`
    "sinusoidal_frequencies": lambda d, t: sinusoidal_frequencies(8, device=d, dtype=t),
    "sinusoidal_table": lambda d, t: sinusoidal_table(5, 8, device=d, dtype=t),
    "sinusoidal_table_half": lambda d, t: sinusoidal_table(5, 8, layout="half", device=d, dtype=t),
    "offset_matrix": lambda d, t: offset_matrix(3, 8, device=d, dtype=t),
    "offset_matrix_tensor": lambda d, t: offset_matrix(torch.arange(3, device=d), 8, dtype=t),
    "SinusoidalEncoding": lambda d, t: SinusoidalEncoding(8)(_x(d, t)),
    "SinusoidalEncoding_batched": lambda d, t: SinusoidalEncoding(8)(_x(d, t), torch.arange(10, device=d).view(2, 5)),
    "LearnedEncoding": lambda d, t: LearnedEncoding(6, 8).to(device=d, dtype=t)(_x(d, t)),
    "LearnedEncoding_positions": lambda d, t: LearnedEncoding(6, 8).to(device=d, dtype=t)(
        _x(d, t), torch.arange(1, 6, device=d)),
}


@pytest.mark.parametrize("name", sorted(ON_DEVICE))
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
def test_results_stay_on_the_callers_device_and_dtype(name, dtype, device):
    out = ON_DEVICE[name](device, dtype)
    assert out.device.type == device.type and out.dtype == dtype


def test_layout_permutation_on_device(device):
    perm = layout_permutation(8, device=device)
    assert perm.device.type == device.type and perm.dtype == torch.int64


def _other(device):
    return torch.device("meta" if device.type != "meta" else "cpu")


MIXED = [  # f(device, other) -> a call mixing the two devices; the message names both parameters
    ("Sinusoidal positions", lambda d, o: SinusoidalEncoding(8)(_x(d, torch.float32), torch.arange(5, device=o)),
     r"positions must be on the device of the tensor it indexes"),
    ("Learned positions", lambda d, o: LearnedEncoding(6, 8).to(d)(_x(d, torch.float32), torch.arange(5, device=o)),
     r"positions must be on the device of the tensor it indexes"),
    ("Learned table", lambda d, o: LearnedEncoding(6, 8).to(o)(_x(d, torch.float32)), r"table must be on x's device"),
    ("offset_matrix k vs device", lambda d, o: offset_matrix(torch.arange(3, device=o), 8, device=d),
     r"k must be on the device asked for"),
]


@pytest.mark.parametrize("call,pattern", [c[1:] for c in MIXED], ids=[c[0] for c in MIXED])
def test_tensors_on_two_devices_are_refused(call, pattern, device):
    with pytest.raises(ValueError, match=pattern):
        call(device, _other(device))


# ----------------------------------------------------------- claims of notebooks 02 and 03
def test_offset_matrices_compose_invert_and_turn_opposite_to_rope():
    dim = 12
    m3, m5 = offset_matrix(3, dim), offset_matrix(5, dim)
    torch.testing.assert_close(m3 @ m5, offset_matrix(8, dim), atol=1e-14, rtol=0)
    torch.testing.assert_close(offset_matrix(-3, dim), m3.T, atol=0, rtol=0)
    torch.testing.assert_close(m3 @ m3.T, torch.eye(dim, dtype=torch.float64), atol=1e-14, rtol=0)
    # RoPE turns (x1, x2) counter-clockwise; the offset map on (sin, cos) pairs turns the other way
    torch.testing.assert_close(m3, rope_matrix(-3, dim, layout="interleaved"), atol=1e-15, rtol=0)
    torch.testing.assert_close(m3.T, rope_matrix(3, dim, layout="interleaved"), atol=1e-15, rtol=0)


@pytest.mark.parametrize("k, dim, base", [(3.5, 6, 100.0), (-0.25, 8, 10000.0)])
def test_offset_matrix_of_a_fractional_offset_matches_the_angle_sum_formula(k, dim, base):
    expected = torch.zeros(dim, dim, dtype=torch.float64)
    for i in range(dim // 2):
        b = k / base ** (2 * i / dim)
        expected[2 * i, 2 * i], expected[2 * i, 2 * i + 1] = math.cos(b), math.sin(b)
        expected[2 * i + 1, 2 * i], expected[2 * i + 1, 2 * i + 1] = -math.sin(b), math.cos(b)
    torch.testing.assert_close(offset_matrix(k, dim, base=base), expected, atol=1e-15, rtol=0)


def test_offset_matrix_leaves_a_tensor_of_offsets_as_it_was():
    ks = torch.tensor([-2, 0, 3])
    offset_matrix(ks, 8)
    assert torch.equal(ks, torch.tensor([-2, 0, 3]))


def test_notebook_02_layout_claim_distilbert_is_interleaved():
    """Notebook 02 says Hugging Face's DistilBERT uses the paper's interleaved layout: check it there."""
    transformers = pytest.importorskip("transformers")
    config = transformers.DistilBertConfig(sinusoidal_pos_embds=True, max_position_embeddings=50, dim=32, n_heads=2,
                                           n_layers=1, hidden_dim=8, vocab_size=10)
    out = transformers.DistilBertModel(config).embeddings.position_embeddings.weight.detach()  # the model's table
    torch.testing.assert_close(out, sinusoidal_table(50, 32), atol=1e-6, rtol=0)
    assert not torch.allclose(out, sinusoidal_table(50, 32, layout="half"), atol=1e-3)


# ----------------------------------------------------------- how alike the rows of a table are
def test_position_similarity_is_float64_cosine():
    table = torch.randn(5, 6, generator=torch.Generator().manual_seed(1))
    t = table.double()
    expected = torch.tensor([[float(t[i] @ t[j] / (t[i].norm() * t[j].norm())) for j in range(5)] for i in range(5)],
                            dtype=torch.float64)
    torch.testing.assert_close(position_similarity(table), expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("fn, arg, exc, match", [
    (position_similarity, torch.randn(3), ValueError, "num_positions, dim"),
    (position_similarity, torch.ones(3, 3, dtype=torch.long), TypeError, "table"),
    (similarity_by_distance, torch.randn(3, 4), ValueError, "square"),
    (similarity_by_distance, [[1.0]], TypeError, "similarity"),
])
def test_similarity_functions_name_a_bad_input(fn, arg, exc, match):
    with pytest.raises(exc, match=match):
        fn(arg)


def test_similarity_by_distance_is_mean_diagonal():
    sim = torch.arange(16.0).reshape(4, 4)
    torch.testing.assert_close(similarity_by_distance(sim), torch.tensor([7.5, 6.0, 4.5, 3.0]))


# ------------------------------------------------ small integer dtypes and the 2**53 limit (an independent probe)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.int16, torch.int32])
def test_small_integer_positions_index_like_int64(dtype):
    x = torch.zeros(2, 8)
    pos = torch.tensor([3, 9])
    learned = LearnedEncoding(10, 8)
    torch.testing.assert_close(learned(x, pos.to(dtype)), learned(x, pos), rtol=0, atol=0)
    sinus = SinusoidalEncoding(8)
    torch.testing.assert_close(sinus(x, pos.to(dtype)), sinus(x, pos), rtol=0, atol=0)


def test_sinusoidal_positions_past_2_to_53_are_refused():
    with pytest.raises(ValueError, match=r"positions must lie within \+-2\*\*53"):
        SinusoidalEncoding(8)(torch.zeros(1, 8, dtype=torch.float64), torch.tensor([2 ** 63 - 1]))


# ----------------------------------------------------------------- relative_part (notebook 03, section 7)
def test_relative_part_makes_the_position_term_a_function_of_n_minus_m_and_keeps_what_already_is():
    from posenc_lib.relative import diagonal_spread
    g = torch.Generator().manual_seed(0)
    W = torch.randn(16, 16, generator=g, dtype=torch.float64)
    P = sinusoidal_table(40, 16, dtype=torch.float64)
    assert diagonal_spread(P @ W @ P.T) > 0.1
    assert diagonal_spread(P @ relative_part(W) @ P.T) < 1e-12
    R = relative_part(W)
    torch.testing.assert_close(relative_part(R), R, rtol=0, atol=0)              # a projection
    assert abs(float(((W - R) * R).sum())) < 1e-12                                # orthogonal: the closest such matrix
    eye = torch.eye(16, dtype=torch.float64)
    torch.testing.assert_close(relative_part(eye), eye, rtol=0, atol=0)


def test_relative_part_equals_the_exercise_reference_and_the_half_layout_is_its_permutation():
    from posenc_lib.exercises.sinusoidal import SOLUTIONS
    W = torch.randn(3, 8, 8, dtype=torch.float64)
    for w in W:
        torch.testing.assert_close(relative_part(w), SOLUTIONS["relative_part"](w), rtol=0, atol=0)
    perm = layout_permutation(8)                      # half-split column j = interleaved column perm[j]
    torch.testing.assert_close(relative_part(W[:, perm][:, :, perm], layout="half"),
                               relative_part(W)[:, perm][:, :, perm])


def test_relative_share_is_one_for_identity_and_about_one_over_dim_for_random_matrices():
    assert float(relative_share(torch.eye(8, dtype=torch.float64))) == 1.0
    W = torch.randn(4000, 32, 32, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    share = relative_share(W)
    assert share.shape == (4000,) and 0 <= float(share.min()) and float(share.max()) <= 1
    assert abs(float(share.mean()) - 1 / 32) < 0.002


@pytest.mark.parametrize("call,pattern", [
    (lambda: relative_part(torch.ones(3, 3)), r"W must be a square"),
    (lambda: relative_part(torch.ones(4, 6)), r"W must be a square"),
    (lambda: relative_part(torch.ones(4, 4), layout="concat"), r"layout"),
    (lambda: relative_share(torch.zeros(4, 4)), r"W must not be all zeros"),
])
def test_relative_part_bad_input_is_named(call, pattern):
    with pytest.raises((ValueError, TypeError), match=pattern):
        call()


def test_relative_part_keeps_dtype_and_device(device):
    for dtype in (torch.float32, torch.bfloat16):
        W = torch.ones(2, 4, 4, device=device, dtype=dtype)
        assert relative_part(W).dtype == dtype and relative_part(W).device.type == device.type
        assert relative_share(W).shape == (2,)


def test_roberta_numbers_positions_from_its_padding_index_plus_one():
    """Notebook 04: RoBERTa's table has 514 rows of which 512 hold positions. What Hugging Face's RoBERTa does:
    a token's position id starts at padding_idx + 1 = 2 and padding tokens get row padding_idx = 1, so a 514-row
    table serves positions 2..513, 512 tokens; rows 0 and 1 never hold a token's position."""
    from transformers.models.roberta.modeling_roberta import RobertaEmbeddings
    ids = torch.tensor([[0, 5, 6, 7, 1, 1]])                  # <s> ... then two pads (id 1 = padding_idx)
    positions = RobertaEmbeddings.create_position_ids_from_input_ids(ids, padding_idx=1)
    assert positions.tolist() == [[2, 3, 4, 5, 1, 1]]
    full = torch.full((1, 512), 5)
    assert RobertaEmbeddings.create_position_ids_from_input_ids(full, padding_idx=1).max() == 513   # row 513 of 514

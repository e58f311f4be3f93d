"""Notebooks 00-03: offset_matrix (appended to posenc_lib.absolute), the part-1 render_* functions and the
widgets driven without a browser (set a control, check the figure's data changed accordingly)."""
import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from posenc_lib import rope_matrix, sinusoidal_table  # noqa: E402
from posenc_lib.absolute import offset_matrix  # noqa: E402
from posenc_lib.plots import part1 as plots  # noqa: E402
from posenc_lib.widgets import BUILDERS, part1 as widgets_part1  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


# ------------------------------------------------------------------------------------------ offset_matrix

def _offset_reference(k, dim, base):
    """M_k written out from the angle-sum identities with Python floats (interleaved pairs)."""
    m = np.zeros((dim, dim))
    for i in range(dim // 2):
        b = k / base ** (2 * i / dim)
        m[2 * i, 2 * i], m[2 * i, 2 * i + 1] = math.cos(b), math.sin(b)
        m[2 * i + 1, 2 * i], m[2 * i + 1, 2 * i + 1] = -math.sin(b), math.cos(b)
    return torch.from_numpy(m)


@pytest.mark.parametrize("k, dim, base", [(1, 8, 10000.0), (-7, 16, 10000.0), (3.5, 6, 100.0), (0, 4, 10.0)])
def test_offset_matrix_matches_the_angle_sum_formula(k, dim, base):
    torch.testing.assert_close(offset_matrix(k, dim, base=base), _offset_reference(k, dim, base), atol=1e-15, rtol=0)


@pytest.mark.parametrize("layout", ["interleaved", "concat"])
def test_offset_matrix_shifts_every_position_by_k(layout):
    n, dim = 64, 16
    table = sinusoidal_table(n, dim, layout=layout, dtype=torch.float64)
    for k in range(-n + 1, n):
        m = offset_matrix(k, dim, layout=layout)
        lo, hi = max(0, -k), min(n, n - k)
        torch.testing.assert_close(table[lo:hi] @ m.T, table[lo + k:hi + k], atol=1e-12, rtol=0)


def test_offset_matrix_group_properties_and_rope_orientation():
    dim = 12
    m3, m5 = offset_matrix(3, dim), offset_matrix(5, dim)
    torch.testing.assert_close(m3 @ m5, offset_matrix(8, dim), atol=1e-14, rtol=0)
    torch.testing.assert_close(offset_matrix(-3, dim), m3.T, atol=0, rtol=0)
    torch.testing.assert_close(m3 @ m3.T, torch.eye(dim, dtype=torch.float64), atol=1e-14, rtol=0)
    # RoPE turns (x1, x2) counter-clockwise; the offset map on (sin, cos) is the opposite way
    torch.testing.assert_close(m3, rope_matrix(-3, dim, layout="interleaved"), atol=1e-15, rtol=0)
    torch.testing.assert_close(m3.T, rope_matrix(3, dim, layout="interleaved"), atol=1e-15, rtol=0)


def test_offset_matrix_batches_offsets_and_keeps_inputs():
    ks = torch.tensor([-2, 0, 3])
    before = ks.clone()
    batch = offset_matrix(ks, 8)
    assert batch.shape == (3, 8, 8) and batch.dtype == torch.float64
    for j, k in enumerate(before.tolist()):
        torch.testing.assert_close(batch[j], offset_matrix(k, 8), atol=0, rtol=0)
    assert torch.equal(ks, before)
    assert offset_matrix(1, 8, dtype=torch.float32).dtype == torch.float32
    assert offset_matrix(1, 8, device="meta").device.type == "meta"


def test_offset_matrix_bad_input():
    with pytest.raises(ValueError, match="dim"):
        offset_matrix(1, 5)
    with pytest.raises(ValueError, match="layout"):
        offset_matrix(1, 4, layout="half")
    with pytest.raises(TypeError, match="k"):
        offset_matrix("1", 4)
    with pytest.raises(TypeError, match="k"):
        offset_matrix(True, 4)
    with pytest.raises(TypeError, match="k"):
        offset_matrix(torch.zeros(2, 2), 4)
    with pytest.raises(ValueError, match="base"):
        offset_matrix(1, 4, base=0.5)


# ------------------------------------------------------------------------------------ permutation (01)

ALL_ORDERS = list(plots.sentence_permutations().values())


def test_sentence_permutations_label_the_new_order():
    orders = plots.sentence_permutations()
    assert len(orders) == 6 and orders["爱 北京 我"] == (1, 2, 0) and orders["我 爱 北京"] == (0, 1, 2)


def test_one_head_agrees_with_torch_scaled_dot_product_attention():
    setup = plots.toy_sentence()
    for causal in (False, True):
        result = plots.permutation_experiment((0, 1, 2), causal=causal, setup=setup)
        x = setup["embeddings"]
        expected = F.scaled_dot_product_attention(x @ setup["w_q"], x @ setup["w_k"], x @ setup["w_v"],
                                                  is_causal=causal)
        torch.testing.assert_close(result["out"], expected)


@pytest.mark.parametrize("perm", ALL_ORDERS)
def test_nope_attention_is_equivariant_and_pooling_invariant(perm):
    result = plots.permutation_experiment(perm)
    assert result["equivariance_error"] < 1e-12
    assert result["weights_error"] < 1e-12
    assert result["pooled_error"] < 1e-12


@pytest.mark.parametrize("perm", [p for p in ALL_ORDERS if p != (0, 1, 2)])
def test_an_encoding_or_a_causal_mask_breaks_the_symmetry(perm):
    for encoding, causal in (("sinusoidal", False), ("none", True), ("sinusoidal", True)):
        result = plots.permutation_experiment(perm, encoding=encoding, causal=causal)
        assert result["equivariance_error"] > 1e-2, (perm, encoding, causal)


def test_causal_last_token_sees_a_set():
    # swapping the first two words leaves the last word's output unchanged: it attends to the same set
    result = plots.permutation_experiment((1, 0, 2), causal=True)
    assert float(result["token_errors"][-1]) < 1e-12
    assert float(result["token_errors"][0]) > 1e-2


def test_permutation_experiment_bad_input():
    with pytest.raises(ValueError, match="perm"):
        plots.permutation_experiment((0, 0, 1))
    with pytest.raises(ValueError, match="encoding"):
        plots.permutation_experiment((0, 1, 2), encoding="rope")


# ------------------------------------------------------------------------------------------- render_*

def test_render_sinusoidal_heatmap_returns_the_table_it_drew():
    fig, axes = plt.subplots(1, 2)
    data = plots.render_sinusoidal_heatmap(axes, d_model=32, base=100.0, length=40, position=7, layout="concat")
    torch.testing.assert_close(data["table"], sinusoidal_table(40, 32, base=100.0, layout="concat", dtype=torch.float64))
    torch.testing.assert_close(data["vector"], data["table"][7])
    assert axes[0].images[0].get_array().shape == (40, 32)


def test_render_wavelengths_geometric_from_two_pi():
    fig, ax = plt.subplots()
    wavelengths = plots.render_wavelengths(ax, d_model=64, base=10000.0)
    assert len(wavelengths) == 32 and math.isclose(wavelengths[0], 2 * math.pi)
    ratios = wavelengths[1:] / wavelengths[:-1]
    np.testing.assert_allclose(ratios, 10000.0 ** (2 / 64), rtol=1e-12)
    assert wavelengths[-1] < 2 * math.pi * 10000.0


def test_render_pe_dot_symmetric_and_matches_closed_form():
    fig, ax = plt.subplots()
    data = plots.render_pe_dot(ax, d_model=32, base=10000.0, position=60, length=120)
    offsets = np.arange(120) - 60
    closed = dict(zip(data["offsets"].tolist(), data["closed_form"]))
    np.testing.assert_allclose(data["dots"], [closed[o] for o in offsets], atol=1e-12)
    np.testing.assert_allclose(data["closed_form"], data["closed_form"][::-1], atol=1e-12)  # +k and -k agree
    assert math.isclose(data["dots"][60], 16.0)


def test_render_unit_circle_offset_and_rope_go_opposite_ways():
    fig, ax = plt.subplots()
    dim, pos, k, i = 16, 4, 6, 2
    data = plots.render_unit_circle(ax, k=k, i=i, position=pos, dim=dim)
    table = sinusoidal_table(pos + k + 1, dim, dtype=torch.float64)
    torch.testing.assert_close(data["offset"], table[pos + k, 2 * i:2 * i + 2])
    omega = 10000.0 ** (-2 * i / dim)
    back = torch.tensor([math.sin((pos - k) * omega), math.cos((pos - k) * omega)], dtype=torch.float64)
    torch.testing.assert_close(data["rope"], back)
    assert math.isclose(data["beta"], k * omega)


def test_relative_score_maps_only_rope_and_identity_are_relative():
    spreads = {name: plots.diagonal_spread(m) for name, m in plots.relative_score_maps().items()}
    assert spreads["PE·PE (W = I)"] < 1e-12 and spreads["RoPE, random W"] < 1e-12
    assert spreads["PE, random W"] > 0.1 and spreads["PE·PE, random W"] > 0.1
    fig, axes = plt.subplots(1, 4)
    assert plots.render_score_maps(axes, plots.relative_score_maps()) == pytest.approx(spreads)


def test_diagonal_spread_is_zero_exactly_for_toeplitz():
    toeplitz = torch.tensor([[1.0, 2.0, 3.0], [4.0, 1.0, 2.0], [5.0, 4.0, 1.0]])
    assert plots.diagonal_spread(toeplitz) == 0.0
    toeplitz[2, 2] = 1.5
    assert plots.diagonal_spread(toeplitz) == 0.5


def test_render_device_check_errors_by_dtype():
    fig, axes = plt.subplots(1, 2)
    f64 = plots.render_device_check(axes, "cpu", "float64")
    f32 = plots.render_device_check(axes, "cpu", "float32")
    bf16 = plots.render_device_check(axes, "cpu", "bfloat16")
    assert f64["library_error"] == 0.0
    assert f32["library_error"] < 1e-7 < f32["naive_error"]
    assert bf16["library_error"] < 1e-2 and bf16["naive_error"] > 0.1  # angles in bf16 are useless at 512


# -------------------------------------------------------------------------------------------- widgets

def test_builders_are_registered():
    assert set(widgets_part1.BUILDERS) == {"device_picker", "permutation_explorer", "sinusoidal_explorer",
                                           "pe_dot_explorer", "unit_circle_explorer"}
    for name, builder in widgets_part1.BUILDERS.items():
        assert BUILDERS[name] is builder


@pytest.mark.parametrize("name", sorted(widgets_part1.BUILDERS))
def test_every_control_redraws(name):
    fig = widgets_part1.BUILDERS[name]()
    assert fig.redraw_count == 1 and fig.image.value[:4] == b"\x89PNG"
    for control_name, control in fig.controls.items():
        options = getattr(control, "options", None)
        if options:
            values = [o[1] if isinstance(o, tuple) else o for o in options]
            new = next((v for v in values if v != control.value), None)
            if new is None:
                continue  # a one-option dropdown (e.g. device on a CPU-only machine)
        elif isinstance(control.value, bool):
            new = not control.value
        else:
            new = control.min if control.value != control.min else control.max
        before_count, before_png = fig.redraw_count, fig.image.value
        control.value = new
        assert fig.redraw_count > before_count, control_name
        assert fig.image.value != before_png, control_name
        assert math.isfinite(fig.last_redraw_seconds)


def test_sinusoidal_explorer_follows_its_controls():
    fig = widgets_part1.sinusoidal_explorer()
    fig.controls["d_model"].value = 64
    assert fig.last_result["table"].shape == (100, 64)
    fig.controls["length"].value = 50
    assert fig.last_result["table"].shape == (50, 64)
    assert fig.controls["position"].max == 49
    fig.controls["position"].value = 33
    torch.testing.assert_close(fig.last_result["vector"], sinusoidal_table(50, 64, dtype=torch.float64)[33])
    fig.controls["layout"].value = "concat"
    torch.testing.assert_close(fig.last_result["table"], sinusoidal_table(50, 64, layout="concat", dtype=torch.float64))
    fig.controls["base"].value = 100.0
    torch.testing.assert_close(fig.last_result["table"],
                               sinusoidal_table(50, 64, base=100.0, layout="concat", dtype=torch.float64))


def test_permutation_explorer_follows_its_controls():
    fig = widgets_part1.permutation_explorer()
    assert fig.last_result["equivariance_error"] < 1e-12 and fig.last_result["tokens_perm"] == ("爱", "北京", "我")
    fig.controls["causal"].value = True
    assert fig.last_result["equivariance_error"] > 1e-2
    fig.controls["causal"].value = False
    fig.controls["encoding"].value = "sinusoidal"
    assert fig.last_result["equivariance_error"] > 1e-2
    fig.controls["perm"].value = (0, 1, 2)
    assert fig.last_result["equivariance_error"] == 0.0


def test_unit_circle_pe_dot_and_device_widgets_follow_their_controls():
    circle = widgets_part1.unit_circle_explorer()
    circle.controls["k"].value = -4
    circle.controls["i"].value = 3
    assert math.isclose(circle.last_result["beta"], -4 * 10000.0 ** (-6 / 16))
    dots = widgets_part1.pe_dot_explorer()
    dots.controls["position"].value = 120
    assert dots.last_result["position"] == 120 and np.argmax(dots.last_result["dots"]) == 120
    picker = widgets_part1.device_picker()
    assert picker.controls["device"].options[0] == "cpu"
    picker.controls["dtype"].value = "bfloat16"
    assert picker.last_result["dtype"] == "bfloat16" and picker.last_result["naive_error"] > 0.1


def test_notebook_02_layout_claim_distilbert_is_interleaved():
    """Notebook 02 says Hugging Face's DistilBERT uses the paper's interleaved layout: check it there."""
    distilbert = pytest.importorskip("transformers.models.distilbert.modeling_distilbert")
    out = torch.empty(50, 32)
    distilbert._create_sinusoidal_embeddings(50, 32, out)
    torch.testing.assert_close(out, sinusoidal_table(50, 32), atol=1e-6, rtol=0)
    assert not torch.allclose(out, sinusoidal_table(50, 32, layout="concat"), atol=1e-3)

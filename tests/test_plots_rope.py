"""Notebook 06's figures (posenc_lib.plots.rope and widgets.rope): one pair turned in the plane, RoPE's
score depends on m - n only, the decay bound follows its sliders (its reference curve read from
transformers' LlamaConfig), the precision demonstration's numbers (the library's bf16/fp32 RoPE error
against angles computed in the input's dtype), and that no line hides another or under the legend."""
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

import posenc_lib
from posenc_lib.plots import rope as plots
from posenc_lib.rope import apply_rope, rope_decay_bound
from posenc_lib.widgets import rope as widgets


def test_rope_score_widget_depends_on_difference_only():
    fig = widgets.rope_score_widget()
    fig.controls["m"].value = 10
    before = fig.last_result["score"]
    fig.controls["n"].value = 7
    shifted = fig.last_result
    np.testing.assert_allclose(shifted["shift_scores"], shifted["score"], atol=1e-12)  # flat over shifts
    fig.controls["m"].value = 13
    now = fig.last_result
    q, k = widgets.rope_demo_vectors()
    assert now["score"] == pytest.approx(float(plots.rope_scores(q, k, [106], [100])[0]), abs=1e-12)
    assert now["score"] != pytest.approx(before)
    idx = int(np.nonzero(now["relative"] == 13 - 7)[0][0])
    assert now["curve"][idx] == pytest.approx(now["score"], abs=1e-12)


def test_rope_decay_widget_follows_base_and_dim():
    fig = widgets.rope_decay_widget()
    fig.controls["dim"].value = 32
    assert fig.last_result["bound"][0] == pytest.approx((32 / 2 + 1) / 2)
    fig.controls["base"].value = 100.0
    result = fig.last_result
    np.testing.assert_allclose(result["bound"], rope_decay_bound(result["distance"], 32, 100.0).numpy())


def test_library_bf16_error_is_bf16_rounding_naive_is_far_worse():
    positions = torch.tensor([65536, 100000, 500000, 1000000])
    err = plots.rope_precision_errors(positions, dim=64)
    # the library: angles in float64, one rounding of the result to bf16 (at most ~1 bf16 ulp of |x| <= ~4)
    assert (err["library_bf16"] <= 2 * err["bf16_rounding"] + 1e-6).all()
    assert (err["library_bf16"] < 2.0 ** -8 * 4).all()
    # angles in bf16: the positions themselves round to multiples of 512 and more -> errors of order |x|
    assert (err["naive_bf16"] > 50 * err["library_bf16"]).all()
    assert (err["naive_bf16"] > 0.5).all()
    # float32 inputs: the library's angles are float64, so the error stays at float32 rounding; angles computed
    # in float32 drift with the position (relative error ~6e-8 of an angle of up to 1e6 radians)
    assert (err["library_fp32"] < 1e-5).all()
    assert err["naive_fp32"][-1] > 1e-3 > 1e-5 > err["library_fp32"][-1]


def test_naive_rope_is_exact_where_precision_suffices():
    x = torch.randn(5, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    pos = torch.arange(5)
    torch.testing.assert_close(plots.naive_rope(x, pos, angle_dtype=torch.float64), apply_rope(x, pos),
                               rtol=0, atol=1e-12)


def test_render_rope_precision_draws_every_computation():
    errors = plots.rope_precision_errors([1, 1000, 70000], dim=16)
    fig, ax = plt.subplots()
    assert plots.render_rope_precision(ax, errors) is errors
    assert len(ax.get_lines()) == 5  # naive bf16, naive fp32, library bf16, library fp32, bf16 rounding


def test_render_rope_rotation_turns_by_position_and_keeps_the_angle_between():
    """Each arrow is the pair turned counter-clockwise by position * theta (checked against a 2x2 rotation
    matrix written here); the angle from R_n k to R_m q is arg q - arg k + (m - n) theta in both panels."""
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.8))  # as notebook 06 §1 draws it
    q, k, theta, m, n, shift = (1.0, 0.2), (0.9, -0.3), 0.35, 3, 1, 3
    out = plots.render_rope_rotation(axes, m, n, shift=shift, q=q, k=k, theta=theta)
    fig.subplots_adjust(bottom=0.15)
    for language in ("en", "zh"):  # the two captions neither overlap nor leave the figure (conftest: the edge)
        with posenc_lib.language(language):
            plots.render_rope_rotation(axes, m, n, shift=shift, q=q, k=k, theta=theta)
            fig.draw_without_rendering()
            left, right = (ax.xaxis.label.get_window_extent() for ax in axes)
            assert left.x1 < right.x0 and left.x0 >= 0 and right.x1 <= fig.bbox.width, language

    def turn(v, angle):
        c, s = np.cos(angle), np.sin(angle)
        return np.array([[c, -s], [s, c]]) @ np.asarray(v)

    for panel, (pm, pn) in enumerate([(m, n), (m + shift, n + shift)]):
        assert out["positions"][panel] == (pm, pn)
        np.testing.assert_allclose(out["rotated_q"][panel], turn(q, pm * theta), atol=1e-12)
        np.testing.assert_allclose(out["rotated_k"][panel], turn(k, pn * theta), atol=1e-12)
        expected = np.arctan2(q[1], q[0]) - np.arctan2(k[1], k[0]) + (pm - pn) * theta
        assert out["angles"][panel] == pytest.approx(expected, abs=1e-12)
        assert out["scores"][panel] == pytest.approx(out["rotated_q"][panel] @ out["rotated_k"][panel], abs=1e-12)
    assert out["scores"][0] == pytest.approx(out["scores"][1], abs=1e-12)
    swapped = plots.render_rope_rotation(axes, n, m, shift=shift, q=q, k=k, theta=theta)
    assert swapped["scores"][0] != pytest.approx(out["scores"][0])      # m - n = -2: another score


def test_decay_reference_is_the_7b_llama_setting():
    """The dashed reference is base 10000, head dim 128: transformers' LlamaConfig defaults (its
    documented checkpoint is meta-llama/Llama-2-7b-hf)."""
    from transformers import LlamaConfig

    config = LlamaConfig()
    assert plots.DECAY_REFERENCE["dim"] == config.head_dim == config.hidden_size // config.num_attention_heads == 128
    assert plots.DECAY_REFERENCE["base"] == config.rope_parameters["rope_theta"] == 10000.0
    fig, ax = plt.subplots(figsize=(8, 3.2))  # as notebook 06 and its widget draw it
    out = plots.render_rope_decay_bound(ax, 500000.0, 64)
    np.testing.assert_allclose(out["reference"], rope_decay_bound(out["distance"], 128, 10000.0).numpy())


def _legend_is_outside(ax):
    ax.figure.canvas.draw()
    legend_box = ax.get_legend().get_window_extent()
    return legend_box.x0 >= ax.get_window_extent().x1


def test_decay_figure_reference_drawn_over_the_curve_and_legend_off_the_data():
    """At the defaults the curve and the reference coincide: the reference is drawn last, dashed and thinner,
    so both stay visible; the legend lies right of the axes."""
    fig, ax = plt.subplots(figsize=(8, 3.2))
    out = plots.render_rope_decay_bound(ax, 10000.0, 128)
    np.testing.assert_allclose(out["bound"], out["reference"])
    curve, reference = ax.get_lines()
    assert reference.get_zorder() > curve.get_zorder()
    assert reference.get_linestyle() != "-" and reference.get_linewidth() < curve.get_linewidth()
    assert _legend_is_outside(ax)


def test_precision_figure_library_line_over_the_rounding_band_and_legend_off_the_data():
    """The library's bf16 error equals bf16 rounding: the rounding is a wide band drawn first, the library's
    line thin, with markers, drawn over it."""
    errors = plots.rope_precision_errors([10, 1000, 70000], dim=16)
    fig, ax = plt.subplots(figsize=(8, 3.4))
    plots.render_rope_precision(ax, errors)
    lines = {line.get_label(): line for line in ax.get_lines()}
    band, library = lines["rounding to bf16 alone"], lines["library, bf16 input"]
    order = ax.get_lines()
    assert order.index(band) < order.index(library)
    assert band.get_linewidth() > 3 * library.get_linewidth() and library.get_marker() not in (None, "None", "")
    assert _legend_is_outside(ax)


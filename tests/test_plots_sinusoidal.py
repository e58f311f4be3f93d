"""Figures of notebooks 00, 02 and 03 (posenc_lib.plots.sinusoidal and widgets.sinusoidal): each render_*
returns what it drew, checked against the formulas; the widgets follow their controls."""
import math

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from posenc_lib import diagonal_spread, sinusoidal_table
from posenc_lib.plots import sinusoidal as plots
from posenc_lib.widgets import sinusoidal as widgets


def test_render_sinusoidal_heatmap_returns_the_table_it_drew():
    fig, axes = plt.subplots(1, 2)
    data = plots.render_sinusoidal_heatmap(axes, d_model=32, base=100.0, length=40, position=7, layout="half")
    torch.testing.assert_close(data["table"], sinusoidal_table(40, 32, base=100.0, layout="half", dtype=torch.float64))
    torch.testing.assert_close(data["vector"], data["table"][7])
    assert axes[0].images[0].get_array().shape == (40, 32)


def test_render_wavelengths_geometric_from_two_pi():
    fig, ax = plt.subplots()
    wavelengths = plots.render_wavelengths(ax, d_model=64, base=10000.0)
    assert len(wavelengths) == 32 and math.isclose(wavelengths[0], 2 * math.pi)
    np.testing.assert_allclose(wavelengths[1:] / wavelengths[:-1], 10000.0 ** (2 / 64), rtol=1e-12)
    assert wavelengths[-1] < 2 * math.pi * 10000.0


def test_render_pe_dot_symmetric_and_matches_closed_form():
    fig, ax = plt.subplots()
    data = plots.render_pe_dot(ax, d_model=32, base=10000.0, position=60, length=120)
    closed = dict(zip(data["offsets"].tolist(), data["closed_form"]))
    np.testing.assert_allclose(data["dots"], [closed[o] for o in np.arange(120) - 60], atol=1e-12)
    np.testing.assert_allclose(data["closed_form"], data["closed_form"][::-1], atol=1e-12)  # +k and -k agree
    assert math.isclose(data["dots"][60], 16.0)


@pytest.mark.parametrize("k, i, pos", [(6, 2, 4), (-3, 0, 10), (25, 7, 0)])
def test_render_unit_circle_offset_and_rope_go_opposite_ways(k, i, pos):
    fig, ax = plt.subplots()
    dim = 16
    data = plots.render_unit_circle(ax, k=k, i=i, position=pos, dim=dim)
    omega = 10000.0 ** (-2 * i / dim)
    forward = torch.tensor([math.sin((pos + k) * omega), math.cos((pos + k) * omega)], dtype=torch.float64)
    back = torch.tensor([math.sin((pos - k) * omega), math.cos((pos - k) * omega)], dtype=torch.float64)
    torch.testing.assert_close(data["offset"], forward)  # M_k: PE(pos) -> PE(pos + k)
    torch.testing.assert_close(data["rope"], back)       # RoPE's R_k on the same pair: the other way
    assert math.isclose(data["beta"], k * omega)


def test_relative_score_maps_only_rope_and_identity_are_relative():
    spreads = {name: diagonal_spread(m) for name, m in plots.relative_score_maps().items()}
    assert spreads["PE·PE (W = I)"] < 1e-12 and spreads["RoPE, random W"] < 1e-12
    assert spreads["PE, random W"] > 0.1 and spreads["PE·PE, random W"] > 0.1
    fig, axes = plt.subplots(1, 4)
    assert plots.render_score_maps(axes, plots.relative_score_maps()) == pytest.approx(spreads)


def test_render_device_check_errors_by_dtype():
    fig, axes = plt.subplots(1, 2)
    f64 = plots.render_device_check(axes, "cpu", "float64")
    f32 = plots.render_device_check(axes, "cpu", "float32")
    bf16 = plots.render_device_check(axes, "cpu", "bfloat16")
    assert f64["library_error"] == 0.0
    assert f32["library_error"] < 1e-7 < f32["naive_error"]
    assert bf16["library_error"] < 1e-2 and bf16["naive_error"] > 0.1  # angles in bf16 are useless at 512


def test_sinusoidal_explorer_follows_its_controls():
    fig = widgets.sinusoidal_explorer()
    fig.controls["d_model"].value = 64
    assert fig.last_result["table"].shape == (100, 64)
    fig.controls["length"].value = 50
    assert fig.last_result["table"].shape == (50, 64)
    assert fig.controls["position"].max == 49
    fig.controls["position"].value = 33
    torch.testing.assert_close(fig.last_result["vector"], sinusoidal_table(50, 64, dtype=torch.float64)[33])
    fig.controls["layout"].value = "half"
    torch.testing.assert_close(fig.last_result["table"], sinusoidal_table(50, 64, layout="half", dtype=torch.float64))
    fig.controls["base"].value = 100.0
    torch.testing.assert_close(fig.last_result["table"],
                               sinusoidal_table(50, 64, base=100.0, layout="half", dtype=torch.float64))


def test_unit_circle_pe_dot_and_device_widgets_follow_their_controls():
    circle = widgets.unit_circle_explorer()
    circle.controls["k"].value = -4
    circle.controls["i"].value = 3
    assert math.isclose(circle.last_result["beta"], -4 * 10000.0 ** (-6 / 16))
    dots = widgets.pe_dot_explorer()
    dots.controls["position"].value = 120
    assert dots.last_result["position"] == 120 and np.argmax(dots.last_result["dots"]) == 120
    picker = widgets.device_picker()
    assert picker.controls["device"].options[0] == "cpu"
    picker.controls["dtype"].value = "bfloat16"
    assert picker.last_result["dtype"] == "bfloat16" and picker.last_result["naive_error"] > 0.1


def test_render_table_colorbar_is_one_inset_scale_and_does_not_stack():
    fig, ax = plt.subplots()
    plots.render_table(ax, sinusoidal_table(20, 8), colorbar=True)
    plots.render_table(ax, sinusoidal_table(20, 8), colorbar=True)  # a slider redraw on the same axes
    assert len(ax.child_axes) == 1
    assert list(ax.child_axes[0].get_yticks()) == [-1, 0, 1]
    assert len(fig.axes) == 1  # an inset: it takes no room from (and adds no axes to) the figure's layout
    plots.render_table(ax, sinusoidal_table(20, 8))
    assert not ax.child_axes  # colorbar=False (the default, as notebook 00 uses it) draws none


def test_render_sinusoidal_heatmap_has_a_colour_scale():
    fig, axes = plt.subplots(1, 2)
    plots.render_sinusoidal_heatmap(axes, d_model=16, length=20, position=3)
    assert len(axes[0].child_axes) == 1 and not axes[1].child_axes


@pytest.mark.parametrize("i, dim", [(0, 16), (1, 16), (3, 16), (7, 16)])
def test_unit_circle_numbers_positions_clockwise_within_one_turn(i, dim):
    fig, ax = plt.subplots()
    data = plots.render_unit_circle(ax, k=5, i=i, position=3, dim=dim)
    omega, numbered = data["omega"], data["numbered"]
    assert numbered[0] == 0 and numbered == sorted(numbered) and max(numbered) <= 40
    angles = [p * omega for p in numbered]  # clockwise from the top: (sin a, cos a)
    assert angles[-1] < 2 * math.pi and all(b - a >= 0.45 - 1e-12 for a, b in zip(angles, angles[1:]))
    labels = {t.get_text(): t.get_position() for t in ax.texts}
    for p in numbered:  # each number sits just outside its own dot
        x, y = labels[str(p)]
        assert math.isclose(math.atan2(x, y) % (2 * math.pi), (p * omega) % (2 * math.pi), abs_tol=1e-9)


def test_unit_circle_without_rope_draws_no_rope_arrow():
    fig, ax = plt.subplots()
    plots.render_unit_circle(ax, k=5, i=1, position=3, show_rope=False)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert not any(text.startswith("R_k") for text in legend) and any(text.startswith("M_k") for text in legend)
    fig, ax = plt.subplots()
    plots.render_unit_circle(ax, k=5, i=1, position=3)
    assert any(t.get_text().startswith("R_k") for t in ax.get_legend().get_texts())

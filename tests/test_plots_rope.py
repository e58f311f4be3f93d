"""Notebook 06's figures (posenc_lib.plots.rope and widgets.rope): RoPE's score depends on m - n only,
the decay bound follows its sliders, and the precision demonstration's numbers: the library's bf16/fp32
RoPE error against angles computed in the input's dtype."""
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

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

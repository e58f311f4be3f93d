"""posenc_lib.plots.frequencies: each figure draws what it is given (the returned data equal the inputs) and keeps
every text at the course's readable size."""
import matplotlib
import pytest
import torch

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from posenc_lib.experiments.drope import load_frequencies  # noqa: E402
from posenc_lib.experiments.results import load_results  # noqa: E402
from posenc_lib.plots._style import MIN_TEXT_PX, smallest_text  # noqa: E402
from posenc_lib.plots.frequencies import render_band_usage, render_drope, render_truncation  # noqa: E402


@pytest.fixture(scope="module")
def cached():
    return load_frequencies()


def test_band_usage_draws_its_grid_and_marks_positional_heads():
    usage = torch.rand(2, 3, 4, dtype=torch.float64)
    fig, ax = plt.subplots(figsize=(8, 4))
    out = render_band_usage(ax, usage, torch.tensor([8.0, 1.0, 0.1, 0.01]),
                            [{"layer": 1, "head": 2, "offset": 1, "weight": 0.6}], 64)
    assert out["usage"].shape == (6, 4) and (out["usage"] == usage.reshape(6, 4).numpy()).all()
    assert out["rows"][5].endswith("[offset 1]") and "offset" not in out["rows"][4]
    assert smallest_text(fig)[0] >= MIN_TEXT_PX
    with pytest.raises(ValueError, match="turns"):
        render_band_usage(ax, usage, torch.ones(3))
    plt.close(fig)


def test_truncation_and_drope_draw_the_cached_numbers(cached):
    fig, ax = plt.subplots(figsize=(8.5, 4.5))
    out = render_truncation(ax, cached)
    assert list(out["curves"]["baseline"]) == [cached["baseline"][m] for m in ("1", "2", "4", "8")]
    assert out["curves"]["fastest 6"][0] == cached["truncation"]["fastest"]["6"]["1"]
    assert smallest_text(fig)[0] >= MIN_TEXT_PX
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(8.5, 4.5))
    ext = load_results("context_extension")
    out = render_drope(ax, cached, ext, load_results("extrapolation"))
    assert out["curves"]["drope"][-1] == pytest.approx(cached["drope"]["summary"]["8"]["mean"], abs=1e-5)
    assert out["curves"]["yarn"][2] == ext["finetuned_summary"]["yarn"]["4"]["mean"]
    assert smallest_text(fig)[0] >= MIN_TEXT_PX
    plt.close(fig)

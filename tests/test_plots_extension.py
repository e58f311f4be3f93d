"""Figures of notebooks 07 and 08 (posenc_lib.plots.extension and widgets.extension), driven without a browser
on the cached results in data/: each draws the seed means and spreads of the results it is given, the
scaling figure matches rope_inv_freq, and each slider figure follows its controls."""
from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pytest

from posenc_lib import experiments as E, rope_inv_freq
from posenc_lib.plots import extension as P
from posenc_lib.scaling import EXTENSION_METHODS
from posenc_lib.widgets import extension as W


@pytest.fixture(scope="module")
def results():
    return E.load_results("extrapolation")


@pytest.fixture(scope="module")
def extension():
    return E.load_results("context_extension")


def _runs_mean(results, enc, m):
    values = [r["loss"][str(m)] for r in results["runs"] if r["encoding"] == enc]
    return None if None in values else sum(values) / len(values)


def test_render_extrapolation_draws_the_seed_means_and_rises(results):
    fig, axes = plt.subplots(1, 2, figsize=(9.5, 3.4))  # as notebook 07 draws it
    out = P.render_extrapolation(axes, results, encoding="rope", multiple=8)
    assert out["focus"] == "rope" and out["multiple"] == 8
    np.testing.assert_array_equal(out["lengths"], [64, 128, 256, 512])
    for enc in E.EXPERIMENT_ENCODINGS:
        for i, m in enumerate((1, 2, 4, 8)):
            expected = _runs_mean(results, enc, m)
            if expected is None:
                assert math.isnan(out["mean"][enc][i])
            else:
                assert out["mean"][enc][i] == pytest.approx(expected, abs=1e-9)
                assert out["low"][enc][i] <= expected <= out["high"][enc][i]
        rise = out["rise"][enc]
        if enc == "learned":
            assert rise is None
        else:
            assert rise == pytest.approx(_runs_mean(results, enc, 8) - _runs_mean(results, enc, 1), abs=1e-9)
    assert len(axes[1].patches) == len(E.EXPERIMENT_ENCODINGS)  # one bar per encoding (learned: empty, n/a)


@pytest.mark.parametrize("kw, match", [({"encoding": "xpos"}, "encoding"), ({"multiple": 3}, "multiple")])
def test_render_extrapolation_rejects_bad_controls(results, kw, match):
    fig, axes = plt.subplots(1, 2, figsize=(9.5, 3.4))  # as notebook 07 draws it
    with pytest.raises(ValueError, match=match):
        P.render_extrapolation(axes, results, **kw)


def test_position_loss_and_training_curves(results):
    fig, ax = plt.subplots()
    out = P.render_position_loss(ax, results, bin_size=8)
    assert len(out["alibi"][1]) == 64 and len(out["learned"][1]) == 8
    curves = np.array([r["per_position_loss"] for r in results["runs"] if r["encoding"] == "alibi"])
    assert out["alibi"][1][3] == pytest.approx(curves.mean(0)[24:32].mean())
    fig, ax = plt.subplots()
    curves = P.render_training_curves(ax, results)
    steps, loss = curves["rope"]
    assert steps[-1] == results["provenance"]["config"]["steps"] and loss[-1] < loss[0]


@pytest.mark.parametrize("method", EXTENSION_METHODS)
def test_rope_scaling_data_matches_rope_inv_freq(method):
    """The figure shows the frequencies the experiments of 08 deploy (their config: L0 = 64, factor 4 -> 256)."""
    d = P.rope_scaling_data(method, 4.0, dim=16)
    inv, factor = rope_inv_freq(16, scaling=E.rope_scaling(method, 4.0, E.ExperimentConfig()), seq_len=256)
    np.testing.assert_allclose(d["scaled"], inv.numpy())
    assert d["attention_factor"] == factor


def test_rope_scaling_shapes_of_each_method():
    ratio = {m: P.rope_scaling_data(m, 8.0, dim=64)["ratio"] for m in EXTENSION_METHODS}
    np.testing.assert_allclose(ratio["none"], 1.0)
    np.testing.assert_allclose(ratio["linear"], 1 / 8)                       # PI: every frequency / factor
    assert ratio["ntk"][0] == pytest.approx(1.0) and ratio["ntk"][-1] == pytest.approx(1 / 8)  # NTK: ends
    for m in ("yarn", "llama3"):                                               # ramps: high kept, low interpolated
        assert ratio[m][0] == pytest.approx(1.0) and ratio[m][-1] == pytest.approx(1 / 8)
        assert np.all(np.diff(ratio[m]) <= 1e-12)
    assert P.rope_scaling_data("yarn", 8.0)["attention_factor"] == pytest.approx(0.1 * math.log(8) + 1)
    # PI's promise: over the long window every pair turns exactly as far as over L0 in training;
    # plain RoPE turns `factor` times as far
    linear, plain = P.rope_scaling_data("linear", 8.0, dim=64), P.rope_scaling_data("none", 8.0, dim=64)
    np.testing.assert_allclose(linear["turns_long"], linear["turns_train"], rtol=1e-12)
    np.testing.assert_allclose(plain["turns_long"], 8 * plain["turns_train"], rtol=1e-12)
    assert plain["turns_train"][0] == pytest.approx(64 / (2 * math.pi))  # pair 0: theta = 1, one turn per 2 pi


@pytest.mark.parametrize("dim, l0", [(16, 64), (128, 64), (128, 4096)])
def test_ntk_overshoot_is_set_by_the_first_slow_pair(dim, l0):
    """NTK-aware's overshoot = factor ** (1 - 2 i0 / (d - 2)) with i0 the first pair under one turn in L0,
    computed here from the plain formulas theta_i = base ** (-2i/d)."""
    d = P.rope_scaling_data("ntk", 4.0, dim=dim, original_max=l0)
    turns = [l0 * 10000.0 ** (-2 * i / dim) / (2 * math.pi) for i in range(dim // 2)]
    i0 = next(i for i, t in enumerate(turns) if t < 1)
    assert d["first_slow"] == i0 and list(d["slow"]) == [t < 1 for t in turns]
    assert d["overshoot"] == pytest.approx(4 ** (1 - 2 * i0 / (dim - 2)), rel=1e-9)


def test_overshoot_grows_with_the_head_dim_at_a_short_l0_and_shrinks_with_l0():
    over = {(dim, l0): P.rope_scaling_data("ntk", 4.0, dim=dim, original_max=l0)["overshoot"]
            for dim, l0 in [(16, 64), (128, 64), (1024, 64), (128, 4096)]}
    assert over[(16, 64)] < over[(128, 64)] < over[(1024, 64)]     # more pairs: MORE overshoot at L0 = 64
    limit = 4 ** (1 - math.log(64 / (2 * math.pi)) / math.log(10000.0))  # many pairs: set by L0 against the base
    assert over[(1024, 64)] == pytest.approx(limit, rel=0.01)
    assert over[(128, 4096)] < over[(16, 64)]                        # a long L0: few slow pairs, small overshoot


def test_per_pair_fields_of_yarn_and_llama31():
    yarn, llama = (P.rope_scaling_data(m, 4.0, dim=16) for m in ("yarn", "llama3"))
    np.testing.assert_allclose(yarn["interpolation"], (1 - yarn["ratio"]) / (1 - 1 / 4))
    assert list(np.flatnonzero(yarn["kept"])) == [0]
    assert yarn["interpolation"][2] == pytest.approx(2 / 3)           # ramp from pair 0 to pair 3 (ceil(2.02))
    assert 0.99 < llama["interpolation"][2] < 1.0                     # pair 2 makes 1.02 turns: almost fully
    assert yarn["overshoot"] == pytest.approx(1.0) and llama["overshoot"] == pytest.approx(1.0)
    assert P.rope_scaling_data("none", 4.0)["overshoot"] == pytest.approx(4.0)
    long_l0 = P.rope_scaling_data("ntk", 4.0, original_max=20000)  # every pair turns at least once in L0
    assert long_l0["first_slow"] is None and long_l0["overshoot"] is None
    assert P.METHOD_LABELS["llama3"] == "Llama 3.1"


def test_render_overshoot_marks_each_setting():
    fig, ax = plt.subplots()
    out = P.render_overshoot(ax, settings=((16, 64), (128, 4096)))
    assert set(out) == {(16, 64), (128, 4096)}
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(f"{out[(16, 64)]['overshoot']:.2f}x" in t for t in labels)


def test_render_extension_reads_the_cached_table(extension):
    fig, ax = plt.subplots(figsize=(7.0, 3.8))  # as notebook 08 draws it
    out = P.render_extension(ax, extension, highlight="yarn", show_finetuned=True)
    for method in EXTENSION_METHODS:
        expected = np.mean([[e["loss"][method][m] for m in ("1", "2", "4", "8")] for e in extension["no_finetune"]], 0)
        np.testing.assert_allclose(out["mean"][method], expected)
    arms = list(dict.fromkeys(f["method"] for f in extension["finetuned"]))
    assert list(out["finetuned"]) == arms                                   # one dashed mean line per arm
    for arm in arms:
        runs = [f["loss"] for f in extension["finetuned"] if f["method"] == arm]
        np.testing.assert_allclose(out["finetuned"][arm], [np.mean([r[m] for r in runs]) for m in ("1", "2", "4", "8")])
    fig, ax = plt.subplots(figsize=(7.0, 3.8))  # as notebook 08 draws it
    assert P.render_extension(ax, extension, show_finetuned=False)["finetuned"] == {}
    with pytest.raises(ValueError, match="highlight"):
        P.render_extension(ax, extension, highlight="xpos")


def test_extrapolation_explorer_redraws_on_each_control(results):
    fig = W.extrapolation_explorer()
    assert fig.values["multiple"] == 8  # where 07's static copy is drawn
    fig.controls["multiple"].value = 4
    count = fig.redraw_count
    fig.controls["multiple"].value = 8
    assert fig.redraw_count == count + 1 and fig.last_result["multiple"] == 8
    assert fig.last_result["rise"]["sinusoidal"] == pytest.approx(
        _runs_mean(results, "sinusoidal", 8) - _runs_mean(results, "sinusoidal", 1), abs=1e-9)
    fig.controls["encoding"].value = "alibi"
    assert fig.redraw_count == count + 2 and fig.last_result["focus"] == "alibi"
    assert "8L" in fig.axes[1].get_title() or "512" in fig.axes[1].get_title()
    assert len(fig.image.value) > 1000 and math.isfinite(fig.last_redraw_seconds)


def test_rope_scaling_explorer_redraws_on_each_control():
    fig = W.rope_scaling_explorer()
    fig.controls["method"].value = "linear"
    np.testing.assert_allclose(fig.last_result["ratio"], 1 / fig.controls["factor"].value)
    count = fig.redraw_count
    fig.controls["factor"].value = 8.0
    assert fig.redraw_count == count + 1 and fig.last_result["long_len"] == 512
    np.testing.assert_allclose(fig.last_result["ratio"], 1 / 8)
    fig.controls["dim"].value = 128
    assert fig.redraw_count == count + 2 and len(fig.last_result["theta"]) == 64
    fig.controls["method"].value = "yarn"
    assert "attention" in fig.axes[1].get_title()
    fig.controls["original_max"].value = 4096                        # Llama 2's L0: YaRN interpolates fewer pairs
    assert fig.redraw_count == count + 4 and "L0 4096" in fig.axes[0].get_title()
    assert fig.last_result["interpolated"].mean() < 0.5


def test_extension_explorer_redraws_on_each_control(extension):
    fig = W.extension_explorer()
    count = fig.redraw_count
    fig.controls["show_finetuned"].value = False
    assert fig.redraw_count == count + 1 and fig.last_result["finetuned"] == {}
    fig.controls["highlight"].value = "ntk"
    assert fig.redraw_count == count + 2 and fig.last_result["highlight"] == "ntk"


def test_renders_do_not_touch_the_results(results):
    before = repr(results)
    fig, axes = plt.subplots(1, 2, figsize=(9.5, 3.4))  # as notebook 07 draws it
    P.render_extrapolation(axes, results)
    fig, ax = plt.subplots()
    P.render_position_loss(ax, results)
    assert repr(results) == before


def test_retrieval_data_sorts_the_cells_by_distance_and_by_window(results):
    data = P.retrieval_data(results)
    k, L = results["probe_len"], results["provenance"]["config"]["train_len"]
    assert (k, L) == (16, 64) and set(data["groups"]) == set(results["summary"])
    for enc, views in data["groups"].items():
        np.testing.assert_array_equal(views["by_distance"]["x"], [16, 32, 96, 224, 480])
        np.testing.assert_array_equal(views["by_window"]["x"], [64, 128, 256, 512])
        cells = {(c["multiple"], c["distance"]): c for c in results["probe_summary"][enc]}
        for x, mean in zip(views["by_window"]["x"], views["by_window"]["mean"]):
            gain = cells[(x // L, k)]["gain"]
            assert math.isnan(mean) if gain is None else mean == pytest.approx(gain["mean"])
        far = cells[(8, 480)]["gain"]
        assert (far is None) == (enc == "learned")                 # a learned table has no window of 8L
        if far is not None:
            assert views["by_distance"]["mean"][-1] == pytest.approx(far["mean"])
            assert views["by_distance"]["low"][-1] <= far["mean"] <= views["by_distance"]["high"][-1]


def test_render_retrieval_draws_every_group_and_keeps_zero_in_view(results, extension):
    fig, axes = plt.subplots(1, 2, figsize=(9.5, 3.4))  # as notebook 07 draws it
    out = P.render_retrieval(axes, results, groups=("alibi", "rope"))
    assert out["ylim"][0] < 0 < out["ylim"][1] and len(axes[0].lines) >= 2
    controls = [c["control_loss"]["mean"] for e in ("alibi", "rope") for c in results["probe_summary"][e]]
    assert out["copier_gain"] == pytest.approx((min(controls), max(controls)))
    assert [t.get_text() for t in axes[1].get_legend().get_texts()] == ["alibi", "rope"]
    fig, axes = plt.subplots(1, 2, figsize=(9.5, 3.4))  # as notebook 07 draws it
    ft = P.render_retrieval(axes, extension, key="finetuned_probe_summary")
    assert set(ft["groups"]) == set(extension["provenance"]["config"]["finetune_methods"])
    assert "ABF (base raised)" in [t.get_text() for t in axes[1].get_legend().get_texts()]
    with pytest.raises(ValueError, match="groups"):
        P.render_retrieval(axes, results, groups=("xpos",))
    with pytest.raises(ValueError, match="probe"):
        P.render_retrieval(axes, {"provenance": results["provenance"], "probe_len": 16})


def test_rope_scaling_data_for_the_raised_base():
    """ABF keeps pair 0, turns pair i by (b / b')^(2i/d) as fast; the slow pairs stay in their trained angles
    over 4 L0 at b' = 5e5 (d = 16, L0 = 64), not over 8 L0."""
    d4, d8 = (P.rope_scaling_data("abf", s, dim=16, abf_base=500000.0) for s in (4.0, 8.0))
    np.testing.assert_allclose(d4["ratio"], (10000.0 / 500000.0) ** (np.arange(8) * 2 / 16))
    assert list(np.flatnonzero(d4["kept"])) == [0] and d4["scaling"] == {"rope_type": "default", "rope_theta": 5e5}
    assert d4["overshoot"] == pytest.approx(4 * 50 ** (-6 / 16)) and d4["overshoot"] < 1 < d8["overshoot"]
    np.testing.assert_allclose(d4["scaled"], rope_inv_freq(16, base=500000.0)[0].numpy())


def test_chinese_legends_gloss_the_encoding_keys(results):
    """The legends name encodings by their code keys; the Chinese edition adds a Chinese gloss to each."""
    from posenc_lib.i18n import language
    from posenc_lib.model import encoding_label
    from posenc_lib.plots._style import ENCODING_COLORS
    for render in (lambda ax: P.render_position_loss(ax, results), lambda ax: P.render_training_curves(ax, results)):
        for lang in ("en", "zh"):
            fig, ax = plt.subplots()
            with language(lang):
                render(ax)
            texts = [t.get_text() for t in ax.get_legend().get_texts()]
            if lang == "en":
                assert set(texts) == set(results["summary"])                   # the keys themselves
            else:
                assert all(t.split("（")[0] in ENCODING_COLORS and "（" in t and t.endswith("）") for t in texts)
            plt.close(fig)
    with language("zh"):
        assert encoding_label("rope") == "rope（旋转位置编码）" and encoding_label("mine") == "mine"

"""Notebook 10's figures and their numbers (posenc_lib.plots.production and widgets.production): Men et al.'s sum
B(m) against its definitions (a trace of RoPE's matrix, the expected score of a token against its own copy),
the pairs without a turn, which dims a partial-rotary head turns, LongRoPE's two spectra, what each layer of a
real model sees, the attention factors against the library's (which test_scaling.py compares with
transformers) and log-n scaling, and that the sliders change what they should."""
import math

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from posenc_lib import apply_rope, from_hf_config, rope_inv_freq, rope_matrix, scaling
from posenc_lib.configs import attention_temperature
from posenc_lib.experiments.results import load_model_configs
from posenc_lib.plots import production as plots
from posenc_lib.widgets import production as widgets

REPORTS = {m["name"]: from_hf_config(m["config"]) for m in load_model_configs()}


def _by_prefix(prefix):
    return next(p for name, p in REPORTS.items() if name.startswith(prefix))


def test_self_similarity_is_the_cosine_sum_and_half_the_trace():
    theta, _ = rope_inv_freq(128, base=10000.0)
    m = torch.arange(3000, dtype=torch.float64)
    direct = torch.cos(m[:, None] * theta).sum(-1).numpy()
    np.testing.assert_allclose(plots.rope_self_similarity(theta, 3000), direct, rtol=0, atol=1e-10)
    far = (1 << 18) - 5  # across the scan's chunk boundary, through `start`
    m_far = torch.arange(far, far + 10, dtype=torch.float64)
    np.testing.assert_allclose(plots.rope_self_similarity(theta, 10, start=far),
                               torch.cos(m_far[:, None] * theta).sum(-1).numpy(), rtol=0, atol=1e-9)
    for position in (0, 7, 1234):
        trace = float(torch.trace(rope_matrix(position, 128)))
        assert plots.rope_self_similarity(theta, position + 1)[position] == pytest.approx(trace / 2, abs=1e-9)
    assert plots.rope_self_similarity(theta, 1)[0] == pytest.approx(64)   # B(0) = d/2


def test_self_similarity_is_the_expected_score_of_a_token_against_its_own_copy():
    """q with independent unit-variance entries: E[(R_m q) . (R_0 q)] = tr(R_m) = 2 B(m); an unrelated key: 0."""
    gen = torch.Generator().manual_seed(0)
    d, m = 16, 9
    q = torch.randn(200000, d, generator=gen, dtype=torch.float64)
    k = torch.randn(200000, d, generator=gen, dtype=torch.float64)
    theta, _ = rope_inv_freq(d, base=100.0)
    at_m = apply_rope(q[:, None, :], torch.tensor([m]), base=100.0)[:, 0]
    own = float((at_m * q).sum(-1).mean())
    other = float((at_m * k).sum(-1).mean())
    b = plots.rope_self_similarity(theta, m + 1)[m]
    assert own == pytest.approx(2 * b, abs=0.05)
    assert abs(other) < 0.05


def test_first_negative_distance_is_the_first_negative_of_the_sum():
    theta, _ = rope_inv_freq(128, base=10000.0)
    values = plots.rope_self_similarity(theta, 4096)
    first = int(np.nonzero(values < 0)[0][0])
    assert plots.first_negative_distance(theta, 4096) == first
    assert (values[:first] >= 0).all()
    assert plots.first_negative_distance(theta, first) is None              # not reached within the limit
    bigger = [plots.first_negative_distance(rope_inv_freq(128, base=b)[0], 1 << 17) for b in (1e4, 1e5, 1e6)]
    assert bigger[0] < bigger[1] < bigger[2]                                 # a larger base: later


def test_p_rope_stopped_pairs_never_turn():
    """Gemma 4's p-RoPE: the pairs with theta_i = 0 add a constant 1 to B(m) and count among the pairs without a
    turn; a negative frequency, or none that turns, is refused."""
    theta = torch.cat([rope_inv_freq(64, base=10000.0)[0], torch.zeros(32, dtype=torch.float64)])
    m = torch.arange(500, dtype=torch.float64)
    direct = torch.cos(m[:, None] * theta).sum(-1).numpy()
    np.testing.assert_allclose(plots.rope_self_similarity(theta, 500), direct, rtol=0, atol=1e-10)
    assert plots.pairs_without_a_turn(theta, 4096) == plots.pairs_without_a_turn(theta[:32], 4096) + 32
    for bad in (-theta, torch.zeros(8, dtype=torch.float64)):
        with pytest.raises(ValueError, match="inv_freq"):
            plots.rope_self_similarity(bad, 10)


def test_pairs_without_a_turn_is_the_wavelength_count():
    for base, d, length in ((1e4, 128, 4096), (5e5, 128, 8192), (1e6, 64, 32768)):
        theta, _ = rope_inv_freq(d, base=base)
        i = np.arange(d // 2)
        by_formula = int((i > (d / 2) * math.log(length / (2 * math.pi)) / math.log(base)).sum())
        assert plots.pairs_without_a_turn(theta, length) == by_formula
    with pytest.raises(ValueError, match="inv_freq"):
        plots.pairs_without_a_turn(torch.tensor([1.0, -1.0]), 10)


def test_render_base_context_draws_its_numbers():
    fig, axes = plt.subplots(1, 2)
    out = plots.render_base_context(axes, 10000.0, 4096)
    theta, _ = rope_inv_freq(128)
    assert out["slow"] == plots.pairs_without_a_turn(theta, 4096)
    assert out["first_negative"] == plots.first_negative_distance(theta, 4096)
    np.testing.assert_allclose(out["wavelengths"], (2 * math.pi / theta).numpy())
    assert len(out["similarity"]) == 4096
    assert plots.render_base_context(axes, 1e7, 1024)["first_negative"] is None
    with pytest.raises(ValueError, match="base"):
        plots.render_base_context(axes, 0.5, 1024)


def test_rotated_dims_follow_each_models_layout():
    layers = {name: _by_prefix(name).layer(0) for name in ("GPT-NeoX", "GPT-J", "Phi-2", "DeepSeek", "Llama 2")}
    fig, ax = plt.subplots()
    out = plots.render_rotated_dims(ax, layers)
    turned = {name: np.nonzero(~np.isnan(values))[0] for name, values in out.items()}
    assert turned["GPT-NeoX"].tolist() == list(range(24))                    # 24 of 96
    assert turned["GPT-J"].tolist() == list(range(64))                       # 64 of 256
    assert turned["Phi-2"].tolist() == list(range(32))                       # 32 of 80
    assert turned["DeepSeek"].tolist() == list(range(128, 192))              # the last 64 of 192
    assert turned["Llama 2"].tolist() == list(range(128))
    neox, gptj = out["GPT-NeoX"], out["GPT-J"]
    np.testing.assert_array_equal(neox[:12], neox[12:24])                    # half: (i, i + rot/2) share a pair
    np.testing.assert_array_equal(gptj[0:64:2], gptj[1:64:2])                # interleaved: (2i, 2i+1)
    assert neox[0] == 0 and neox[11] == 1                                     # fastest to slowest


def test_partial_rotary_score_is_a_position_free_part_plus_a_relative_part():
    data = plots.partial_rotary_scores(0.25, head_dim=96, span=40)
    gen = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 96, generator=gen, dtype=torch.float64)
    assert data["rotary_dim"] == 24
    assert data["position_free"] == pytest.approx(float(q[24:] @ k[24:]), abs=1e-12)
    for m in (0, 5, 40):
        rotated = float(apply_rope(q[None, :24], torch.tensor([m]))[0] @ k[:24])
        assert data["score"][m] == pytest.approx(rotated + data["position_free"], abs=1e-10)
        shifted = float(apply_rope(q[None], torch.tensor([m + 7]), partial_rotary_factor=0.25)[0]
                        @ apply_rope(k[None], torch.tensor([7]), partial_rotary_factor=0.25)[0])
        assert data["score"][m] == pytest.approx(shifted, abs=1e-10)           # depends on m - n only
    assert plots.partial_rotary_scores(1.0, span=3)["position_free"] == 0.0
    fig, axes = plt.subplots(1, 2)
    out = plots.render_partial_rotary(axes, 0.5)
    assert np.isnan(out["pairs"][48:]).all() and not np.isnan(out["pairs"][:48]).any()


def test_longrope_figure_uses_short_factors_up_to_l0_and_long_beyond():
    phi3 = _by_prefix("Phi-3")
    layer = phi3.layer(0)
    fig, axes = plt.subplots(1, 2)
    out = plots.render_longrope(axes, layer, phi3.max_position_embeddings)
    theta, _ = rope_inv_freq(96, base=layer.base)
    np.testing.assert_allclose(out["short_waves"], (2 * math.pi / (theta / torch.tensor(out["short"]))).numpy())
    np.testing.assert_allclose(out["long_waves"], (2 * math.pi / (theta / torch.tensor(out["long"]))).numpy())
    assert out["original"] == phi3.original_max_position_embeddings == 4096
    assert out["long"][-1] > 10 * out["short"][-1] and abs(out["long"][0] - out["short"][0]) < 0.1  # slow pairs differ
    with pytest.raises(ValueError, match="not a LongRoPE layer"):
        plots.render_longrope(axes, REPORTS["Llama 2 7B"].layer(0), 4096)


def test_spectrum_rows_report_what_each_layer_sees():
    rows = plots.spectrum_rows(REPORTS)
    assert len(rows) == sum(len(p.kinds()) for p in REPORTS.values())
    scout = [r for r in rows if r["model"].startswith("Llama 4")]
    rope, nope = (next(r for r in scout if r["rope"] is flag) for flag in (True, False))
    assert rope["seen"] == 8192 == rope["pretrained"]                          # chunks = the pretraining length
    assert rope["layers"] == "all but 3-47 every 4" and nope["layers"] == "3-47 every 4"
    assert nope["wavelengths"] is None and nope["seen"] == nope["context"] == 10485760
    gemma_local = next(r for r in rows if r["model"].startswith("Gemma 3") and r["kind"] == "RoPE, sliding")
    assert gemma_local["seen"] == 1024 and gemma_local["base"] == 1e4
    llama2 = next(r for r in rows if r["model"].startswith("Llama 2"))
    np.testing.assert_allclose(llama2["wavelengths"], REPORTS["Llama 2 7B"].layer(0).wavelengths.numpy())
    assert llama2["slow"] == plots.pairs_without_a_turn(REPORTS["Llama 2 7B"].layer(0).inv_freq, 4096)
    assert llama2["first_negative"] == plots.first_negative_distance(REPORTS["Llama 2 7B"].layer(0).inv_freq, 4096)
    phi3 = next(r for r in rows if r["model"].startswith("Phi-3"))
    long_inv, _ = _by_prefix("Phi-3").layer(0).frequencies(131072)             # the long factors at the full context
    np.testing.assert_allclose(phi3["wavelengths"], (2 * math.pi / long_inv).numpy())
    table = plots.checkpoint_table(rows)
    what, lengths = table.split("\n\n")                                      # two tables, a row per entry each
    assert len(what.splitlines()) == len(lengths.splitlines()) == len(rows) + 1 and "learned absolute" in what
    assert max(len(line) for line in table.splitlines()) <= 130                  # each fits a notebook column
    fig, ax = plt.subplots(figsize=(9.0, 8.8))  # as notebook 10 draws it
    assert plots.render_checkpoint_spectra(ax, rows) is rows


def test_layers_without_positions_are_named_by_kind_and_stopped_pairs_counted():
    """A linear-attention layer is not called NoPE (it has no softmax over positions to leave unrotated), and
    p-RoPE's pairs at theta = 0, which have no finite wavelength to draw, are counted beside the spectrum."""
    rows = plots.spectrum_rows({name: REPORTS[name] for name in ("Qwen3-Next 80B-A3B Instruct", "Gemma 4 31B")})
    assert [r["kind"] for r in rows] == ["linear attention", "RoPE, full", "RoPE, sliding", "RoPE, full"]
    assert "linear attention" in plots.checkpoint_table(rows) and "NoPE" not in plots.checkpoint_table(rows)
    fig, ax = plt.subplots(figsize=(9.0, 1.0 + 0.35 * len(rows)))  # as 10 draws a few rows
    plots.render_checkpoint_spectra(ax, rows)
    texts = [t.get_text() for t in ax.texts]
    assert texts == ["linear attention: no positions", "+ 192 pairs at theta = 0"]
    assert np.isinf(rows[3]["wavelengths"]).sum() == 192 == rows[3]["slow"]  # its 64 turning pairs all turn


def test_layer_figure_for_gemma_and_llama4():
    fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.0))  # as notebook 10 draws it
    gemma = plots.render_layer_positions(axes, "Gemma 3 4B (instruction-tuned)", 5, reports=REPORTS)
    assert gemma["kinds"][:6] == ["RoPE, sliding"] * 5 + ["RoPE, full"]
    np.testing.assert_allclose(gemma["wavelengths"], _by_prefix("Gemma 3").layer(5).wavelengths.numpy())
    assert gemma["seen"] == 131072
    local = plots.render_layer_positions(axes, "Gemma 3 4B (instruction-tuned)", 0, reports=REPORTS)
    local_inv_freq = _by_prefix("Gemma 3").layer(0).inv_freq
    assert local["seen"] == 1024 and local["slow"] == plots.pairs_without_a_turn(local_inv_freq, 1024)
    nope = plots.render_layer_positions(axes, "Llama 4 Scout 17B-16E Instruct", 3, reports=REPORTS)
    m, scale = nope["temperature"]
    np.testing.assert_allclose(scale, attention_temperature(torch.as_tensor(m, dtype=torch.long)).numpy())
    assert nope["wavelengths"] is None and scale[-1] > 1.5
    smol = plots.render_layer_positions(axes, "SmolLM3 3B", 3, reports=REPORTS)   # NoPE without temperature
    assert smol["temperature"] is None and smol["wavelengths"] is None
    with pytest.raises(ValueError, match="model must be one of"):
        plots.render_layer_positions(axes, "Llama 5", 0, reports=REPORTS)
    with pytest.raises(ValueError, match="index must be in"):
        plots.render_layer_positions(axes, "SmolLM3 3B", 36, reports=REPORTS)


def test_attention_factors_are_the_librarys():
    """The attention budget figure draws scaling.yarn_attention_factor and scaling.longrope_attention_factor
    (compared with transformers in test_scaling.py through rope_inv_freq), the names notebook 10 imports from
    here; LongRoPE's factor on q.k equals log-n scaling at the extended length n = s L0."""
    assert plots.yarn_attention_factor is scaling.yarn_attention_factor
    assert plots.longrope_attention_factor is scaling.longrope_attention_factor
    for s in (1.0, 2.0, 16.0, 40.0):
        yarn = {"rope_type": "yarn", "factor": s, "original_max_position_embeddings": 4096}
        assert scaling.yarn_attention_factor(s) == pytest.approx(rope_inv_freq(64, scaling=yarn)[1])
        longrope = {"rope_type": "longrope", "factor": s, "original_max_position_embeddings": 4096,
                    "short_factor": [1.0] * 32, "long_factor": [1.0] * 32}
        assert scaling.longrope_attention_factor(s, 4096) == pytest.approx(rope_inv_freq(64, scaling=longrope)[1])
        log_n = float(plots.log_n_scale(s * 4096, 4096))
        assert scaling.longrope_attention_factor(s, 4096) ** 2 == pytest.approx(log_n)
    fig, axes = plt.subplots(1, 2)
    drawn = plots.render_attention_budget(axes, 32.0, original=4096)
    plt.close(fig)
    for s, yarn, longrope in zip(drawn["factors"], drawn["yarn"], drawn["longrope"]):
        assert yarn == pytest.approx(scaling.yarn_attention_factor(s) ** 2, rel=1e-14, abs=0)
        assert longrope == pytest.approx(scaling.longrope_attention_factor(s, 4096) ** 2, rel=1e-14, abs=0)
    phi3 = _by_prefix("Phi-3")
    factor = phi3.max_position_embeddings / phi3.original_max_position_embeddings
    assert phi3.layer(0).attention_factor == pytest.approx(scaling.longrope_attention_factor(factor, 4096))


def test_log_n_scaling_keeps_the_needle_and_plain_softmax_dilutes_it():
    n = np.array([4096, 8192, 65536, 131072])
    plain = plots.needle_weight(n, math.log(4096))
    kept = plots.needle_weight(n, math.log(4096), plots.log_n_scale(n, 4096))
    np.testing.assert_allclose(kept, n / (2 * n - 1), rtol=1e-9)
    assert plain[0] == pytest.approx(kept[0]) and (np.diff(plain) < 0).all() and plain[-1] < 0.04
    with pytest.raises(ValueError, match="n"):
        plots.needle_weight([0], 1.0)
    fig, axes = plt.subplots(1, 2)
    out = plots.render_attention_budget(axes, 8.0)
    assert out["n"][-1] == 8 * 4096
    np.testing.assert_allclose(out["longrope"], out["log_n"], rtol=1e-12)
    temperature = attention_temperature(torch.as_tensor(out["n"] - 1, dtype=torch.long)).numpy()
    np.testing.assert_allclose(out["with_temperature"], plots.needle_weight(out["n"], math.log(4096), temperature))


def test_render_absorption_error_draws_each_case():
    fig, ax = plt.subplots()
    errors = {"RoPE on the key": np.array([0.0, 1.0, 2.0]), "decoupled": np.zeros(3)}
    assert plots.render_absorption_error(ax, [0, 1, 2], errors) is errors
    assert len(ax.get_lines()) == 2


def test_widgets_follow_their_controls():
    base = widgets.base_context_widget()
    base.controls["base"].value = 1e6
    assert base.last_result["first_negative"] == plots.first_negative_distance(rope_inv_freq(128, base=1e6)[0], 4096)
    base.controls["context"].value = 1 << 17
    assert base.last_result["first_negative"] == plots.first_negative_distance(rope_inv_freq(128, base=1e6)[0],
                                                                               1 << 17)
    partial = widgets.partial_rotary_widget()
    partial.controls["fraction"].value = 0.5
    assert partial.last_result["rotary_dim"] == 48
    layer = widgets.layer_widget()
    layer.controls["model"].value = "Llama 4 Scout 17B-16E Instruct"
    assert layer.controls["layer"].max == 47
    layer.controls["layer"].value = 3
    assert layer.last_result["temperature"] is not None
    layer.controls["model"].value = "Phi-2"                                   # 32 layers: the slider follows
    assert layer.controls["layer"].max == 31 and layer.last_result["seen"] == 2048
    budget = widgets.attention_budget_widget()
    budget.controls["factor"].value = 4.0
    assert budget.last_result["n"][-1] == 4 * 4096

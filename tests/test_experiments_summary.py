"""posenc_lib.experiments.summary: notebook 09's one row per encoding, read off the classes and the results."""
from __future__ import annotations

import pytest

from posenc_lib.experiments import load_results
from posenc_lib.experiments.summary import encoding_summary


@pytest.fixture(scope="module")
def rows():
    results = load_results("extrapolation")
    return results, {r["encoding"]: r for r in encoding_summary(results)}


def test_where_each_encoding_acts_and_what_it_costs(rows):
    results, by_name = rows
    cfg = results["provenance"]["config"]
    assert list(by_name) == [*results["summary"], "shaw"]
    assert {e: r["hooks"] for e, r in by_name.items()} == {
        "nope": [], "sinusoidal": ["add_to_input"], "learned": ["add_to_input"], "t5": ["score_bias"],
        "rope": ["rotate_qk"], "alibi": ["score_bias"], "shaw": ["score_bias", "value_bias"]}
    assert by_name["nope"]["acts"] == "nowhere (no position)"
    assert by_name["learned"]["parameters"] == cfg["train_len"] * cfg["d_model"]
    assert by_name["t5"]["parameters"] == cfg["t5_num_buckets"] * cfg["num_heads"]
    assert by_name["rope"]["parameters"] == by_name["alibi"]["parameters"] == by_name["sinusoidal"]["parameters"] == 0


def test_measured_rises_and_the_unmeasured_extra(rows):
    results, by_name = rows
    s = results["summary"]["alibi"]
    assert by_name["alibi"]["measured"] and by_name["alibi"]["loss_at_L"] == s["1"]["mean"]
    assert by_name["alibi"]["rise"]["4"] == pytest.approx(s["4"]["mean"] - s["1"]["mean"], abs=1e-4)
    assert by_name["learned"]["rise"]["8"] is None  # no row past L
    shaw = by_name["shaw"]
    assert shaw["measured"] is False and shaw["loss_at_L"] is None and set(shaw["rise"].values()) == {None}


def test_rankings_by_loss_and_by_rise_are_computed_from_the_runs():
    from posenc_lib.experiments.summary import rankings
    results = load_results("extrapolation")
    for m in (2, 8):
        out = rankings(results, m)
        assert "learned" not in out["by_loss"]  # no value past L
        for enc in out["by_loss"]:
            runs = [r["loss"] for r in results["runs"] if r["encoding"] == enc]
            loss = sum(r[str(m)] for r in runs) / len(runs)
            assert out["loss"][enc] == pytest.approx(loss, abs=1e-5)
            assert out["rise"][enc] == pytest.approx(loss - sum(r["1"] for r in runs) / len(runs), abs=1e-5)
        assert [out["loss"][e] for e in out["by_loss"]] == sorted(out["loss"].values())
        assert [out["rise"][e] for e in out["by_rise"]] == sorted(out["rise"].values())


def test_early_positions_reads_the_first_window_positions():
    from posenc_lib.experiments.summary import early_positions
    results = load_results("extrapolation")
    out = early_positions(results, "alibi", first=8)
    curves = [r["per_position_loss"] for r in results["runs"] if r["encoding"] == "alibi"]
    mean = [sum(c[p] for c in curves) / len(curves) for p in range(64)]
    assert out["first_mean"] == pytest.approx(sum(mean[:8]) / 8)
    assert out["share_at_L"] == pytest.approx((out["first_mean"] - sum(mean[8:]) / 56) * 8 / 64)
    with pytest.raises(ValueError, match="first"):
        early_positions(results, "alibi", first=64)
    with pytest.raises(ValueError, match="encoding"):
        early_positions(results, "xpos")


def test_training_exposure_and_finetune_share():
    from posenc_lib.experiments.summary import finetune_share, training_exposure
    results, extension = load_results("extrapolation"), load_results("context_extension")
    cfg = results["provenance"]["config"]
    exposure = training_exposure(results)
    assert exposure["chars_seen"] == cfg["steps"] * cfg["batch_size"] * cfg["train_len"]
    assert exposure["passes"] == pytest.approx(exposure["chars_seen"] / results["corpus"]["train_chars"])
    share = finetune_share(extension)
    ft = extension["provenance"]["config"]
    tokens_per_step = ft["batch_size"] * ft["train_len"]  # the fine-tune keeps pre-training's tokens per step
    assert share["finetune_chars"] == ft["finetune_steps"] * tokens_per_step
    assert share["share"] == pytest.approx(ft["finetune_steps"] / ft["steps"])


def test_context_effect_pairs_each_seed_with_its_own_baseline():
    from posenc_lib.experiments.summary import context_effect
    results = load_results("extrapolation")
    out = context_effect(results, "t5")
    runs = [r for r in results["runs"] if r["encoding"] == "t5"]
    assert out["sliding"] == pytest.approx(sum(r["sliding_loss"] for r in runs) / 3)
    assert out["difference"]["2"]["values"] == pytest.approx([r["loss"]["2"] - r["sliding_loss"] for r in runs])
    assert out["difference"]["2"]["min"] == min(out["difference"]["2"]["values"])
    assert context_effect(results, "learned")["difference"]["8"] is None
    with pytest.raises(ValueError, match="encoding"):
        context_effect(results, "xpos")
    with pytest.raises(ValueError, match="sliding"):
        context_effect({"runs": [{"encoding": "a", "loss": {}}], "summary": {"a": {}}}, "a")


def test_probe_gains_and_finetune_leads_read_the_tables():
    from posenc_lib.experiments.summary import finetune_leads, probe_gains
    results, extension = load_results("extrapolation"), load_results("context_extension")
    cells = probe_gains(results, "alibi")
    assert cells[(8, 480)]["window"] == 512 and cells[(1, 16)]["gain"]["n"] == 3
    ft = probe_gains(extension, "abf", key="finetuned_probe_summary")
    assert set(ft) == set(cells)
    with pytest.raises(ValueError, match="group"):
        probe_gains(results, "xpos")
    with pytest.raises(ValueError, match="no"):
        probe_gains({}, "alibi")
    leads = finetune_leads(extension)
    by = {(f["method"], f["seed"]): f["loss"] for f in extension["finetuned"]}
    assert leads["none"]["4"]["values"] == [0.0, 0.0, 0.0]
    assert leads["yarn"]["4"]["values"] == pytest.approx([by["none", s]["4"] - by["yarn", s]["4"] for s in (0, 1, 2)])
    assert finetune_leads(extension, over="linear")["linear"]["8"]["max"] == 0.0
    with pytest.raises(ValueError, match="over"):
        finetune_leads(extension, over="ntk")

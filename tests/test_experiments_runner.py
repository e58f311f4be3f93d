"""posenc_lib.experiments.runner: the runs of notebooks 07/08, their summary, provenance and files."""
from __future__ import annotations

import json
from dataclasses import asdict, replace

import pytest
import torch

from posenc_lib.experiments import config_from, load_results, load_rope_model, runner as R
from posenc_lib.experiments.config import ExperimentConfig
from posenc_lib.experiments.results import EXTENSION_FILE, EXTRAPOLATION_FILE, ROPE_STATE_FILE


def _as_json(result: dict) -> dict:
    return json.loads(json.dumps(result))  # tuples become lists


def test_fresh_short_run_reproduces_the_main_ordering(tmp_path):
    """200 steps, one seed: ALiBi stays flat at 4L, sinusoidal rises far more
    (margins, not values); what is written reads back as what was returned. The training is what the
    ordering needs (at 120 steps, or at batch 8, sinusoidal rises only ~0.2); the evaluation is on 16 windows
    per length (at 32: rise 0.49, ALiBi 0.006; at 16: 0.56 and 0.001, the same margins), and the retrieval probe,
    not checked here (it is in the two-process test), on 2 windows per cell instead of 64."""
    cfg = replace(ExperimentConfig(), steps=200, batch_size=16, seeds=(0,), encodings=("sinusoidal", "alibi"),
                  eval_multiples=(1, 4), eval_windows=16, warmup_steps=40, probe_windows=2)
    out = R.run_all(cfg, out_dir=tmp_path, workers=1, show_progress=False, extension=False)
    s = out["extrapolation"]["summary"]
    for enc in ("alibi", "sinusoidal"):
        assert s[enc]["1"]["mean"] < 2.6  # both learned well past the unigram level (~3.3 nats/char)
    assert abs(s["alibi"]["4"]["mean"] - s["alibi"]["1"]["mean"]) < 0.05
    assert s["sinusoidal"]["4"]["mean"] - s["sinusoidal"]["1"]["mean"] > 0.3
    assert out["context_extension"] is None
    assert load_results("extrapolation", tmp_path) == _as_json(out["extrapolation"])
    # the extrapolation part writes its results and seed-0 sinusoidal's weights (notebook 03 reads them)
    assert sorted(p.name for p in tmp_path.iterdir()) == [EXTRAPOLATION_FILE, "experiments_sinusoidal_L64_seed0.pt"]


_TINY = replace(ExperimentConfig(), train_len=16, steps=4, batch_size=4, seeds=(0,), encodings=("rope", "learned"),
                eval_multiples=(1, 2), eval_windows=4, warmup_steps=2, log_every=2, finetune_steps=2,
                finetune_multiple=2, finetune_warmup=1, finetune_seeds=(0,), probe_windows=3)


def _numbers(result):
    """A result without its timings and dates (what must not depend on the machine's load)."""
    if isinstance(result, dict):
        return {k: _numbers(v) for k, v in result.items()
                if "seconds" not in k and k not in ("provenance", "timing_whole_command")}
    if isinstance(result, list):
        return [_numbers(v) for v in result]
    return result


# Two seeds (so two processes share the jobs in more than one way), 08's fine-tunes from seed 1 only (queued
# behind seed 0's jobs): run once, in two processes, for the two tests below.
_TWO_SEEDS = replace(_TINY, seeds=(0, 1), finetune_seeds=(1,))


@pytest.fixture(scope="module")
def two_processes(tmp_path_factory):
    """(the folder it wrote, what it returned): run_all of _TWO_SEEDS with workers=2."""
    out_dir = tmp_path_factory.mktemp("two_processes")
    return out_dir, R.run_all(_TWO_SEEDS, out_dir=out_dir, workers=2, show_progress=False)


def test_run_all_with_extension_in_two_processes_writes_every_file_and_they_agree(two_processes):
    cfg = _TWO_SEEDS
    tmp_path, out = two_processes
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([EXTRAPOLATION_FILE, EXTENSION_FILE, ROPE_STATE_FILE])
    every = out["extrapolation"]["runs"]
    runs = {r["encoding"]: r for r in every if r["seed"] == 0}
    assert runs["learned"]["loss"]["2"] is None and len(runs["learned"]["per_position_loss"]) == 16
    assert len(runs["rope"]["per_position_loss"]) == 32 and runs["rope"]["train_curve"][-1][0] == 4
    ext = load_results("context_extension", tmp_path)
    assert [e["seed"] for e in ext["no_finetune"]] == [0, 1]  # every RoPE model evaluated, seed by seed
    assert ext == _as_json(out["context_extension"]) and ext["no_finetune"][0]["loss"]["none"] == runs["rope"]["loss"]
    assert [(f["method"], f["finetune_len"], f["finetune_batch"]) for f in ext["finetuned"]] == [
        (m, 32, 2) for m in ("none", "linear", "yarn", "abf")]
    scalings = {f["method"]: f["scaling"] for f in ext["finetuned"]}
    assert scalings["none"] is None and scalings["abf"] == {"rope_type": "default", "rope_theta": cfg.abf_base}
    assert scalings["yarn"]["factor"] == scalings["linear"]["factor"] == 2.0
    for f in ext["finetuned"]:  # evaluated at every multiple and probed
        assert set(f["loss"]) == {"1", "2"} and [(c["multiple"], c["distance"]) for c in f["probe"]] == [
            (1, 4), (1, 8), (2, 4), (2, 24)]
    assert set(ext["finetuned_summary"]) == set(ext["finetuned_probe_summary"]) == set(cfg.finetune_methods)
    assert ext["finetuned_summary"]["abf"]["2"]["mean"] == next(f for f in ext["finetuned"]
                                                                if f["method"] == "abf")["loss"]["2"]
    extrap = out["extrapolation"]
    assert extrap["probe_len"] == ext["probe_len"] == 4 and extrap["probe_cells"] == [[1, 4], [1, 8], [2, 4], [2, 24]]
    assert runs["rope"]["sliding_loss"] > 0 and runs["learned"]["sliding_loss"] > 0  # L fits a learned table
    rope_runs = [r for r in every if r["encoding"] == "rope"]
    assert [r["seed"] for r in rope_runs] == [0, 1]  # the summaries below are over both seeds
    assert extrap["sliding_summary"]["rope"]["mean"] == pytest.approx(
        sum(r["sliding_loss"] for r in rope_runs) / 2, rel=0, abs=1e-5)
    assert [c["loss"] is None for c in runs["learned"]["probe"]] == [False, False, True, True]
    assert extrap["probe_summary"]["rope"][3]["gain"]["mean"] == pytest.approx(
        sum(r["probe"][3]["gain"] for r in rope_runs) / 2, rel=0, abs=1e-5)
    parts = extrap["provenance"]["timing_whole_command"]["cpu_seconds_by_part"]
    assert set(parts) == {"pretraining", "sliding_baseline", "probe", "extension_eval", "finetune",
                          "evaluation_at_every_multiple"}
    model = load_rope_model(tmp_path, cfg)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as in the workers
    try:
        again = R.train_and_evaluate("rope", 0, cfg, keep_state=True)
    finally:
        torch.set_num_threads(threads)
    assert all(torch.equal(v, again["state"][k]) for k, v in model.state_dict().items())  # the saved state
    for prov in (out["extrapolation"]["provenance"], ext["provenance"]):
        assert config_from({"provenance": prov}) == cfg and prov["timing_whole_command"]["wall_seconds"] >= 0


def test_the_numbers_do_not_depend_on_the_workers(two_processes):
    """One process or two, the same numbers: every job is seeded and single-threaded, whichever worker runs it
    and whenever 08's jobs are queued."""
    one = R.run_all(_TWO_SEEDS, out_dir=None, workers=1, show_progress=False)
    two = two_processes[1]
    assert _numbers(one) == _numbers(two)
    assert [(r["encoding"], r["seed"]) for r in one["extrapolation"]["runs"]] == [
        ("rope", 0), ("learned", 0), ("rope", 1), ("learned", 1)]            # seed by seed, as configured
    assert [f["seed"] for f in one["context_extension"]["finetuned"]] == [1] * 4


def test_seed_stats_and_the_probe_summary():
    assert R.seed_stats([1.0, None]) is None and R.seed_stats([2.0])["std"] == 0.0
    cell = {"multiple": 1, "window": 8, "distance": 2}
    runs = [{"encoding": "a", "probe": [{**cell, **{f: v for f in R.PROBE_FIELDS}}]} for v in (1.0, 3.0)]
    got = R.summarize_probe(runs)["a"][0]
    assert {k: got[k] for k in cell} == cell and got["gain"]["mean"] == 2.0 and got["loss"]["max"] == 3.0


def test_summarize_takes_mean_spread_and_range_over_seeds():
    runs = [{"encoding": "a", "loss": {"1": v, "2": None if enc_b else v + 1}} for v, enc_b in ((1.0, 0), (3.0, 0))]
    runs += [{"encoding": "b", "loss": {"1": 2.0, "2": None}}]
    got = R.summarize(runs, (1, 2))
    assert got["a"]["1"] == {"mean": 2.0, "std": round(2 ** 0.5, 5), "min": 1.0, "max": 3.0, "n": 2}
    assert got["a"]["2"]["mean"] == 3.0
    assert got["b"] == {"1": {"mean": 2.0, "std": 0.0, "min": 2.0, "max": 2.0, "n": 1}, "2": None}


def test_live_run_writes_nothing_and_restores_the_threads(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    before = torch.get_num_threads()
    out = R.live_run(("nope",), steps=3, batch_size=2, eval_multiples=(1, 2), eval_windows=2, show_progress=False)
    assert [r["encoding"] for r in out["runs"]] == ["nope"] and set(out["summary"]["nope"]) == {"1", "2"}
    assert torch.get_num_threads() == before and list(tmp_path.iterdir()) == []


def test_provenance_records_the_code_and_the_machine():
    cfg = ExperimentConfig(steps=3)
    prov = R.provenance(cfg, workers=2, threads=1)
    assert prov["config"] == asdict(cfg) and (prov["workers"], prov["threads_per_worker"]) == (2, 1)
    assert prov["torch_version"] == torch.__version__ and prov["command"].startswith("python -m posenc_lib.experiments")
    assert prov["git_commit"] is None or len(prov["git_commit"]) == 40


def test_a_t5_run_records_its_learned_bias_table_and_writes_it(tmp_path):
    """t5_bias: the T5 model's shared relative_attention_bias, [bucket][head], as trained; other encodings
    have none."""
    cfg = replace(_TINY, encodings=("t5", "alibi"), seeds=(0,))
    out = R.run_all(cfg, out_dir=tmp_path, workers=1, show_progress=False, extension=False)
    runs = {r["encoding"]: r for r in load_results("extrapolation", tmp_path)["runs"]}
    assert "t5_bias" not in runs["alibi"]
    table = runs["t5"]["t5_bias"]
    assert table == out["extrapolation"]["runs"][0]["t5_bias"]
    assert len(table) == cfg.t5_num_buckets and {len(row) for row in table} == {cfg.num_heads}
    again = R.train_and_evaluate("t5", 0, cfg, keep_state=True, progress=lambda n: None)
    weight = again["state"]["encoding.relative_attention_bias.weight"]  # (buckets, heads), trained
    assert torch.allclose(torch.tensor(table, dtype=torch.float64), weight.double(), rtol=0, atol=5e-6)  # 5 decimals
    assert table == again["t5_bias"]
    model = R.build_model("t5", cfg, 0)
    assert not torch.allclose(weight, model.encoding.relative_attention_bias.weight)  # it moved in training
    with pytest.raises(TypeError, match="T5RelativeBias"):
        R.t5_bias_table(R.build_model("rope", cfg, 0))

"""posenc_lib.experiments.runner: the runs of notebooks 07/08, their summary, provenance and files."""
from __future__ import annotations

import json
from dataclasses import asdict, replace

import torch

from posenc_lib.experiments import config_from, load_results, load_rope_model
from posenc_lib.experiments import runner as R
from posenc_lib.experiments.config import ExperimentConfig
from posenc_lib.experiments.results import EXTENSION_FILE, EXTRAPOLATION_FILE, ROPE_STATE_FILE


def _as_json(result: dict) -> dict:
    return json.loads(json.dumps(result))  # tuples become lists


def test_fresh_short_run_reproduces_the_main_ordering(tmp_path):
    """200 steps, one seed: ALiBi stays flat at 4L, sinusoidal rises far more
    (margins, not values); what is written reads back as what was returned."""
    cfg = replace(ExperimentConfig(), steps=200, batch_size=16, seeds=(0,), encodings=("sinusoidal", "alibi"),
                  eval_multiples=(1, 4), eval_windows=32, warmup_steps=40)
    out = R.run_all(cfg, out_dir=tmp_path, workers=1, show_progress=False, extension=False)
    s = out["extrapolation"]["summary"]
    for enc in ("alibi", "sinusoidal"):
        assert s[enc]["1"]["mean"] < 2.6  # both learned well past the unigram level (~3.3 nats/char)
    assert abs(s["alibi"]["4"]["mean"] - s["alibi"]["1"]["mean"]) < 0.05
    assert s["sinusoidal"]["4"]["mean"] - s["sinusoidal"]["1"]["mean"] > 0.3
    assert out["context_extension"] is None
    assert load_results("extrapolation", tmp_path) == _as_json(out["extrapolation"])
    assert sorted(p.name for p in tmp_path.iterdir()) == [EXTRAPOLATION_FILE]


def test_run_all_with_extension_in_two_processes_writes_every_file_and_they_agree(tmp_path):
    cfg = replace(ExperimentConfig(), train_len=16, steps=4, batch_size=4, seeds=(0,), encodings=("rope", "learned"),
                  eval_multiples=(1, 2), eval_windows=4, warmup_steps=2, log_every=2, finetune_steps=2,
                  finetune_multiple=2, finetune_warmup=1)
    out = R.run_all(cfg, out_dir=tmp_path, workers=2, show_progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([EXTRAPOLATION_FILE, EXTENSION_FILE, ROPE_STATE_FILE])
    runs = {r["encoding"]: r for r in out["extrapolation"]["runs"]}
    assert runs["learned"]["loss"]["2"] is None and len(runs["learned"]["per_position_loss"]) == 16
    assert len(runs["rope"]["per_position_loss"]) == 32 and runs["rope"]["train_curve"][-1][0] == 4
    ext = load_results("context_extension", tmp_path)
    assert ext == _as_json(out["context_extension"]) and ext["no_finetune"][0]["loss"]["none"] == runs["rope"]["loss"]
    assert [(f["method"], f["finetune_len"], f["finetune_batch"]) for f in ext["finetuned"]] == [("linear", 32, 2),
                                                                                              ("none", 32, 2)]
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

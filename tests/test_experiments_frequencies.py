"""data/experiments_frequencies.json (posenc_lib.experiments.drope): its shape and provenance, its baseline equal
to notebook 07's cached seed-0 RoPE losses (same model, windows and scoring), one truncation cell re-computed from
the shipped model, and the command's quick configuration reproducing its own numbers exactly."""
import json

import pytest
import torch

from posenc_lib.experiments import __main__ as cli, drope
from posenc_lib.experiments.config import config_from
from posenc_lib.experiments.corpus import load_corpus
from posenc_lib.experiments.evaluation import eval_ends, evaluate
from posenc_lib.experiments.results import load_results, load_rope_model
from posenc_lib.frequencies import truncated_rope


@pytest.fixture(scope="module")
def cached():
    return drope.load_frequencies()


def test_cached_frequencies_have_their_shape_and_provenance(cached):
    fcfg = drope.frequency_config_from(cached)
    assert fcfg == drope.FrequencyConfig()
    prov = cached["provenance"]
    assert prov["git_commit"] and prov["posenc_lib_uncommitted_changes"] is False
    assert prov["threads_per_worker"] == 1 and "--frequencies" in prov["command"]
    assert config_from(cached) == config_from(load_results("extrapolation"))
    multiples = [str(m) for m in config_from(cached).eval_multiples]
    for stop in ("slowest", "fastest"):
        assert sorted(cached["truncation"][stop], key=int) == [str(c) for c in fcfg.truncate_counts]
        assert all(list(row) == multiples for row in cached["truncation"][stop].values())
    assert [r["seed"] for r in cached["drope"]["runs"]] == list(fcfg.recal_seeds)
    assert cached["drope"]["summary"]["1"]["n"] == len(fcfg.recal_seeds)
    assert cached["pairs"] == 8 and cached["drope"]["recal_len"] == cached["train_len"] == 64


def test_the_baseline_is_notebook_07s_seed0_rope_run(cached):
    [run] = [r for r in load_results("extrapolation")["runs"] if r["encoding"] == "rope" and r["seed"] == 0]
    assert cached["baseline"] == run["loss"]


def test_one_truncation_cell_reproduces_from_the_shipped_model(cached):
    torch.set_num_threads(1)
    cfg = config_from(cached)
    model, valid = load_rope_model(cfg=cfg), load_corpus().valid
    ends = eval_ends(valid, cfg.train_len * max(cfg.eval_multiples), cfg.eval_windows)
    model.replace_encoding(truncated_rope(model, "fastest", 2))
    loss = evaluate(model, valid, context_len=cfg.train_len, score_len=cfg.train_len, ends=ends, batch=cfg.eval_batch)
    assert abs(loss - cached["truncation"]["fastest"]["2"]["1"]) < 2e-5


def test_the_quick_command_writes_its_file_and_reproduces_its_numbers(tmp_path):
    cli.main(["--frequencies", "--quick", "--out", str(tmp_path)])
    written = json.loads((tmp_path / drope.FREQUENCIES_FILE).read_text(encoding="utf-8"))
    assert drope.frequency_config_from(written) == drope.QUICK
    again = drope.run_frequencies(drope.QUICK, out_dir=None)
    for key in ("baseline", "truncation"):
        assert again[key] == written[key], key
    for ours, theirs in zip(again["drope"].pop("runs"), written["drope"].pop("runs")):  # all but the CPU time
        assert ours["loss"] == theirs["loss"] and ours["train_curve"] == theirs["train_curve"]
    assert again["drope"] == written["drope"]


def test_bad_settings_are_named():
    with pytest.raises((TypeError, ValueError), match="recal_steps"):
        drope.FrequencyConfig(recal_steps=0)
    with pytest.raises(ValueError, match="recal_seeds"):
        drope.FrequencyConfig(recal_seeds=())
    with pytest.raises(TypeError, match="fcfg"):
        drope.run_frequencies({"recal_steps": 3}, out_dir=None)
    with pytest.raises(FileNotFoundError, match="--frequencies"):
        drope.load_frequencies("/nonexistent")

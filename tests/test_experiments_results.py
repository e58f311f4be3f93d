"""posenc_lib.experiments.results: data/ found in one place, and the cached results it holds (their
shape, their provenance, and that the saved model still gives its cached loss)."""
from __future__ import annotations

import hashlib
import math

import pytest

from posenc_lib.experiments import (
    CORPUS_FILES,
    EXPERIMENT_ENCODINGS,
    VALID_FILES,
    VOCAB_SIZE,
    config_from,
    eval_ends,
    evaluate,
    load_corpus,
    paths as P,
    results as S,
)
from posenc_lib.scaling import EXTENSION_METHODS


@pytest.fixture(scope="module")
def cached():
    return S.load_results("extrapolation"), S.load_results("context_extension")


def test_data_dir_is_the_clones_when_there_is_one(pytestconfig):
    assert P.data_dir() == pytestconfig.rootpath / "data" == P.data_dir(must_exist=False)


def test_an_installed_wheel_reads_its_package_data(tmp_path, monkeypatch):
    """site-packages/posenc_lib/data (the wheel's copy of data/); a top-level site-packages/data of some other
    package, with no pyproject.toml beside it, is not taken for a clone's."""
    site = tmp_path / "site-packages"
    (site / "posenc_lib" / "data").mkdir(parents=True)
    (site / "data").mkdir()
    monkeypatch.setattr(P, "CLONE_DATA", site / "data")
    monkeypatch.setattr(P, "PACKAGE_DATA", site / "posenc_lib" / "data")
    assert P.data_dir() == site / "posenc_lib" / "data"
    (site / "pyproject.toml").write_text("")  # now it looks like a clone: its data/ wins
    assert P.data_dir() == site / "data"


def test_a_missing_data_dir_names_the_path_and_the_command(tmp_path, monkeypatch):
    """Neither a clone's data/ nor a package's posenc_lib/data/ (a source tree copied without data/)."""
    monkeypatch.setattr(P, "CLONE_DATA", tmp_path / "data")
    monkeypatch.setattr(P, "PACKAGE_DATA", tmp_path / "posenc_lib" / "data")
    with pytest.raises(FileNotFoundError, match=f"{tmp_path / 'data'}.*make experiments"):
        P.data_dir()
    with pytest.raises(FileNotFoundError, match="make experiments"):
        S.load_results("extrapolation")
    assert P.data_dir(must_exist=False) == tmp_path / "data"


@pytest.mark.parametrize("load", [lambda d: S.load_results("extrapolation", d),
                                  lambda d: S.load_results("context_extension", d), S.load_rope_model])
def test_a_missing_file_names_the_path_and_the_command(tmp_path, load):
    with pytest.raises(FileNotFoundError, match=f"{tmp_path}.*make experiments"):
        load(tmp_path)


def test_load_results_names_an_unknown_result():
    with pytest.raises(ValueError, match="name"):
        S.load_results("nope")


def test_cached_extrapolation_has_the_expected_shape(cached):
    res, _ = cached
    cfg = res["provenance"]["config"]
    assert cfg["train_len"] == 64 and cfg["batch_size"] == 32 and len(cfg["seeds"]) == 3
    assert cfg["encodings"] == list(EXPERIMENT_ENCODINGS) and cfg["eval_multiples"] == [1, 2, 4, 8]
    assert {(r["encoding"], r["seed"]) for r in res["runs"]} == {(e, s) for e in EXPERIMENT_ENCODINGS
                                                                 for s in cfg["seeds"]}
    assert len(res["runs"]) == 3 * 6
    for run in res["runs"]:
        assert set(run["loss"]) == {"1", "2", "4", "8"}
        assert run["train_curve"][-1][0] == cfg["steps"]
        if run["encoding"] == "learned":
            assert run["loss"]["1"] is not None and all(run["loss"][m] is None for m in ("2", "4", "8"))
            assert len(run["per_position_loss"]) == 64
        else:
            assert all(0 < run["loss"][m] < 10 for m in run["loss"])
            assert len(run["per_position_loss"]) == 8 * 64
        assert run["loss"]["1"] < math.log(VOCAB_SIZE)  # it learned something
        if run["encoding"] == "t5":  # its trained bias table, [bucket][head] (notebook 05)
            assert len(run["t5_bias"]) == cfg["t5_num_buckets"]
            assert {len(r) for r in run["t5_bias"]} == {cfg["num_heads"]}
        else:
            assert "t5_bias" not in run
    for enc, row in res["summary"].items():  # the summary is the seeds' mean, recomputed here
        for m, stats in row.items():
            values = [r["loss"][m] for r in res["runs"] if r["encoding"] == enc]
            if None in values:
                assert stats is None
            else:
                assert stats["mean"] == pytest.approx(sum(values) / len(values), abs=1e-5)
                assert stats["min"] <= stats["mean"] <= stats["max"]


def test_cached_results_carry_their_provenance(cached):
    for result in cached:
        prov = result["provenance"]
        for key in ("date_utc", "torch_version", "posenc_lib_version", "python_version", "config", "workers",
                    "timing_whole_command"):
            assert prov[key] is not None, key
        timing = prov["timing_whole_command"]
        assert timing["wall_seconds"] > 0 and timing["worker_cpu_seconds"] > 0
        corpus = result["corpus"]
        assert corpus["files"] == list(CORPUS_FILES) and corpus["valid_files"] == list(VALID_FILES)
        assert corpus["file_list_sha256"] == hashlib.sha256("\n".join(CORPUS_FILES).encode()).hexdigest()
        assert len(corpus["text_sha256"]) == 64 and corpus["chars"] > 1_000_000
        assert config_from(result).steps == prov["config"]["steps"]  # the stored config is a valid one


def test_cached_context_extension_has_the_expected_shape(cached):
    res, ext = cached
    cfg = ext["provenance"]["config"]
    assert [e["seed"] for e in ext["no_finetune"]] == cfg["seeds"]
    for e in ext["no_finetune"]:
        assert list(e["loss"]) == list(EXTENSION_METHODS)
        rope_run = next(r for r in res["runs"] if r["encoding"] == "rope" and r["seed"] == e["seed"])
        for method in EXTENSION_METHODS:  # factor 1 at L: every method is plain RoPE there
            assert e["loss"][method]["1"] == pytest.approx(rope_run["loss"]["1"], abs=1e-4)
        for m in ("2", "4", "8"):  # no scaling = the RoPE row of the extrapolation run
            assert e["loss"]["none"][m] == pytest.approx(rope_run["loss"][m], abs=1e-4)
    assert cfg["finetune_seeds"] == cfg["seeds"] and cfg["finetune_methods"] == ["none", "linear", "yarn", "abf"]
    assert [(f["seed"], f["method"]) for f in ext["finetuned"]] == [(s, m) for s in cfg["finetune_seeds"]
                                                                   for m in cfg["finetune_methods"]]
    for f in ext["finetuned"]:
        assert f["finetune_len"] == cfg["finetune_multiple"] * cfg["train_len"]
        assert f["train_curve"][-1][0] == cfg["finetune_steps"]
        abf = {"rope_type": "default", "rope_theta": cfg["abf_base"]}
        assert f["scaling"] == (None if f["method"] == "none" else abf if f["method"] == "abf"
                                else {**f["scaling"], "factor": cfg["finetune_multiple"]})
    for method, row in ext["finetuned_summary"].items():  # the summary is the seeds' mean, recomputed here
        for m, stats in row.items():
            values = [f["loss"][m] for f in ext["finetuned"] if f["method"] == method]
            assert stats["mean"] == pytest.approx(sum(values) / len(values), abs=1e-5) and stats["n"] == 3
    for method, cells in ext["finetuned_probe_summary"].items():
        runs = [f["probe"] for f in ext["finetuned"] if f["method"] == method]
        for i, cell in enumerate(cells):
            assert cell["gain"]["mean"] == pytest.approx(sum(p[i]["gain"] for p in runs) / 3, abs=1e-5)


def test_cached_sliding_baseline_and_probe_have_the_expected_shape(cached):
    res, ext = cached
    cells = [[1, 16], [1, 32], [2, 16], [2, 96], [4, 16], [4, 224], [8, 16], [8, 480]]
    assert res["probe_len"] == ext["probe_len"] == 16 and res["probe_cells"] == cells
    for run in res["runs"]:
        assert 0 < run["sliding_loss"] < math.log(VOCAB_SIZE)
        assert [[c["multiple"], c["distance"]] for c in run["probe"]] == cells
        for c in run["probe"]:
            assert c["window"] == 64 * c["multiple"]
            if run["encoding"] == "learned" and c["multiple"] > 1:
                assert c["loss"] is None and c["gain"] is None
            else:
                assert c["gain"] == pytest.approx(c["control_loss"] - c["loss"], abs=2e-5)
                assert 0 <= c["accuracy"] <= 1 and 0 <= c["control_accuracy"] <= 1
    for enc, stats in res["sliding_summary"].items():
        values = [r["sliding_loss"] for r in res["runs"] if r["encoding"] == enc]
        assert stats["mean"] == pytest.approx(sum(values) / 3, abs=1e-5) and stats["min"] == min(values)
    for enc, summary in res["probe_summary"].items():
        runs = [r["probe"] for r in res["runs"] if r["encoding"] == enc]
        for i, cell in enumerate(summary):
            if cell["loss"] is not None:
                assert cell["loss"]["mean"] == pytest.approx(sum(p[i]["loss"] for p in runs) / 3, abs=1e-5)


def test_cached_timing_is_within_the_budget(cached):
    """make experiments: at most 15 minutes on 2 idle cores (the workers' CPU seconds / 2), by part."""
    for result in cached:
        timing = result["provenance"]["timing_whole_command"]
        assert timing["estimated_clean_wall_seconds"] <= 15 * 60
        assert timing["estimated_clean_wall_seconds"] == pytest.approx(timing["worker_cpu_seconds"] / 2, abs=0.1)
        assert sum(timing["cpu_seconds_by_part"].values()) == pytest.approx(timing["worker_cpu_seconds"], abs=0.5)


def test_saved_rope_model_reproduces_its_cached_loss(cached):
    res, _ = cached
    corpus = load_corpus()
    if res["corpus"]["text_sha256"] != corpus.info["text_sha256"]:
        pytest.skip("this Python's standard library differs from the one the cached results were made with")
    cfg = config_from(res)
    model = S.load_rope_model(cfg=cfg)
    assert not model.training
    ends = eval_ends(corpus.valid, cfg.train_len * max(cfg.eval_multiples), cfg.eval_windows)
    loss = evaluate(model, corpus.valid, context_len=cfg.train_len, score_len=cfg.train_len, ends=ends)
    cached_loss = next(r["loss"]["1"] for r in res["runs"] if r["encoding"] == "rope" and r["seed"] == 0)
    assert loss == pytest.approx(cached_loss, abs=1e-3)


def test_write_results_skips_a_missing_part(tmp_path):
    S.write_results(tmp_path / "new", {"extrapolation": {"runs": []}, "context_extension": None})
    assert [p.name for p in (tmp_path / "new").iterdir()] == [S.EXTRAPOLATION_FILE]
    assert S.load_results("extrapolation", tmp_path / "new") == {"runs": []}


def test_the_shipped_seed0_models_load_and_are_the_cached_runs():
    """data/ ships the seed-0 RoPE and sinusoidal models; each loads into build_model's architecture and gives
    its cached run's loss at L on the same windows (a changed file or recipe fails)."""
    import torch

    from posenc_lib.experiments import STATE_FILES, ExperimentConfig, load_corpus, load_results, load_seed0_model
    from posenc_lib.experiments.evaluation import eval_ends, evaluate
    cfg, valid = ExperimentConfig(), load_corpus().valid
    runs = load_results("extrapolation")["runs"]
    ends = eval_ends(valid, cfg.train_len * max(cfg.eval_multiples), cfg.eval_windows)   # the runs' windows
    for encoding in STATE_FILES:
        model = load_seed0_model(encoding)
        assert not model.training
        cached = next(r for r in runs if r["encoding"] == encoding and r["seed"] == 0)["loss"]["1"]
        with torch.no_grad():
            loss = evaluate(model, valid, context_len=cfg.train_len, score_len=cfg.train_len, ends=ends,
                            batch=cfg.eval_batch)
        assert abs(loss - cached) < 1e-4, (encoding, loss, cached)
    with pytest.raises(ValueError, match="encoding must be one of"):
        load_seed0_model("alibi")

"""posenc_lib.experiments: the corpus, the scoring of the last L positions, the cached results and
their provenance, and a fresh short run that must reproduce the main ordering of notebook 07."""
from __future__ import annotations

import hashlib
import json
import math
import shutil
from dataclasses import replace

import pytest
import torch

from posenc_lib import experiments as E
from posenc_lib import rope_inv_freq
from posenc_lib.absolute import LearnedEncoding


@pytest.fixture(scope="module")
def corpus():
    return E.load_corpus()


# ------------------------------------------------------------------------------------------------ corpus

def test_file_list_is_fixed_sorted_and_validation_is_a_subset():
    assert list(E.CORPUS_FILES) == sorted(set(E.CORPUS_FILES))
    assert 30 <= len(E.CORPUS_FILES) <= 80
    assert set(E.VALID_FILES) < set(E.CORPUS_FILES)


def test_missing_stdlib_file_is_a_clear_error(tmp_path):
    root = E.stdlib_dir()
    for name in E.CORPUS_FILES[1:]:
        shutil.copy(root / name, tmp_path / name)
    with pytest.raises(FileNotFoundError, match=E.CORPUS_FILES[0].replace(".", r"\.")):
        E.corpus_paths(tmp_path)


def test_encode_maps_ascii_to_code_points_and_the_rest_to_unknown():
    ids = E.encode("a\n~é北")
    assert ids.tolist() == [97, 10, 126, E.UNK_ID, E.UNK_ID]
    assert ids.dtype == torch.int64
    assert E.decode(E.encode("def f(x):\n    return x")) == "def f(x):\n    return x"
    with pytest.raises(TypeError, match="text"):
        E.encode(b"bytes")


def test_corpus_provenance_recomputed_independently(corpus):
    info = corpus.info
    texts = [(E.stdlib_dir() / n).read_text(encoding="utf-8") for n in E.CORPUS_FILES]
    whole = "\n".join(texts)
    assert info["text_sha256"] == hashlib.sha256(whole.encode("utf-8")).hexdigest()
    assert info["file_list_sha256"] == hashlib.sha256("\n".join(E.CORPUS_FILES).encode()).hexdigest()
    assert info["chars"] == len(whole) > 1_000_000
    assert corpus.train.numel() == info["train_chars"] and corpus.valid.numel() == info["valid_chars"]
    assert 0.05 < info["valid_chars"] / info["chars"] < 0.2
    assert int(corpus.train.max()) < E.VOCAB_SIZE and int(corpus.valid.min()) >= 0


# ----------------------------------------------------------------------------------------------- config

@pytest.mark.parametrize("field, value, match", [("steps", 0, "steps"), ("train_len", 6.5, "train_len"),
                                                 ("lr", -1.0, "lr"), ("encodings", ("rope", "xpos"), "xpos"),
                                                 ("eval_multiples", (2, 4), "eval_multiples")])
def test_bad_config_names_the_field(field, value, match):
    with pytest.raises(ValueError, match=match):
        E.ExperimentConfig(**{field: value})


# ------------------------------------------------------------------------------------------- evaluation

def _tiny_cfg(**kw):
    return replace(E.ExperimentConfig(), **{"train_len": 16, "eval_windows": 6, "eval_batch": 4, **kw})


def test_evaluate_scores_exactly_the_last_L_positions(corpus):
    cfg = _tiny_cfg()
    model = E.build_model("rope", cfg, 0).eval()
    ends = E.eval_ends(corpus.valid, 64, cfg.eval_windows)
    got, per_pos = E.evaluate(model, corpus.valid, context_len=48, score_len=16, ends=ends, batch=4, per_position=True)
    # independent recomputation: one window at a time, cross-entropy from log_softmax by hand
    total = []
    with torch.no_grad():
        for e in ends.tolist():
            window = corpus.valid[e - 48:e + 1]
            logits, _ = model(window[None, :-1])
            logp = torch.log_softmax(logits[0].double(), -1)
            nll = -logp[torch.arange(48), window[1:]]
            total.append(nll)
    total = torch.stack(total)
    assert got == pytest.approx(float(total[:, -16:].mean()), abs=1e-5)
    torch.testing.assert_close(per_pos, total.mean(0), atol=1e-5, rtol=0)


def test_windows_of_every_length_predict_the_same_characters(corpus):
    ends = E.eval_ends(corpus.valid, 512, 8)
    for n in (64, 128, 512):
        targets = corpus.valid[ends[:, None] + torch.arange(-n, 1)][:, 1:]
        torch.testing.assert_close(targets[:, -64:], corpus.valid[ends[:, None] + torch.arange(-63, 1)])


def test_learned_has_no_value_past_its_length(corpus):
    cfg = _tiny_cfg()
    model = E.build_model("learned", cfg, 0)
    assert isinstance(model.encoding, LearnedEncoding) and model.encoding.max_len == 16
    ends = E.eval_ends(corpus.valid, 64, 4)
    assert E.evaluate(model, corpus.valid, context_len=32, score_len=16, ends=ends) is None
    assert E.evaluate(model, corpus.valid, context_len=16, score_len=16, ends=ends) is not None
    with pytest.raises(ValueError, match="score_len"):
        E.evaluate(model, corpus.valid, context_len=8, score_len=16, ends=ends)


def test_every_extension_scaling_is_valid_and_means_what_it_says():
    cfg = E.ExperimentConfig()
    theta, _ = rope_inv_freq(16)
    assert E.rope_scaling("none", 4.0, cfg) is None
    for method in E.EXTENSION_METHODS[1:]:
        inv, factor = rope_inv_freq(16, scaling=E.rope_scaling(method, 4.0, cfg), seq_len=256)
        assert inv.shape == (8,) and factor >= 1.0
    linear, _ = rope_inv_freq(16, scaling=E.rope_scaling("linear", 4.0, cfg))
    torch.testing.assert_close(linear, theta / 4)
    assert E.rope_scaling("dynamic", 8.0, cfg)["factor"] == cfg.dynamic_factor
    with pytest.raises(ValueError, match="method"):
        E.rope_scaling("xpos", 2.0, cfg)


def test_replacing_the_encoding_keeps_the_weights(corpus):
    cfg = _tiny_cfg()
    model = E.build_model("rope", cfg, 3)
    x = corpus.valid[:40][None]
    before, _ = model(x)
    E.with_rope_scaling(model, {"rope_type": "linear", "factor": 1.0}, cfg)
    after, _ = model(x)
    torch.testing.assert_close(before, after)
    E.with_rope_scaling(model, {"rope_type": "linear", "factor": 4.0}, cfg)
    assert not torch.allclose(model(x)[0], before)


def test_where_it_acts_reads_the_hooks():
    cfg = E.ExperimentConfig()
    got = {enc: E.where_it_acts(E.build_model(enc, cfg, 0).encoding) for enc in E.EXPERIMENT_ENCODINGS}
    assert got == {"nope": [], "sinusoidal": ["add_to_input"], "learned": ["add_to_input"], "t5": ["score_bias"],
                   "rope": ["rotate_qk"], "alibi": ["score_bias"]}
    with pytest.raises(TypeError, match="PositionalEncoding"):
        E.where_it_acts(torch.nn.Linear(2, 2))


# ------------------------------------------------------------------------------------------- cached results

@pytest.fixture(scope="module")
def cached():
    return E.load_results("extrapolation"), E.load_results("context_extension")


def test_cached_extrapolation_has_the_expected_shape(cached):
    res, _ = cached
    cfg = res["provenance"]["config"]
    assert cfg["train_len"] == 64 and cfg["batch_size"] == 32 and len(cfg["seeds"]) == 3
    assert cfg["encodings"] == list(E.EXPERIMENT_ENCODINGS) and cfg["eval_multiples"] == [1, 2, 4, 8]
    assert len(res["runs"]) == 3 * 6
    assert {(r["encoding"], r["seed"]) for r in res["runs"]} == {(e, s) for e in E.EXPERIMENT_ENCODINGS
                                                                 for s in cfg["seeds"]}
    for run in res["runs"]:
        assert set(run["loss"]) == {"1", "2", "4", "8"}
        assert run["train_curve"][-1][0] == cfg["steps"]
        if run["encoding"] == "learned":
            assert run["loss"]["1"] is not None and all(run["loss"][m] is None for m in ("2", "4", "8"))
            assert len(run["per_position_loss"]) == 64
        else:
            assert all(0 < run["loss"][m] < 10 for m in run["loss"])
            assert len(run["per_position_loss"]) == 8 * 64
        assert run["loss"]["1"] < math.log(E.VOCAB_SIZE)  # it learned something
    # the summary is the seeds' mean, recomputed here
    for enc, row in res["summary"].items():
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
        assert corpus["files"] == list(E.CORPUS_FILES) and corpus["valid_files"] == list(E.VALID_FILES)
        assert corpus["file_list_sha256"] == hashlib.sha256("\n".join(E.CORPUS_FILES).encode()).hexdigest()
        assert len(corpus["text_sha256"]) == 64 and corpus["chars"] > 1_000_000


def test_cached_context_extension_has_the_expected_shape(cached):
    res, ext = cached
    cfg = ext["provenance"]["config"]
    assert [e["seed"] for e in ext["no_finetune"]] == cfg["seeds"]
    for e in ext["no_finetune"]:
        assert list(e["loss"]) == list(E.EXTENSION_METHODS)
        rope_run = next(r for r in res["runs"] if r["encoding"] == "rope" and r["seed"] == e["seed"])
        for method in E.EXTENSION_METHODS:  # factor 1 at L: every method is plain RoPE there
            assert e["loss"][method]["1"] == pytest.approx(rope_run["loss"]["1"], abs=1e-4)
        for m in ("2", "4", "8"):  # no scaling = the RoPE row of the extrapolation run
            assert e["loss"]["none"][m] == pytest.approx(rope_run["loss"][m], abs=1e-4)
    assert {(f["method"], f["seed"]) for f in ext["finetuned"]} == {(m, s) for m in ("linear", "none")
                                                                    for s in cfg["finetune_seeds"]}
    for f in ext["finetuned"]:
        assert f["finetune_len"] == cfg["finetune_multiple"] * cfg["train_len"]
        assert f["train_curve"][-1][0] == cfg["finetune_steps"]


def test_saved_rope_model_reproduces_its_cached_loss(cached, corpus):
    res, _ = cached
    if res["corpus"]["text_sha256"] != corpus.info["text_sha256"]:
        pytest.skip("this Python's standard library differs from the one the cached results were made with")
    cfg = E.config_from(res)
    model = E.load_rope_model(cfg=cfg)
    ends = E.eval_ends(corpus.valid, cfg.train_len * max(cfg.eval_multiples), cfg.eval_windows)
    loss = E.evaluate(model, corpus.valid, context_len=cfg.train_len, score_len=cfg.train_len, ends=ends)
    cached_loss = next(r["loss"]["1"] for r in res["runs"] if r["encoding"] == "rope" and r["seed"] == 0)
    assert loss == pytest.approx(cached_loss, abs=1e-3)


def test_load_results_errors_clearly(tmp_path):
    with pytest.raises(ValueError, match="name"):
        E.load_results("nope")
    with pytest.raises(FileNotFoundError, match="make experiments"):
        E.load_results("extrapolation", tmp_path)


# ------------------------------------------------------------------------------------------- a fresh run

def test_fresh_short_run_reproduces_the_main_ordering(tmp_path):
    """300 steps, one seed, two workers: ALiBi stays flat at 4L, sinusoidal rises far more (margins, not values)."""
    cfg = replace(E.ExperimentConfig(), steps=300, seeds=(0,), encodings=("sinusoidal", "alibi"),
                  eval_multiples=(1, 4), eval_windows=64, warmup_steps=60)
    out = E.run_all(cfg, out_dir=tmp_path, workers=2, show_progress=False, extension=False)["extrapolation"]
    s = out["summary"]
    alibi_rise = s["alibi"]["4"]["mean"] - s["alibi"]["1"]["mean"]
    sin_rise = s["sinusoidal"]["4"]["mean"] - s["sinusoidal"]["1"]["mean"]
    for enc in ("alibi", "sinusoidal"):
        assert s[enc]["1"]["mean"] < 2.6  # both learned well past the unigram level (~3.3 nats/char)
    assert abs(alibi_rise) < 0.05, alibi_rise
    assert sin_rise > 0.3, sin_rise
    written = json.loads((tmp_path / E.EXTRAPOLATION_FILE).read_text())
    assert written["summary"] == s and written["provenance"]["config"]["steps"] == 300


def test_method_position_loss_restores_the_encoding_and_matches_evaluate(corpus):
    cfg = _tiny_cfg()
    model = E.build_model("rope", cfg, 0).eval()
    original = model.encoding
    out = E.method_position_loss(model, corpus.valid, methods=("none", "linear"), multiple=2, windows=4, cfg=cfg)
    assert model.encoding is original and all(b.attn.encoding is original for b in model.blocks)
    assert set(out["curves"]) == {"none", "linear"} and out["curves"]["none"].shape == (32,)
    ends = E.eval_ends(corpus.valid, cfg.train_len * max(cfg.eval_multiples), 4)
    plain = E.evaluate(model, corpus.valid, context_len=32, score_len=16, ends=ends)
    assert out["loss"]["none"] == pytest.approx(plain, abs=1e-6)
    assert out["loss"]["linear"] != pytest.approx(plain, abs=1e-6)


def test_encoding_summary_reads_hooks_parameters_and_rises(cached):
    res, _ = cached
    rows = {r["encoding"]: r for r in E.encoding_summary(res)}
    assert rows["learned"]["parameters"] == 64 * 64 and rows["t5"]["parameters"] == 32 * 4
    assert rows["rope"]["parameters"] == rows["alibi"]["parameters"] == rows["sinusoidal"]["parameters"] == 0
    assert rows["shaw"]["measured"] is False and rows["shaw"]["hooks"] == ["score_bias", "value_bias"]
    s = res["summary"]["alibi"]
    assert rows["alibi"]["rise"]["4"] == pytest.approx(s["4"]["mean"] - s["1"]["mean"], abs=1e-4)

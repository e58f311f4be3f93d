"""posenc_lib.experiments.evaluation: scoring the last L positions, and RoPE context extension at eval time."""
from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from posenc_lib import ENCODINGS, apply_rope, rope_inv_freq
from posenc_lib.experiments import build_model, evaluation as V, load_corpus
from posenc_lib.experiments.config import ExperimentConfig
from posenc_lib.scaling import EXTENSION_METHODS


@pytest.fixture(scope="module")
def valid():
    return load_corpus().valid


def _tiny_cfg(**kw):
    return replace(ExperimentConfig(), **{"train_len": 16, "eval_windows": 6, "eval_batch": 4, **kw})


def test_eval_ends_are_spread_over_the_text_and_leave_room_for_the_longest_window():
    ends = V.eval_ends(torch.arange(1000), 64, 5)
    assert ends.dtype == torch.int64 and ends.shape == (5,) and ends[0] == 64 and ends[-1] == 999
    gaps = ends.diff()
    assert int(gaps.max() - gaps.min()) <= 1 and int(gaps.min()) > 0  # evenly spaced, to the nearest index
    with pytest.raises(ValueError, match="longest window"):
        V.eval_ends(torch.arange(50), 64, 5)
    with pytest.raises(ValueError, match="windows"):
        V.eval_ends(torch.arange(1000), 64, 0)


def test_evaluate_scores_exactly_the_last_L_positions(valid):
    cfg = _tiny_cfg()
    model = build_model("rope", cfg, 0).eval()
    ends = V.eval_ends(valid, 64, cfg.eval_windows)
    got, per_pos = V.evaluate(model, valid, context_len=48, score_len=16, ends=ends, batch=4, per_position=True)
    # independent recomputation: one window at a time, cross-entropy from log_softmax by hand
    total = []
    with torch.no_grad():
        for e in ends.tolist():
            window = valid[e - 48:e + 1]
            logits, _ = model(window[None, :-1])
            logp = torch.log_softmax(logits[0].double(), -1)
            total.append(-logp[torch.arange(48), window[1:]])
    total = torch.stack(total)
    assert got == pytest.approx(float(total[:, -16:].mean()), abs=1e-5)
    torch.testing.assert_close(per_pos, total.mean(0), atol=1e-5, rtol=0)
    assert V.evaluate(model, valid, context_len=48, score_len=16, ends=ends, batch=5) == pytest.approx(got, abs=1e-6)


def test_learned_has_no_value_past_its_length(valid):
    model = build_model("learned", _tiny_cfg(), 0)
    ends = V.eval_ends(valid, 64, 4)
    assert not V.supports_length(model, 17) and V.supports_length(model, 16)
    assert V.evaluate(model, valid, context_len=32, score_len=16, ends=ends) is None
    assert V.evaluate(model, valid, context_len=32, score_len=16, ends=ends, per_position=True) == (None, None)
    assert V.evaluate(model, valid, context_len=16, score_len=16, ends=ends) is not None


@pytest.mark.parametrize("kwargs, match", [(dict(context_len=8, score_len=16), "score_len"),
                                           (dict(context_len=0, score_len=0), "context_len"),
                                           (dict(context_len=16, score_len=16, batch=0), "batch")])
def test_evaluate_names_a_bad_length(valid, kwargs, match):
    model = build_model("nope", _tiny_cfg(), 0)
    with pytest.raises(ValueError, match=match):
        V.evaluate(model, valid, ends=V.eval_ends(valid, 64, 4), **kwargs)


@pytest.mark.parametrize("method", EXTENSION_METHODS)
def test_every_extension_scaling_is_valid_and_uses_the_config(method):
    cfg = ExperimentConfig(train_len=32, dynamic_factor=3.0, llama3_low_freq_factor=2.0, llama3_high_freq_factor=8.0)
    scaling = V.rope_scaling(method, 4.0, cfg)
    if method == "none":
        assert scaling is None
        return
    inv, attention_factor = rope_inv_freq(16, scaling=scaling, seq_len=256)
    assert inv.shape == (8,) and attention_factor >= 1.0
    expected = {"linear": {"factor": 4.0}, "ntk": {"factor": 4.0},
                "dynamic": {"factor": 3.0, "original_max_position_embeddings": 32},
                "yarn": {"factor": 4.0, "original_max_position_embeddings": 32},
                "llama3": {"factor": 4.0, "original_max_position_embeddings": 32, "low_freq_factor": 2.0,
                           "high_freq_factor": 8.0}}[method]
    assert scaling == {"rope_type": method, **expected}


def test_rope_scaling_names_an_unknown_method():
    with pytest.raises(ValueError, match="method"):
        V.rope_scaling("xpos", 2.0, ExperimentConfig())


def test_replacing_the_rope_keeps_the_weights(valid):
    cfg = _tiny_cfg()
    model = build_model("rope", cfg, 3)
    x = valid[:40][None]
    before, _ = model(x)
    weights = {k: v.clone() for k, v in model.state_dict().items()}
    assert V.set_rope_scaling(model, {"rope_type": "linear", "factor": 1.0}, cfg) is model
    torch.testing.assert_close(model(x)[0], before)
    V.set_rope_scaling(model, {"rope_type": "linear", "factor": 4.0}, cfg)
    assert not torch.allclose(model(x)[0], before)
    assert all(torch.equal(weights[k], v) for k, v in model.state_dict().items())


def test_method_position_loss_restores_the_encoding_and_matches_evaluate(valid):
    cfg = _tiny_cfg()
    model = build_model("rope", cfg, 0).eval()
    original = model.encoding
    out = V.method_position_loss(model, valid, methods=("none", "linear"), multiple=2, windows=4, cfg=cfg,
                                 scalings={"pi x3": {"rope_type": "linear", "factor": 3.0}})
    assert model.encoding is original and all(b.attn.encoding is original for b in model.blocks)
    assert list(out["curves"]) == ["none", "linear", "pi x3"] and out["curves"]["none"].shape == (32,)
    ends = V.eval_ends(valid, cfg.train_len * max(cfg.eval_multiples), 4)
    plain = V.evaluate(model, valid, context_len=32, score_len=16, ends=ends)
    assert out["loss"]["none"] == pytest.approx(plain, abs=1e-6)
    assert out["loss"]["linear"] != pytest.approx(plain, abs=1e-6)
    assert out["loss"]["none"] == pytest.approx(float(out["curves"]["none"][-16:].mean()), abs=1e-9)


def test_sliding_baseline_gives_every_scored_character_exactly_L_of_context(valid):
    cfg = _tiny_cfg()
    model = build_model("sinusoidal", cfg, 2).eval()
    ends = V.eval_ends(valid, 64, 3)
    got = V.evaluate_sliding(model, valid, context_len=16, score_len=8, ends=ends, tokens=40)  # 2 windows a pass
    nll = []
    with torch.no_grad():  # independently: one window per scored character, its last position only
        for e in ends.tolist():
            for t in range(e - 7, e + 1):  # the last 8 targets of the window ending at e, as `evaluate` scores them
                logits, _ = model(valid[None, t - 16:t])
                nll.append(-float(torch.log_softmax(logits[0, -1].double(), -1)[valid[t]]))
    assert got == pytest.approx(sum(nll) / len(nll), abs=1e-5)
    assert V.evaluate_sliding(model, valid, context_len=16, score_len=8, ends=ends) == pytest.approx(got, abs=1e-6)
    # a window of exactly L scored at its last position is the sliding baseline for that character
    last = V.evaluate(model, valid, context_len=16, score_len=1, ends=ends)
    assert last == pytest.approx(V.evaluate_sliding(model, valid, context_len=16, score_len=1, ends=ends), abs=1e-5)


def test_sliding_baseline_refuses_what_it_cannot_score(valid):
    cfg = _tiny_cfg()
    assert V.evaluate_sliding(build_model("learned", cfg, 0), valid, context_len=32, score_len=16,
                              ends=V.eval_ends(valid, 64, 2)) is None
    model = build_model("nope", cfg, 0)
    with pytest.raises(ValueError, match="ends"):
        V.evaluate_sliding(model, valid, context_len=16, score_len=8, ends=torch.tensor([10]))
    with pytest.raises(ValueError, match="tokens"):
        V.evaluate_sliding(model, valid, context_len=16, score_len=8, ends=torch.tensor([100]), tokens=0)


def test_the_abf_arm_raises_the_base_only():
    cfg = ExperimentConfig(abf_base=250000.0)
    scaling = V.rope_scaling("abf", 4.0, cfg)
    assert scaling == {"rope_type": "default", "rope_theta": 250000.0}
    torch.testing.assert_close(rope_inv_freq(16, scaling=scaling)[0], rope_inv_freq(16, base=250000.0)[0])
    model = V.set_rope_scaling(build_model("rope", _tiny_cfg(), 0), scaling, cfg)
    q = torch.randn(2, 4, 10, 16, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(model.encoding(q, q)[0], apply_rope(q, base=250000.0))  # the model turns with it


# ------------------------------------------------------------------ bad input: named, and the model left as it was
def _set(kind="rope", scaling=None, cfg=None, **cfg_changes):
    cfg = _tiny_cfg() if cfg is None else cfg
    model = build_model(kind, _tiny_cfg(), 0)
    return V.set_rope_scaling(model, scaling, replace(cfg, **cfg_changes) if cfg_changes else cfg)


TEXT = torch.arange(400) % 50  # a validation text of 400 ids


def _model():
    return build_model("rope", _tiny_cfg(), 0)


BAD = [  # (id, call, error type, what the message must say)
    *[(f"set_rope_scaling on {kind}", lambda kind=kind: _set(kind), ValueError,
       rf"model must use RoPE to have its RoPE rescaled, got a {kind} model")
      for kind in sorted(ENCODINGS) if kind != "rope"],
    ("set_rope_scaling on a Linear", lambda: V.set_rope_scaling(torch.nn.Linear(2, 2), None, _tiny_cfg()), TypeError,
     r"model must be a posenc_lib TinyLM, got Linear"),
    ("set_rope_scaling cfg a dict", lambda: _set(cfg={"d_model": 64}), TypeError,
     r"cfg must be an ExperimentConfig, got dict"),
    ("set_rope_scaling cfg of other heads", lambda: _set(num_heads=8), ValueError,
     r"cfg's \(d_model, num_heads\) = \(64, 8\) must be the model's \(64, 4\)"),
    ("set_rope_scaling scaling a string", lambda: _set(scaling="linear"), TypeError, r"scaling must be a dict"),
    ("set_rope_scaling unknown rope_type", lambda: _set(scaling={"rope_type": "xpos"}), ValueError,
     r"scaling\['rope_type'\] must be one of"),
    ("set_rope_scaling factor below 1", lambda: _set(scaling={"rope_type": "linear", "factor": 0.5}), ValueError,
     r"scaling\['factor'\] must be >= 1"),
    ("rope_scaling cfg None", lambda: V.rope_scaling("linear", 2.0, None), TypeError,
     r"cfg must be an ExperimentConfig, got NoneType"),
    ("rope_scaling factor string", lambda: V.rope_scaling("linear", "2", _tiny_cfg()), TypeError,
     r"factor must be a number, got str"),
    ("rope_scaling factor nan", lambda: V.rope_scaling("yarn", float("nan"), _tiny_cfg()), ValueError,
     r"factor must be a finite number"),
    # the scoring functions: the text, the window ends, the model
    ("eval_ends text a list", lambda: V.eval_ends(list(range(100)), 8, 2), TypeError, r"valid must be a torch.Tensor"),
    ("eval_ends text 2-D", lambda: V.eval_ends(TEXT[None], 8, 2), ValueError, r"valid must be a 1-D tensor of token"),
    ("eval_ends float text", lambda: V.eval_ends(TEXT.float(), 8, 2), TypeError, r"valid must be an integer tensor"),
    ("supports_length model a dict", lambda: V.supports_length({}, 8), TypeError, r"model must be a posenc_lib TinyLM"),
    ("supports_length length 0", lambda: V.supports_length(_model(), 0), ValueError, r"length must be >= 1"),
    ("evaluate an end too early", lambda: V.evaluate(_model(), TEXT, context_len=16, score_len=8,
                                                     ends=torch.tensor([10, 50])), ValueError,
     r"ends must lie in \[16, len\(valid\) - 1 = 399\] .*got min 10, max 50"),
    ("evaluate an end past the text", lambda: V.evaluate(_model(), TEXT, context_len=16, score_len=8,
                                                         ends=torch.tensor([400])), ValueError,
     r"ends must lie in \[16, len\(valid\) - 1 = 399\]"),
    ("evaluate float ends", lambda: V.evaluate(_model(), TEXT, context_len=16, score_len=8, ends=torch.tensor([20.0])),
     TypeError, r"ends must be an integer tensor"),
    ("evaluate ends 2-D", lambda: V.evaluate(_model(), TEXT, context_len=16, score_len=8,
                                             ends=torch.tensor([[20]])), ValueError, r"ends must be a 1-D tensor"),
    ("evaluate ends on meta", lambda: V.evaluate(_model(), TEXT, context_len=16, score_len=8,
                                                 ends=torch.tensor([20], device="meta")), ValueError,
     r"ends must be on valid's device \(cpu\), got meta"),
    ("evaluate per_position a string", lambda: V.evaluate(_model(), TEXT, context_len=16, score_len=8,
                                                          ends=torch.tensor([20]), per_position="yes"), TypeError,
     r"per_position must be a bool"),
    ("evaluate model a Linear", lambda: V.evaluate(torch.nn.Linear(2, 2), TEXT, context_len=16, score_len=8,
                                                   ends=torch.tensor([20])), TypeError,
     r"model must be a posenc_lib TinyLM"),
    ("sliding an end too early for its scored characters", lambda: V.evaluate_sliding(
        _model(), TEXT, context_len=16, score_len=8, ends=torch.tensor([20])), ValueError,
     r"ends must lie in \[23, len\(valid\) - 1 = 399\]"),
    ("method_position_loss on ALiBi", lambda: V.method_position_loss(
        build_model("alibi", _tiny_cfg(), 0), TEXT, cfg=_tiny_cfg()), ValueError, r"model must use RoPE"),
    ("method_position_loss scalings a list", lambda: V.method_position_loss(
        _model(), TEXT, cfg=_tiny_cfg(), scalings=[None]), TypeError, r"scalings must be a dict"),
    ("method_position_loss unknown method", lambda: V.method_position_loss(
        _model(), TEXT, methods=("xpos",), cfg=_tiny_cfg()), ValueError, r"method must be one of"),
    ("method_position_loss multiple 0", lambda: V.method_position_loss(_model(), TEXT, multiple=0, cfg=_tiny_cfg()),
     ValueError, r"multiple must be >= 1"),
]


@pytest.mark.parametrize("call,exc,pattern", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_input_is_refused_by_name(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()


def test_a_model_without_rope_keeps_its_encoding():
    """Refused before anything changes: the ALiBi model still has its ALiBi in every layer."""
    model = build_model("alibi", _tiny_cfg(), 0)
    original = model.encoding
    with pytest.raises(ValueError, match="must use RoPE"):
        V.set_rope_scaling(model, {"rope_type": "linear", "factor": 2.0}, _tiny_cfg())
    assert model.encoding is original and all(block.attn.encoding is original for block in model.blocks)

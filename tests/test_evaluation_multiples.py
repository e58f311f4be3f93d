"""posenc_lib.experiments.evaluation.losses_at_multiples: 07's "loss at each multiple of L", the one loop that
notebook 07's runner, the arena's measure and notebook 14's DroPE runs share."""
from __future__ import annotations

import contextlib
from dataclasses import replace

import pytest

from posenc_lib.experiments import build_model, evaluation as V, load_corpus
from posenc_lib.experiments.config import ExperimentConfig

CFG = replace(ExperimentConfig(), train_len=16, eval_windows=6, eval_batch=4, eval_multiples=(4, 1, 2))


@pytest.fixture(scope="module")
def valid():
    return load_corpus().valid


@pytest.fixture(scope="module")
def ends(valid):
    return V.eval_ends(valid, 16 * 4, 6)


def test_each_multiple_is_evaluate_on_the_last_L_rounded(valid, ends):
    model = build_model("rope", CFG, 0)
    got = V.losses_at_multiples(model, valid, CFG, ends)
    assert list(got) == ["1", "2", "4"]   # ascending, whatever the config's order
    for m in (1, 2, 4):
        want = V.evaluate(model, valid, context_len=16 * m, score_len=16, ends=ends, batch=4)
        assert got[str(m)] == round(want, 5)


def test_a_learned_model_has_none_past_its_length_and_the_curve_of_its_longest_window(valid, ends):
    model = build_model("learned", CFG, 0)
    losses, curve = V.losses_at_multiples(model, valid, CFG, ends, per_position=True)
    assert losses["2"] is None and losses["4"] is None and losses["1"] is not None
    _, want = V.evaluate(model, valid, context_len=16, score_len=16, ends=ends, batch=4, per_position=True)
    assert curve.shape == (16,) and curve.equal(want)


def test_within_wraps_each_multiple_in_order(valid, ends):
    model = build_model("rope", CFG, 0)
    seen = []

    @contextlib.contextmanager
    def within(m):
        seen.append(("in", m))
        yield
        seen.append(("out", m))
    V.losses_at_multiples(model, valid, CFG, ends, within=within)
    assert seen == [("in", 1), ("out", 1), ("in", 2), ("out", 2), ("in", 4), ("out", 4)]


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(cfg={"train_len": 16}), TypeError, "cfg must be an ExperimentConfig"),
    (dict(within=3), TypeError, "within must be None or a function"),
    (dict(per_position=1), TypeError, "per_position"),
])
def test_bad_input_is_named(valid, ends, kwargs, error, match):
    args = dict(cfg=CFG) | kwargs
    with pytest.raises(error, match=match):
        V.losses_at_multiples(build_model("rope", CFG, 0), valid, args.pop("cfg"), ends, **args)

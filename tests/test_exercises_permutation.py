"""Checkers of notebook 01 (posenc_lib.exercises.permutation): typical wrong answers get the message
that names the mistake, and right answers written another valid way pass."""
import pytest
import torch
from exercise_mistakes import assert_named, each_mistake

from posenc_lib.exercises import permutation as ex

S = ex.SOLUTIONS


def _inverse(w, perm):
    inv = torch.argsort(torch.as_tensor(perm))
    return w[inv][:, inv]


def _sum_into_float32_buffer(out):  # torch.zeros(D) is float32 whatever out is
    total = torch.zeros(out.shape[-1])
    for row in out:
        total += row
    return total


MISTAKES = [  # (id, check, wrong answer, fragments its message must contain)
    ("P transposed", ex.check_permutation_matrix, lambda perm: S["permutation_matrix"](perm).T, ["transpose"]),
    ("P all ones", ex.check_permutation_matrix, lambda perm: torch.ones(len(perm), len(perm)),
     ["not a permutation matrix"]),
    ("P wrong size", ex.check_permutation_matrix, lambda perm: torch.eye(len(perm) + 1), ["should be"]),
    ("P one-hot int64", ex.check_permutation_matrix, lambda perm: torch.nn.functional.one_hot(perm),
     ["torch.int64", "float matrix"]),
    ("P bool", ex.check_permutation_matrix, lambda perm: torch.eye(len(perm), dtype=torch.bool)[perm],
     ["torch.bool", "float matrix"]),
    ("weights[perm, perm]", ex.check_permuted_weights, lambda w, perm: w[perm, perm],
     ["picks", "weights[perm][:, perm]"]),
    ("rows only", ex.check_permuted_weights, lambda w, perm: w[torch.as_tensor(perm)],
     ["rows (queries) but not the columns"]),
    ("columns only", ex.check_permuted_weights, lambda w, perm: w[:, torch.as_tensor(perm)],
     ["columns (keys) but not the rows"]),
    ("inverse perm", ex.check_permuted_weights, _inverse, ["inverse permutation"]),
    ("weights transposed", ex.check_permuted_weights, lambda w, perm: S["permuted_weights"](w, perm).T, ["transposed"]),
    ("weights unchanged", ex.check_permuted_weights, lambda w, perm: w, ["permutation-invariant", "word by word"]),
    ("weights: another attention", ex.check_permuted_weights, lambda w, perm: w.T.softmax(-1), ["not the weights"]),
    ("first token", ex.check_invariant_readout, lambda out: out[0], ["position 0"]),
    ("last token", ex.check_invariant_readout, lambda out: out[-1], ["last token"]),
    ("flatten", ex.check_invariant_readout, lambda out: out.flatten(), ["flatten"]),
    ("position-weighted sum", ex.check_invariant_readout,
     lambda out: (out * torch.arange(1, out.shape[0] + 1, dtype=out.dtype)[:, None]).sum(0),
     ["not permutation-invariant"]),
    ("constant", ex.check_invariant_readout, lambda out: torch.zeros(out.shape[-1]), ["ignores the content"]),
    ("pooled over the features", ex.check_invariant_readout, lambda out: out.mean(dim=1), ["dim 1", "dim 0"]),
    ("max over the features", ex.check_invariant_readout, lambda out: out.max(dim=-1).values, ["dim 1"]),
    ("mean with no dim", ex.check_invariant_readout, lambda out: out.mean(), ["one number", "dim=0"]),
    ("readout in float32", ex.check_invariant_readout, _sum_into_float32_buffer,
     ["torch.float32 for out in torch.float64", "torch.zeros_like(out)"]),
]


@each_mistake(MISTAKES)
def test_mistake_is_named(check, answer, fragments):
    assert_named(check, answer, fragments)


@pytest.mark.parametrize("check, answer", [
    (ex.check_permutation_matrix, lambda perm: torch.eye(len(perm))[perm]),  # perm is a tensor, as in 01
    (ex.check_permuted_weights, lambda w, perm: w[perm][:, perm]),
    (ex.check_invariant_readout, lambda out: out.sum(0)),
    (ex.check_invariant_readout, lambda out: out.max(0).values),
    (ex.check_invariant_readout, lambda out: out.sort(0).values.flatten()),  # invariant, the input's size
], ids=["eye rows", "index twice", "sum", "max", "sorted"])
def test_other_right_answers_pass(check, answer, capsys):
    check(answer)
    assert capsys.readouterr().out.startswith("✓ ")


# ---- notebook 01's "Common mistakes", where an exercise can make them (issue 25)

NOTEBOOK_01_MISTAKES = [
    # "Self-attention is permutation-invariant" / comparing outputs position by position after a permutation
    ("weights kept in place", ex.check_permuted_weights, lambda w, perm: w.clone(),
     ["permutation-invariant", "equivariant", "word by word", "weights[perm][:, perm]"]),
    ("per-token readout", ex.check_invariant_readout, lambda out: out.clone(),
     ["equivariance, not invariance", "permutation-invariant", "Pool over the sequence axis"]),
    ("P is the identity", ex.check_permutation_matrix, lambda perm: torch.eye(len(perm)), ["identity", "old order"]),
]


@each_mistake(NOTEBOOK_01_MISTAKES)
def test_notebook_01_common_mistake_is_named(check, answer, fragments):
    assert_named(check, answer, fragments)

"""Checkers of notebook 04 (posenc_lib.exercises.learned): typical wrong answers get the message that
names the mistake."""
import warnings

import torch
from exercise_mistakes import assert_named, each_mistake
from torch.nn import functional as F

from posenc_lib.exercises import learned as ex

S = ex.SOLUTIONS


def _normalised_in_place(table):
    table /= table.norm(dim=-1, keepdim=True)
    return table @ table.T


def _targets(tokens, lag, *, shift, fill=-100):
    """tokens `shift` places back (shift < 0: ahead), `fill` where there is none."""
    targets = torch.full_like(tokens, fill)
    if shift > 0:
        targets[:, shift:] = tokens[:, :-shift]
    else:
        targets[:, :shift] = tokens[:, -shift:]
    return targets


def _lookup_checking(*, upper, negative=True, message="past max_len={max_len}", error=ValueError):
    """table[positions] after a range check: positions > upper(max_len) (and < 0 if `negative`) are refused."""
    def lookup(table, positions):
        max_len = table.shape[0]
        if int(positions.max()) > upper(max_len) or (negative and int(positions.min()) < 0):
            raise error(message.format(max_len=max_len))
        return table[positions]
    return lookup


def _cosine_with_1d_norms(table):
    norms = table.norm(dim=-1)                       # (T,): .T leaves it as it is (with a deprecation warning)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return table @ table.T / (norms * norms.T)


def _lookup_into_float32_buffer(table, positions):  # a row at a time into torch.zeros(T, d), float32
    if positions.numel() and (int(positions.min()) < 0 or int(positions.max()) >= table.shape[0]):
        raise ValueError(f"positions must lie in [0, max_len={table.shape[0]})")
    out = torch.zeros(len(positions), table.shape[1])
    for row, position in enumerate(positions):
        out[row] = table[position]
    return out


MISTAKES = [  # (id, check, wrong answer, fragments its message must contain)
    ("dot products", ex.check_cosine_similarity, lambda P: P @ P.T, ["raw dot products"]),
    ("columns", ex.check_cosine_similarity, lambda P: F.normalize(P, dim=0) @ F.normalize(P, dim=0).T,
     ["normalised each column"]),
    ("dims compared", ex.check_cosine_similarity, lambda P: F.normalize(P, dim=0).T @ F.normalize(P, dim=0),
     ["(dim, dim)", "rows"]),
    ("in place", ex.check_cosine_similarity, _normalised_in_place, ["in place"]),
    ("norms * norms.T on 1-D norms", ex.check_cosine_similarity, _cosine_with_1d_norms,
     ["not symmetric", ".T does nothing"]),
    ("one norm", ex.check_cosine_similarity, lambda P: (P @ P.T) / P.norm(dim=-1, keepdim=True), ["BOTH norms"]),
    ("F.cosine_similarity(P, P)", ex.check_cosine_similarity, lambda P: F.cosine_similarity(P, P),
     ["6 ones", "P[:, None]"]),
    ("halved", ex.check_cosine_similarity, lambda P: F.normalize(P, dim=-1) @ F.normalize(P, dim=-1).T * 0.5,
     ["diagonal must be all 1"]),
    ("future", ex.check_lag_targets, lambda tokens, lag: _targets(tokens, lag, shift=-lag), ["AHEAD"]),
    ("roll", ex.check_lag_targets, lambda tokens, lag: torch.roll(tokens, lag, dims=1), ["wrapped around", "-100"]),
    ("zeros first", ex.check_lag_targets, lambda tokens, lag: _targets(tokens, lag, shift=lag, fill=0), ["-100"]),
    ("off by one", ex.check_lag_targets, lambda tokens, lag: _targets(tokens, lag, shift=lag + 1), ["off by one"]),
    ("float targets", ex.check_lag_targets, lambda tokens, lag: S["lag_targets"](tokens, lag).float(), ["int64"]),
    ("no check", ex.check_safe_lookup, lambda table, positions: table[positions], ["bare IndexError", "max_len"]),
    ("> not >=", ex.check_safe_lookup, _lookup_checking(upper=lambda n: n), ["position 8 == max_len"]),
    ("no negative check", ex.check_safe_lookup, _lookup_checking(upper=lambda n: n - 1, negative=False),
     ["-1 silently reads the LAST row"]),
    ("vague message", ex.check_safe_lookup, _lookup_checking(upper=lambda n: n - 1, message="bad positions"),
     ["should name max_len"]),
    ("IndexError", ex.check_safe_lookup, _lookup_checking(upper=lambda n: n - 1, error=IndexError,
                                                          message="positions must be < max_len={max_len}"),
     ["your check is right", "ValueError"]),
    ("clamped", ex.check_safe_lookup, lambda table, positions: table[positions.clamp(0, table.shape[0] - 1)],
     ["no error", "clamped them", "position 8 silently reads row 7"]),
    ("wrapped modulo max_len", ex.check_safe_lookup, lambda table, positions: table[positions % table.shape[0]],
     ["no error", "wrapped them round modulo max_len", "position 8 silently reads row 0"]),
    ("cosines in float32", ex.check_cosine_similarity,
     lambda P: (F.normalize(P.float(), dim=-1) @ F.normalize(P.float(), dim=-1).T),
     ["torch.float32 for table in torch.float64"]),
    ("rows in a float32 buffer", ex.check_safe_lookup, _lookup_into_float32_buffer,
     ["torch.float32 for table in torch.float64", "torch.zeros_like(table)"]),
]


@each_mistake(MISTAKES)
def test_mistake_is_named(check, answer, fragments):
    assert_named(check, answer, fragments)


# ---- notebook 04's "Common mistakes", where an exercise can make them (issue 25)

NOTEBOOK_04_MISTAKES = [
    # "index out of range in self": a lookup with no range check (also in MISTAKES: "no check")
    ("bare nn.Embedding lookup", ex.check_safe_lookup,
     lambda table, positions: torch.nn.functional.embedding(positions, table), ["bare IndexError", "max_len"]),
    # reading raw dot products as similarity
    ("raw dot products", ex.check_cosine_similarity, lambda P: P @ P.T, ["raw dot products"]),
    # forgetting to mask the first `lag` targets (torch.roll wraps around)
    ("roll without mask", ex.check_lag_targets, lambda tokens, lag: torch.roll(tokens, lag, dims=1),
     ["wrapped around", "-100"]),
    # reading the similarity matrix as attention
    ("softmax of the cosines", ex.check_cosine_similarity,
     lambda P: (F.normalize(P, dim=-1) @ F.normalize(P, dim=-1).T).softmax(-1), ["softmax", "not attention"]),
    ("softmax of the dot products", ex.check_cosine_similarity, lambda P: (P @ P.T).softmax(-1),
     ["softmax over the dot products"]),
    # a single table would let a max_len fixed in the code pass
    ("max_len fixed at 8", ex.check_safe_lookup, _lookup_checking(upper=lambda n: 7),
     ["table of 12 rows", "max_len = table.shape[0]"]),
]


@each_mistake(NOTEBOOK_04_MISTAKES)
def test_notebook_04_common_mistake_is_named(check, answer, fragments):
    assert_named(check, answer, fragments)

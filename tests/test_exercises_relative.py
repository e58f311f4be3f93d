"""Checkers of notebook 05 (posenc_lib.exercises.relative): typical wrong answers get the message that
names the mistake."""
import math

import torch
from exercise_mistakes import assert_named, each_mistake

from posenc_lib import alibi_slopes
from posenc_lib.exercises import relative as ex

S = ex.SOLUTIONS


def _t5_unclamped(r, bidirectional, num_buckets, max_distance):
    n = num_buckets // 2 if bidirectional else num_buckets
    bucket = (r > 0).long() * n if bidirectional else torch.zeros_like(r)
    d = r.abs() if bidirectional else (-r).clamp(min=0)
    exact = n // 2
    large = exact + (torch.log(d.float() / exact) / math.log(max_distance / exact) * (n - exact)).long()
    return bucket + torch.where(d < exact, d, large)


def _t5_float_log_part(r, bidirectional, num_buckets, max_distance):
    """The reference without T5's truncation of the log-spaced part: float buckets with fractions."""
    n = num_buckets // 2 if bidirectional else num_buckets
    bucket = (r > 0).long() * n if bidirectional else torch.zeros_like(r)
    d = r.abs() if bidirectional else -torch.clamp(r, max=0)
    exact = n // 2
    large = torch.clamp(exact + torch.log(d.float() / exact) / math.log(max_distance / exact) * (n - exact), max=n - 1)
    return bucket + torch.where(d < exact, d.float(), large)


def _t5_causal_abs(r, bidirectional, num_buckets, max_distance):
    if bidirectional:
        return S["t5_bucket"](r, True, num_buckets, max_distance)
    return S["t5_bucket"](-r.abs(), False, num_buckets, max_distance)  # future keys treated like the past


def _largest_power_of_two(n):
    return 2 ** math.floor(math.log2(n))


def _alibi_first_of_double(n):
    p = _largest_power_of_two(n)
    return alibi_slopes(n if p == n else 2 * p, dtype=torch.float64)[:n]


def _alibi_even_extra(n):
    p = _largest_power_of_two(n)
    base = [2.0 ** (-8.0 * h / p) for h in range(1, p + 1)]
    return base + [2.0 ** (-8.0 * h / (2 * p)) for h in range(2, 4 * p, 2)][: n - p]


MISTAKES = [  # (id, check, wrong answer, fragments its message must contain)
    ("query - key", ex.check_relative_positions, lambda n: -S["relative_positions"](n), ["wrong sign", "key - query"]),
    ("|j - i|", ex.check_relative_positions, lambda n: S["relative_positions"](n).abs(), ["|j - i|"]),
    ("float", ex.check_relative_positions, lambda n: S["relative_positions"](n).float(), ["integer tensor"]),
    ("j - i + 1", ex.check_relative_positions, lambda n: S["relative_positions"](n) + 1, ["off by +1", "diagonal"]),
    ("j - i - 1", ex.check_relative_positions, lambda n: S["relative_positions"](n) - 1, ["off by -1"]),
    ("causal zeros", ex.check_relative_positions, lambda n: S["relative_positions"](n).tril(),
     ["above the diagonal", "causal mask", "scores"]),
    ("uint8", ex.check_relative_positions, lambda n: S["relative_positions"](n).to(torch.uint8),
     ["torch.uint8", "no negative", "255"]),
    ("t5 log part not truncated", ex.check_t5_bucket, _t5_float_log_part, ["fractions", "truncated", ".long()"]),
    ("t5 float buckets", ex.check_t5_bucket, lambda r, b, n, m: S["t5_bucket"](r, b, n, m).float(),
     ["torch.float32", "integer tensor", "nn.Embedding"]),
    ("slopes in fp16", ex.check_alibi_slopes, lambda n: S["alibi_slopes"](n).half(),
     ["torch.float16", "11 significant bits", "distance 4096"]),
    ("t5 sign", ex.check_t5_bucket, lambda r, b, n, m: S["t5_bucket"](-r, b, n, m), ["wrong sign", "key - query"]),
    ("t5 unclamped", ex.check_t5_bucket, _t5_unclamped, ["Clamp"]),
    ("t5 causal |r|", ex.check_t5_bucket, _t5_causal_abs, ["future key", "bucket 0"]),
    ("t5 buckets per side", ex.check_t5_bucket,
     lambda r, b, n, m: S["t5_bucket"](r, b, 2 * n if b else n, m), ["num_buckets // 2"]),
    ("alibi power-of-two formula", ex.check_alibi_slopes, lambda n: [2.0 ** (-8.0 * h / n) for h in range(1, n + 1)],
     ["power-of-two formula", "n = 6", "authors' code", "get_slopes", "workaround"]),
    ("alibi first of double", ex.check_alibi_slopes, _alibi_first_of_double,
     ["first 6 slopes of 8 heads", "2^-1, 2^-3", "authors' code (get_slopes)"]),
    ("alibi even extra", ex.check_alibi_slopes, _alibi_even_extra, ["share a slope", "ODD h"]),
    ("alibi reversed", ex.check_alibi_slopes, lambda n: S["alibi_slopes"](n).flip(0), ["reversed"]),
    ("alibi from h = 0", ex.check_alibi_slopes, lambda n: [2.0 ** (-8.0 * h / n) for h in range(n)], ["off by one"]),
    ("alibi one short", ex.check_alibi_slopes, lambda n: S["alibi_slopes"](n)[:-1], ["need"]),
]


@each_mistake(MISTAKES)
def test_mistake_is_named(check, answer, fragments):
    assert_named(check, answer, fragments)


def test_alibi_messages_do_not_credit_the_paper_with_the_non_power_of_two_rule():
    """The rule for 6 or 12 heads is the authors' code (get_slopes), not the paper (issue 13, item 9)."""
    import inspect
    source = inspect.getsource(ex.check_alibi_slopes)
    assert "the paper keeps" not in source and "the paper's [0::2]" not in source


# ---- notebook 05's "Common mistakes", where an exercise can make them (issue 25)

def _relative_fixed_length(length):
    return S["relative_positions"](5)


NOTEBOOK_05_MISTAKES = [
    # flipping the sign of the relative position (also in MISTAKES)
    ("query - key", ex.check_relative_positions, lambda n: -S["relative_positions"](n), ["wrong sign"]),
    ("t5 query - key", ex.check_t5_bucket, lambda r, b, n, m: S["t5_bucket"](-r, b, n, m), ["wrong sign"]),
    # bidirectional=True in a decoder: the `bidirectional` argument ignored
    ("t5 always bidirectional", ex.check_t5_bucket, lambda r, b, n, m: S["t5_bucket"](r, True, n, m),
     ["bidirectional=False", "future keys that the mask removes"]),
    ("t5 always causal", ex.check_t5_bucket, lambda r, b, n, m: S["t5_bucket"](r, False, n, m),
     ["bidirectional=True asks for the encoder's buckets"]),
    # ALiBi slopes for 12 heads as 2^(-8h/12) (also in MISTAKES, there for 6 heads)
    ("alibi 2^(-8h/n)", ex.check_alibi_slopes, lambda n: [2.0 ** (-8.0 * h / n) for h in range(1, n + 1)],
     ["power-of-two formula"]),
    # a single input would let a fixed size or ignored parameters pass
    ("relative length fixed at 5", ex.check_relative_positions, _relative_fixed_length, ["`length`", "(5, 5)"]),
    ("t5 default sizes", ex.check_t5_bucket, lambda r, b, n, m: S["t5_bucket"](r, b),
     ["`num_buckets, max_distance`", "(16, 64)"]),
    ("t5 default max_distance", ex.check_t5_bucket, lambda r, b, n, m: S["t5_bucket"](r, b, n),
     ["`max_distance`", "128"]),
]


@each_mistake(NOTEBOOK_05_MISTAKES)
def test_notebook_05_common_mistake_is_named(check, answer, fragments):
    assert_named(check, answer, fragments)

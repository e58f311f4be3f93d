"""Exercises of notebooks 04-06: every reference solution passes, and typical wrong answers get the message
that says what is wrong (not just "mismatch")."""
import math

import pytest
import torch
from torch.nn import functional as F

from posenc_lib import layout_permutation
from posenc_lib.exercises import ExerciseError
from posenc_lib.exercises import part2 as ex
from posenc_lib.rope import apply_rope

S = ex.SOLUTIONS


def expect(check, answer, *fragments):
    with pytest.raises(ExerciseError) as info:
        check(answer)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"


def test_not_implemented_passes_through():
    def todo(*args):
        raise NotImplementedError
    for check in ex.CHECKS.values():
        with pytest.raises(NotImplementedError):
            check(todo)


def test_crash_is_reported_with_its_type():
    expect(ex.check_rotate_half, lambda x: x.nonexistent(), "AttributeError")


# ------------------------------------------------------------------ 04
def test_cosine_similarity_mistakes():
    c = ex.check_cosine_similarity
    expect(c, lambda P: P @ P.T, "raw dot products")
    expect(c, lambda P: F.normalize(P, dim=0) @ F.normalize(P, dim=0).T, "normalised each column")
    expect(c, lambda P: F.normalize(P, dim=0).T @ F.normalize(P, dim=0), "(dim, dim)", "rows")

    def in_place(P):
        P /= P.norm(dim=-1, keepdim=True)
        return P @ P.T
    expect(c, in_place, "in place")
    expect(c, lambda P: F.normalize(P, dim=-1) @ F.normalize(P, dim=-1).T * 0.5, "diagonal must be all 1")


def test_lag_targets_mistakes():
    c = ex.check_lag_targets

    def future(tokens, lag):
        t = torch.full_like(tokens, -100)
        t[:, :-lag] = tokens[:, lag:]
        return t

    def zeros_first(tokens, lag):
        t = torch.zeros_like(tokens)
        t[:, lag:] = tokens[:, :-lag]
        return t

    def off_by_one(tokens, lag):
        t = torch.full_like(tokens, -100)
        t[:, lag + 1:] = tokens[:, :-(lag + 1)]
        return t

    expect(c, future, "AHEAD")
    expect(c, lambda tokens, lag: torch.roll(tokens, lag, dims=1), "wrapped around", "-100")
    expect(c, zeros_first, "-100")
    expect(c, off_by_one, "off by one")
    expect(c, lambda tokens, lag: S["lag_targets"](tokens, lag).float(), "int64")


def test_safe_lookup_mistakes():
    c = ex.check_safe_lookup

    def strict_greater(table, positions):
        if int(positions.max()) > table.shape[0]:
            raise ValueError(f"past max_len={table.shape[0]}")
        return table[positions]

    def no_negative_check(table, positions):
        if int(positions.max()) >= table.shape[0]:
            raise ValueError(f"past max_len={table.shape[0]}")
        return table[positions]

    def vague(table, positions):
        if int(positions.max()) >= table.shape[0] or int(positions.min()) < 0:
            raise ValueError("bad positions")
        return table[positions]

    expect(c, lambda table, positions: table[positions], "bare IndexError", "max_len")
    expect(c, strict_greater, "position 8 == max_len")
    expect(c, no_negative_check, "-1 silently reads the LAST row")
    expect(c, vague, "should name max_len")
    expect(c, lambda table, positions: table[positions.clamp(0, table.shape[0] - 1)], "no error")


# ------------------------------------------------------------------ 05
def test_relative_positions_mistakes():
    c = ex.check_relative_positions
    expect(c, lambda n: -S["relative_positions"](n), "wrong sign", "key - query")
    expect(c, lambda n: S["relative_positions"](n).abs(), "|j - i|")
    expect(c, lambda n: S["relative_positions"](n).float(), "integer tensor")


def test_t5_bucket_mistakes():
    c = ex.check_t5_bucket

    def unclamped(r, bidirectional, num_buckets, max_distance):
        n = num_buckets // 2 if bidirectional else num_buckets
        bucket = (r > 0).long() * n if bidirectional else torch.zeros_like(r)
        d = r.abs() if bidirectional else (-r).clamp(min=0)
        exact = n // 2
        large = exact + (torch.log(d.float() / exact) / math.log(max_distance / exact) * (n - exact)).long()
        return bucket + torch.where(d < exact, d, large)

    def causal_abs(r, bidirectional, num_buckets, max_distance):
        if bidirectional:
            return S["t5_bucket"](r, True, num_buckets, max_distance)
        return S["t5_bucket"](-r.abs(), False, num_buckets, max_distance)  # future keys treated like the past

    def full_buckets_per_side(r, bidirectional, num_buckets, max_distance):
        return S["t5_bucket"](r, bidirectional, 2 * num_buckets if bidirectional else num_buckets, max_distance)

    expect(c, lambda r, b, n, m: S["t5_bucket"](-r, b, n, m), "wrong sign", "key - query")
    expect(c, unclamped, "Clamp")
    expect(c, causal_abs, "future key", "bucket 0")
    expect(c, full_buckets_per_side, "num_buckets // 2")


def test_alibi_slopes_mistakes():
    c = ex.check_alibi_slopes

    def naive(n):
        return [2.0 ** (-8.0 * h / n) for h in range(1, n + 1)]

    def first_of_double(n):
        p = 2 ** math.floor(math.log2(n))
        return S["alibi_slopes"](n if p == n else 2 * p)[:n]

    def even_extra(n):
        p = 2 ** math.floor(math.log2(n))
        base = [2.0 ** (-8.0 * h / p) for h in range(1, p + 1)]
        return base + [2.0 ** (-8.0 * h / (2 * p)) for h in range(2, 4 * p, 2)][: n - p]

    expect(c, naive, "power-of-two formula", "n = 6")
    expect(c, first_of_double, "first 6 slopes of 8 heads")
    expect(c, even_extra, "share a slope", "ODD h")
    expect(c, lambda n: S["alibi_slopes"](n).flip(0), "reversed")
    expect(c, lambda n: [2.0 ** (-8.0 * h / n) for h in range(n)], "off by one")
    expect(c, lambda n: S["alibi_slopes"](n)[:-1], "need")


# ------------------------------------------------------------------ 06
def test_rotate_half_mistakes():
    c = ex.check_rotate_half

    def interleaved(x):
        return torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)

    def in_place(x):
        h = x.shape[-1] // 2
        x1, x2 = x[..., :h].clone(), x[..., h:].clone()
        x[..., :h], x[..., h:] = -x2, x1
        return x

    expect(c, interleaved, "interleaved", "half-split")
    expect(c, lambda x: -S["rotate_half"](x), "-90 degrees")
    expect(c, lambda x: torch.cat((x[..., 4:], x[..., :4]), -1), "forgot the minus")
    expect(c, in_place, "in place")


def test_rope_half_mistakes():
    c = ex.check_rope_half

    def wrong_exponent(x, positions, base):
        d = x.shape[-1]
        return apply_rope(x, positions, inv_freq=1.0 / base ** (torch.arange(d // 2, dtype=torch.float64) / d))

    def repeat_interleaved(x, positions, base):
        d = x.shape[-1]
        ang = positions.double()[:, None] / base ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
        return x * ang.cos().repeat_interleave(2, -1) + S["rotate_half"](x) * ang.sin().repeat_interleave(2, -1)

    expect(c, lambda x, p, b: apply_rope(x, p, base=b, layout="interleaved"), "interleaved", "half-split")
    expect(c, lambda x, p, b: apply_rope(x, -p, base=b), "clockwise")
    expect(c, wrong_exponent, "base^(-2i/d)")
    expect(c, repeat_interleaved, "repeat_interleave")
    expect(c, lambda x, p, b: apply_rope(x, p + 1, base=b), "position 0 must not move")


def test_unpermute_qk_rows_mistakes():
    c = ex.check_unpermute_qk_rows

    def per_head(w, h, index):
        return w.reshape(h, -1, w.shape[1])[:, index].reshape_as(w)

    expect(c, lambda w, h: per_head(w, h, layout_permutation(w.shape[0] // h)), "inverse permutation")
    expect(c, lambda w, h: w[:, torch.argsort(layout_permutation(w.shape[1]))], "columns")
    expect(c, lambda w, h: w[torch.argsort(layout_permutation(w.shape[0]))], "all rows at once")
    expect(c, lambda w, h: S["unpermute_qk_rows"](w, h).T, "transposed")


def test_layout_conversion_both_ways_preserves_scores():
    """Interleaved -> half-split with perm (Hugging Face's converter formula as the independent reference), and
    back with the exercise's solution: the attention scores stay the same; without conversion they do not."""
    num_heads, head_dim, d_model, T = 2, 8, 16, 5
    gen = torch.Generator().manual_seed(0)
    w_q = torch.randn(num_heads * head_dim, d_model, generator=gen, dtype=torch.float64)
    w_k = torch.randn(num_heads * head_dim, d_model, generator=gen, dtype=torch.float64)
    x = torch.randn(T, d_model, generator=gen, dtype=torch.float64)
    perm = layout_permutation(head_dim)

    def hf_permute(w):  # transformers' convert_llama_weights_to_hf.permute, written out
        return w.view(num_heads, head_dim // 2, 2, d_model).transpose(1, 2).reshape(num_heads * head_dim, d_model)

    to_half = lambda w: w.reshape(num_heads, head_dim, d_model)[:, perm].reshape_as(w)  # noqa: E731
    torch.testing.assert_close(to_half(w_q), hf_permute(w_q), rtol=0, atol=0)
    torch.testing.assert_close(S["unpermute_qk_rows"](to_half(w_q), num_heads), w_q, rtol=0, atol=0)

    def scores(wq, wk, layout):
        q = (x @ wq.T).view(T, num_heads, head_dim).transpose(0, 1)
        k = (x @ wk.T).view(T, num_heads, head_dim).transpose(0, 1)
        q, k = apply_rope(q, layout=layout), apply_rope(k, layout=layout)
        return q @ k.transpose(-2, -1)

    reference = scores(w_q, w_k, "interleaved")
    torch.testing.assert_close(scores(to_half(w_q), to_half(w_k), "half"), reference, rtol=0, atol=1e-12)
    assert (scores(w_q, w_k, "half") - reference).abs().max() > 1e-2  # without the permutation: different scores


def test_attempt_prints_instead_of_raising(capsys):
    def todo(*args):
        raise NotImplementedError
    assert ex.attempt(ex.check_rotate_half, todo) is False
    assert "SOLUTIONS['rotate_half']" in capsys.readouterr().out
    assert ex.attempt(ex.check_rotate_half, lambda x: -S["rotate_half"](x)) is False
    assert "Not yet right" in capsys.readouterr().out
    assert ex.attempt(ex.check_rotate_half, S["rotate_half"]) is True


def test_own_index_error_and_alibi_first_slopes_get_the_right_hint():
    def own_check(table, positions):
        if (positions >= table.shape[0]).any() or (positions < 0).any():
            raise IndexError(f"positions must be < max_len={table.shape[0]}")
        return table[positions]

    expect(ex.check_safe_lookup, own_check, "your check is right", "ValueError")
    from posenc_lib.alibi import alibi_slopes

    def first_n(n):  # the first n slopes of the next power of two
        closest = 2 ** math.floor(math.log2(n))
        return alibi_slopes(n if n == closest else 2 * closest, dtype=torch.float64)[:n]

    expect(ex.check_alibi_slopes, first_n, "(6 heads)", "2^-1, 2^-3")


def test_rotate_half_with_a_hard_coded_half_is_caught():
    expect(ex.check_rotate_half, lambda x: torch.cat((-x[..., 4:], x[..., :4]), -1), "wrong for a (2, 6) input")

"""Exercises for notebooks 04-06. Each check_* takes the learner's function, prints one success line when it
is right, and otherwise raises ExerciseError saying WHAT is wrong (a flipped sign, the other layout, a
missing clamp...). Reference solutions: SOLUTIONS[name].

04: cosine_similarity, lag_targets, safe_lookup    05: relative_positions, t5_bucket, alibi_slopes
06: rotate_half, rope_half, unpermute_qk_rows
"""
from __future__ import annotations

import math

import torch
from torch.nn import functional as F

from ..absolute import layout_permutation
from ..alibi import alibi_slopes
from ..learned_demo import position_similarity
from ..relative import t5_relative_bucket
from ..rope import apply_rope, rotate_half, rotate_every_two
from ._errors import ExerciseError
from .part1 import _as_tensor, _ok, attempt  # shared: one success mark (✓) in every part; attempt's hint names part2

__all__ = ["attempt", "check_cosine_similarity", "check_lag_targets", "check_safe_lookup", "check_relative_positions",
           "check_t5_bucket", "check_alibi_slopes", "check_rotate_half", "check_rope_half", "check_unpermute_qk_rows"]


def _call(fn, *args, what: str):
    """Run the learner's function; a NotImplementedError passes through (the notebook prints a hint)."""
    try:
        return fn(*args)
    except NotImplementedError:
        raise
    except ExerciseError:
        raise
    except Exception as error:  # noqa: BLE001 -- any crash is reported with its type and message
        raise ExerciseError(f"{what} raised {type(error).__name__}: {error}") from error


def _same(a: torch.Tensor, b: torch.Tensor, atol: float = 1e-6, rtol: float = 0.0) -> bool:
    return a.shape == b.shape and torch.allclose(a.double(), b.double(), atol=atol, rtol=rtol)


# ------------------------------------------------------------------------------------------ 04

def _sol_cosine_similarity(table):
    unit = F.normalize(table, dim=-1)
    return unit @ unit.T


def check_cosine_similarity(fn) -> None:
    """fn(table (T, d)) -> (T, T) cosine similarity of every pair of ROWS (positions)."""
    gen = torch.Generator().manual_seed(4)
    table = torch.randn(6, 10, generator=gen, dtype=torch.float64) * torch.linspace(0.5, 3.0, 6, dtype=torch.float64)[:, None]
    before = table.clone()
    got = _as_tensor(_call(fn, table, what="your function"), "your function")
    if not torch.equal(table, before):
        raise ExerciseError("your function changed the table in place (e.g. table /= norm): work on a copy")
    want = position_similarity(table)
    if got.shape == (10, 10):
        raise ExerciseError("the result is (dim, dim): you compared columns (dimensions) rather than rows "
                            "(positions). Normalise each row and take P @ P.T")
    if got.shape != want.shape:
        raise ExerciseError(f"expected shape (T, T) = {tuple(want.shape)}, got {tuple(got.shape)}")
    if _same(got, table @ table.T):
        raise ExerciseError("these are raw dot products: divide by both rows' norms (cosine similarity), "
                            "otherwise long vectors look 'similar' to everything")
    columns = F.normalize(table, dim=0)
    if _same(got, columns @ columns.T):
        raise ExerciseError("you normalised each column (dim=0); normalise each row (dim=-1): one row = one position")
    if not _same(got.diagonal(), torch.ones(6, dtype=torch.float64), atol=1e-5):
        raise ExerciseError(f"the diagonal must be all 1 (every position is identical to itself), got "
                            f"{got.diagonal().double().tolist()}")
    if not _same(got, want, atol=1e-5):
        raise ExerciseError(f"wrong values: max |difference| {float((got.double() - want).abs().max()):.3g}")
    _ok("cosine similarity of the rows, diagonal 1, symmetric.")


def _sol_lag_targets(tokens, lag):
    targets = torch.full_like(tokens, -100)
    targets[:, lag:] = tokens[:, :-lag]
    return targets


def check_lag_targets(fn) -> None:
    """fn(tokens (B, T) int64, lag) -> targets (B, T): targets[:, t] = tokens[:, t - lag], -100 where t < lag."""
    gen = torch.Generator().manual_seed(5)
    tokens = torch.randint(0, 50, (3, 12), generator=gen)
    for lag in (1, 3):
        before = tokens.clone()
        got = _as_tensor(_call(fn, tokens, lag, what=f"your function (lag={lag})"), "your function")
        if not torch.equal(tokens, before):
            raise ExerciseError("your function changed `tokens` in place: build a new targets tensor")
        if got.shape != tokens.shape:
            raise ExerciseError(f"targets must have the shape of tokens {tuple(tokens.shape)}, got {tuple(got.shape)}")
        if got.dtype != torch.long:
            raise ExerciseError(f"targets must be int64 class indices (F.cross_entropy), got {got.dtype}")
        want = _sol_lag_targets(tokens, lag)
        if torch.equal(got, want):
            continue
        if torch.equal(got[:, :-lag], tokens[:, lag:]):
            raise ExerciseError(f"(lag={lag}) your targets are the token {lag} places AHEAD (the future); the task is "
                                f"to copy the token {lag} places BACK: targets[:, t] = tokens[:, t - {lag}]")
        if torch.equal(got[:, lag:], tokens[:, :-lag]):
            head = got[:, :lag]
            if torch.equal(head, tokens[:, -lag:]):
                raise ExerciseError(f"(lag={lag}) the first {lag} targets wrapped around to the last tokens "
                                    f"(torch.roll does that): positions t < lag have no token lag places back; "
                                    f"set them to -100 so F.cross_entropy ignores them")
            raise ExerciseError(f"(lag={lag}) positions t < {lag} have no token {lag} places back: their target must be "
                                f"-100 (F.cross_entropy's ignore_index), got {head[0].tolist()}")
        for off in (lag - 1, lag + 1):
            if 0 < off < tokens.shape[1] and torch.equal(got[:, off:], tokens[:, :-off]):
                raise ExerciseError(f"(lag={lag}) off by one: your targets copy the token {off} places back, not {lag}")
        raise ExerciseError(f"(lag={lag}) wrong targets: expected {want[0].tolist()}, got {got[0].tolist()} "
                            f"(first row)")
    _ok("targets[:, t] = tokens[:, t - lag], and -100 (ignored) where there is nothing to copy.")


def _sol_safe_lookup(table, positions):
    max_len = table.shape[0]
    if positions.numel() and (int(positions.min()) < 0 or int(positions.max()) >= max_len):
        raise ValueError(f"positions must lie in [0, max_len={max_len}), got min {int(positions.min())}, "
                         f"max {int(positions.max())}")
    return table[positions]


def check_safe_lookup(fn) -> None:
    """fn(table (max_len, d), positions (T,) int64) -> table rows (T, d); positions outside [0, max_len) must
    raise a ValueError whose message names max_len."""
    gen = torch.Generator().manual_seed(6)
    table = torch.randn(8, 4, generator=gen)
    ok = torch.tensor([0, 3, 7, 7, 1])
    got = _as_tensor(_call(fn, table, ok, what="your function on valid positions"), "your function")
    if not _same(got, table[ok]):
        raise ExerciseError("valid positions must return table[positions] (one row per position)")
    for bad, why in ((torch.tensor([2, 8]), "position 8 == max_len has no row (rows are 0 .. max_len - 1): "
                                            "reject positions >= max_len, not only > max_len"),
                     (torch.tensor([40]), "position 40 is past max_len=8"),
                     (torch.tensor([-1, 2]), "position -1 silently reads the LAST row (Python's negative "
                                             "indexing): reject negative positions too")):
        try:
            fn(table, bad)
        except NotImplementedError:
            raise
        except ValueError as error:
            if "max_len" not in str(error):
                raise ExerciseError(f"the ValueError for {bad.tolist()} should name max_len and its value so the "
                                    f"reader knows the limit; your message: {error}") from error
            continue
        except IndexError as error:
            if "max_len" in str(error):  # the learner's own check, with the wrong exception type
                raise ExerciseError(f"for positions {bad.tolist()} your check is right, but it raises IndexError; "
                                    f"raise a ValueError (a bad argument, not a bad index)") from error
            raise ExerciseError(f"for positions {bad.tolist()} torch raised its bare IndexError ({error}): {why}; "
                                f"check first and raise a ValueError naming max_len") from error
        except Exception as error:  # noqa: BLE001
            raise ExerciseError(f"for positions {bad.tolist()} expected a ValueError naming max_len, got "
                                f"{type(error).__name__}: {error}") from error
        raise ExerciseError(f"no error for positions {bad.tolist()}: {why}")
    _ok("rows for valid positions, a ValueError naming max_len for anything outside [0, max_len).")


# ------------------------------------------------------------------------------------------ 05

def _sol_relative_positions(length):
    pos = torch.arange(length)
    return pos[None, :] - pos[:, None]  # [i, j] = key j - query i


def check_relative_positions(fn) -> None:
    """fn(length) -> (length, length) int64 with [i, j] = j - i (key - query; rows are queries)."""
    length = 5
    got = _as_tensor(_call(fn, length, what="your function"), "your function")
    want = _sol_relative_positions(length)
    if got.shape != want.shape:
        raise ExerciseError(f"expected shape (length, length) = {tuple(want.shape)}, got {tuple(got.shape)}")
    if got.is_floating_point():
        raise ExerciseError("relative positions count tokens: return an integer tensor (torch.arange gives int64)")
    if torch.equal(got, want):
        _ok("[i, j] = j - i: key - query, so keys in the query's past are negative.")
        return
    if torch.equal(got, -want):
        raise ExerciseError("relative position has the wrong sign: it is key - query (j - i, T5's memory - context), "
                            "so a key in the query's past is negative")
    if torch.equal(got, want.abs()):
        raise ExerciseError("you took |j - i|: the sign (past or future) is lost, and T5's bidirectional buckets "
                            "and Shaw's embeddings need it. Keep key - query")
    raise ExerciseError(f"wrong values; expected row 0 = {want[0].tolist()}, got {got[0].tolist()}")


def _sol_t5_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    n = num_buckets // 2 if bidirectional else num_buckets
    bucket = torch.zeros_like(relative_position)
    if bidirectional:
        bucket += (relative_position > 0).long() * n
        distance = relative_position.abs()
    else:
        distance = -torch.clamp(relative_position, max=0)
    exact = n // 2
    large = exact + (torch.log(distance.float() / exact) / math.log(max_distance / exact) * (n - exact)).long()
    large = torch.clamp(large, max=n - 1)
    return bucket + torch.where(distance < exact, distance, large)


def check_t5_bucket(fn) -> None:
    """fn(relative_position (N,) int64, bidirectional, num_buckets, max_distance) -> buckets (N,) int64,
    relative_position = key - query."""
    r = torch.arange(-300, 301)
    for bidirectional in (True, False):
        for num_buckets, max_distance in ((32, 128), (16, 64)):
            setting = f"bidirectional={bidirectional}, num_buckets={num_buckets}, max_distance={max_distance}"
            got = _as_tensor(_call(fn, r.clone(), bidirectional, num_buckets, max_distance,
                                   what=f"your function ({setting})"), "your function")
            want = t5_relative_bucket(r, bidirectional=bidirectional, num_buckets=num_buckets,
                                      max_distance=max_distance)
            if got.shape != want.shape:
                raise ExerciseError(f"({setting}) expected one bucket per relative position, shape {tuple(want.shape)}, "
                                    f"got {tuple(got.shape)}")
            if torch.equal(got.long(), want):
                continue
            flipped = t5_relative_bucket(-r, bidirectional=bidirectional, num_buckets=num_buckets,
                                         max_distance=max_distance)
            if torch.equal(got.long(), flipped):
                raise ExerciseError(f"({setting}) relative position has the wrong sign: T5 uses key - query "
                                    f"(memory_position - context_position), so keys in the past are negative"
                                    + ("; in the causal form the past gets the buckets, every future key bucket 0"
                                       if not bidirectional else ""))
            if int(got.max()) >= num_buckets or int(got.min()) < 0:
                raise ExerciseError(f"({setting}) buckets must lie in [0, num_buckets): got {int(got.min())} .. "
                                    f"{int(got.max())}. Clamp the log buckets to n - 1 (distances past max_distance "
                                    f"share the last bucket)" + (", and in the bidirectional form each side has "
                                                                 "num_buckets // 2 buckets" if bidirectional else ""))
            if not bidirectional and bool((got[r > 0] != 0).any()):
                raise ExerciseError(f"({setting}) in the causal form every future key (r > 0) goes to bucket 0: "
                                    f"the distance is -min(r, 0)")
            n = num_buckets // 2 if bidirectional else num_buckets
            small = (r.abs() < n // 2) if bidirectional else ((r <= 0) & (-r < n // 2))
            if not torch.equal(got[small].long(), want[small]):
                raise ExerciseError(f"({setting}) distances below n/2 = {n // 2} each get their own bucket "
                                    f"(bucket = distance{' + n for keys after the query' if bidirectional else ''})")
            bad = int((got.long() != want).nonzero()[0])
            raise ExerciseError(f"({setting}) wrong bucket for relative position {int(r[bad])}: expected "
                                f"{int(want[bad])}, got {int(got[bad])} (the log-spaced part: exact + "
                                f"log(d / exact) / log(max_distance / exact) * (n - exact), truncated)")
    _ok("T5 buckets match for the bidirectional and the causal form.")


def _sol_alibi_slopes(num_heads):
    closest = 2 ** math.floor(math.log2(num_heads))
    slopes = [2.0 ** (-8.0 * h / closest) for h in range(1, closest + 1)]
    extra = [2.0 ** (-8.0 * h / (2 * closest)) for h in range(1, 2 * closest, 2)]
    return torch.tensor(slopes + extra[: num_heads - closest], dtype=torch.float64)


def check_alibi_slopes(fn) -> None:
    """fn(num_heads) -> (num_heads,) slopes, head 0 first; checked for 1, 4, 8, 6 and 12 heads."""
    for n in (1, 4, 8, 6, 12):
        got = _as_tensor(_call(fn, n, what=f"your function ({n} heads)"), "your function").double().reshape(-1)
        want = alibi_slopes(n, dtype=torch.float64)
        if got.numel() != n:
            raise ExerciseError(f"{n} heads need {n} slopes, got {got.numel()}")
        if _same(got, want, atol=0, rtol=1e-6):
            continue
        if _same(got, want.flip(0), atol=0, rtol=1e-6):
            raise ExerciseError(f"({n} heads) reversed: head 0 gets the LARGEST slope 2^(-8/n')")
        power = (n & (n - 1)) == 0
        naive = torch.tensor([2.0 ** (-8.0 * h / n) for h in range(1, n + 1)], dtype=torch.float64)
        if power:
            if _same(got, torch.tensor([2.0 ** (-8.0 * h / n) for h in range(n)], dtype=torch.float64), atol=0, rtol=1e-6):
                raise ExerciseError(f"({n} heads) off by one: h runs from 1 to n, so the first slope is 2^(-8/n), not 1")
            raise ExerciseError(f"({n} heads) for a power of two the slopes are 2^(-8h/n), h = 1..n: a geometric "
                                f"sequence starting at and stepping by 2^(-8/n); expected {want.tolist()}")
        if _same(got, naive, atol=0, rtol=1e-6):
            raise ExerciseError(f"({n} heads) you applied the power-of-two formula 2^(-8h/n) with n = {n}. For a head "
                                f"count that is not a power of two, take all slopes of the largest power of two "
                                f"below it, then every other slope (h = 1, 3, 5, ...) of twice that")
        closest = 2 ** math.floor(math.log2(n))
        doubled = alibi_slopes(2 * closest, dtype=torch.float64)
        if _same(got, doubled[:n], atol=0, rtol=1e-6):
            extra = torch.log2(doubled[0::2][:n - closest]).tolist()
            raise ExerciseError(f"({n} heads) you took the first {n} slopes of {2 * closest} heads; the paper keeps all "
                                f"{closest} slopes of {closest} heads and adds the slopes of {2 * closest} heads with odd "
                                f"h = 1, 3, 5, ... (the paper's [0::2]): here "
                                f"{', '.join(f'2^{v:g}' for v in extra)}")
        if len(set(round(v, 12) for v in got.tolist())) < n:
            raise ExerciseError(f"({n} heads) two heads share a slope: the extra slopes must be 2^(-8h/{2 * closest}) "
                                f"for ODD h; even h repeats slopes of {closest} heads")
        raise ExerciseError(f"({n} heads) expected {[round(v, 5) for v in want.tolist()]}, got "
                            f"{[round(v, 5) for v in got.tolist()]}")
    _ok("ALiBi slopes for 1, 4, 8, 6 and 12 heads.")


# ------------------------------------------------------------------------------------------ 06

def _sol_rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def check_rotate_half(fn) -> None:
    """fn(x (..., d)) -> [-x2, x1] where x1, x2 are the first and second half of the last dim."""
    x = torch.arange(1.0, 9.0).reshape(1, 8)
    before = x.clone()
    got = _as_tensor(_call(fn, x, what="your rotate_half"), "your rotate_half")
    if not torch.equal(x, before):
        raise ExerciseError("your rotate_half changed x in place: return a new tensor")
    want = rotate_half(x)
    if got.shape != want.shape:
        raise ExerciseError(f"expected the shape of x {tuple(x.shape)}, got {tuple(got.shape)}")
    if torch.equal(got, want):
        other = torch.arange(1.0, 13.0).reshape(2, 6)  # another size and a batch: no hard-coded half of 4
        got_other = _as_tensor(_call(fn, other, what="your rotate_half"), "your rotate_half")
        if got_other.shape != other.shape or not torch.equal(got_other, rotate_half(other)):
            raise ExerciseError("right for d = 8, wrong for a (2, 6) input: split at d // 2 = x.shape[-1] // 2 of the "
                                "LAST dim, whatever its size and however many leading dims x has")
        _ok(f"rotate_half([1..8]) = {got[0].tolist()}: pair i = (x[i], x[i + d/2]) turned by +90 degrees.")
        return
    if torch.equal(got, rotate_every_two(x)):
        raise ExerciseError("you paired interleaved dims (2i, 2i+1) but the reference is half-split: pair i is "
                            "(x[i], x[i + d/2]), so move whole halves")
    if torch.equal(got, -want):
        raise ExerciseError("you turned by -90 degrees ([x2, -x1]): the counter-clockwise turn of (x1, x2) is "
                            "(-x2, x1), the minus goes on the second half, which moves to the front")
    if torch.equal(got, torch.cat((x[..., 4:], x[..., :4]), -1)):
        raise ExerciseError("you swapped the halves but forgot the minus sign: [x1, x2] -> [-x2, x1]")
    raise ExerciseError(f"rotate_half([1..8]) should be {want[0].tolist()}, got {got.reshape(-1).tolist()}")


def _sol_rope_half(x, positions, base=10000.0):
    dim = x.shape[-1]
    inv_freq = 1.0 / base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    angles = positions.double()[:, None] * inv_freq[None, :]  # angles in float64
    cos, sin = torch.cat((angles.cos(), angles.cos()), -1), torch.cat((angles.sin(), angles.sin()), -1)
    return (x.double() * cos + _sol_rotate_half(x.double()) * sin).to(x.dtype)


def check_rope_half(fn) -> None:
    """fn(x (T, d), positions (T,) int64, base) -> RoPE of x in the half-split layout (x * cos + rotate_half(x) * sin)."""
    gen = torch.Generator().manual_seed(7)
    x = torch.randn(6, 8, generator=gen, dtype=torch.float64)
    positions = torch.tensor([0, 1, 2, 5, 17, 100])
    base = 100.0
    before = x.clone()
    got = _as_tensor(_call(fn, x, positions, base, what="your RoPE"), "your RoPE")
    if not torch.equal(x, before):
        raise ExerciseError("your RoPE changed x in place: return a new tensor")
    want = apply_rope(x, positions, base=base, layout="half")
    if got.shape != want.shape:
        raise ExerciseError(f"expected the shape of x {tuple(x.shape)}, got {tuple(got.shape)}")
    if _same(got, want, atol=1e-5):
        _ok("half-split RoPE: pair (x[i], x[i + d/2]) turned by position * base^(-2i/d).")
        return
    if not _same(got[0], x[0], atol=1e-5):
        raise ExerciseError("position 0 must not move (angle 0: cos 1, sin 0); yours changes it")
    if _same(got, apply_rope(x, positions, base=base, layout="interleaved"), atol=1e-5):
        raise ExerciseError("you paired interleaved dims (2i, 2i+1) but the reference is half-split: cos and sin "
                            "must be torch.cat((c, c)), and rotate_half moves whole halves")
    if _same(got, apply_rope(x, -positions, base=base, layout="half"), atol=1e-5):
        raise ExerciseError("your rotation turns clockwise (by -m theta): the relative angle's sign flips. "
                            "Use x * cos + rotate_half(x) * sin with rotate_half(x) = [-x2, x1]")
    dim = x.shape[-1]
    wrong_exponent = 1.0 / base ** (torch.arange(dim // 2, dtype=torch.float64) / dim)
    if _same(got, apply_rope(x, positions, inv_freq=wrong_exponent, layout="half"), atol=1e-5):
        raise ExerciseError("frequency exponent: theta_i = base^(-2i/d) for pair i = 0 .. d/2 - 1 "
                            "(torch.arange(0, d, 2) / d), you used i/d")
    ang = positions.double()[:, None] * (1.0 / base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    mixed = x * ang.cos().repeat_interleave(2, -1) + _sol_rotate_half(x) * ang.sin().repeat_interleave(2, -1)
    if _same(got, mixed, atol=1e-5):
        raise ExerciseError("your cos/sin are repeat_interleave'd (c0 c0 c1 c1 ..., the interleaved layout's tables) "
                            "but rotate_half pairs halves: for the half-split layout use torch.cat((c, c), -1)")
    raise ExerciseError(f"wrong values: max |difference| {float((got.double() - want).abs().max()):.3g}")


def _sol_unpermute_qk_rows(weight, num_heads):
    out_features, in_features = weight.shape
    head_dim = out_features // num_heads
    inverse = torch.argsort(layout_permutation(head_dim))  # half-split dim j came from interleaved dim perm[j]
    return weight.reshape(num_heads, head_dim, in_features)[:, inverse].reshape(out_features, in_features)


def check_unpermute_qk_rows(fn) -> None:
    """fn(weight (num_heads*head_dim, d_model), num_heads) -> the rows of a HALF-SPLIT checkpoint's W_q or W_k
    reordered, within each head, back to the interleaved pair order, so that interleaved RoPE (Meta-style code)
    on the new weights gives the scores half-split RoPE gives on the old ones."""
    num_heads, head_dim, d_model = 2, 8, 6
    gen = torch.Generator().manual_seed(8)
    weight = torch.randn(num_heads * head_dim, d_model, generator=gen, dtype=torch.float64)
    before = weight.clone()
    got = _as_tensor(_call(fn, weight, num_heads, what="your function"), "your function")
    if not torch.equal(weight, before):
        raise ExerciseError("your function changed the weight in place: return a new tensor")
    want = _sol_unpermute_qk_rows(weight, num_heads)
    if got.shape != weight.shape:
        if got.shape == weight.T.shape:
            raise ExerciseError("the result is transposed: keep nn.Linear's (out_features, in_features) layout")
        raise ExerciseError(f"expected the weight's shape {tuple(weight.shape)}, got {tuple(got.shape)}")
    if _same(got, want, atol=0):
        _ok("rows permuted back head by head: interleaved RoPE on the new W gives half-split RoPE's scores on the old W.")
        return
    perm = layout_permutation(head_dim)
    if _same(got, weight.reshape(num_heads, head_dim, d_model)[:, perm].reshape_as(weight), atol=0):
        raise ExerciseError("that is the interleaved -> half-split direction (perm itself); going back needs the "
                            "inverse permutation, torch.argsort(perm): new row perm[j] = old row j")
    if _same(got, weight[:, torch.argsort(layout_permutation(d_model))], atol=0):
        raise ExerciseError("you permuted the columns (input features); the pairs live in the OUTPUT dims: permute rows")
    if _same(got, weight[torch.argsort(layout_permutation(num_heads * head_dim))], atol=0):
        raise ExerciseError("you permuted all rows at once, mixing the heads; permute within each head's block of "
                            "head_dim rows (reshape to (num_heads, head_dim, d_model) first)")
    raise ExerciseError("wrong row order: within each head, new row perm[j] = old row j, "
                        "perm = layout_permutation(head_dim)")


SOLUTIONS: dict = {  # exercise name -> reference solution (a function)
    "cosine_similarity": _sol_cosine_similarity,
    "lag_targets": _sol_lag_targets,
    "safe_lookup": _sol_safe_lookup,
    "relative_positions": _sol_relative_positions,
    "t5_bucket": _sol_t5_bucket,
    "alibi_slopes": _sol_alibi_slopes,
    "rotate_half": _sol_rotate_half,
    "rope_half": _sol_rope_half,
    "unpermute_qk_rows": _sol_unpermute_qk_rows,
}

CHECKS: dict = {  # exercise name -> its checker
    "cosine_similarity": check_cosine_similarity,
    "lag_targets": check_lag_targets,
    "safe_lookup": check_safe_lookup,
    "relative_positions": check_relative_positions,
    "t5_bucket": check_t5_bucket,
    "alibi_slopes": check_alibi_slopes,
    "rotate_half": check_rotate_half,
    "rope_half": check_rope_half,
    "unpermute_qk_rows": check_unpermute_qk_rows,
}

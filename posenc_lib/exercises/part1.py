"""Exercises for notebooks 00-03.

Each check_<name>(answer) calls the learner's function on a few inputs, prints one line starting with
"✓" when it is right, and otherwise raises ExerciseError saying WHAT is wrong (the concatenated layout,
the exponent i instead of 2i, an odd dimension, the clockwise rotation, the transpose ...).
`attempt(check, answer)` runs a check from a notebook cell without stopping the notebook.
SOLUTIONS[name] is a reference solution for check_<name> (kept out of the notebooks' visible cells);
CHECKS[name] is the checker.

Conventions (as in posenc_lib.absolute): pair index i, omega_i = base ** (-2i/dim); the paper's
"interleaved" layout puts sin(pos*omega_i) in column 2i and cos(pos*omega_i) in column 2i+1.
"""
from __future__ import annotations

import math

import torch

from ..absolute import offset_matrix, sinusoidal_frequencies, sinusoidal_table
from ..attention import attention
from ..relative import diagonal_spread
from ._errors import ExerciseError

__all__ = [
    "attempt", "mistaken_table", "check_make_positions", "check_wavelength", "check_permutation_matrix",
    "check_permuted_weights", "check_invariant_readout", "check_sinusoidal_table", "check_wavelengths",
    "check_pe_dot", "check_offset_matrix", "check_rope_pair", "check_relative_part",
]


def attempt(check, answer) -> bool:
    """Run check(answer) and print the outcome instead of raising: for exercise cells that must run
    clean before they are solved. Works for any part's checker (the hint names the checker's module).
    Returns True when the answer passed."""
    name = check.__name__.removeprefix("check_")
    try:
        check(answer)
        return True
    except NotImplementedError:
        print(f"Not attempted yet: replace `raise NotImplementedError` with your code and run the cell again. "
              f"(A reference solution: {check.__module__}.SOLUTIONS[{name!r}].)")
    except ExerciseError as err:
        print(f"Not yet right: {err}")
    return False


def _ok(message: str) -> None:
    print(f"✓ {message}")


def _tensor(value, what: str) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise ExerciseError(f"{what} should be a torch.Tensor, got {type(value).__name__}")
    return value


def _as_tensor(value, what: str) -> torch.Tensor:
    """A tensor, or a list of numbers made into one (an exercise that does not ask for a tensor accepts both)."""
    if isinstance(value, torch.Tensor):
        return value
    try:
        return torch.as_tensor(value)
    except Exception as error:  # noqa: BLE001
        raise ExerciseError(f"{what} must return a tensor (or a list of numbers), got {type(value).__name__}") from error


def _number(value, what: str) -> float:
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return float(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise ExerciseError(f"{what} should be a number (or a one-element tensor), got {type(value).__name__}")


def _same(a: torch.Tensor, b: torch.Tensor, atol: float) -> bool:
    return tuple(a.shape) == tuple(b.shape) and torch.allclose(a.double(), b.double(), atol=atol, rtol=0)


# --------------------------------------------------------------------------------------------- 00_welcome

def check_make_positions(make_positions) -> None:
    """make_positions(n, device) -> the positions 0 .. n-1 as an integer tensor on `device`."""
    for n in (5, 1, 0, 300):
        out = _tensor(make_positions(n, "cpu"), f"make_positions({n}, 'cpu')")
        if out.is_floating_point() or out.is_complex() or out.dtype == torch.bool:
            raise ExerciseError(f"got dtype {out.dtype}: positions count tokens, so use an integer dtype "
                                f"(torch.arange(n) gives int64); bfloat16 cannot even tell 256 from 257")
        if tuple(out.shape) == (n + 1,):
            raise ExerciseError(f"make_positions({n}) has {n + 1} entries: off by one -- torch.arange(n) stops before n")
        if tuple(out.shape) != (n,):
            raise ExerciseError(f"make_positions({n}) should have shape ({n},), got {tuple(out.shape)}")
        if n and int(out[0]) == 1:
            raise ExerciseError("the first position is 0, not 1 (row 0 of a position table belongs to the first token)")
        if not torch.equal(out.long(), torch.arange(n)):
            raise ExerciseError(f"make_positions({n}) should be 0, 1, ..., {n - 1}, got {out.tolist()[:8]}...")
    out = _tensor(make_positions(4, "meta"), "make_positions(4, 'meta')")
    if out.device.type != "meta":
        raise ExerciseError(f"make_positions(4, 'meta') returned a tensor on {out.device}: create it with "
                            f"device=device, so it lives where the model runs")
    _ok("integer positions 0 .. n-1, created on the device asked for")


def check_wavelength(wavelength) -> None:
    """wavelength(omega) -> the number of positions after which sin(omega * pos) repeats: 2*pi / omega."""
    omegas = (0.1, 2.5, 1e-4, 1.0)
    got = [_number(wavelength(omega), f"wavelength({omega})") for omega in omegas]

    def matches(formula):
        return all(math.isclose(g, formula(w), rel_tol=1e-6) for g, w in zip(got, omegas))

    if matches(lambda w: 2 * math.pi / w):
        _ok("wavelength = 2*pi / omega: omega = 1 repeats every 6.28 positions, omega = 1e-4 every 62832")
        return
    hints = [(lambda w: w, "that is omega itself (radians per position), not a length"),
             (lambda w: 1 / w, "missing the factor 2*pi: sin(omega*pos) repeats when omega*pos grows by 2*pi, not by 1"),
             (lambda w: w / (2 * math.pi), "that is the frequency in cycles per position, the inverse of the wavelength"),
             (lambda w: 2 * math.pi * w, "multiplied by omega where you should divide")]
    for formula, hint in hints:
        if matches(formula):
            raise ExerciseError(f"wavelength({omegas[0]}) = {got[0]:.6g}: {hint} (expected {2 * math.pi / omegas[0]:.6g})")
    raise ExerciseError(f"wavelength({omegas[0]}) = {got[0]:.6g}, expected 2*pi/omega = {2 * math.pi / omegas[0]:.6g}")


# ------------------------------------------------------------------------------------------ 01_permutation

_PERMS = ((1, 2, 0), (2, 0, 1), (3, 0, 2, 1), (1, 3, 4, 0, 2))


def check_permutation_matrix(permutation_matrix) -> None:
    """permutation_matrix(perm) -> P (T, T) with P @ x == x[perm] (row i of the result is token perm[i])."""
    gen = torch.Generator().manual_seed(1)
    for perm in _PERMS:
        t = len(perm)
        p = _tensor(permutation_matrix(torch.tensor(perm)), f"permutation_matrix({perm})").double()  # perm as in 01
        if tuple(p.shape) != (t, t):
            raise ExerciseError(f"permutation_matrix({perm}) should be ({t}, {t}), got {tuple(p.shape)}")
        ones = (p == 1).sum()
        if int(ones) != t or int((p == 0).sum()) != t * t - t or not torch.all(p.sum(0) == 1) or not torch.all(p.sum(1) == 1):
            raise ExerciseError(f"permutation_matrix({perm}) is not a permutation matrix: it needs exactly one 1 in "
                                f"every row and every column, zeros elsewhere")
        x = torch.randn(t, 3, generator=gen, dtype=torch.float64)
        if torch.equal(p @ x, x[list(perm)]):
            continue
        if torch.equal(p.T @ x, x[list(perm)]):
            raise ExerciseError(f"for perm={perm} you built the transpose: P @ x gives x[inverse perm]. Row i of "
                                f"P @ x must be token perm[i], so the 1 of row i sits in column perm[i]: P[i, perm[i]] = 1")
        raise ExerciseError(f"for perm={perm}, P @ x is not x[perm]")
    _ok("P @ x == x[perm], and P.T undoes it")


def _random_attention(t: int, seed: int):
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(t, 4, generator=gen, dtype=torch.float64) for _ in range(3))
    return q, k, v


def check_permuted_weights(permuted_weights) -> None:
    """permuted_weights(weights, perm) -> the attention weights of the permuted sentence, from those of the
    original one (no recomputation): weights[perm][:, perm]. Checked against attention() run on x[perm]."""
    for seed, perm in enumerate(_PERMS):
        q, k, v = _random_attention(len(perm), seed)
        _, weights = attention(q, k, v, return_weights=True)
        idx = list(perm)
        _, actual = attention(q[idx], k[idx], v[idx], return_weights=True)  # what attention really does
        got = _tensor(permuted_weights(weights.clone(), torch.tensor(perm)), "permuted_weights(...)").double()
        if _same(got, actual, 1e-7):
            continue
        inverse = [perm.index(i) for i in range(len(perm))]
        hints = [(weights[idx], "you permuted the rows (queries) but not the columns (keys): every word moved, "
                                "so the keys are reordered too -- weights[perm][:, perm]"),
                 (weights[:, idx], "you permuted the columns (keys) but not the rows (queries): "
                                   "weights[perm][:, perm]"),
                 (weights[inverse][:, inverse], "you used the inverse permutation: row i of the new sentence is "
                                                "old token perm[i], so index with perm itself"),
                 (weights[idx][:, idx].T, "transposed: rows are queries and each row sums to 1")]
        for wrong, hint in hints:
            if _same(got, wrong, 1e-7):
                raise ExerciseError(f"perm={perm}: {hint}")
        raise ExerciseError(f"perm={perm}: the result is not the weights attention computes on x[perm]")
    _ok("weights of the permuted sentence = weights[perm][:, perm]: the same numbers, rows and columns reordered")


def check_invariant_readout(readout) -> None:
    """readout(out (T, D)) -> a vector summarising the sentence, the same for every order of the tokens
    (and still depending on what the tokens are)."""
    gen = torch.Generator().manual_seed(3)
    t, d = 5, 6
    out = torch.randn(t, d, generator=gen, dtype=torch.float64)
    reference = _tensor(readout(out.clone()), "readout(out)").double()
    if reference.shape == out[0].shape and torch.allclose(reference, out[0]):
        raise ExerciseError("your readout is the token in position 0; after a permutation another word sits there")
    if reference.shape == out[-1].shape and torch.allclose(reference, out[-1]):
        raise ExerciseError("your readout is the last token; after a permutation another word sits there")
    worst = 0.0
    for _ in range(20):
        perm = torch.randperm(t, generator=gen)
        got = _tensor(readout(out[perm].clone()), "readout(out[perm])").double()
        if got.shape != reference.shape:
            raise ExerciseError("readout gives different shapes for different orders")
        worst = max(worst, float((got - reference).abs().max()))
    if worst > 1e-6:
        if reference.numel() == out.numel():
            raise ExerciseError("your readout keeps every token in order (a flatten/concat): reordering the tokens "
                                "reorders it; pool over the sequence axis instead")
        raise ExerciseError(f"your readout changes by up to {worst:.3g} when the tokens are reordered: it is not "
                            f"permutation-invariant (pool over the sequence axis: mean, sum or max)")
    other = out.clone()
    other[2] += 1.0
    if torch.allclose(_tensor(readout(other), "readout").double(), reference):
        raise ExerciseError("your readout does not change when a token's output changes: it ignores the content")
    _ok("the readout is the same for all 20 orders tried, and it still depends on the tokens")


# ------------------------------------------------------------------------------------------ 02_sinusoidal

MISTAKES = ("concat", "swapped", "exponent_per_column", "exponent_i", "multiply", "fairseq", "fairseq_concat",
            "from_one")


def mistaken_table(kind: str, num_positions: int, dim: int, base: float = 10000.0) -> torch.Tensor:
    """A sinusoidal table (float64) made with one typical mistake, for figures and for diagnosing answers:

    "concat"               [sin | cos] columns (Transformer-XL) instead of interleaved
    "swapped"              cos in the even columns, sin in the odd ones
    "exponent_per_column"  column j uses base**(-j/dim): the cos of a pair gets a different frequency than its sin
    "exponent_i"           pair i uses base**(-i/dim) (i where the formula has 2i)
    "multiply"             pos * base**(2i/dim): multiplied where the formula divides
    "fairseq"              base**(-i/(dim/2 - 1)) (tensor2tensor's and fairseq's denominator), interleaved;
                           "fairseq_concat": that exponent with the [sin | cos] columns, as those libraries do
    "from_one"             positions 1 .. n instead of 0 .. n-1
    """
    if kind not in MISTAKES:
        raise ValueError(f"kind must be one of {list(MISTAKES)}, got {kind!r}")
    pos = torch.arange(num_positions, dtype=torch.float64)[:, None] + (1 if kind == "from_one" else 0)
    i = torch.arange(dim // 2, dtype=torch.float64)
    omega = base ** (-2 * i / dim)
    if kind == "exponent_i":
        omega = base ** (-i / dim)
    elif kind == "multiply":
        omega = base ** (2 * i / dim)
    elif kind.startswith("fairseq"):
        omega = base ** (-i / max(dim // 2 - 1, 1))
    sin, cos = (pos * omega).sin(), (pos * omega).cos()
    if kind == "exponent_per_column":
        cos = (pos * base ** (-(2 * i + 1) / dim)).cos()
    if kind == "swapped":
        sin, cos = cos, sin
    if kind in ("concat", "fairseq_concat"):
        return torch.cat((sin, cos), dim=-1)
    return torch.stack((sin, cos), dim=-1).flatten(-2)


_TABLE_HINTS = {
    "concat": "your table is the concatenated layout [sin | cos] (Transformer-XL, many blog heatmaps); the "
              "paper interleaves: sin in column 2i, cos in column 2i+1. Same numbers, columns permuted by "
              "layout_permutation(dim)",
    "swapped": "sin and cos are swapped: the paper puts sin in the even columns 2i and cos in the odd columns 2i+1",
    "exponent_per_column": "wrong exponent: you used the column index j in base**(j/dim); the exponent is "
                           "2*floor(j/2)/dim, so the sin and the cos of a pair share one frequency",
    "exponent_i": "wrong exponent: you used base**(i/dim) for pair i; the formula has 2i/dim (omega_i = base**(-2i/dim))",
    "multiply": "you multiplied pos by base**(2i/dim); the formula divides: pos / base**(2i/dim)",
    "fairseq": "that is tensor2tensor's and fairseq's exponent: it divides by dim/2 - 1 instead of using 2i/dim",
    "fairseq_concat": "that is tensor2tensor's and fairseq's table: [sin | cos] layout and the exponent divided "
                      "by dim/2 - 1; the paper interleaves and uses 2i/dim",
    "from_one": "positions start at 0, not 1: row 0 must be [0, 1, 0, 1, ...]",
}


def check_sinusoidal_table(make_table) -> None:
    """make_table(num_positions, dim, base) -> the (num_positions, dim) interleaved table; odd dim -> ValueError."""
    for n, d, base in ((40, 16, 10000.0), (12, 6, 100.0)):
        got = _tensor(make_table(n, d, base), f"make_table({n}, {d}, {base})")
        if tuple(got.shape) == (d, n) and n != d:
            raise ExerciseError(f"shape {tuple(got.shape)} is transposed: rows are positions, columns are dimensions")
        if tuple(got.shape) != (n, d):
            raise ExerciseError(f"make_table({n}, {d}, {base}) should have shape ({n}, {d}), got {tuple(got.shape)}")
        right = sinusoidal_table(n, d, base=base, dtype=torch.float64)
        if _same(got, right, 1e-4):
            continue
        for kind, hint in _TABLE_HINTS.items():
            if _same(got, mistaken_table(kind, n, d, base), 1e-4):
                raise ExerciseError(hint)
        row, col = divmod(int((got.double() - right).abs().argmax()), d)
        raise ExerciseError(f"make_table({n}, {d}, {base}) differs most at position {row}, column {col} "
                            f"({'sin' if col % 2 == 0 else 'cos'} of pair {col // 2}): got {float(got[row, col]):.6f}, "
                            f"expected {float(right[row, col]):.6f}")
    try:
        make_table(8, 5, 10000.0)
    except ValueError as err:
        if "dim" not in str(err):
            raise ExerciseError(f"for an odd dim=5 you raised a ValueError, good, but its message ({err!r}) does not "
                                f"name the parameter: say which one is wrong, e.g. 'dim must be even, got 5'") from None
    except Exception as err:  # noqa: BLE001 -- the point is to name what went wrong
        raise ExerciseError(f"for an odd dim=5 your function raised {type(err).__name__} ({err}): the naive "
                            f"`pe[:, 1::2] = cos(...)` crash. Check dim first and raise a ValueError saying dim "
                            f"must be even") from None
    else:
        raise ExerciseError("for an odd dim=5 your function returned a table: the encoding needs (sin, cos) pairs, "
                            "so raise a ValueError naming dim")
    _ok("the interleaved sinusoidal table, and a clear ValueError for an odd dim")


def check_wavelengths(wavelengths) -> None:
    """wavelengths(dim, base) -> (dim/2,) tensor, lambda_i = 2*pi * base**(2i/dim) for pair i."""
    for d, base in ((16, 10000.0), (8, 100.0)):
        got = _as_tensor(wavelengths(d, base), f"wavelengths({d}, {base})").double()
        omega = sinusoidal_frequencies(d, base=base, dtype=torch.float64)
        right = 2 * math.pi / omega
        if got.shape == right.shape and torch.allclose(got, right, rtol=1e-6):
            continue
        if got.numel() == d:
            raise ExerciseError(f"wavelengths({d}) has {d} entries: there is one wavelength per (sin, cos) pair, "
                                f"so dim/2 = {d // 2}")
        hints = [(omega, "those are the angular frequencies omega_i; the wavelength is 2*pi/omega_i"),
                 (1 / omega, "missing the factor 2*pi"),
                 (2 * math.pi * base ** (torch.arange(d // 2, dtype=torch.float64) / d), "wrong exponent: i/dim "
                  "where the formula has 2i/dim"),
                 (right.flip(0), "reversed: pair 0 has the shortest wavelength, 2*pi")]
        for wrong, hint in hints:
            if got.shape == wrong.shape and torch.allclose(got, wrong, rtol=1e-6):
                raise ExerciseError(f"wavelengths({d}, {base}): {hint}")
        raise ExerciseError(f"wavelengths({d}, {base}) = {got.tolist()}, expected {right.tolist()}")
    _ok("wavelengths 2*pi ... 2*pi*base**(1 - 2/dim), a geometric sequence")


def check_pe_dot(pe_dot) -> None:
    """pe_dot(k, dim, base) -> PE(p) . PE(p + k) for any p (a closed form in k)."""
    for d, base in ((16, 10000.0), (8, 100.0)):
        table = sinusoidal_table(60, d, base=base, dtype=torch.float64)
        for k in range(-12, 13):
            p = 30
            right = float(table[p] @ table[p + k])
            got = _number(pe_dot(k, d, base), f"pe_dot({k}, {d}, {base})")
            if math.isclose(got, right, abs_tol=1e-6):
                continue
            mirrored = _number(pe_dot(-k, d, base), f"pe_dot({-k}, {d}, {base})")
            if not math.isclose(got, mirrored, abs_tol=1e-6):
                raise ExerciseError(f"pe_dot({k}) = {got:.4f} but pe_dot({-k}) = {mirrored:.4f}: the dot product cannot "
                                    f"depend on the direction -- sin a sin b + cos a cos b = cos(a - b), so it is "
                                    f"sum_i cos(k*omega_i), even in k (did you use sin?)")
            if math.isclose(got * (d // 2), right, abs_tol=1e-6):
                raise ExerciseError(f"pe_dot({k}, {d}) is the mean over the pairs; the dot product is the sum "
                                    f"(pe_dot(0) = dim/2 = {d // 2})")
            raise ExerciseError(f"pe_dot({k}, {d}, {base}) = {got:.6f}, expected PE(p).PE(p+k) = {right:.6f}")
    _ok("PE(p).PE(p+k) = sum_i cos(k*omega_i): a function of |k| only")


# -------------------------------------------------------------------------------------- 03_linearity_proof

def _rotation_blocks(beta: torch.Tensor) -> torch.Tensor:
    """Block-diagonal [[cos b, sin b], [-sin b, cos b]] on columns (2i, 2i+1), one block per angle b."""
    return torch.block_diag(*[torch.stack((torch.stack((b.cos(), b.sin())), torch.stack((-b.sin(), b.cos()))))
                              for b in beta])


def check_offset_matrix(make_offset_matrix) -> None:
    """make_offset_matrix(k, dim, base) -> M_k (dim, dim) with PE(pos + k) = M_k @ PE(pos), interleaved layout."""
    for k, d, base in ((1, 8, 10000.0), (3, 8, 10000.0), (-2, 8, 10000.0), (5, 6, 100.0)):
        got = _tensor(make_offset_matrix(k, d, base), f"make_offset_matrix({k}, {d}, {base})").double()
        if tuple(got.shape) != (d, d):
            raise ExerciseError(f"M_k should be ({d}, {d}), got {tuple(got.shape)}")
        right = offset_matrix(k, d, base=base)
        table = sinusoidal_table(30, d, base=base, dtype=torch.float64)
        if _same(got, right, 1e-6):
            continue
        if _same(got, right.T, 1e-6):
            raise ExerciseError(f"k={k}: your M_k is the transpose, RoPE's counter-clockwise [[cos, -sin], [sin, cos]]: "
                                f"it moves PE(pos) to PE(pos - k). On a (sin, cos) pair the angle-sum identities give "
                                f"sin(a+b) = sin a cos b + cos a sin b, i.e. the block [[cos b, sin b], [-sin b, cos b]]")
        if _same(got, offset_matrix(k, d, base=base, layout="concat"), 1e-6):
            raise ExerciseError(f"k={k}: you built the blocks on columns (i, i + dim/2): that is M_k for the "
                                f"concatenated layout [sin | cos]; the interleaved pairs are columns (2i, 2i+1)")
        if _same(got, _rotation_blocks(torch.full((d // 2,), float(k), dtype=torch.float64)), 1e-6):
            raise ExerciseError(f"k={k}: every block turns by the angle k; pair i must turn by k*omega_i")
        if _same(got, offset_matrix(k, d, base=math.sqrt(base)), 1e-6):
            raise ExerciseError(f"k={k}: wrong exponent: you used omega_i = base**(-i/dim); it is base**(-2i/dim)")
        shifted = table[: len(table) - max(k, 0)][max(-k, 0):] @ got.T
        target = table[max(k, 0):][: len(shifted)]
        error = float((shifted - target).abs().max())
        raise ExerciseError(f"k={k}: M_k @ PE(pos) misses PE(pos + k) by up to {error:.3g}; each pair i needs the block "
                            f"[[cos(k w_i), sin(k w_i)], [-sin(k w_i), cos(k w_i)]] on columns (2i, 2i+1), zeros elsewhere")
    _ok("M_k @ PE(pos) = PE(pos + k): one 2x2 block per pair, depending on k and omega_i only")


def check_rope_pair(rope_pair) -> None:
    """rope_pair(x1, x2, angle) -> (y1, y2): RoPE's counter-clockwise rotation of the pair (x1, x2) by `angle`."""
    gen = torch.Generator().manual_seed(5)
    x1, x2 = torch.randn(6, generator=gen, dtype=torch.float64), torch.randn(6, generator=gen, dtype=torch.float64)
    angle = torch.rand(6, generator=gen, dtype=torch.float64) * 4 - 2
    result = rope_pair(x1.clone(), x2.clone(), angle.clone())
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise ExerciseError("rope_pair should return the pair (y1, y2)")
    y1, y2 = (_tensor(r, "y").double() for r in result)
    c, s = angle.cos(), angle.sin()
    right = (x1 * c - x2 * s, x1 * s + x2 * c)
    if _same(y1, right[0], 1e-6) and _same(y2, right[1], 1e-6):
        _ok("(x1, x2) -> (x1 cos - x2 sin, x1 sin + x2 cos): counter-clockwise, as RoPE (R_m q).(R_n k) needs")
        return
    if _same(y1, x1 * c + x2 * s, 1e-6) and _same(y2, -x1 * s + x2 * c, 1e-6):
        raise ExerciseError("you rotated clockwise, [[cos, sin], [-sin, cos]]: that is the offset map M_k's "
                            "orientation on (sin, cos) pairs. RoPE rotates (x1, x2) by [[cos, -sin], [sin, cos]]; "
                            "mixing the two flips the sign of the relative angle (m - n becomes n - m)")
    if _same(y1, right[1], 1e-6) and _same(y2, right[0], 1e-6):
        raise ExerciseError("you returned (y2, y1): the first output is x1 cos - x2 sin")
    raise ExerciseError("(y1, y2) should be (x1 cos(angle) - x2 sin(angle), x1 sin(angle) + x2 cos(angle))")


def _relative_projection(w: torch.Tensor) -> torch.Tensor:
    out = torch.zeros_like(w)
    for i in range(0, w.shape[0], 2):
        a, b, c, d = w[i, i], w[i, i + 1], w[i + 1, i], w[i + 1, i + 1]
        alpha, beta = (a + d) / 2, (b - c) / 2
        out[i, i] = out[i + 1, i + 1] = alpha
        out[i, i + 1], out[i + 1, i] = beta, -beta
    return out


def check_relative_part(relative_part) -> None:
    """relative_part(W) -> the matrix closest to W (dim, dim) for which PE(m) W PE(n)^T depends on n - m only
    (interleaved table): per 2x2 diagonal block keep alpha*I + beta*J (alpha = (a+d)/2, beta = (b-c)/2,
    J = [[0, 1], [-1, 0]]), zero outside the diagonal blocks."""
    gen = torch.Generator().manual_seed(7)
    for d in (8, 6):
        w = torch.randn(d, d, generator=gen, dtype=torch.float64)
        got = _tensor(relative_part(w.clone()), "relative_part(W)").double()
        if tuple(got.shape) != (d, d):
            raise ExerciseError(f"relative_part(W) should be ({d}, {d}), got {tuple(got.shape)}")
        right = _relative_projection(w)
        if _same(got, right, 1e-6):
            continue
        table = sinusoidal_table(40, d, dtype=torch.float64)
        spread = diagonal_spread(table @ got @ table.T)
        block = torch.block_diag(*[torch.ones(2, 2, dtype=torch.float64)] * (d // 2)).bool()
        if spread > 1e-5:
            if got[~block].abs().max() > 1e-6:
                raise ExerciseError(f"PE(m) W' PE(n) still depends on more than n - m (spread {spread:.3g}): you kept "
                                    f"entries outside the 2x2 diagonal blocks; they couple pairs of different "
                                    f"frequencies (terms in m*w_i - n*w_j), set them to zero")
            raise ExerciseError(f"PE(m) W' PE(n) still depends on more than n - m (spread {spread:.3g}): inside each "
                                f"block [[a, b], [c, d]] keep only alpha*I + beta*J with alpha = (a+d)/2 and "
                                f"beta = (b-c)/2; the rest gives terms in m + n")
        symmetric = right.clone()
        symmetric[~torch.eye(d, dtype=torch.bool)] = 0
        if _same(got, symmetric, 1e-6):
            raise ExerciseError("relative, but you dropped beta: the antisymmetric part beta*[[0, 1], [-1, 0]] gives "
                                "beta*sin((m-n)w) terms, the only ones that tell +k from -k; keep it")
        if _same(got, right.T, 1e-6):
            raise ExerciseError("relative, but beta has the wrong sign: the J = [[0, 1], [-1, 0]] component of "
                                "[[a, b], [c, d]] is (b - c)/2")
        raise ExerciseError("relative, but not the closest such matrix to W: per block keep alpha = (a+d)/2 on the "
                            "diagonal and beta = (b-c)/2, -beta off it")
    _ok("W' = the part of W whose position-position score is a function of n - m alone")


# ---------------------------------------------------------------------------------------- reference solutions

def _solution_make_positions(n, device):
    return torch.arange(n, device=device)


def _solution_wavelength(omega):
    return 2 * math.pi / omega


def _solution_permutation_matrix(perm):
    t = len(perm)
    p = torch.zeros(t, t)
    p[torch.arange(t), torch.as_tensor(perm)] = 1.0
    return p


def _solution_permuted_weights(weights, perm):
    idx = torch.as_tensor(perm)
    return weights[idx][:, idx]


def _solution_invariant_readout(out):
    return out.mean(dim=0)


def _solution_sinusoidal_table(num_positions, dim, base=10000.0):
    if dim % 2:
        raise ValueError(f"dim must be even, got {dim}")
    pos = torch.arange(num_positions, dtype=torch.float64)[:, None]
    two_i = torch.arange(0, dim, 2, dtype=torch.float64)
    angles = pos / base ** (two_i / dim)
    table = torch.empty(num_positions, dim, dtype=torch.float64)
    table[:, 0::2], table[:, 1::2] = angles.sin(), angles.cos()
    return table


def _solution_wavelengths(dim, base=10000.0):
    two_i = torch.arange(0, dim, 2, dtype=torch.float64)
    return 2 * math.pi * base ** (two_i / dim)


def _solution_pe_dot(k, dim, base=10000.0):
    two_i = torch.arange(0, dim, 2, dtype=torch.float64)
    return float(torch.cos(k / base ** (two_i / dim)).sum())


def _solution_offset_matrix(k, dim, base=10000.0):
    m = torch.zeros(dim, dim, dtype=torch.float64)
    for i in range(dim // 2):
        b = k / base ** (2 * i / dim)
        m[2 * i:2 * i + 2, 2 * i:2 * i + 2] = torch.tensor([[math.cos(b), math.sin(b)], [-math.sin(b), math.cos(b)]],
                                                            dtype=torch.float64)
    return m


def _solution_rope_pair(x1, x2, angle):
    c, s = torch.cos(angle), torch.sin(angle)
    return x1 * c - x2 * s, x1 * s + x2 * c


SOLUTIONS: dict = {
    "make_positions": _solution_make_positions,
    "wavelength": _solution_wavelength,
    "permutation_matrix": _solution_permutation_matrix,
    "permuted_weights": _solution_permuted_weights,
    "invariant_readout": _solution_invariant_readout,
    "sinusoidal_table": _solution_sinusoidal_table,
    "wavelengths": _solution_wavelengths,
    "pe_dot": _solution_pe_dot,
    "offset_matrix": _solution_offset_matrix,
    "rope_pair": _solution_rope_pair,
    "relative_part": _relative_projection,
}

CHECKS: dict = {name: globals()[f"check_{name}"] for name in SOLUTIONS}

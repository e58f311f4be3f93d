"""Exercise checkers of notebooks 00-03: every reference solution passes its own check, and typical wrong
answers are rejected with a message that names the mistake."""
import math

import pytest
import torch

from posenc_lib import layout_permutation, sinusoidal_table
from posenc_lib.exercises import ExerciseError
from posenc_lib.exercises import part1 as ex


def test_every_notebook_has_exercises():
    assert len(ex.SOLUTIONS) >= 8  # 2-4 exercises for each of the four notebooks (solutions: test_exercises.py)


def _rejects(check, answer, *fragments):
    with pytest.raises(ExerciseError) as info:
        check(answer)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, message
    return message


# ----------------------------------------------------------------------------- 00

def test_make_positions_mistakes():
    check = ex.check_make_positions
    _rejects(check, lambda n, device: torch.arange(n, device=device, dtype=torch.float32), "integer dtype")
    _rejects(check, lambda n, device: torch.arange(n + 1, device=device), "off by one")
    _rejects(check, lambda n, device: torch.arange(1, n + 1, device=device), "0, not 1")
    _rejects(check, lambda n, device: torch.arange(n), "device")
    _rejects(check, lambda n, device: list(range(n)), "torch.Tensor")


def test_wavelength_mistakes():
    check = ex.check_wavelength
    _rejects(check, lambda omega: omega, "omega itself")
    _rejects(check, lambda omega: 1 / omega, "2*pi")
    _rejects(check, lambda omega: omega / (2 * math.pi), "cycles per position")
    _rejects(check, lambda omega: 2 * math.pi * omega, "multiplied")
    _rejects(check, lambda omega: 3.0, "expected")


# ----------------------------------------------------------------------------- 01

def test_permutation_matrix_mistakes():
    check = ex.check_permutation_matrix
    right = ex.SOLUTIONS["permutation_matrix"]
    _rejects(check, lambda perm: right(perm).T, "transpose")
    _rejects(check, lambda perm: torch.ones(len(perm), len(perm)), "not a permutation matrix")
    _rejects(check, lambda perm: torch.eye(len(perm) + 1), "should be")


def test_permuted_weights_mistakes():
    check = ex.check_permuted_weights

    def index(w, perm):
        return torch.as_tensor(perm)

    _rejects(check, lambda w, perm: w[index(w, perm)], "rows (queries) but not the columns")
    _rejects(check, lambda w, perm: w[:, index(w, perm)], "columns (keys) but not the rows")

    def inverse(w, perm):
        inv = torch.argsort(torch.as_tensor(perm))
        return w[inv][:, inv]

    _rejects(check, inverse, "inverse permutation")
    _rejects(check, lambda w, perm: w[index(w, perm)][:, index(w, perm)].T, "transposed")
    _rejects(check, lambda w, perm: w, "not the weights")


def test_invariant_readout_mistakes():
    check = ex.check_invariant_readout
    _rejects(check, lambda out: out[0], "position 0")
    _rejects(check, lambda out: out[-1], "last token")
    _rejects(check, lambda out: out.flatten(), "flatten")
    _rejects(check, lambda out: (out * torch.arange(1, out.shape[0] + 1, dtype=out.dtype)[:, None]).sum(0),
             "not permutation-invariant")
    _rejects(check, lambda out: torch.zeros(out.shape[-1]), "ignores the content")
    for good in (lambda out: out.sum(0), lambda out: out.max(0).values):
        check(good)


# ----------------------------------------------------------------------------- 02

def test_mistaken_tables_are_really_wrong_and_concat_is_a_column_permutation():
    right = sinusoidal_table(20, 8, dtype=torch.float64)
    for kind in ex.MISTAKES:
        assert not torch.allclose(ex.mistaken_table(kind, 20, 8), right), kind
    torch.testing.assert_close(ex.mistaken_table("concat", 20, 8), right[:, layout_permutation(8)])
    with pytest.raises(ValueError, match="kind"):
        ex.mistaken_table("nope", 4, 4)


@pytest.mark.parametrize("kind, fragment", [
    ("concat", "concatenated layout"), ("swapped", "swapped"), ("exponent_per_column", "2*floor(j/2)/dim"),
    ("exponent_i", "2i/dim"), ("multiply", "multiplied"), ("fairseq", "fairseq"), ("fairseq_concat", "fairseq"),
    ("from_one", "start at 0"),
])
def test_sinusoidal_table_mistakes(kind, fragment):
    _rejects(ex.check_sinusoidal_table, lambda n, d, base: ex.mistaken_table(kind, n, d, base), fragment)


def _naive_table(n, d, base):
    """The common naive code: fine for even d, a size-mismatch crash for odd d."""
    pe = torch.zeros(n, d)
    position = torch.arange(n, dtype=torch.float32)[:, None]
    div_term = torch.exp(torch.arange(0, d, 2).float() * (-math.log(base) / d))
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe


def test_sinusoidal_table_odd_dimension_and_other_mistakes():
    check = ex.check_sinusoidal_table
    _rejects(check, _naive_table, "odd dim=5", "RuntimeError", "ValueError")

    def no_check(n, d, base):
        return sinusoidal_table(n, d + d % 2, base=base)[:, :d]  # silently drops the last cos column

    _rejects(check, no_check, "returned a table")
    _rejects(check, lambda n, d, base: sinusoidal_table(n, d, base=base).T, "transposed")
    _rejects(check, lambda n, d, base: 1.1 * sinusoidal_table(n, d, base=base), "differs most")


def test_wavelengths_mistakes():
    check = ex.check_wavelengths
    right = ex.SOLUTIONS["wavelengths"]
    _rejects(check, lambda d, base: right(2 * d, base), "one wavelength per")
    _rejects(check, lambda d, base: 2 * math.pi / right(d, base), "angular frequencies")
    _rejects(check, lambda d, base: right(d, base) / (2 * math.pi), "2*pi")
    _rejects(check, lambda d, base: 2 * math.pi * base ** (torch.arange(d // 2, dtype=torch.float64) / d), "i/dim")
    _rejects(check, lambda d, base: right(d, base).flip(0), "reversed")


def test_pe_dot_mistakes():
    check = ex.check_pe_dot

    def omega(d, base):
        return base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)

    _rejects(check, lambda k, d, base: float((k * omega(d, base)).sin().sum() + (k * omega(d, base)).cos().sum()),
             "direction")
    _rejects(check, lambda k, d, base: float((k * omega(d, base)).cos().mean()), "mean")
    _rejects(check, lambda k, d, base: float(d), "expected")


# ----------------------------------------------------------------------------- 03

def test_offset_matrix_mistakes():
    check = ex.check_offset_matrix
    right = ex.SOLUTIONS["offset_matrix"]
    from posenc_lib.absolute import offset_matrix

    _rejects(check, lambda k, d, base: right(k, d, base).T, "transpose", "RoPE")
    _rejects(check, lambda k, d, base: offset_matrix(k, d, base=base, layout="concat"), "concatenated layout")
    _rejects(check, lambda k, d, base: right(k, d, 1.0), "k*omega_i")
    _rejects(check, lambda k, d, base: right(k, d, math.sqrt(base)), "wrong exponent")
    _rejects(check, lambda k, d, base: torch.eye(d), "misses PE(pos + k)")
    _rejects(check, lambda k, d, base: torch.eye(d + 1), "should be")


def test_rope_pair_mistakes():
    check = ex.check_rope_pair
    _rejects(check, lambda x1, x2, a: (x1 * a.cos() + x2 * a.sin(), -x1 * a.sin() + x2 * a.cos()), "clockwise")
    _rejects(check, lambda x1, x2, a: (x1 * a.sin() + x2 * a.cos(), x1 * a.cos() - x2 * a.sin()), "(y2, y1)")
    _rejects(check, lambda x1, x2, a: (x1, x2), "should be")
    _rejects(check, lambda x1, x2, a: x1, "pair")


def test_rope_pair_reference_is_the_libraries_rotation():
    from posenc_lib import apply_rope

    x = torch.randn(1, 2, dtype=torch.float64)
    angle_position = torch.tensor([3])
    y = apply_rope(x, angle_position, layout="interleaved")  # pair 0 turns by 3 * omega_0 = 3 rad
    y1, y2 = ex.SOLUTIONS["rope_pair"](x[0, 0], x[0, 1], torch.tensor(3.0, dtype=torch.float64))
    torch.testing.assert_close(torch.stack((y1, y2)), y[0])


def test_relative_part_mistakes():
    check = ex.check_relative_part
    right = ex.SOLUTIONS["relative_part"]

    def raw_blocks(w):
        mask = torch.block_diag(*[torch.ones(2, 2)] * (w.shape[0] // 2)).bool()
        return torch.where(mask, w, torch.zeros_like(w))

    def symmetric(w):
        return torch.diag(torch.diagonal(right(w)))

    _rejects(check, lambda w: w, "outside the 2x2 diagonal blocks")
    _rejects(check, raw_blocks, "alpha*I + beta*J")
    _rejects(check, symmetric, "dropped beta")
    _rejects(check, lambda w: right(w).T, "wrong sign")
    _rejects(check, lambda w: 2 * right(w), "not the closest")


def test_relative_part_makes_the_position_term_relative():
    from posenc_lib.plots.part1 import diagonal_spread

    w = torch.randn(8, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    table = sinusoidal_table(50, 8, dtype=torch.float64)
    assert diagonal_spread(table @ w @ table.T) > 0.1
    assert diagonal_spread(table @ ex.SOLUTIONS["relative_part"](w) @ table.T) < 1e-12


# ----------------------------------------------------------------------------- attempt()

def test_attempt_reports_instead_of_raising(capsys):
    def unsolved(*args):
        raise NotImplementedError

    assert ex.attempt(ex.check_wavelength, unsolved) is False
    out = capsys.readouterr().out
    assert "Not attempted yet" in out and "SOLUTIONS['wavelength']" in out
    assert ex.attempt(ex.check_wavelength, lambda omega: 1 / omega) is False
    assert "Not yet right" in capsys.readouterr().out
    assert ex.attempt(ex.check_wavelength, ex.SOLUTIONS["wavelength"]) is True
    with pytest.raises(ZeroDivisionError):  # a bug in the learner's code still shows its traceback
        ex.attempt(ex.check_wavelength, lambda omega: 1 / 0)


def test_checkers_do_not_modify_the_learners_inputs_they_get():
    seen = []

    def spy(w):
        seen.append(w.clone())
        out = ex.SOLUTIONS["relative_part"](w)
        w.zero_()  # a learner's in-place edit must not corrupt the checker's reference
        return out

    ex.check_relative_part(spy)
    assert seen


def test_natural_right_answers_pass(capsys):
    """Right answers written the way the notebooks teach (perm is a tensor there), or in another valid form."""
    ex.check_permutation_matrix(lambda perm: torch.eye(len(perm))[perm])
    ex.check_permuted_weights(lambda w, perm: w[perm][:, perm])
    ex.check_invariant_readout(lambda out: out.sort(0).values.flatten())  # invariant, same size as the input
    ex.check_wavelengths(lambda d, base: [2 * math.pi * base ** (2 * i / d) for i in range(d // 2)])  # a list
    assert capsys.readouterr().out.count("✓") == 4


def test_odd_dim_error_must_name_dim():
    def vague(n, d, base):
        if d % 2:
            raise ValueError("odd")
        return ex.SOLUTIONS["sinusoidal_table"](n, d, base)

    _rejects(ex.check_sinusoidal_table, vague, "does not name the parameter")

"""Checkers of notebooks 00, 02 and 03 on the sinusoidal encoding (posenc_lib.exercises.sinusoidal):
typical wrong answers get the message that names the mistake, right answers in another valid form pass."""
import math

import pytest
import torch
from exercise_mistakes import assert_named, assert_passes_with_float32_note, each_mistake

from posenc_lib import diagonal_spread, layout_permutation, offset_matrix, sinusoidal_table
from posenc_lib.exercises import sinusoidal as ex

S = ex.SOLUTIONS


def _omega(d, base):
    return base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)


def _naive_table(n, d, base):
    """The common naive code: fine for even d, a size-mismatch crash for odd d."""
    pe = torch.zeros(n, d)
    position = torch.arange(n, dtype=torch.float32)[:, None]
    div_term = torch.exp(torch.arange(0, d, 2).float() * (-math.log(base) / d))
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe


def _vague_odd_dim_error(n, d, base):
    if d % 2:
        raise ValueError("odd")
    return S["sinusoidal_table"](n, d, base)


def _relative_part_float32_buffer(w):  # torch.zeros(d, d) is float32, whatever W is
    out = torch.zeros(w.shape)
    out[:] = S["relative_part"](w)
    return out


def _raw_blocks(w):
    mask = torch.block_diag(*[torch.ones(2, 2)] * (w.shape[0] // 2)).bool()
    return torch.where(mask, w, torch.zeros_like(w))


MISTAKES = [  # (id, check, wrong answer, fragments its message must contain)
    # 00: positions and wavelengths
    ("float positions", ex.check_make_positions, lambda n, device: torch.arange(n, device=device, dtype=torch.float32),
     ["integer dtype"]),
    ("n + 1 positions", ex.check_make_positions, lambda n, device: torch.arange(n + 1, device=device), ["off by one"]),
    ("from 1", ex.check_make_positions, lambda n, device: torch.arange(1, n + 1, device=device), ["0, not 1"]),
    ("ignores device", ex.check_make_positions, lambda n, device: torch.arange(n), ["device"]),
    ("a list", ex.check_make_positions, lambda n, device: list(range(n)), ["torch.Tensor"]),
    ("n - 1 positions", ex.check_make_positions, lambda n, device: torch.arange(max(n - 1, 0), device=device),
     ["off by one", "one short"]),
    ("uint8 positions", ex.check_make_positions, lambda n, device: torch.arange(n, device=device, dtype=torch.uint8),
     ["torch.uint8", "ends at 255", "wrapped", "int64"]),
    ("degrees", ex.check_wavelength, lambda omega: 360 / omega, ["degrees", "2*pi radians"]),
    ("half a turn", ex.check_wavelength, lambda omega: math.pi / omega, ["half a turn"]),
    ("rounded wavelength", ex.check_wavelength, lambda omega: round(2 * math.pi / omega), ["whole number"]),
    ("int() wavelength", ex.check_wavelength, lambda omega: int(2 * math.pi / omega), ["whole number"]),
    ("relative part float32 buffer", ex.check_relative_part, _relative_part_float32_buffer,
     ["torch.float32 for W in torch.float64", "torch.zeros_like(W)"]),
    ("omega", ex.check_wavelength, lambda omega: omega, ["omega itself"]),
    ("1/omega", ex.check_wavelength, lambda omega: 1 / omega, ["2*pi"]),
    ("cycles", ex.check_wavelength, lambda omega: omega / (2 * math.pi), ["cycles per position"]),
    ("2 pi omega", ex.check_wavelength, lambda omega: 2 * math.pi * omega, ["multiplied"]),
    ("constant wavelength", ex.check_wavelength, lambda omega: 3.0, ["expected"]),
    # 02: the table (each typical mistake of ex.MISTAKES has its own message)
    *[(f"table {kind}", ex.check_sinusoidal_table, lambda n, d, base, kind=kind: ex.mistaken_table(kind, n, d, base),
       [fragment]) for kind, fragment in [
        ("half", "concatenated layout"), ("swapped", "swapped"), ("exponent_per_column", "2*floor(j/2)/dim"),
        ("exponent_i", "2i/dim"), ("multiply", "multiplied"), ("fairseq", "fairseq"), ("fairseq_half", "fairseq"),
        ("from_one", "start at 0")]],
    ("naive odd dim crash", ex.check_sinusoidal_table, _naive_table, ["odd dim=5", "RuntimeError", "ValueError"]),
    ("odd dim sliced", ex.check_sinusoidal_table, lambda n, d, base: sinusoidal_table(n, d + d % 2, base=base)[:, :d],
     ["returned a table"]),
    ("odd dim vague", ex.check_sinusoidal_table, _vague_odd_dim_error, ["does not name the parameter"]),
    ("table transposed", ex.check_sinusoidal_table, lambda n, d, base: sinusoidal_table(n, d, base=base).T,
     ["transposed"]),
    ("table scaled", ex.check_sinusoidal_table, lambda n, d, base: 1.1 * sinusoidal_table(n, d, base=base),
     ["differs most"]),
    ("one per dim", ex.check_wavelengths, lambda d, base: S["wavelengths"](2 * d, base), ["one wavelength per"]),
    ("frequencies", ex.check_wavelengths, lambda d, base: 2 * math.pi / S["wavelengths"](d, base),
     ["angular frequencies"]),
    ("no 2 pi", ex.check_wavelengths, lambda d, base: S["wavelengths"](d, base) / (2 * math.pi), ["2*pi"]),
    ("exponent i/dim", ex.check_wavelengths,
     lambda d, base: 2 * math.pi * base ** (torch.arange(d // 2, dtype=torch.float64) / d), ["i/dim"]),
    ("reversed", ex.check_wavelengths, lambda d, base: S["wavelengths"](d, base).flip(0), ["reversed"]),
    ("sin in the dot", ex.check_pe_dot,
     lambda k, d, base: float((k * _omega(d, base)).sin().sum() + (k * _omega(d, base)).cos().sum()), ["direction"]),
    ("mean not sum", ex.check_pe_dot, lambda k, d, base: float((k * _omega(d, base)).cos().mean()), ["mean"]),
    ("constant dot", ex.check_pe_dot, lambda k, d, base: float(d), ["expected"]),
    # 03: the offset matrix and the relative part of W
    ("M_k transposed", ex.check_offset_matrix, lambda k, d, base: S["offset_matrix"](k, d, base).T,
     ["transpose", "RoPE"]),
    ("M_k half", ex.check_offset_matrix, lambda k, d, base: offset_matrix(k, d, base=base, layout="half"),
     ["concatenated layout"]),
    ("angle k", ex.check_offset_matrix, lambda k, d, base: S["offset_matrix"](k, d, 1.0), ["k*omega_i"]),
    ("M_k exponent", ex.check_offset_matrix, lambda k, d, base: S["offset_matrix"](k, d, math.sqrt(base)),
     ["wrong exponent"]),
    ("identity", ex.check_offset_matrix, lambda k, d, base: torch.eye(d), ["misses PE(pos + k)"]),
    ("M_k size", ex.check_offset_matrix, lambda k, d, base: torch.eye(d + 1), ["should be"]),
    ("W itself", ex.check_relative_part, lambda w: w, ["outside the 2x2 diagonal blocks"]),
    ("raw blocks", ex.check_relative_part, _raw_blocks, ["alpha*I + beta*J"]),
    ("no beta", ex.check_relative_part, lambda w: torch.diag(torch.diagonal(S["relative_part"](w))),
     ["dropped beta"]),
    ("beta sign", ex.check_relative_part, lambda w: S["relative_part"](w).T, ["wrong sign"]),
    ("2 W'", ex.check_relative_part, lambda w: 2 * S["relative_part"](w), ["twice the closest", "/2"]),
    ("W' + 0.5 W'", ex.check_relative_part, lambda w: 1.5 * S["relative_part"](w), ["not the closest"]),
]


@each_mistake(MISTAKES)
def test_mistake_is_named(check, answer, fragments):
    assert_named(check, answer, fragments)


def _float32_table(n, d, base):  # the usual code, checked: float32 all through
    if d % 2:
        raise ValueError(f"dim must be even, got {d}")
    return _naive_table(n, d, base)


def test_float32_table_passes_with_a_note(capsys):
    """2.1 asks for float64: a float32 table passes, with the note on what float32 angles cost far out."""
    assert_passes_with_float32_note(ex.check_sinusoidal_table, _float32_table, S["sinusoidal_table"], capsys)


def test_wavelengths_as_a_list_pass(capsys):
    ex.check_wavelengths(lambda d, base: [2 * math.pi * base ** (2 * i / d) for i in range(d // 2)])
    assert capsys.readouterr().out.startswith("✓ ")


def test_mistaken_tables_are_really_wrong_and_half_is_a_column_permutation():
    right = sinusoidal_table(20, 8, dtype=torch.float64)
    for kind in ex.MISTAKES:
        assert not torch.allclose(ex.mistaken_table(kind, 20, 8), right), kind
    torch.testing.assert_close(ex.mistaken_table("half", 20, 8), right[:, layout_permutation(8)])
    with pytest.raises(ValueError, match="kind"):
        ex.mistaken_table("nope", 4, 4)


def test_relative_part_makes_the_position_term_relative():
    w = torch.randn(8, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    table = sinusoidal_table(50, 8, dtype=torch.float64)
    assert diagonal_spread(table @ w @ table.T) > 0.1
    assert diagonal_spread(table @ S["relative_part"](w) @ table.T) < 1e-12


def test_a_learners_in_place_edit_does_not_corrupt_the_check(capsys):
    def spy(w):
        out = S["relative_part"](w)
        w.zero_()  # a learner's in-place edit must not corrupt the checker's reference
        return out

    ex.check_relative_part(spy)
    assert capsys.readouterr().out.startswith("✓ ")


# ---- notebooks 00, 02 and 03's "Common mistakes", where an exercise can make them (issue 25)

def _seed_labels_read_literally(n, d, base):
    """02's seed note read literally: i a dimension index, "i even: column 2i = sin; i odd: column 2i+1 = cos"."""
    pe = torch.zeros(n, d, dtype=torch.float64)
    pos = torch.arange(n, dtype=torch.float64)
    for i in range(d):
        column = 2 * i if i % 2 == 0 else 2 * i + 1
        if column >= d:
            break
        angle = pos / base ** (2 * i / d)
        pe[:, column] = angle.sin() if i % 2 == 0 else angle.cos()
    return pe


def _bf16_table(n, d, base):
    """The table built in bfloat16 from the start (positions, exponent, angles, sin and cos)."""
    pos = torch.arange(n, dtype=torch.bfloat16)[:, None]
    angles = pos / base ** (torch.arange(0, d, 2, dtype=torch.bfloat16) / d)
    table = torch.empty(n, d, dtype=torch.bfloat16)
    table[:, 0::2], table[:, 1::2] = angles.sin(), angles.cos()
    return table


def _pairs(d):
    return torch.arange(d // 2, dtype=torch.float64)


NOTEBOOK_00_02_03_MISTAKES = [
    # 00: positions in a float dtype (bf16 cannot tell 256 from 257)
    ("bf16 positions", ex.check_make_positions, lambda n, device: torch.arange(n, device=device, dtype=torch.bfloat16),
     ["integer dtype", "bfloat16"]),
    # 02: the seed's "i" read literally; an ignored base
    ("seed labels read literally", ex.check_sinusoidal_table, _seed_labels_read_literally,
     ["never written", "EVERY pair i", "parity"]),
    ("table ignores base", ex.check_sinusoidal_table, lambda n, d, base: sinusoidal_table(n, d),
     ["ignored the argument `base`", "10000", "100.0"]),
    # 02's wavelengths and dot products with the table's slips: multiplying, tensor2tensor's exponent, i/d
    ("wavelengths multiply", ex.check_wavelengths, lambda d, base: 2 * math.pi * _omega(d, base), ["multiplied"]),
    ("wavelengths tensor2tensor", ex.check_wavelengths,
     lambda d, base: 2 * math.pi * base ** (_pairs(d) / (d // 2 - 1)), ["tensor2tensor", "i/(dim/2 - 1)"]),
    ("wavelengths ignore base", ex.check_wavelengths, lambda d, base: S["wavelengths"](d), ["`base`"]),
    ("pe_dot exponent i/d", ex.check_pe_dot, lambda k, d, base: float(torch.cos(k * base ** (-_pairs(d) / d)).sum()),
     ["wrong exponent", "base**(-i/dim)"]),
    ("pe_dot multiplies", ex.check_pe_dot, lambda k, d, base: float(torch.cos(k * base ** (2 * _pairs(d) / d)).sum()),
     ["multiplied"]),
    ("pe_dot ignores base", ex.check_pe_dot, lambda k, d, base: S["pe_dot"](k, d), ["`base`"]),
    # 02: a table one row short or long, in a low-precision dtype; pe_dot doubled or over dim frequencies
    ("table n + 1 rows", ex.check_sinusoidal_table, lambda n, d, base: S["sinusoidal_table"](n + 1, d, base),
     ["off by one", "41 rows"]),
    ("table n - 1 rows", ex.check_sinusoidal_table, lambda n, d, base: S["sinusoidal_table"](n - 1, d, base),
     ["off by one", "39 rows"]),
    ("table in bf16", ex.check_sinusoidal_table, _bf16_table, ["torch.bfloat16", "8 significant bits", "float64"]),
    ("table rounded to fp16", ex.check_sinusoidal_table, lambda n, d, base: S["sinusoidal_table"](n, d, base).half(),
     ["torch.float16", "11 significant bits"]),
    ("pe_dot doubled", ex.check_pe_dot, lambda k, d, base: 2 * S["pe_dot"](k, d, base), ["twice", "dim/2"]),
    ("pe_dot over dim frequencies", ex.check_pe_dot,
     lambda k, d, base: float(torch.cos(k / base ** (2 * torch.arange(d, dtype=torch.float64) / d)).sum()),
     ["frequencies, one per column", "dim/2"]),
    ("wavelengths in bf16", ex.check_wavelengths, lambda d, base: S["wavelengths"](d, base).bfloat16(),
     ["torch.bfloat16", "8 significant bits"]),
    # 03: the offset matrix with the default base; M_k for k + 1 (k - 1 at k = 1 is the identity, named as such)
    ("M_(k+1)", ex.check_offset_matrix, lambda k, d, base: S["offset_matrix"](k + 1, d, base),
     ["off by one", "shifts by 2 positions"]),
    ("M_k ignores base", ex.check_offset_matrix, lambda k, d, base: S["offset_matrix"](k, d), ["`base`"]),
]


@each_mistake(NOTEBOOK_00_02_03_MISTAKES)
def test_notebook_00_02_03_common_mistake_is_named(check, answer, fragments):
    assert_named(check, answer, fragments)


def test_the_naive_odd_dim_crash_names_the_learners_line():
    with pytest.raises(ex.ExerciseError, match=r"your line \d+: pe\[:, 1::2\] = torch.cos"):
        ex.check_sinusoidal_table(_naive_table)

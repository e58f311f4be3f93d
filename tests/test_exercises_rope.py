"""Checkers on RoPE (posenc_lib.exercises.rope; notebooks 03, 06 and 09): typical wrong answers get the
message that names the mistake, and right answers in another valid form (float32, Meta's complex64)
pass."""
import torch
from exercise_mistakes import assert_named, assert_passes_with_float32_note, each_mistake

from posenc_lib import apply_rope, layout_permutation
from posenc_lib.exercises import rope as ex

S = ex.SOLUTIONS


def _theta(d, base=10000.0):
    return base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)


def _in_place_rotate_half(x):
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h].clone(), x[..., h:].clone()
    x[..., :h], x[..., h:] = -x2, x1
    return x


def _rope_wrong_exponent(x, positions, base):
    d = x.shape[-1]
    return apply_rope(x, positions, inv_freq=1.0 / base ** (torch.arange(d // 2, dtype=torch.float64) / d))


def _rope_repeat_interleaved_tables(x, positions, base):
    ang = positions.double()[:, None] * _theta(x.shape[-1], base)
    return x * ang.cos().repeat_interleave(2, -1) + S["rotate_half"](x) * ang.sin().repeat_interleave(2, -1)


def _rows_per_head(w, h, index):
    return w.reshape(h, -1, w.shape[1])[:, index].reshape_as(w)


def _complex_half_split(x, m, base=10000.0):
    d = x.shape[-1]
    z = torch.complex(x[..., : d // 2], x[..., d // 2:]) * torch.polar(torch.ones(d // 2, dtype=x.dtype),
                                                                        m * _theta(d, base))
    return torch.cat((z.real, z.imag), -1)


def _complex_turned(x, angles):
    """The pairs (x[2i], x[2i+1]) as complex numbers times e^{i angles}: the complex tensor (..., d/2)."""
    z = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2).contiguous())
    return z * torch.polar(torch.ones_like(angles), angles)


def _real(z):
    return torch.view_as_real(z).flatten(-2)


def _unpermute_into_float32_buffer(weight, num_heads):  # torch.empty(shape) is float32 whatever the weight is
    out = torch.empty(weight.shape)
    out[:] = S["unpermute_qk_rows"](weight, num_heads)
    return out


def _unpermute_head_dim_8(weight, num_heads):  # head_dim written in, the first weight's
    return S["unpermute_qk_rows"](weight, weight.shape[0] // 8)


def _rotate_half_float32_buffer(x):
    half = x.shape[-1] // 2
    out = torch.zeros(x.shape)
    out[..., :half], out[..., half:] = -x[..., half:], x[..., :half]
    return out


def _complex_in_place(x, m, base=10000.0):
    out = S["rope_complex"](x, m, base)
    x.zero_()
    return out


MISTAKES = [  # (id, check, wrong answer, fragments its message must contain)
    ("pair clockwise", ex.check_rope_pair,
     lambda x1, x2, a: (x1 * a.cos() + x2 * a.sin(), -x1 * a.sin() + x2 * a.cos()),
     ["clockwise", "from scratch", "m + n"]),
    ("pair swapped", ex.check_rope_pair,
     lambda x1, x2, a: (x1 * a.sin() + x2 * a.cos(), x1 * a.cos() - x2 * a.sin()), ["(y2, y1)"]),
    ("pair unrotated", ex.check_rope_pair, lambda x1, x2, a: (x1, x2), ["should be"]),
    ("pair in degrees", ex.check_rope_pair, lambda x1, x2, a: S["rope_pair"](x1, x2, torch.deg2rad(a)),
     ["degrees", "radians"]),
    ("pair float32", ex.check_rope_pair, lambda x1, x2, a: tuple(y.float() for y in S["rope_pair"](x1, x2, a)),
     ["torch.float32 for x1 in torch.float64"]),
    ("pair one value", ex.check_rope_pair, lambda x1, x2, a: x1, ["pair"]),
    ("rotate_half interleaved", ex.check_rotate_half,
     lambda x: torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2), ["interleaved", "half-split"]),
    ("rotate_half -90", ex.check_rotate_half, lambda x: -S["rotate_half"](x), ["-90 degrees"]),
    ("rotate_half no minus", ex.check_rotate_half, lambda x: torch.cat((x[..., 4:], x[..., :4]), -1),
     ["forgot the minus"]),
    ("rotate_half in place", ex.check_rotate_half, _in_place_rotate_half, ["in place"]),
    ("rotate_half hard-coded 4", ex.check_rotate_half, lambda x: torch.cat((-x[..., 4:], x[..., :4]), -1),
     ["wrong for a (2, 6) input"]),
    ("rotate_half crash", ex.check_rotate_half, lambda x: x.nonexistent(), ["AttributeError"]),
    ("rope interleaved", ex.check_rope_half, lambda x, p, b: apply_rope(x, p, base=b, layout="interleaved"),
     ["interleaved", "half-split"]),
    ("rope clockwise", ex.check_rope_half, lambda x, p, b: apply_rope(x, -p, base=b),
     ["clockwise", "negated positions", "n - m"]),
    ("rope exponent", ex.check_rope_half, _rope_wrong_exponent, ["base^(-2i/d)"]),
    ("rope tables interleaved", ex.check_rope_half, _rope_repeat_interleaved_tables, ["repeat_interleave"]),
    ("rope position + 1", ex.check_rope_half, lambda x, p, b: apply_rope(x, p + 1, base=b),
     ["position 0 must not move"]),
    ("rows: forward perm", ex.check_unpermute_qk_rows,
     lambda w, h: _rows_per_head(w, h, layout_permutation(w.shape[0] // h)), ["inverse permutation"]),
    ("columns", ex.check_unpermute_qk_rows, lambda w, h: w[:, torch.argsort(layout_permutation(w.shape[1]))],
     ["columns"]),
    ("heads mixed", ex.check_unpermute_qk_rows, lambda w, h: w[torch.argsort(layout_permutation(w.shape[0]))],
     ["all rows at once"]),
    ("weight transposed", ex.check_unpermute_qk_rows, lambda w, h: S["unpermute_qk_rows"](w, h).T, ["transposed"]),
    ("rows: float32 for bf16 weights", ex.check_unpermute_qk_rows, _unpermute_into_float32_buffer,
     ["torch.float32", "weight in torch.float64", "torch.zeros_like(weight)"]),
    ("rows: bf16 weights upcast", ex.check_unpermute_qk_rows,
     lambda w, h: S["unpermute_qk_rows"](w.float() if w.dtype == torch.bfloat16 else w, h),  # "bf16 is slow on CPU"
     ["torch.float32 for weight in torch.bfloat16"]),
    ("rows: head_dim fixed at 8", ex.check_unpermute_qk_rows, _unpermute_head_dim_8, ["`num_heads`", "= 3"]),
    ("rows: num_heads fixed at 2", ex.check_unpermute_qk_rows, lambda w, h: S["unpermute_qk_rows"](w, 2),
     ["`num_heads`", "= 2", "passed 4"]),
    ("rotate_half float32 buffer", ex.check_rotate_half, _rotate_half_float32_buffer,
     ["torch.float32", "torch.float64", "torch.zeros_like(x)"]),
    ("rotate_half .float()", ex.check_rotate_half, lambda x: S["rotate_half"](x).double(),
     ["torch.float64 for x in torch.float32"]),
    ("rotate_half split off by one", ex.check_rotate_half,
     lambda x: torch.cat((-x[..., x.shape[-1] // 2 + 1:], x[..., :x.shape[-1] // 2]), -1),
     ["7 dims", "off by one", "x[..., h:]"]),
    ("rotate_half minus in place", ex.check_rotate_half,
     lambda x: torch.cat((-x[..., :x.shape[-1] // 2], x[..., x.shape[-1] // 2:]), -1), ["[-x1, x2]"]),
    ("complex float32 result", ex.check_rope_complex,
     lambda x, m, base=10000.0: S["rope_complex"](x, m, base).float(), ["torch.float32", "x's dtype"]),
    ("complex half-split", ex.check_rope_complex, _complex_half_split, ["half-split"]),
    ("complex clockwise", ex.check_rope_complex, lambda x, m, base=10000.0: S["rope_complex"](x, -m, base),
     ["e^{-i m theta}", "negated positions", "n - m"]),
    ("complex unrotated", ex.check_rope_complex, lambda x, m, base=10000.0: x.clone(), ["differs"]),
    ("complex in place", ex.check_rope_complex, _complex_in_place, ["in place"]),
    ("complex result", ex.check_rope_complex, lambda x, m, base=10000.0: _complex_turned(x, m * _theta(8, base)),
     ["complex numbers", "view_as_real(z).flatten(-2)"]),
    ("complex unflattened", ex.check_rope_complex,
     lambda x, m, base=10000.0: torch.view_as_real(_complex_turned(x, m * _theta(8, base))), ["flatten", "(3, 8)"]),
    ("complex ignores base", ex.check_rope_complex, lambda x, m, base=10000.0: S["rope_complex"](x, m),
     ["ignored the `base` argument", "base=500"]),
    ("complex doubled exponent", ex.check_rope_complex,
     lambda x, m, base=10000.0: _real(_complex_turned(x, m * _theta(8, base) ** 2)), ["doubled exponent"]),
    ("complex bf16 angles", ex.check_rope_complex,
     lambda x, m, base=10000.0: _real(_complex_turned(x, (m * _theta(8, base)).bfloat16().double())),
     ["rounded to bf16"]),
    ("complex fp16 theta", ex.check_rope_complex,
     lambda x, m, base=10000.0: _real(_complex_turned(x, m * _theta(8, base).half().double())),
     ["rounded to fp16"]),
]


@each_mistake(MISTAKES)
def test_mistake_is_named(check, answer, fragments):
    assert_named(check, answer, fragments)


def test_rope_pair_solution_is_the_librarys_rotation():
    x = torch.randn(1, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    y = apply_rope(x, torch.tensor([3]), layout="interleaved")  # pair 0 turns by 3 * theta_0 = 3 rad
    y1, y2 = S["rope_pair"](x[0, 0], x[0, 1], torch.tensor(3.0, dtype=torch.float64))
    torch.testing.assert_close(torch.stack((y1, y2)), y[0])


def test_rope_pair_clockwise_message_both_cases():
    """check_rope_pair's message for the clockwise rotation: used for both q and k it is RoPE at negated
    positions (mirrored, and equal to standard RoPE after flipping each pair's second coordinate of q and k);
    used for only one of them the score depends on m + n."""
    gen = torch.Generator().manual_seed(1)
    q, k = torch.randn(2, 2, generator=gen, dtype=torch.float64)
    theta = torch.tensor(0.7, dtype=torch.float64)

    def ccw(x, m):
        return torch.stack(S["rope_pair"](x[0], x[1], m * theta))

    def cw(x, m):
        return torch.stack(S["rope_pair"](x[0], x[1], -m * theta))

    flip = torch.tensor([1.0, -1.0], dtype=torch.float64)
    for m, n in [(8, 5), (9, 6), (2, 7)]:
        rope = ccw(q, m) @ ccw(k, n)
        both = cw(q, m) @ cw(k, n)
        torch.testing.assert_close(both, ccw(q, n) @ ccw(k, m))                 # mirrored: n - m becomes m - n
        torch.testing.assert_close(both, ccw(flip * q, m) @ ccw(flip * k, n))   # = RoPE with re-signed weights
        assert not torch.isclose(both, rope)
    one = {(m, n): float(ccw(q, m) @ cw(k, n)) for m in range(12) for n in range(12)}
    for (m, n), score in one.items():                                           # a function of m + n ...
        assert abs(score - one[(m + n, 0) if m + n < 12 else (11, m + n - 11)]) < 1e-12
    assert abs(one[(8, 5)] - one[(9, 6)]) > 1e-3                                # ... not of the distance


def _meta_style_rope(x, m, base=10000.0):  # Meta's Llama: float32 frequencies and complex64, no cast back
    d = x.shape[-1]
    theta = base ** (-torch.arange(0, d, 2) / d)
    z = torch.view_as_complex(x.float().reshape(*x.shape[:-1], d // 2, 2).contiguous())
    return torch.view_as_real(z * torch.polar(torch.ones_like(theta), m * theta)).flatten(-2)


def test_meta_style_float32_complex_rope_passes_with_a_note_once_cast_back(capsys):
    """Meta's code ends with .type_as(xq): float32 angles, x's dtype back. That passes, with the note on what float32
    angles cost far out; the same code without the cast (a float32 result for a float64 x) is named."""
    assert_passes_with_float32_note(ex.check_rope_complex,
                                    lambda x, m, base=10000.0: _meta_style_rope(x, m, base).type_as(x),
                                    S["rope_complex"], capsys)
    assert_named(ex.check_rope_complex, _meta_style_rope, ["torch.float32", "torch.float64", ".to(x.dtype)"])


def test_layout_conversion_both_ways_preserves_scores():
    """Interleaved -> half-split with perm (Hugging Face's converter formula as the independent reference), and
    back with the exercise's solution: the attention scores stay the same; without conversion they do not."""
    num_heads, head_dim, d_model, T = 2, 8, 16, 5
    gen = torch.Generator().manual_seed(0)
    w_q = torch.randn(num_heads * head_dim, d_model, generator=gen, dtype=torch.float64)
    w_k = torch.randn(num_heads * head_dim, d_model, generator=gen, dtype=torch.float64)
    x = torch.randn(T, d_model, generator=gen, dtype=torch.float64)

    def hf_permute(w):  # transformers' convert_llama_weights_to_hf.permute, written out
        return w.view(num_heads, head_dim // 2, 2, d_model).transpose(1, 2).reshape(num_heads * head_dim, d_model)

    def to_half(w):
        return _rows_per_head(w, num_heads, layout_permutation(head_dim))

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


def test_clockwise_rope_is_rope_at_negated_positions_with_mirrored_scores():
    """What check_rope_half's and check_rope_complex's clockwise messages claim: turning clockwise (e^{-i m theta})
    for q and k is RoPE at positions -m, so the score of (m, n) is the reference's score of (n, m): a function
    of n - m, still relative, but a key 3 back scores as the reference scores a key 3 ahead."""
    gen = torch.Generator().manual_seed(3)
    q, k = torch.randn(2, 1, 8, generator=gen, dtype=torch.float64)

    def score(m, n, sign):
        return float(apply_rope(q, torch.tensor([sign * m]))[0] @ apply_rope(k, torch.tensor([sign * n]))[0])

    for m, n in [(5, 2), (105, 102), (2, 5)]:
        assert abs(score(m, n, -1) - score(n, m, +1)) < 1e-12       # mirrored: n - m in place of m - n
    assert abs(score(5, 2, -1) - score(105, 102, -1)) < 1e-12       # still relative
    assert abs(score(5, 2, -1) - score(5, 2, +1)) > 1e-3            # but not the reference's score


# ---- the mistakes notebook 06's "Common mistakes" lists, each recognised by name (issue: learner's desk)

def _rope_doubled_exponent(x, positions, base):
    d = x.shape[-1]
    theta = base ** (-2 * torch.arange(0, d, 2, dtype=torch.float64) / d)
    return apply_rope(x, positions, inv_freq=theta)


def _rope_bf16_positions(x, positions, base):
    return apply_rope(x, positions.to(torch.bfloat16).long(), base=base)


def _rope_low_precision_angles(dtype):
    def rope(x, positions, base):
        d = x.shape[-1]
        angles = (positions.double()[:, None] * _theta(d, base)).to(dtype).double()
        cos, sin = torch.cat((angles.cos(),) * 2, -1), torch.cat((angles.sin(),) * 2, -1)
        return x * cos + S["rotate_half"](x) * sin
    return rope


def _rope_float32(x, positions, base):  # right: float32 angles, as transformers computes them
    d = x.shape[-1]
    theta = 1.0 / base ** (torch.arange(0, d, 2, dtype=torch.float32) / d)
    angles = positions.float()[:, None] * theta
    cos, sin = torch.cat((angles.cos(),) * 2, -1), torch.cat((angles.sin(),) * 2, -1)
    return (x.float() * cos + S["rotate_half"](x.float()) * sin).to(x.dtype)


def _rope_angles_in(dtype, tables_in_low_precision=False):
    """Positions and theta cast to `dtype` first, so the angles are computed in it (the issue's 0.972 miss)."""
    def rope(x, positions, base):
        d = x.shape[-1]
        angles = positions.to(dtype)[:, None] * _theta(d, base).to(dtype)
        cos, sin = (angles.cos(), angles.sin()) if tables_in_low_precision else (angles.double().cos(),
                                                                                 angles.double().sin())
        cos, sin = torch.cat((cos.double(),) * 2, -1), torch.cat((sin.double(),) * 2, -1)
        return x * cos + S["rotate_half"](x) * sin
    return rope


def _rope_float32_result(x, positions, base):  # right values, returned in float32 for a float64 x
    return apply_rope(x, positions, base=base).float()


def _rope_fixed_d8(x, positions, base):  # only right for the first input's d = 8 and base = 500
    return apply_rope(x, positions, inv_freq=1.0 / 500.0 ** (torch.arange(0, 8, 2, dtype=torch.float64) / 8))


NOTEBOOK_06_MISTAKES = [
    ("rope doubled exponent", ex.check_rope_half, _rope_doubled_exponent, ["doubled exponent", "base^2"]),
    ("rope bf16 positions", ex.check_rope_half, _rope_bf16_positions, ["right up to position 256", "bf16"]),
    ("rope bf16 angles", ex.check_rope_half, _rope_low_precision_angles(torch.bfloat16), ["rounded to bf16"]),
    ("rope fp16 angles", ex.check_rope_half, _rope_low_precision_angles(torch.float16), ["fp16"]),
    ("rope angles in bf16", ex.check_rope_half, _rope_angles_in(torch.bfloat16), ["computed in bf16", "float64"]),
    ("rope angles and tables in bf16", ex.check_rope_half, _rope_angles_in(torch.bfloat16, True),
     ["computed in bf16"]),
    ("rope angles in fp16", ex.check_rope_half, _rope_angles_in(torch.float16), ["computed in fp16"]),
    ("rope float32 result", ex.check_rope_half, _rope_float32_result, ["torch.float32", "x's dtype"]),
    ("rope ignores base", ex.check_rope_half, lambda x, p, b: apply_rope(x, p), ["ignored the `base`"]),
    ("rope ignores positions", ex.check_rope_half, lambda x, p, b: apply_rope(x, torch.arange(x.shape[0]), base=b),
     ["ignored the `positions`"]),
    ("rope fixed d", ex.check_rope_half, _rope_fixed_d8, ["(5, 16)", "x.shape[-1]"]),
    ("rope returns None", ex.check_rope_half, lambda x, p, b: None, ["tensor", "NoneType"]),
    ("rotate_half slices dim 1", ex.check_rotate_half,
     lambda x: torch.cat((-x[:, x.shape[-1] // 2:], x[:, :x.shape[-1] // 2]), dim=-1), ["(2, 3, 8)", "x[..., :h]"]),
    ("rotate_half cat dim 0", ex.check_rotate_half,
     lambda x: torch.cat((-x[..., x.shape[-1] // 2:], x[..., :x.shape[-1] // 2])), ["dim 0", "dim=-1"]),
]


@each_mistake(NOTEBOOK_06_MISTAKES)
def test_notebook_06_common_mistake_is_named(check, answer, fragments):
    assert_named(check, answer, fragments)


def test_float32_angles_pass_rope_half(capsys):
    """float32 is the course's minimum for angles: its error grows with the position but stays far below
    the bf16/fp16 one the checker names."""
    assert_passes_with_float32_note(ex.check_rope_half, _rope_float32, S["rope_half"], capsys)


def test_notebook_06_lists_the_mistakes_the_checker_names():
    """The checker's table and the notebook's "Common mistakes" section stay together: each mistake the
    rope_half checker names for 06 is in 06's list (both editions' English source has these words)."""
    import json
    from pathlib import Path
    cells = json.loads((Path(__file__).resolve().parents[1] / "notebooks" / "06_rope.ipynb").read_text())["cells"]
    text = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    for listed in ("A doubled exponent", "Positions or angles in bf16/fp16", "interleaved and half-split",
                   "orientation"):
        assert listed in text, listed

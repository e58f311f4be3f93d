"""Checkers of notebook 11 (posenc_lib.exercises.multidim): typical wrong answers get the message that names
the mistake, and right answers in another valid form (a list instead of a tensor, float32) pass."""
import torch
from exercise_mistakes import assert_named, assert_passes_with_float32_note, each_mistake

from posenc_lib.exercises import multidim as ex
from posenc_lib.multidim import apply_axial_rope
from posenc_lib.rope import apply_rope

S = ex.SOLUTIONS


def _grid(x, rows, cols):
    return torch.stack((rows, cols))


def _text_image(before, height, width, after, *, resume, image_offset=True, time=None):
    """Variants of the text-image-text ids: resume(before, h, w) gives the first id after the image."""
    rows, cols = torch.meshgrid(torch.arange(height), torch.arange(width), indexing="ij")
    rows, cols = rows.flatten(), cols.flatten()
    t = torch.zeros_like(rows) if time is None else time(rows, cols)
    image = torch.stack((t, rows, cols)) + (before if image_offset else 0)
    start = resume(before, height, width)
    return torch.cat((torch.arange(before).expand(3, -1), image, (torch.arange(after) + start).expand(3, -1)), 1)


def _axes_doubled(section, interleaved):
    return S["mrope_axes"](section, interleaved) * 2


def _axes_hw_swapped(section, interleaved):
    return [{1: 2, 2: 1}.get(a, a) for a in S["mrope_axes"](section, interleaved)]


def _axial_tables(full_width, dtype=torch.float64):
    """A learner's axial RoPE: angles rows * phi, cols * phi in `dtype` (positions and phi cast to it), the
    cos/sin tables built by full_width(rows_table, cols_table)."""
    def axial(x, rows, cols, base):
        phi = (base ** (-torch.arange(0, x.shape[-1] // 2, 2, dtype=torch.float64) / (x.shape[-1] // 2))).to(dtype)
        r, c = rows[:, None].to(dtype) * phi, cols[:, None].to(dtype) * phi
        cos, sin = full_width(r.cos(), c.cos()).double(), full_width(r.sin(), c.sin()).double()
        half = x.shape[-1] // 2
        return x * cos + torch.cat((-x[..., half:], x[..., :half]), -1) * sin
    return axial


def _axial_in_place(x, rows, cols, base):
    out = S["axial_rope"](x, rows, cols, base)
    x.mul_(2)
    return out


def _text_image_one_late(before, height, width, after):  # the image from before + 1, the text after it from there
    ids = S["text_image_positions"](before, height, width, after).clone()
    ids[:, before:] += 1
    return ids


MISTAKES = [  # (id, check, wrong answer, fragments its message must contain)
    ("text-image: float ids", ex.check_text_image_positions, lambda *a: S["text_image_positions"](*a).float(),
     ["torch.float32", "integers"]),
    ("text-image: image from before + 1", ex.check_text_image_positions, _text_image_one_late,
     ["off by one", "first free id"]),
    ("axes: floats", ex.check_mrope_axes, lambda s, i: torch.tensor(S["mrope_axes"](s, i), dtype=torch.float32),
     ["torch.float32", "integers"]),
    ("axes: i % 3 throughout", ex.check_mrope_axes,
     lambda s, i: [k % 3 for k in range(sum(s))] if i else S["mrope_axes"](s, i), ["i % 3", "leftover pairs", "to t"]),
    ("axial: float32 result", ex.check_axial_rope, lambda x, r, c, b: S["axial_rope"](x.float(), r, c, b),
     ["torch.float32 for x in torch.float64", ".to(x.dtype)"]),
    ("patch: float coordinates", ex.check_patch_positions, lambda h, w: S["patch_positions"](h, w).float(),
     ["torch.float32", "integers"]),
    ("patch (N, 2)", ex.check_patch_positions, lambda h, w: S["patch_positions"](h, w).T, ["axis first"]),
    ("patch flattened", ex.check_patch_positions, lambda h, w: torch.arange(h * w), ["flattened index"]),
    ("patch swapped", ex.check_patch_positions, lambda h, w: S["patch_positions"](h, w).flip(0), ["swapped"]),
    ("patch 1-based", ex.check_patch_positions, lambda h, w: S["patch_positions"](h, w) + 1, ["start at 1"]),
    ("patch column-major", ex.check_patch_positions,
     lambda h, w: torch.stack(torch.meshgrid(torch.arange(h), torch.arange(w), indexing="xy")).flatten(1),
     ["column-major"]),
    ("patch hard-coded", ex.check_patch_positions, lambda h, w: S["patch_positions"](2, 3), ["expected shape"]),
    ("axial swapped", ex.check_axial_rope, lambda x, r, c, b: S["axial_rope"](x, c, r, b), ["swapped"]),
    ("axial 1-D", ex.check_axial_rope, lambda x, r, c, b: apply_rope(x, r * 4 + c, base=b), ["1-D RoPE"]),
    ("axial pixtral", ex.check_axial_rope,
     lambda x, r, c, b: apply_axial_rope(x, _grid(x, r, c), base=b, style="pixtral"), ["Pixtral"]),
    ("axial interleaved", ex.check_axial_rope,
     lambda x, r, c, b: apply_axial_rope(x, _grid(x, r, c), base=b, style="qwen2_vl", layout="interleaved"),
     ["half-split"]),
    ("axial clockwise", ex.check_axial_rope, lambda x, r, c, b: S["axial_rope"](x, -r, -c, b), ["clockwise"]),
    ("axial exponent", ex.check_axial_rope, lambda x, r, c, b: ex._axial(x, _grid(x, r, c), b, exponent_over=16),
     ["base ** (-2j/d)"]),
    ("axial no columns", ex.check_axial_rope, lambda x, r, c, b: S["axial_rope"](x, r, 0 * c, b),
     ["columns do nothing"]),
    ("axial moves origin", ex.check_axial_rope, lambda x, r, c, b: S["axial_rope"](x, r + 1, c, b),
     ["must not move"]),
    ("axial tables repeat_interleave'd", ex.check_axial_rope, _axial_tables(lambda r, c: torch.cat((r, c), -1)
                                                                              .repeat_interleave(2, -1)),
     ["repeat_interleave", "[cos, cos]"]),
    ("axial tables per axis", ex.check_axial_rope, _axial_tables(lambda r, c: torch.cat((r, r, c, c), -1)),
     ["[rows, rows, cols, cols]", "[rows, cols, rows, cols]"]),
    ("axial bf16 angles", ex.check_axial_rope, _axial_tables(lambda r, c: torch.cat((r, c, r, c), -1), torch.bfloat16),
     ["bf16", "float64"]),
    ("axial in place", ex.check_axial_rope, _axial_in_place, ["in place"]),
    ("axial crash", ex.check_axial_rope, lambda x, r, c, b: x.nonexistent(), ["AttributeError"]),
    ("ids count tokens", ex.check_text_image_positions,
     lambda *a: _text_image(*a, resume=lambda b, h, w: b + h * w), ["counted tokens"]),
    ("ids off by one", ex.check_text_image_positions,
     lambda *a: _text_image(*a, resume=lambda b, h, w: b + max(h, w) - 1), ["off by one"]),
    ("ids image from 0", ex.check_text_image_positions,
     lambda *a: _text_image(*a, resume=lambda b, h, w: b + max(h, w), image_offset=False), ["start at 0"]),
    ("ids h w swapped", ex.check_text_image_positions,
     lambda b, h, w, a: _swap_hw(S["text_image_positions"](b, h, w, a), b, h * w), ["swapped"]),
    ("ids time varies", ex.check_text_image_positions,
     lambda *a: _text_image(*a, resume=lambda b, h, w: b + max(h, w), time=lambda r, c: r), ["one frame"]),
    ("ids (seq, 3)", ex.check_text_image_positions, lambda *a: S["text_image_positions"](*a).T, ["axis first"]),
    ("axes chunked for interleaved", ex.check_mrope_axes, lambda s, i: S["mrope_axes"](s, False), ["chunked layout"]),
    ("axes always interleaved", ex.check_mrope_axes, lambda s, i: ex._every_third(s),
     ["interleaved=False is the chunked"]),
    ("axes doubled", ex.check_mrope_axes, _axes_doubled, ["counts PAIRS"]),
    ("axes h w swapped", ex.check_mrope_axes, _axes_hw_swapped, ["h and w are swapped"]),
]


def _swap_hw(ids, start, count):
    out = ids.clone()
    image = slice(start, start + count)
    out[1, image], out[2, image] = ids[2, image], ids[1, image]
    return out



@each_mistake(MISTAKES)
def test_mistake_is_named(check, answer, fragments):
    assert_named(check, answer, fragments)


def _axial_rope_float32_angles(x, rows, cols, base=10000.0):  # float32 all through, x's dtype back at the end
    dim = x.shape[-1]
    phi = base ** (-torch.arange(0, dim // 2, 2, dtype=torch.float32) / (dim // 2))
    angles = torch.cat((rows[:, None] * phi, cols[:, None] * phi), dim=-1)
    cos, sin = torch.cat((angles.cos(),) * 2, -1), torch.cat((angles.sin(),) * 2, -1)
    y = x.float()
    return (y * cos + torch.cat((-y[..., dim // 2:], y[..., :dim // 2]), -1) * sin).to(x.dtype)


def test_float32_angles_pass_axial_rope_with_a_note(capsys):
    assert_passes_with_float32_note(ex.check_axial_rope, _axial_rope_float32_angles, S["axial_rope"], capsys)


def test_other_valid_forms_pass(capsys):
    ex.check_patch_positions(lambda h, w: S["patch_positions"](h, w).tolist())      # a list of lists
    ex.check_axial_rope(_axial_rope_float32_angles)                                  # float32 angles, noted
    ex.check_text_image_positions(lambda *a: S["text_image_positions"](*a).int())   # int32
    ex.check_mrope_axes(lambda s, i: torch.tensor(S["mrope_axes"](s, i)))           # a tensor
    assert capsys.readouterr().out.count("✓") == 4


# ---- notebook 11's "Common mistakes", where an exercise can make them (issue 25)

NOTEBOOK_11_MISTAKES = [
    # flattening patches and using 1-D positions
    ("1-D positions", ex.check_axial_rope, lambda x, r, c, b: apply_rope(x, r * (int(c.max()) + 1) + c, base=b),
     ["1-D RoPE", "flattened index"]),
    ("flattened index", ex.check_patch_positions, lambda h, w: torch.arange(h * w), ["flattened index"]),
    # rows and columns swapped; Pixtral's frequency split for a Qwen checkpoint
    ("rows and columns swapped", ex.check_axial_rope, lambda x, r, c, b: S["axial_rope"](x, c, r, b), ["swapped"]),
    ("Pixtral's split", ex.check_axial_rope,
     lambda x, r, c, b: apply_axial_rope(x, _grid(x, r, c), base=b, style="pixtral"), ["Pixtral"]),
    # counting M-RoPE ids by tokens
    ("ids by tokens", ex.check_text_image_positions, lambda *a: _text_image(*a, resume=lambda b, h, w: b + h * w),
     ["counted tokens", "max(h, w)"]),
    # reading mrope_section as dims
    ("section as dims", ex.check_mrope_axes, _axes_doubled, ["counts PAIRS"]),
    # several inputs: the base is used
    ("axial base ignored", ex.check_axial_rope, lambda x, r, c, b: S["axial_rope"](x, r, c),
     ["`base` = 10000", "passed 100"]),
    ("axial grid of its own", ex.check_axial_rope,
     lambda x, r, c, b: S["axial_rope"](x, r - r.min(), c - c.min(), b),
     ["`rows, cols`", "rows from 5, columns from 3"]),
    ("axial base fixed at 100", ex.check_axial_rope, lambda x, r, c, b: S["axial_rope"](x, r, c, 100.0),
     ["`base` = 100", "passed 1000"]),
]


@each_mistake(NOTEBOOK_11_MISTAKES)
def test_notebook_11_common_mistake_is_named(check, answer, fragments):
    assert_named(check, answer, fragments)

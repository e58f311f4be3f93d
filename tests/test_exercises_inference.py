"""Checkers of notebook 12 (posenc_lib.exercises.inference): typical wrong answers get the message that names the
mistake (the pads numbered, counting from 1, the query not rotated, the cached keys rotated twice, text
positions where StreamingLLM counts in the cache ...), and right answers in another valid form pass."""
import torch
from exercise_mistakes import assert_named, each_mistake

from posenc_lib import apply_rope
from posenc_lib.exercises import inference as ex
from posenc_lib.inference import SinkWindowCache, position_ids_from_mask

S = ex.SOLUTIONS


def _pads_negative(mask):
    return mask.long().cumsum(-1) - 1


def _mask_in_place(mask):
    out = S["left_pad_positions"](mask)
    mask.zero_()
    return out


def _query_with(rotate_at=None, keys_again=False, layout="half"):
    def fn(q, m, keys, base=10000.0):
        query = q if rotate_at is None else apply_rope(q[None], torch.tensor([rotate_at(m)]), base=base,
                                                       layout=layout)[0]
        if keys_again:
            keys = apply_rope(keys, torch.arange(keys.shape[0]), base=base)
        return keys @ query
    return fn


def _keys_in_place(q, m, keys, base=10000.0):
    out = S["query_against_cache"](q, m, keys, base)
    keys.mul_(2)
    return out


def _query_ignoring_base(q, m, keys, base=10000.0):
    return keys @ apply_rope(q[None], torch.tensor([m]), base=10000.0)[0]


def _query_half_width_tables(q, m, keys, base=10000.0):  # cos/sin of d/2 entries against a (d,) query
    d = q.shape[-1]
    angles = m * base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    turned = q * angles.cos() + torch.cat((-q[d // 2:], q[:d // 2])) * angles.sin()
    return keys @ turned


def _query_float32_scores(q, m, keys, base=10000.0):
    return S["query_against_cache"](q, m, keys, base).float()


def _window_with(kept_rule, positions_rule=lambda kept: list(range(len(kept)))):
    def fn(seen, sinks, window):
        kept = kept_rule(seen, sinks, window)
        return kept, positions_rule(kept)
    return fn


def _right_kept(seen, sinks, window):
    return S["window_positions"](seen, sinks, window)[0]


MISTAKES = [  # (id, check, wrong answer, fragments its message must contain)
    ("pad: numbered the pads", ex.check_left_pad_positions,
     lambda mask: torch.arange(mask.shape[1]).expand_as(mask).clone(), ["numbered every slot"]),
    ("pad: from 1", ex.check_left_pad_positions, lambda mask: mask.long().cumsum(-1), ["off by one"]),
    ("pad: negative at pads", ex.check_left_pad_positions, _pads_negative, ["negative position", "0"]),
    ("pad: from the end", ex.check_left_pad_positions,
     lambda mask: mask.long().flip(-1).cumsum(-1).flip(-1) - 1, ["from the end"]),
    ("pad: cumsum over the batch", ex.check_left_pad_positions, lambda mask: (mask.cumsum(0) - 1).clamp(min=0),
     ["dim 0", "cumsum(-1)"]),
    ("pad: shape", ex.check_left_pad_positions, lambda mask: mask[0], ["one position per token"]),
    ("pad: in place", ex.check_left_pad_positions, _mask_in_place, ["in place"]),
    ("pad: crash", ex.check_left_pad_positions, lambda mask: mask.nonexistent, ["AttributeError"]),
    ("query: not rotated", ex.check_query_against_cache, _query_with(), ["not rotated"]),
    ("query: rotated at 0", ex.check_query_against_cache, _query_with(lambda m: 0), ["not rotated"]),
    ("query: off by one", ex.check_query_against_cache, _query_with(lambda m: m - 1), ["off by one"]),
    ("query: wrong way", ex.check_query_against_cache, _query_with(lambda m: -m), ["counter-clockwise"]),
    ("query: keys rotated again", ex.check_query_against_cache, _query_with(lambda m: m, keys_again=True),
     ["rotated again", "twice"]),
    ("query: interleaved", ex.check_query_against_cache, _query_with(lambda m: m, layout="interleaved"),
     ["half layout"]),
    ("query: in place", ex.check_query_against_cache, _keys_in_place, ["in place"]),
    ("query: ignores base", ex.check_query_against_cache, _query_ignoring_base, ["ignored the argument `base`"]),
    ("query: half-width tables", ex.check_query_against_cache, _query_half_width_tables,
     ["use full-width tables", "torch.cat((c, c))"]),
    ("query: float32 scores", ex.check_query_against_cache, _query_float32_scores, ["torch.float32"]),
    ("window: text positions", ex.check_window_positions, _window_with(_right_kept, lambda kept: kept),
     ["text positions", "slot"]),
    ("window: sinks evicted", ex.check_window_positions,
     _window_with(lambda seen, s, w: list(range(max(seen - w, 0), seen))), ["sinks were evicted"]),
    ("window: window includes the sinks", ex.check_window_positions,
     _window_with(lambda seen, s, w: list(range(s)) + list(range(seen - (w - s), seen)) if seen > w else
                  list(range(seen))), ["num_sinks + window"]),
    ("window: one list", ex.check_window_positions, lambda seen, s, w: list(range(seen)), ["two lists"]),
    ("window: one token too many", ex.check_window_positions,
     _window_with(lambda seen, s, w: list(range(s)) + list(range(seen - w - 1, seen)) if seen > s + w + 1 else
                  _right_kept(seen, s, w)), ["off by one", "last 6 tokens"]),
    ("window: one token short", ex.check_window_positions,
     _window_with(lambda seen, s, w: list(range(s)) + list(range(seen - w + 1, seen)) if seen > s + w else
                  _right_kept(seen, s, w)), ["off by one", "last 4 tokens"]),
    ("window: slots from 1", ex.check_window_positions,
     _window_with(_right_kept, lambda kept: list(range(1, len(kept) + 1))), ["numbered from 0", "not 1 .."]),
    # answers that int() would have rounded into a right one, and shapes that a flatten would have hidden
    ("window: 0.5 for 0", ex.check_window_positions,
     _window_with(lambda seen, s, w: [0.5] + _right_kept(seen, s, w)[1:]), ["integers", "0.5"]),
    ("window: positions as floats", ex.check_window_positions,
     _window_with(_right_kept, lambda kept: [p + 0.25 for p in range(len(kept))]), ["integers"]),
    ("window: a nested list", ex.check_window_positions,
     _window_with(lambda seen, s, w: [_right_kept(seen, s, w)]), ["one flat list", "shape (1, "]),
    ("window: a number, not a list", ex.check_window_positions,
     lambda seen, s, w: (seen, _right_kept(seen, s, w)), ["one flat list", "shape ()"]),
    ("window: bools", ex.check_window_positions,
     _window_with(_right_kept, lambda kept: [True] * len(kept)), ["integers", "torch.bool"]),
    ("window: not a function", ex.check_window_positions, "kept, positions", ["pass your function itself"]),
    ("pad: positions + 0.4", ex.check_left_pad_positions,
     lambda mask: S["left_pad_positions"](mask).double() + 0.4, ["integers", "torch.float64"]),
    ("pad: a bool mask back", ex.check_left_pad_positions, lambda mask: mask.bool(), ["integers", "torch.bool"]),
    ("pad: transposed", ex.check_left_pad_positions, lambda mask: S["left_pad_positions"](mask).T,
     ["one position per token", "shape"]),
    ("query: a (1, n) row", ex.check_query_against_cache,
     lambda q, m, keys, base=1e4: S["query_against_cache"](q, m, keys, base)[None], ["one score per cached key",
                                                                                  "(6,)", "(1, 6)"]),
    ("query: one score", ex.check_query_against_cache,
     lambda q, m, keys, base=1e4: S["query_against_cache"](q, m, keys, base).sum(), ["one score per cached key",
                                                                                   "got ()"]),
]


@each_mistake(MISTAKES)
def test_mistake_is_named(check, answer, fragments):
    assert_named(check, answer, fragments)


def test_other_valid_forms_pass(capsys):
    ex.check_left_pad_positions(lambda mask: S["left_pad_positions"](mask).int())           # int32 is fine
    ex.check_left_pad_positions(lambda mask: S["left_pad_positions"](mask).masked_fill(mask == 0, 1))  # pads unread
    ex.check_query_against_cache(  # computed in float32, returned in the inputs' dtype (issue 37)
        lambda q, m, k, base=1e4: S["query_against_cache"](q.float(), m, k.float(), base).to(q.dtype))
    ex.check_window_positions(lambda seen, s, w: tuple(torch.tensor(v) for v in S["window_positions"](seen, s, w)))
    assert capsys.readouterr().out.count("✓ ") == 4


def test_checkers_agree_with_the_library():
    """The right answers are the library's: generate()'s rule (test_inference.py compares it with transformers),
    apply_rope, and what SinkWindowCache keeps."""
    for mask in ex._MASKS:
        assert torch.equal(S["left_pad_positions"](mask), position_ids_from_mask(mask))
    gen = torch.Generator().manual_seed(0)
    q, k = torch.randn(8, generator=gen, dtype=torch.float64), torch.randn(5, 8, generator=gen, dtype=torch.float64)
    keys = apply_rope(k, torch.arange(5), base=100.0)
    full = apply_rope(torch.cat((k, q[None])), torch.arange(6), base=100.0)
    torch.testing.assert_close(S["query_against_cache"](q, 5, keys, 100.0), full[:5] @ full[5], rtol=0, atol=1e-12)
    for seen, sinks, window in ex._WINDOW_CASES:
        cache = SinkWindowCache(1, num_sinks=sinks, window=window)
        for t in range(seen):
            x = torch.zeros(1, 1, 1, 2)
            got = cache.update(0, x, x, torch.tensor([t]))
        kept, positions = S["window_positions"](seen, sinks, window)
        assert cache.text_positions()[0].tolist() == kept and got.key_positions[0].tolist() == positions

"""Checkers of notebook 13 (posenc_lib.exercises.serving): typical wrong answers get the message that names the
mistake (the wrong sign of the shift, the keys not turned, the flattened index where the depth belongs, the
causal mask of the flattened tree, W + 1 or W - 1 keys where the window holds W, slots for positions, packed
positions that run on), and right answers in another valid form pass."""
import torch
from exercise_mistakes import assert_named, each_mistake

from posenc_lib import apply_rope
from posenc_lib.exercises import serving as ex
from posenc_lib.inference import KVCache, RingBufferCache, context_shift, tree_mask, tree_positions

S = ex.SOLUTIONS


def _shift_turning_by(sign, keep_first=True, turn_all=False):
    def fn(keys, n_keep, n_discard, base=10000.0):
        kept = keys[:n_keep] if keep_first else keys[:0]
        rest = keys[n_keep + n_discard:] if keep_first else keys[n_discard:]
        if turn_all:
            rest, kept = torch.cat((kept, rest)), keys[:0]
        moved = apply_rope(rest, torch.full((rest.shape[0],), sign * n_discard), base=base)
        return torch.cat((kept, moved))
    return fn


def _shift_by(extra):
    """The moved keys turned by R(-(n_discard + extra))."""
    def fn(keys, n_keep, n_discard, base=10000.0):
        rest = keys[n_keep + n_discard:]
        return torch.cat((keys[:n_keep], apply_rope(rest, torch.full((len(rest),), -(n_discard + extra)), base=base)))
    return fn


def _shift_interleaved(keys, n_keep, n_discard, base=10000.0):
    """R(-n_discard) by the pairs (2i, 2i+1), written out: a complex multiplication of neighbours."""
    rest = keys[n_keep + n_discard:]
    theta = base ** (-torch.arange(0, keys.shape[-1], 2, dtype=torch.float64) / keys.shape[-1])
    z = torch.view_as_complex(rest.reshape(len(rest), -1, 2).contiguous()) * torch.polar(torch.ones_like(theta),
                                                                                          -n_discard * theta)
    return torch.cat((keys[:n_keep], torch.view_as_real(z).flatten(-2)))


def _shift_in_place(keys, n_keep, n_discard, base=10000.0):
    out = S["context_shift"](keys, n_keep, n_discard, base)
    keys.mul_(2)
    return out


def _ring(visible_rule, slot_rule=lambda p, w: p % w):
    return lambda position, window: (slot_rule(position, window), visible_rule(position, window))


MISTAKES = [  # (id, check, wrong answer, fragments its message must contain)
    ("shift: +n", ex.check_context_shift, _shift_turning_by(+1), ["wrong sign", "R(-n_discard)"]),
    ("shift: not turned", ex.check_context_shift, _shift_turning_by(0), ["not turned"]),
    ("shift: dropped the first tokens", ex.check_context_shift, _shift_turning_by(-1, keep_first=False),
     ["keeps the first n_keep"]),
    ("shift: turned the kept ones too", ex.check_context_shift, _shift_turning_by(-1, turn_all=True),
     ["first n_keep keys too"]),
    ("shift: base ignored", ex.check_context_shift, lambda keys, k, d, base=1e4: S["context_shift"](keys, k, d),
     ["`base`", "100"]),
    ("shift: interleaved pairs", ex.check_context_shift, _shift_interleaved, ["interleaved", "(x[i], x[i + d/2])"]),
    ("shift: by n + 1", ex.check_context_shift, _shift_by(1), ["off by one", "R(-4)"]),
    ("shift: shape", ex.check_context_shift, lambda keys, k, d, base=1e4: keys, ["shape"]),
    ("shift: in place", ex.check_context_shift, _shift_in_place, ["in place"]),
    ("tree: flattened index", ex.check_tree_positions, lambda parents, start=0: torch.arange(len(parents)) + start,
     ["flattened indices", "depth"]),
    ("tree: from 1", ex.check_tree_positions, lambda parents, start=0: S["tree_positions"](parents, start) + 1,
     ["off by one"]),
    ("tree: start ignored", ex.check_tree_positions, lambda parents, start=0: S["tree_positions"](parents, 0),
     ["ignored `start`"]),
    ("mask: causal over the flattened tree", ex.check_tree_mask,
     lambda parents: torch.ones(len(parents), len(parents), dtype=torch.bool).tril(), ["causal mask", "siblings"]),
    ("mask: no diagonal", ex.check_tree_mask,
     lambda parents: S["tree_mask"](parents) & ~torch.eye(len(parents), dtype=torch.bool), ["diagonal"]),
    ("mask: additive", ex.check_tree_mask,
     lambda parents: torch.where(S["tree_mask"](parents), 0.0, float("-inf")),
     ["additive mask", "bool tensor", "-inf"]),
    ("tree: float positions", ex.check_tree_positions,
     lambda parents, start=0: S["tree_positions"](parents, start).float(), ["integers", "torch.float32"]),
    ("mask: transposed", ex.check_tree_mask, lambda parents: S["tree_mask"](parents).T, ["transposed"]),
    ("mask: shape", ex.check_tree_mask, lambda parents: S["tree_mask"](parents)[0], ["(N, N)"]),
    ("ring: W + 1 keys", ex.check_ring_window, _ring(lambda p, w: list(range(max(p - w, 0), p + 1))),
     ["W + 1 keys", "W - 1 past keys"]),
    ("ring: W - 1 keys in all", ex.check_ring_window, _ring(lambda p, w: list(range(max(p - w + 2, 0), p + 1))),
     ["W - 1 keys in all"]),
    ("ring: slots for positions", ex.check_ring_window,
     _ring(lambda p, w: sorted(q % w for q in range(max(p - w + 1, 0), p + 1))), ["those are slots"]),
    ("ring: slot = position", ex.check_ring_window,
     _ring(lambda p, w: list(range(max(p - w + 1, 0), p + 1)), slot_rule=lambda p, w: p), ["% "]),
    ("shift: float32 cache", ex.check_context_shift,
     lambda k, keep, drop, b: S["context_shift"](k, keep, drop, b).float(),
     ["torch.float32 for cached_keys in torch.float64"]),
    ("ring: one value", ex.check_ring_window, lambda p, w: p % w, ["(slot, visible)"]),
    ("ring: slot = position // W", ex.check_ring_window,
     _ring(lambda p, w: list(range(max(p - w + 1, 0), p + 1)), slot_rule=lambda p, w: p // w),
     ["wrapped round", "remainder"]),
    ("ring: float slot", ex.check_ring_window,
     _ring(lambda p, w: list(range(max(p - w + 1, 0), p + 1)), slot_rule=lambda p, w: float(p % w)),
     ["integers", "torch.float32"]),
    ("ring: newest first", ex.check_ring_window, _ring(lambda p, w: list(range(p, max(p - w, -1), -1))),
     ["newest first", "oldest first"]),
    ("ring: positions below 0", ex.check_ring_window, _ring(lambda p, w: list(range(p - w + 1, p + 1))),
     ["below 0", "max(position - W + 1, 0)"]),
    ("packed: float ids", ex.check_packed_offsets, lambda lengths, pad: S["packed_offsets"](lengths, pad).float(),
     ["integers", "torch.float32"]),
    ("packed: padding_idx fixed at 1", ex.check_packed_offsets,
     lambda lengths, pad: S["packed_offsets"](lengths, 1), ["`padding_idx`", "passed 0"]),
    ("packed: run on", ex.check_packed_offsets, lambda lengths, pad: torch.arange(sum(lengths)) + pad + 1,
     ["run on across the documents"]),
    ("packed: from 0", ex.check_packed_offsets, lambda lengths, pad: S["packed_offsets"](lengths, pad) - pad - 1,
     ["padding_idx + 1, not at 0"]),
    ("packed: from padding_idx", ex.check_packed_offsets, lambda lengths, pad: S["packed_offsets"](lengths, pad) - 1,
     ["off by one"]),
]


@each_mistake(MISTAKES)
def test_mistake_is_named(check, answer, fragments):
    assert_named(check, answer, fragments)


def test_other_valid_forms_pass(capsys):
    ex.check_context_shift(lambda k, nk, nd, base=1e4: S["context_shift"](k.float(), nk, nd, base).double())
    ex.check_tree_positions(lambda parents, start=0: S["tree_positions"](parents, start).tolist())   # a list
    ex.check_tree_mask(lambda parents: S["tree_mask"](parents).int())                               # 0/1
    ex.check_ring_window(lambda p, w: (torch.tensor(p % w), torch.tensor(S["ring_window"](p, w)[1])))
    ex.check_packed_offsets(lambda lengths, pad: S["packed_offsets"](lengths, pad).tolist())
    assert capsys.readouterr().out.count("✓ ") == 5


def test_checkers_agree_with_the_library():
    """The right answers are the library's: context_shift, tree_positions / tree_mask, what a RingBufferCache
    returns to a decoding step (test_serving.py compares these with transformers)."""
    gen = torch.Generator().manual_seed(0)
    keys = apply_rope(torch.randn(1, 1, 9, 8, generator=gen, dtype=torch.float64), torch.arange(9), base=100.0)
    cache = KVCache(1)
    cache.layers[0] = (keys, keys, torch.arange(9)[None], torch.ones(1, 9, dtype=torch.bool))
    shifted = context_shift(cache, 3, n_keep=2, base=100.0).layers[0][0][0, 0]
    torch.testing.assert_close(S["context_shift"](keys[0, 0], 2, 3, 100.0), shifted, rtol=0, atol=1e-12)
    for parents in ex._TREES:
        assert torch.equal(S["tree_positions"](list(parents), 3), tree_positions(list(parents), start=3))
        assert torch.equal(S["tree_mask"](list(parents)), tree_mask(list(parents)))
    for position, window in ex._RING_CASES:
        ring = RingBufferCache(1, window=window)
        for t in range(position + 1):
            x = torch.zeros(1, 1, 1, 2)
            got = ring.update(0, x, x, torch.tensor([t]))
        assert got.key_positions[0].tolist() == S["ring_window"](position, window)[1]
        slot = (ring.slot_positions()[0] == position).nonzero()[0, 0]
        assert int(slot) == S["ring_window"](position, window)[0]

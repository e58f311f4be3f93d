"""What a trained RoPE model does with its frequencies: measurements that are pure functions of a model.

Barbero et al., "Round and Round We Go! What makes Rotary Positional Encodings useful?" (arXiv 2410.06205),
read a trained model's queries and keys pair by pair. RoPE turns pair i by m * theta_i, theta_i =
base ** (-2i/d) (posenc_lib.rope; i = 0 is the FASTEST pair), and a rotation keeps a pair's length, so the
mean norm of pair i of q and of k says how much of the score pair i can carry, whatever the positions:

    band_norms(model, windows)      mean |q_i|, |k_i| per (layer, head, pair i) over held-out text
    pair_usage(norms)               |q_i| * |k_i| / sum_j |q_j| |k_j|: each pair's share of a head's scores
    attention_maps / offset_profile the mean attention at key = query - d: a head that puts most of it on one
                                    fixed offset d (0: its own token, 1: the previous one) is positional
    positional_heads(profile)       those heads, with their offset and weight

Their finding: positional heads (diagonal, previous-token) use the highest frequencies, and the lowest
frequencies, which turn little over the context, carry semantic matches ("a channel that ignores position").
Hence p-RoPE (stop the slowest pairs: angle 0, never rotated; Gemma 4's rope_type "proportional") and HoPE
(Chen et al., arXiv 2410.21216: drop the pairs that do not complete a turn within the training length).
`truncated_rope` builds either truncation -- the slowest or the fastest `count` pairs stopped -- to swap
into a TRAINED model (TinyLM.replace_encoding); the papers train with it, we do not.

`pair_turns` / `slow_pairs`: how many turns pair i makes over `length` positions, length * theta_i / (2 pi),
and which pairs make fewer than one (HoPE's criterion). Relative position is key - query, as course-wide.
"""
from __future__ import annotations

import copy
import math

import torch

from . import _checks
from .attention import NoPE
from .model import TinyLM
from .rope import LAYOUTS, RotaryEmbedding, _pair_members
from .scaling import rope_inv_freq

TRUNCATIONS = ("slowest", "fastest")


# ----------------------------------------------------------------------------- turns per pair
def pair_turns(head_dim: int, length: int, *, base: float = 10000.0) -> torch.Tensor:
    """(head_dim/2,) float64: the turns pair i makes over `length` positions, length * theta_i / (2 pi),
    theta_i = base ** (-2i/head_dim) (angle in radians per position; the period 2 pi / theta_i positions)."""
    head_dim = _checks.even_int("head_dim", head_dim)
    length = _checks.positive_int("length", length)
    inv_freq, _ = rope_inv_freq(head_dim, base=_checks.positive_float("base", base, minimum=1.0), device="cpu")
    return length * inv_freq.double() / (2 * math.pi)


def slow_pairs(head_dim: int, length: int, *, base: float = 10000.0) -> torch.Tensor:
    """(head_dim/2,) bool: True for the pairs that complete FEWER than one turn within `length` positions
    (period 2 pi / theta_i > length): the ones HoPE drops, the slowest end of the head."""
    return pair_turns(head_dim, length, base=base) < 1


# ----------------------------------------------------------------------------- truncated RoPE
class TruncatedRoPE(RotaryEmbedding):
    """RoPE with `count` pairs stopped: their angle is 0 at every position (cos 1, sin 0), so they pass q and
    k through unrotated; the other pairs keep theta_i = base ** (-2i/dim). stop="slowest" stops pairs
    dim/2 - count .. dim/2 - 1 (p-RoPE with partial_rotary_factor 1 - count / (dim/2); HoPE's truncation),
    stop="fastest" pairs 0 .. count - 1. count 0 is plain RoPE, count dim/2 rotates nothing (a NoPE score)."""

    def __init__(self, dim: int, *, stop: str = "slowest", count: int = 0, base: float = 10000.0,
                 layout: str = "half"):
        super().__init__(dim, base=base, layout=layout)
        self.stop = _checks.choice("stop", stop, TRUNCATIONS)
        self.count = _checks.positive_int("count", count, allow_zero=True)
        if self.count > self.dim // 2:
            raise ValueError(f"count must be at most dim/2 = {self.dim // 2} (the pairs there are), got {count}")

    def _frequencies(self, device, *positions):
        inv_freq, attention_factor = super()._frequencies(device, *positions)
        index = torch.arange(inv_freq.shape[0], device=inv_freq.device)
        stopped = index >= inv_freq.shape[0] - self.count if self.stop == "slowest" else index < self.count
        return torch.where(stopped, torch.zeros_like(inv_freq), inv_freq), attention_factor

    def extra_repr(self):
        return f"{super().extra_repr()}, stop={self.stop!r}, count={self.count}"


def truncated_rope(model: TinyLM, stop: str, count: int) -> TruncatedRoPE:
    """A TruncatedRoPE for `model`'s heads (its head dim, base and layout), to swap in with
    model.replace_encoding (weights untouched)."""
    enc = _rope_of(model)
    return TruncatedRoPE(enc.dim, stop=stop, count=count, base=enc.base, layout=enc.layout)


def drop_rope(model: TinyLM) -> TinyLM:
    """DroPE's first step (Gelberg et al., arXiv 2512.12167): a COPY of the RoPE model with no positional
    encoding (NoPE: q.k as it is; the causal mask is the only source of order). The caller's model is untouched."""
    _rope_of(model)
    dropped = copy.deepcopy(model)
    dropped.replace_encoding(NoPE())
    dropped.kind = "nope"
    return dropped


# ----------------------------------------------------------------------------- band norms
@torch.no_grad()
def band_norms(model: TinyLM, windows: torch.Tensor) -> dict:
    """Barbero et al.'s measurement: the mean norm of each RoPE pair of q and of k, per layer and head, over
    every token of `windows` (batch, seq) token ids. Returns {"q", "k": (layers, heads, head_dim/2) float64
    tensors on the model's device, "layout"}. Read before rotation: a rotation keeps each pair's norm, so
    this is also the norm after it. The model is run once, in eval mode; its weights are not changed."""
    enc = _rope_of(model)
    windows = _check_windows(model, windows)
    captured = []
    hooks = [block.attn.qkv.register_forward_hook(lambda mod, inp, out: captured.append(out))
             for block in model.blocks]
    was_training = model.training
    try:
        model.eval()
        model(windows)
    finally:
        for hook in hooks:
            hook.remove()
        model.train(was_training)
    heads, head_dim = model.config.num_heads, model.config.head_dim
    out = {"q": [], "k": []}
    for qkv in captured:                                             # (B, T, 3 * D)
        q, k, _ = qkv.unflatten(-1, (3, heads, head_dim)).unbind(2)  # (B, T, H, hd) each
        for name, t in (("q", q), ("k", k)):
            first, second = _pair_members(t.double(), enc.layout)    # (B, T, H, hd/2) each
            out[name].append(torch.hypot(first, second).mean(dim=(0, 1)))  # (H, hd/2)
    return {"q": torch.stack(out["q"]), "k": torch.stack(out["k"]), "layout": enc.layout}


def pair_usage(norms: dict) -> torch.Tensor:
    """(layers, heads, pairs): |q_i| * |k_i| (band_norms' means) divided by its sum over the pairs of the head:
    the share of a head's q.k that pair i can carry (|q_i . k_i| <= |q_i| |k_i|). Our summary of the band norms,
    not a quantity from the paper (which plots the q and k norms themselves)."""
    q, k = _check_norms(norms)
    product = q * k
    return product / product.sum(-1, keepdim=True).clamp_min(torch.finfo(product.dtype).tiny)


# ----------------------------------------------------------------------------- positional heads
@torch.no_grad()
def attention_maps(model: TinyLM, windows: torch.Tensor) -> torch.Tensor:
    """(layers, heads, seq, seq) float64: every layer's attention weights, averaged over the windows (batch, seq)
    of token ids; row = query, column = key (zero above the diagonal: causal). Works for any TinyLM."""
    windows = _check_windows(model, windows)
    attns = [block.attn for block in model.blocks]
    kept = [a.keep_weights for a in attns]
    was_training = model.training
    try:
        model.eval()
        for a in attns:
            a.keep_weights = True
        model(windows)
        maps = torch.stack([a.last_weights.double().mean(0) for a in attns])  # (layers, H, T, T)
    finally:
        for a, keep in zip(attns, kept):
            a.keep_weights, a.last_weights = keep, None
        model.train(was_training)
    return maps


def offset_profile(maps: torch.Tensor, max_offset: int = 8) -> torch.Tensor:
    """(..., max_offset + 1): the mean attention weight on the key at distance d = query - key = 0 .. max_offset
    (relative position key - query = -d), over the queries at positions >= max_offset (each has all of them).
    maps: (..., seq, seq) attention weights, row = query (attention_maps)."""
    _checks.float_tensor("maps", maps)
    max_offset = _checks.positive_int("max_offset", max_offset, allow_zero=True)
    if maps.dim() < 2 or maps.shape[-1] != maps.shape[-2] or maps.shape[-1] <= max_offset:
        raise ValueError(f"maps must have shape (..., seq, seq) with seq > max_offset = {max_offset}, got "
                         f"{tuple(maps.shape)}")
    seq = maps.shape[-1]
    queries = torch.arange(max_offset, seq, device=maps.device)                      # (Q,)
    offsets = torch.arange(max_offset + 1, device=maps.device)                       # (D,)
    keys = queries[:, None] - offsets                                                 # (Q, D)
    picked = maps[..., queries[:, None], keys]                                        # (..., Q, D)
    return picked.mean(-2)


def positional_heads(profile: torch.Tensor, threshold: float = 0.5) -> list:
    """The heads of `profile` (layers, heads, D) (offset_profile) that put at least `threshold` of their
    attention, on average, on ONE fixed offset d: [{"layer", "head", "offset" d, "weight"}, ...] in
    (layer, head) order. d = 0 is a diagonal head, d = 1 a previous-token head."""
    _checks.float_tensor("profile", profile)
    if profile.dim() != 3:
        raise ValueError(f"profile must have shape (layers, heads, offsets), got {tuple(profile.shape)}")
    threshold = _checks.positive_float("threshold", threshold)
    if threshold > 1:
        raise ValueError(f"threshold must be in (0, 1] (a share of the attention), got {threshold}")
    weight, offset = profile.max(-1)
    return [{"layer": layer, "head": head, "offset": int(offset[layer, head]),
             "weight": float(weight[layer, head])}
            for layer in range(profile.shape[0]) for head in range(profile.shape[1])
            if float(weight[layer, head]) >= threshold]


def fast_share(usage: torch.Tensor, pairs: int) -> torch.Tensor:
    """(layers, heads): the share of pair_usage in the `pairs` fastest pairs (i = 0 .. pairs - 1)."""
    _checks.float_tensor("usage", usage)
    pairs = _checks.positive_int("pairs", pairs)
    if usage.dim() < 1 or pairs > usage.shape[-1]:
        raise ValueError(f"pairs must be at most the number of pairs {usage.shape[-1] if usage.dim() else 0}, "
                         f"got {pairs}")
    return usage[..., :pairs].sum(-1)


# ----------------------------------------------------------------------------- checks
def _rope_of(model) -> RotaryEmbedding:
    if not isinstance(model, TinyLM):
        raise TypeError(f"model must be a posenc_lib TinyLM, got {type(model).__name__}")
    if not isinstance(model.encoding, RotaryEmbedding):
        raise ValueError(f"model must use RoPE (its q, k pairs are what is measured), got a {model.kind} model "
                         f"({type(model.encoding).__name__})")
    if model.encoding.layout not in LAYOUTS or model.encoding.rotary_dim != model.encoding.dim:
        raise ValueError("model's RoPE must rotate the whole head (pairs of the head dims)")
    return model.encoding


def _check_windows(model, windows) -> torch.Tensor:
    if not isinstance(model, TinyLM):
        raise TypeError(f"model must be a posenc_lib TinyLM, got {type(model).__name__}")
    windows = _checks.int_tensor("windows", windows)
    if windows.dim() != 2 or not windows.numel():
        raise ValueError(f"windows must be a non-empty (batch, seq) tensor of token ids, got shape "
                         f"{tuple(windows.shape)}")
    return windows


def _check_norms(norms) -> tuple:
    if not isinstance(norms, dict) or not all(isinstance(norms.get(n), torch.Tensor) for n in ("q", "k")):
        raise TypeError(f"norms must be band_norms' dict with tensors 'q' and 'k', got {type(norms).__name__}")
    q, k = norms["q"], norms["k"]
    if q.shape != k.shape or q.dim() != 3:
        raise ValueError(f"norms['q'] and norms['k'] must both be (layers, heads, pairs), got {tuple(q.shape)} "
                         f"and {tuple(k.shape)}")
    return q, k

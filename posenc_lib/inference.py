"""Positions at inference time: the KV cache, padding-aware position ids, and a sink + window cache.

Generating token t+1 needs the keys and values of tokens 0..t. A KV cache keeps them from the earlier
steps, so a step computes q, k, v for the new tokens only:

    step:  q, k, v = proj(x_new)                       (batch, heads, T_new, head_dim)
           k_all, v_all = cache.update(layer, k, v)    (batch, heads, T_cached + T_new, head_dim)
           out = softmax(q k_all^T / sqrt(d) + bias) v_all

`MultiHeadAttention(x_new, positions, cache=cache, layer=i)` (posenc_lib.attention) is that step, the
same hook sequence as a full forward; `decode_step` runs a whole TinyLM so.

What positions have to do with it, per place an encoding acts (posenc_lib.attention):
  * rotates q and k (RoPE): a cached key was rotated by ITS position n when it was made; the new query
    is rotated by its own position m, and q.k depends on m - n as in one full forward. So keys may be
    cached rotated (`KVCache(rotated=True)`, what transformers' DynamicCache holds) -- as long as the
    rotation of a position never changes. Dynamic NTK and LongRoPE change it with the length: then
    cache the keys unrotated (`rotated=False`) and rotate them all again at every step. That makes each
    layer's scores use one set of frequencies; it does not make a model of several layers equal to a full
    forward, whose earlier tokens' hidden states are recomputed with the new frequencies (notebook 12, sec. 4).
  * bias on the scores (ALiBi, T5, Shaw): the bias needs the query's position AND every key's, so the
    cache keeps the keys' positions beside them (`key_positions`).
  * added to the input (sinusoidal, learned): the new tokens get their positions at the embedding;
    a learned table has rows for positions < max_len only, so the cache cannot grow past it.
  * edits the scores from more than positions (gates from q.k or from x): the keys are cached, the
    layer's input x is not; what the score hook needs of each key's x is its token state
    (`PositionalEncoding.token_state`), which the cache keeps in the key's entry (`CacheEntry.state`).

Positions with padding. A batch of prompts of different lengths is padded; with left padding a row's
real tokens start after its pads, so its positions must start there too. transformers' generate()
counts them from the attention mask (1 = real token, 0 = pad): `position_ids = mask.cumsum(-1) - 1`,
pads set to 0 (`position_ids_from_mask`), and every later token gets the row's last column's position + 1 (with left
padding, the last real position + 1; KVCache.next_positions uses the last real one).

Streaming (Xiao et al. 2023, StreamingLLM): keep the first `num_sinks` tokens (the attention sinks)
and the last `window` ones; positions are counted WITHIN the cache (0 .. len-1), not within the text,
so the keys are cached unrotated and rotated at their cache slot at every step (`SinkWindowCache`).

Sliding windows (Mistral, Qwen2/3's upper layers, Gemma 3's local layers): query slot i sees slots
i - w < j <= i, transformers' rule (masking_utils.sliding_window_overlay), at the prefill and at every step
past the window (`cache_mask_bias(window=)`). transformers' own models run step by step through
`llama_decode_step` for the families in one table (`DECODE_FAMILIES`); any other class is refused by name.

Shapes: k, v (batch, heads, T, head_dim); positions (T,) or (batch, T) int; attention_mask (batch, T)
of 0/1 or bool. Nothing given is modified in place; every tensor made here is on the input's device.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from operator import attrgetter, itemgetter
from typing import NamedTuple

import torch

from . import _checks
from .attention import attention, causal_mask
from .configs import from_hf_config
from .model import TinyLM


# ------------------------------------------------------------------------------ positions from a pad mask
def check_mask(name: str, mask, *, shape: tuple | None = None) -> torch.Tensor:
    """A pad mask: (batch, seq) of 0/1 (integers, floats) or bools (1/True = a real token), as a bool tensor.
    shape: the (batch, seq) it must have (the tokens it belongs to), or None."""
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of 0/1 (1 = real token, 0 = padding), "
                        f"got {type(mask).__name__}")
    if mask.is_complex():
        raise TypeError(f"{name} must hold 0/1 (1 = real token), got {mask.dtype}")
    if mask.dim() != 2 or (shape is not None and tuple(mask.shape) != tuple(shape)):
        expected = "(batch, seq)" if shape is None else f"(batch, seq) = {tuple(shape)}, one entry per token"
        raise ValueError(f"{name} must have shape {expected}, got {tuple(mask.shape)}")
    if mask.dtype != torch.bool:
        if _checks.values_are_cheap(mask) and mask.numel() and not bool(((mask == 0) | (mask == 1)).all()):
            raise ValueError(f"{name} must hold only 0 (padding) and 1 (real token)")
        mask = mask != 0
    return mask


def position_ids_from_mask(attention_mask: torch.Tensor, start: torch.Tensor | None = None) -> torch.Tensor:
    """Positions that count only the real tokens: transformers' rule in generate(),

        position_ids = attention_mask.cumsum(-1) - 1, then 0 at the pads        (start = 0)

    attention_mask: (batch, seq), 1/True = real token, 0 = pad. start: (batch,) ints, the position of
    each row's next token when a cache already holds earlier ones (`KVCache.next_positions()`); then
    the real tokens count on from there and pads get `start` (0 <= start <= 2**53 - seq + 1: no wrap).
    Returns (batch, seq) int64 on the mask's device. Left padding [0, 0, 1, 1, 1] -> [0, 0, 0, 1, 2];
    right padding [1, 1, 1, 0, 0] -> [0, 1, 2, 0, 0].
    """
    mask = check_mask("attention_mask", attention_mask)
    counted = mask.long().cumsum(-1) - 1                                  # (B, T): -1 before the first real token
    if start is not None:
        start = _checks.start_positions("start", start, batch=mask.shape[0], seq_len=mask.shape[1], device=mask.device)
        counted = counted + start[:, None]
        return counted.masked_fill(~mask, 0) + (~mask).long() * start[:, None]
    return counted.masked_fill(~mask, 0)


# the longest packed row these build: positions of at most MAX_PACKED tokens (128 MiB of int64), a document mask of
# at most MAX_MASKED tokens (its T x T bools: 256 MiB)
MAX_PACKED, MAX_MASKED = 1 << 24, 1 << 14


def packed_position_ids(lengths, *, device=None) -> torch.Tensor:
    """Positions for several documents packed into one row: 0 .. len-1 for each, restarting per document.
    lengths: a sequence of positive ints -> (sum(lengths),) int64 on `device`. [3, 2] -> [0, 1, 2, 0, 1].
    (With packing the attention mask must also keep documents apart: `document_mask`.)"""
    lengths = _checks.lengths("lengths", lengths, max_total=MAX_PACKED, why="one packed row's positions")
    device = _checks.device("device", device)
    return torch.cat([torch.arange(n, device=device) for n in lengths])


def document_mask(lengths, *, device=None) -> torch.Tensor:
    """(T, T) bool, T = sum(lengths): True where query i may attend key j -- causal and within one document."""
    lengths = _checks.lengths("lengths", lengths, max_total=MAX_MASKED, why="the mask is T x T bools")
    device = _checks.device("device", device)
    doc = torch.cat([torch.full((n,), d, device=device) for d, n in enumerate(lengths)])
    return (doc[:, None] == doc[None, :]) & causal_mask(doc.numel(), doc.numel(), device=device)


# ------------------------------------------------------------------------------ the caches
def _refuse_packed_rows(positions: torch.Tensor, valid: torch.Tensor) -> None:
    """A row whose real tokens' positions go back (packed documents restarting at 0) is refused: a cache
    holds one sequence per row and its mask keeps no documents apart (see `document_mask`)."""
    before = torch.where(valid, positions, -1).cummax(-1).values                 # (B, T) largest real so far
    before = torch.cat((torch.full_like(before[:, :1], -1), before[:, :-1]), -1)  # ... before each slot
    back = valid & (positions <= before)
    if bool(back.any()):
        row, slot = (int(v) for v in back.nonzero()[0])
        raise ValueError(f"positions must increase along a row: row {row} goes back to {int(positions[row, slot])} "
                         f"at slot {slot} (packed documents?). A cache holds one sequence per row and no "
                         f"document mask: run each document in its own row (transformers' packed-row mask, "
                         f"inferred from position_ids, applies only without a cache and without attention_mask)")


class CacheEntry(NamedTuple):
    """What a cache holds for one layer, per token, in slot order: a token's key, value, position, validity and
    state are kept, moved and evicted together (read them by name: entry.keys, entry.state)."""
    keys: torch.Tensor        # (batch, kv_heads, Tk, head_dim): rotated, or raw if the cache is not `rotated`
    values: torch.Tensor      # (batch, kv_heads, Tk, head_dim_v)
    positions: torch.Tensor   # (batch, Tk): each token's position in the text
    valid: torch.Tensor       # (batch, Tk) bool: False at a pad
    state: dict | None = None  # the encoding's token state, name -> (batch, *, Tk, *); None if it keeps none


class CachedKeys(NamedTuple):
    """What a cache hands the attention after an update, for the keys it holds and the new queries."""
    keys: torch.Tensor             # (batch, kv_heads, Tk, head_dim): rotated, or raw if the cache is not `rotated`
    values: torch.Tensor           # (batch, kv_heads, Tk, head_dim_v)
    key_positions: torch.Tensor    # (batch, Tk): the positions the scores must use for the keys
    query_positions: torch.Tensor  # (batch, Tq): ... and for the new queries
    key_valid: torch.Tensor        # (batch, Tk) bool: False at a pad
    state: dict | None = None      # the encoding's token state of every key, name -> (batch, *, Tk, *)


def _entry(held) -> CacheEntry | None:
    """A layer's entry as a CacheEntry (a plain 4-tuple written into `layers`, no state, is read the same way)."""
    return None if held is None else CacheEntry(*held)


_TOKEN_AXES = (("keys", 2), ("values", 2), ("positions", 1), ("valid", 1))  # each tensor's token axis


def _per_tensor(op: str, entries: tuple, *args) -> CacheEntry:
    """One CacheEntry from entries of one layout, tensor by tensor, by one op along each tensor's token axis (2 for
    keys, values and every state tensor (batch, *, T, *); 1 for positions and valid (batch, T)):

        "cat"     the entries' tokens one after the other (torch.cat makes new tensors: nothing given is changed)
        "take"    the tokens in the slots args[0] (a 1-D index), in that order
        "narrow"  args[1] tokens from slot args[0]
        "roll"    the tokens rolled by args[0] slots
    """
    columns = []                                           # (the entries' tensors of one field, its token axis)
    for name, axis in _TOKEN_AXES:
        columns.append((tuple(map(attrgetter(name), entries)), axis))
    state = entries[0].state
    if state is not None:
        for name in state:
            columns.append((tuple(map(itemgetter(name), map(attrgetter("state"), entries))), 2))
    made = []                                              # a loop, not a function per tensor: decoding calls this
    for tensors, axis in columns:                          # a few times per layer and step
        if op == "cat":
            made.append(torch.cat(tensors, axis))
        elif op == "take":
            made.append(tensors[0].index_select(axis, args[0]))
        elif op == "narrow":
            made.append(tensors[0].narrow(axis, args[0], args[1]))
        else:                                              # "roll"
            made.append(tensors[0].roll(args[0], axis))
    return CacheEntry(*made[:4], None if state is None else dict(zip(state, made[4:])))


def _cat(*entries: CacheEntry) -> CacheEntry:
    """The entries' tokens one after the other (torch.cat makes new tensors: nothing given is changed)."""
    return _per_tensor("cat", entries)


def _take(entry: CacheEntry, index: torch.Tensor) -> CacheEntry:
    """The entry's tokens in the slots `index` (1-D), in that order."""
    return _per_tensor("take", (entry,), index)


class KVCache:
    """Keys, values, their positions and which of them are real tokens, per layer; grows by concatenation.

    update(layer, k, v, positions, valid=None, state=None) -> CachedKeys of everything cached in that layer
    so far. k: (batch, kv_heads, T, head_dim), v: (batch, kv_heads, T, head_dim_v); positions (T,) or
    (batch, T) ints on k's device; valid (batch, T) bool (None: all real); state: the encoding's token
    state of the new tokens (`PositionalEncoding.token_state`: name -> (batch, *, T, *) tensors), kept
    with their keys in the layer's entry (`layers[layer].state`) and handed back for every key. rotated=True:
    k arrives already rotated by its position and is kept so (transformers' DynamicCache); rotated=False: k
    arrives unrotated and the caller rotates the returned keys at `key_positions` every step (one set of
    frequencies per step, as dynamic NTK and LongRoPE need; see the module docstring for what it does not fix).
    Positions must continue: a real token's position must exceed every real cached one of its row
    (checked on the CPU, where reading values costs nothing; see _checks.values_are_cheap). New k and v
    keep the cached ones' dtype, device and sizes; num_layers is at most _checks.MAX_LAYERS.
    """

    def __init__(self, num_layers: int, *, rotated: bool = True):
        self.num_layers = _checks.at_most("num_layers", _checks.positive_int("num_layers", num_layers),
                                          _checks.MAX_LAYERS, "one entry per layer")
        self.rotated = _checks.boolean("rotated", rotated)
        self.layers: list = [None] * self.num_layers  # CacheEntry per layer, None before its first update

    @property
    def states(self) -> tuple:
        """Read-only view: each layer's token state (`layers[layer].state`), None where it keeps none."""
        return tuple(None if held is None else _entry(held).state for held in self.layers)

    def __len__(self) -> int:
        """Tokens cached (in layer 0; every layer holds the same number)."""
        return 0 if self.layers[0] is None else _entry(self.layers[0]).keys.shape[-2]

    def next_positions(self) -> torch.Tensor | None:
        """(batch,) the position each row's next token gets: its last real position + 1 (None if empty)."""
        if self.layers[0] is None:
            return None
        held = _entry(self.layers[0])
        return ((held.positions + 1) * held.valid).amax(-1)

    def _check(self, layer, k, v, positions, valid, state=None):
        _checks.index("layer", layer, self.num_layers, "num_layers")
        for name, t in (("k", k), ("v", v)):
            _checks.float_tensor(name, t)
            if t.dim() != 4:
                raise ValueError(f"{name} must have shape (batch, kv_heads, seq, head_dim), got {tuple(t.shape)}")
        _checks.same_device("k", k, v=v)
        if k.shape[:3] != v.shape[:3]:
            raise ValueError(f"k and v must share (batch, kv_heads, seq), got {tuple(k.shape)} and {tuple(v.shape)}")
        batch, _, length, _ = k.shape
        if length == 0:
            raise ValueError(f"k must hold at least one new token (shape (batch, kv_heads, seq >= 1, head_dim)), "
                             f"got {tuple(k.shape)}")
        positions = _checks.positions("positions", positions, seq_len=length, device=k.device, batch=batch)
        positions = positions.expand(batch, length)                             # (T,) or (1, T) -> (B, T)
        valid = (torch.ones(batch, length, dtype=torch.bool, device=k.device) if valid is None
                 else check_mask("valid", valid, shape=(batch, length)))
        _checks.same_device("k", k, valid=valid)
        if _checks.values_are_cheap(positions):
            _refuse_packed_rows(positions, valid)
        held = _entry(self.layers[layer])
        _check_state(layer, state, k, held)
        if held is not None:
            keys, values = held.keys, held.values
            if k.shape[-1] != keys.shape[-1] or v.shape[-1] != values.shape[-1]:
                raise ValueError(f"k must have the cached head size: the cache holds keys of head_dim "
                                 f"{keys.shape[-1]} and values of {values.shape[-1]} in layer {layer}, got k of "
                                 f"{k.shape[-1]} and v of {v.shape[-1]}")
            if k.shape[:2] != keys.shape[:2]:
                raise ValueError(f"k must have the cached (batch, kv_heads) = {tuple(keys.shape[:2])} in layer "
                                 f"{layer}, got {tuple(k.shape[:2])}")
            _like_cached(layer, keys, values, k, v)
            if _checks.values_are_cheap(positions):
                last = torch.where(held.valid, held.positions, -1).amax(-1)  # (B,) last real cached position
                first = torch.where(valid, positions, _checks.MAX_POSITION).amin(-1)
                back = (first <= last) & valid.any(-1)
                if bool(back.any()):
                    row = int(back.nonzero()[0, 0])
                    raise ValueError(f"positions must continue after the cached ones: row {row} has cached "
                                     f"positions up to {int(last[row])}, got {int(first[row])}; positions never "
                                     f"go backwards in a cache (start a new cache to rewrite the past)")
        return positions, valid

    def update(self, layer: int, k: torch.Tensor, v: torch.Tensor, positions: torch.Tensor,
               valid: torch.Tensor | None = None, *, state: dict | None = None) -> CachedKeys:
        positions, valid = self._check(layer, k, v, positions, valid, state)
        new = k.shape[-2]
        held, entry = _entry(self.layers[layer]), CacheEntry(k, v, positions, valid, state)
        if held is not None:  # torch.cat makes new tensors: the caller's k and v stay as they were
            entry = _cat(held, entry)
        self.layers[layer] = entry
        keys, values, positions, valid, state = entry
        return CachedKeys(keys, values, positions, positions[:, positions.shape[-1] - new:], valid, state)


class SinkWindowCache(KVCache):
    """StreamingLLM's cache (Xiao et al. 2023): the first `num_sinks` tokens plus the last `window`.

    Keys are kept UNROTATED (rotated=False): after an eviction the kept keys are renumbered 0 .. len-1,
    their slot in the cache, and the attention rotates them there every step, with the new queries at
    the last slots. `text_positions(layer)` gives where the kept tokens sit in the text. At most
    `window` tokens per update (a new token must not be evicted by its own step). No padding.
    """

    def __init__(self, num_layers: int, *, num_sinks: int = 4, window: int = 16):
        super().__init__(num_layers, rotated=False)
        self.num_sinks = _checks.positive_int("num_sinks", num_sinks, allow_zero=True)
        self.window = _checks.positive_int("window", window)

    def update(self, layer, k, v, positions, valid=None, *, state=None) -> CachedKeys:
        if valid is not None:
            raise ValueError("valid: SinkWindowCache takes no padding (one stream per row)")
        if isinstance(k, torch.Tensor) and k.dim() == 4 and k.shape[-2] > self.window:
            raise ValueError(f"k: at most window={self.window} new tokens per update, got {k.shape[-2]}")
        super().update(layer, k, v, positions, state=state)
        entry = self.layers[layer]
        held, device = entry.keys.shape[-2], entry.keys.device
        if held > self.num_sinks + self.window:  # evict the middle: keep sinks + the last `window`, whole entries
            keep = torch.cat((torch.arange(self.num_sinks, device=device),
                              torch.arange(held - self.window, held, device=device)))
            entry = self.layers[layer] = _take(entry, keep)
        slots = torch.arange(entry.keys.shape[-2], device=device).expand(entry.keys.shape[0], -1)  # (B, Tk)
        return CachedKeys(entry.keys, entry.values, slots, slots[:, slots.shape[-1] - k.shape[-2]:], entry.valid,
                          entry.state)

    def text_positions(self, layer: int = 0) -> torch.Tensor | None:
        """(batch, Tk): the positions in the text of the tokens kept in `layer` (None if empty)."""
        layer = _checks.index("layer", layer, self.num_layers, "num_layers")
        return None if self.layers[layer] is None else _entry(self.layers[layer]).positions


# ------------------------------------------------------------------------------ attention over a cache
def cache_mask_bias(key_valid: torch.Tensor, q_len: int, dtype: torch.dtype, *, window: int | None = None
                    ) -> torch.Tensor:
    """(batch, 1, Tq, Tk) bias, 0 where a new query may attend a cached key and -inf elsewhere
    (`attention.causal_mask` as a bias, for code that adds its own terms to it, as llama_decode_step does).

    The queries are the last Tq of the Tk slots; query i sees slots j <= i (causal, by slot) that hold
    real tokens. A pad query sees only itself, so its row is never all -inf (its output is unused).
    window: a sliding window of w slots, transformers' rule (masking_utils.sliding_window_overlay):
    also i - w < j, at the prefill and at every step past the window; None: every earlier slot."""
    key_valid = _check_bias(key_valid, q_len, dtype)
    if window is not None:
        window = _checks.positive_int("window", window)
    allowed = causal_mask(q_len, key_valid.shape[-1], device=key_valid.device, window=window, key_valid=key_valid)
    bias = torch.zeros(allowed.shape, dtype=dtype, device=key_valid.device)      # (B, Tq, Tk)
    return bias.masked_fill(~allowed, float("-inf"))[:, None]


def decode_step(model, idx: torch.Tensor, cache: KVCache, *, positions: torch.Tensor | None = None,
                attention_mask: torch.Tensor | None = None, window: int | None = None) -> torch.Tensor:
    """A posenc_lib TinyLM run on the new tokens idx (batch, T) with a cache: logits (batch, T, vocab).

    positions: (T,) or (batch, T) ints; default: counted from `attention_mask` and the cache, as
    generate() counts them (`position_ids_from_mask`; no mask: the cache's next position onwards).
    attention_mask: (batch, T) 0/1 for idx's tokens only (the cache remembers the earlier ones;
    transformers passes the mask of the whole history instead). The cache must have model's num_layers.
    window: sliding-window attention in every layer, as transformers masks it (query i sees slots
    i - window < j <= i; `cache_mask_bias`), at the prefill and past the window; None: full attention.
    A SinkWindowCache keeps its own window (sinks + the last tokens), so it takes no `window`."""
    if not isinstance(model, TinyLM):
        raise TypeError(f"model must be a posenc_lib TinyLM, got {type(model).__name__} (for a transformers Llama: "
                        f"llama_decode_step)")
    idx = _checks.token_ids("idx", idx, model.vocab_size)
    _checks.same_device("model", model.token_embedding.weight, idx=idx)
    if not isinstance(cache, KVCache) or cache.num_layers != len(model.blocks):
        raise ValueError(f"cache must be a KVCache with num_layers={len(model.blocks)} (one per block), got {cache!r}")
    if window is not None:
        window = _checks.positive_int("window", window)
    if window is not None and isinstance(cache, SinkWindowCache):
        raise ValueError("window: a SinkWindowCache evicts by its own window (num_sinks + window slots, counted in "
                         "the cache); decode_step's sliding window is for a KVCache, which keeps every slot")
    valid = _step_mask(attention_mask, idx)
    if positions is not None:
        positions = _checks.positions("positions", positions, seq_len=idx.shape[1], device=idx.device,
                                      batch=idx.shape[0])
    if positions is None:
        start = cache.next_positions()
        if valid is not None:
            positions = position_ids_from_mask(valid, start)
        else:
            first = torch.zeros(idx.shape[0], dtype=torch.long, device=idx.device) if start is None else start
            positions = first[:, None] + torch.arange(idx.shape[1], device=idx.device)
    x = model.token_embedding(idx)                                               # (B, T, D)
    x = model.encoding.add_to_input(x, positions)                               # learned: positions < max_len
    for layer, block in enumerate(model.blocks):
        x = block(x, positions, cache=cache, layer=layer, valid=valid, window=window)
    return model.head(model.ln_f(x))


# ------------------------------------------------------------------------------ transformers' models, our positions
@dataclass(frozen=True)
class DecodeFamily:
    """A transformers model class that `llama_decode_step` runs, and where its layer differs from Llama's.

    projections: "q/k/v_proj" (three matrices), or "qkv_proj (fused)" (one matrix, rows q | k | v; Phi-3).
    qk_norm: None; "per head" (an RMSNorm over head_dim on q and k, before RoPE: Qwen3, Gemma 3) or
    "whole projection" (over all heads' dims at once, before the split into heads: OLMo 2).
    norms: the decoder layer's norms by their attribute names, (before attention, after attention, before
    the MLP, after the MLP), None where there is none: Llama's pre-norm, OLMo 2's post-norm, Gemma 3's both.
    windows: where the model reads its sliding windows (the loop reads them through `configs.from_hf_config`).
    refused: (config key, why) pairs: a config where that key is set (not None/False) is refused.
    source: transformers' file the record was read from (5.24)."""
    model_class: str
    projections: str
    qk_norm: str | None
    norms: tuple
    windows: str
    source: str
    refused: tuple = ()


_PRE_NORM = ("input_layernorm", None, "post_attention_layernorm", None)
_SCALINGS_REFUSED = ("dynamic", "longrope")  # frequencies that depend on the length: generate() keeps state

DECODE_FAMILIES = (
    DecodeFamily("LlamaForCausalLM", "q/k/v_proj", None, _PRE_NORM, "none",
                 "models/llama/modeling_llama.py"),
    DecodeFamily("MistralForCausalLM", "q/k/v_proj", None, _PRE_NORM,
                 "sliding_window (all layers)", "models/mistral/modeling_mistral.py"),
    DecodeFamily("Qwen2ForCausalLM", "q/k/v_proj", None, _PRE_NORM,
                 "layer_types (max_window_layers)", "models/qwen2/modeling_qwen2.py"),
    DecodeFamily("Qwen3ForCausalLM", "q/k/v_proj", "per head", _PRE_NORM,
                 "layer_types (max_window_layers)", "models/qwen3/modeling_qwen3.py"),
    DecodeFamily("Phi3ForCausalLM", "qkv_proj (fused)", None, _PRE_NORM, "sliding_window (all layers)",
                 "models/phi3/modeling_phi3.py"),
    DecodeFamily("Olmo2ForCausalLM", "q/k/v_proj", "whole projection",
                 (None, "post_attention_layernorm", None, "post_feedforward_layernorm"), "none",
                 "models/olmo2/modeling_olmo2.py"),
    DecodeFamily("Gemma3ForCausalLM", "q/k/v_proj", "per head",
                 ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                  "post_feedforward_layernorm"), "layer_types (sliding_window_pattern)",
                 "models/gemma3/modeling_gemma3.py",
                 refused=(("attn_logit_softcapping", "tanh soft-capping of the scores"),
                          ("final_logit_softcapping", "tanh soft-capping of the logits"),
                          ("use_bidirectional_attention", "bidirectional attention"))),
)


def decode_families_text() -> str:
    """The family table, one line per record, as `llama_decode_step`'s docstring lists it."""
    def norms(f):  # before (attention, MLP), after (attention, MLP)
        return {(True, False): "pre-norm", (False, True): "post-norm", (True, True): "pre- and post-norm"}[
            (f.norms[0] is not None, f.norms[1] is not None)]
    return "\n".join(f"{f.model_class}: {f.projections}, q/k norm {f.qk_norm or 'none'}, {norms(f)}, "
                     f"windows: {f.windows}" for f in DECODE_FAMILIES)


def decode_family(model) -> DecodeFamily:
    """The record of model's class in DECODE_FAMILIES, or a ValueError naming the class and the ones it runs.
    The class must be the record's exactly (a subclass may change the forward)."""
    name = type(model).__name__
    for family in DECODE_FAMILIES:
        if name == family.model_class and type(model).__module__.startswith("transformers."):
            return family
    runs = ", ".join(f.model_class for f in DECODE_FAMILIES)
    raise ValueError(f"model: {name} is not in llama_decode_step's table (DECODE_FAMILIES): it runs {runs} only; "
                     f"another layer (its norms, projections, score terms) would give wrong logits without a word")


def _refuse_config(family: DecodeFamily, config, layout) -> None:
    """A config of a family in the table that the loop does not reproduce, refused naming what."""
    for key, why in family.refused:
        if getattr(config, key, None) not in (None, False):
            raise ValueError(f"model: {family.model_class} with config.{key} = {getattr(config, key)!r} ({why}) is "
                             f"not reproduced by llama_decode_step")
    for layer in layout.layers:
        if layer.attention == "chunked":
            raise ValueError(f"model: {family.model_class} layer {layer.index} has chunked attention, which "
                             f"llama_decode_step does not mask")
        if layer.rope_type in _SCALINGS_REFUSED:
            raise ValueError(f"model: {family.model_class} uses rope_type {layer.rope_type!r}, whose frequencies "
                             f"depend on the length: transformers keeps state across calls (dynamic: the largest "
                             f"length seen; Phi-3 recomputes its cache at original_max_position_embeddings + 1), which "
                             f"llama_decode_step does not reproduce")


def _qkv(family: DecodeFamily, a, h: torch.Tensor, heads: int, kv_heads: int):
    """q (B, H, T, hd), k and v (B, H_kv, T, hd) of attention module `a` for the normed input h (B, T, hidden):
    the family's projections and q/k norm, before RoPE."""
    B, T, _ = h.shape
    hd = a.head_dim
    if family.projections == "qkv_proj (fused)":                                         # Phi-3: one matrix, q | k | v
        q, k, v = a.qkv_proj(h).split((heads * hd, kv_heads * hd, kv_heads * hd), dim=-1)
    else:
        q, k, v = a.q_proj(h), a.k_proj(h), a.v_proj(h)
    if family.qk_norm == "whole projection":                                     # OLMo 2: over all heads' dims
        q, k = a.q_norm(q), a.k_norm(k)
    q, k, v = (t.view(B, T, -1, hd) for t in (q, k, v))                          # (B, T, heads, hd)
    if family.qk_norm == "per head":                                             # Qwen3, Gemma 3: over head_dim
        q, k = a.q_norm(q), a.k_norm(k)
    return q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)


def _norm(block, name):
    return (lambda x: x) if name is None else getattr(block, name)


def llama_decode_step(model, input_ids: torch.Tensor, cache: KVCache, positions: torch.Tensor,
                      attention_mask: torch.Tensor | None = None) -> torch.Tensor:
    """A transformers causal LM from the table below run with posenc_lib's positions, cache and attention.

    Its own weights, norms, q/k norms and MLPs; the rotation (per layer, from its config: `from_hf_config`),
    the cache, the sliding windows (transformers' rule, `cache_mask_bias`) and the attention are posenc_lib's.
    input_ids (batch, T) new tokens, positions (T,) or (batch, T), attention_mask (batch, T) 0/1 for those
    tokens. Returns logits (batch, T, vocab). For checking that the positions are right against the model's
    own generate() (tests/test_inference.py goes over every family), not for speed. The families
    (DECODE_FAMILIES; any other class is refused by name, and so are a family's configs it does not
    reproduce: soft-capping, chunked attention, dynamic NTK and LongRoPE):

    LlamaForCausalLM: q/k/v_proj, q/k norm none, pre-norm, windows: none
    MistralForCausalLM: q/k/v_proj, q/k norm none, pre-norm, windows: sliding_window (all layers)
    Qwen2ForCausalLM: q/k/v_proj, q/k norm none, pre-norm, windows: layer_types (max_window_layers)
    Qwen3ForCausalLM: q/k/v_proj, q/k norm per head, pre-norm, windows: layer_types (max_window_layers)
    Phi3ForCausalLM: qkv_proj (fused), q/k norm none, pre-norm, windows: sliding_window (all layers)
    Olmo2ForCausalLM: q/k/v_proj, q/k norm whole projection, post-norm, windows: none
    Gemma3ForCausalLM: q/k/v_proj, q/k norm per head, pre- and post-norm, windows: layer_types (sliding_window_pattern)

    A packed row (positions restarting) is refused by the cache, and a SinkWindowCache here: transformers
    5.24 has no sink cache to reproduce (decode_step runs one on a TinyLM)."""
    input_ids, positions = _check_llama_step(model, input_ids, positions)
    family = decode_family(model)
    body, config = model.model, model.config
    if isinstance(cache, SinkWindowCache):
        raise ValueError("cache: a SinkWindowCache (StreamingLLM) has no counterpart in transformers 5.24 "
                         "(its SinkCache was removed in v5), so llama_decode_step has nothing to reproduce with "
                         "it: pass a KVCache (decode_step runs a TinyLM with a SinkWindowCache)")
    if not isinstance(cache, KVCache) or not cache.rotated or cache.num_layers != config.num_hidden_layers:
        raise ValueError(f"cache must be a KVCache(num_layers={config.num_hidden_layers}, rotated=True), got {cache!r}")
    layout = from_hf_config(config.to_dict())
    _refuse_config(family, config, layout)
    valid = _step_mask(attention_mask, input_ids)
    x = body.embed_tokens(input_ids)                                             # (B, T, hidden); Gemma: scaled
    T = x.shape[1]
    heads, kv_heads = config.num_attention_heads, config.num_key_value_heads
    for i, block in enumerate(body.layers[: config.num_hidden_layers]):
        a, rope = block.self_attn, layout.layer(i)
        before_attn, after_attn, before_mlp, after_mlp = (_norm(block, n) for n in family.norms)
        q, k, v = _qkv(family, a, before_attn(x), heads, kv_heads)
        q, k = rope.apply(q, positions), rope.apply(k, positions)
        got = cache.update(i, k, v, positions, valid)
        groups = heads // kv_heads                                               # grouped-query attention
        keys, values = got.keys.repeat_interleave(groups, 1), got.values.repeat_interleave(groups, 1)
        q = q * (rope.score_scale * math.sqrt(q.shape[-1]))                      # attention() divides by sqrt(hd)
        window = rope.window if rope.attention == "sliding" else None
        out = attention(q, keys, values, bias=cache_mask_bias(got.key_valid, T, q.dtype, window=window))
        x = x + after_attn(a.o_proj(out.transpose(1, 2).reshape(*x.shape[:2], -1)))
        x = x + after_mlp(block.mlp(before_mlp(x)))
    return model.lm_head(body.norm(x))


def greedy_decode(model, input_ids: torch.Tensor, max_new_tokens: int,
                  attention_mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Greedy generation with `llama_decode_step`, positions counted as generate() counts them: the prompt
    (left-padded, `attention_mask` 0 at the pads) as one prefill, then one token a step at each row's next
    position. Returns (new tokens (batch, max_new_tokens), their logits (batch, max_new_tokens, vocab)),
    what generate(..., do_sample=False, output_logits=True) returns as sequences[:, prompt:] and logits."""
    decode_family(model)                                                          # a class of the table, or refused
    steps = _checks.positive_int("max_new_tokens", max_new_tokens)
    mask = (torch.ones_like(input_ids, dtype=torch.bool) if attention_mask is None
            else check_mask("attention_mask", attention_mask, shape=input_ids.shape))
    cache = KVCache(model.config.num_hidden_layers)
    new, positions, tokens, logits = input_ids, position_ids_from_mask(mask), [], []
    valid = mask
    for _ in range(steps):
        last = llama_decode_step(model, new, cache, positions, attention_mask=valid)[:, -1]   # (B, vocab)
        new = last.argmax(-1, keepdim=True)                                                # (B, 1)
        tokens.append(new)
        logits.append(last)
        positions, valid = cache.next_positions()[:, None], torch.ones_like(new, dtype=torch.bool)
    return torch.cat(tokens, 1), torch.stack(logits, 1)


# ------------------------------------------------------------------------------ what transformers infers for a batch
def packed_row_gaps(model, documents, *, use_cache: bool | None = None, batch_mate: torch.Tensor | None = None,
                    four_d_mask: bool = False) -> list[float]:
    """A transformers causal LM run on `documents` (1-D token tensors) packed into one row, positions restarting
    per document (`packed_position_ids`), against each document run alone: the largest |logit difference| per
    document. use_cache: passed to the model (None: its config's, True by default). batch_mate: a second row,
    shorter than the packed one, left-padded beside it; then the call passes an `attention_mask`, as a padded
    batch does. four_d_mask: pass `document_mask` as a (1, 1, T, T) attention_mask (True = may attend), which
    transformers uses as given. transformers keeps the documents apart by itself only when it infers their
    mask from position_ids, which masking_utils._preprocess_mask_arguments does without a cache and without
    attention_mask."""
    if four_d_mask and batch_mate is not None:
        raise ValueError("four_d_mask: the 4-D document mask is for the packed row alone, not with a batch_mate")
    row = torch.cat(list(documents))                                              # (T,)
    positions = packed_position_ids([len(d) for d in documents], device=row.device)
    ids, kwargs = row[None], {"position_ids": positions[None]}
    if four_d_mask:
        kwargs["attention_mask"] = document_mask([len(d) for d in documents], device=row.device)[None, None]
    if batch_mate is not None:                                                    # left-pad the mate to the row
        pads = row.numel() - batch_mate.numel()
        mask = torch.ones(2, row.numel(), dtype=torch.long, device=row.device)
        mask[1, :pads] = 0
        ids = torch.stack((row, torch.cat((batch_mate.new_zeros(pads), batch_mate))))
        kwargs = {"attention_mask": mask, "position_ids": torch.stack((positions, position_ids_from_mask(mask)[1]))}
    packed = model(ids, use_cache=use_cache, **kwargs).logits[0]                  # (T, vocab)
    alone = torch.cat([model(d[None]).logits[0] for d in documents])
    document = positions.eq(0).cumsum(0) - 1                                      # (T,) document of each token
    return [float((packed - alone)[document == d].abs().max()) for d in range(len(documents))]


def batch_mates_gap(model, short: torch.Tensor, long: torch.Tensor) -> float:
    """The largest |logit difference| of the prompt `short` (1-D tokens) run alone and run left-padded in one
    batch beside the longer prompt `long`, positions from the mask (generate()'s rule). 0 up to rounding for a
    static RoPE; not for a scaling that depends on the length, which transformers decides once per call from
    the largest position of the whole batch (modeling_rope_utils.dynamic_rope_update)."""
    pads = long.numel() - short.numel()
    mask = torch.ones(2, long.numel(), dtype=torch.long, device=long.device)
    mask[0, :pads] = 0
    ids = torch.stack((torch.cat((short.new_zeros(pads), short)), long))
    together = model(ids, attention_mask=mask, position_ids=position_ids_from_mask(mask)).logits[0, pads:]
    return float((together - model(short[None]).logits[0]).abs().max())


# ------------------------------------------------------------------------------ the checks of the steps' arguments
def _like_cached(layer: int, keys, values, k, v) -> None:
    """New keys and values must have the cached ones' dtype and device (torch.cat would promote or fail)."""
    for name, new, held in (("k", k, keys), ("v", v, values)):
        if new.dtype != held.dtype:
            raise ValueError(f"{name} must have the cached dtype {held.dtype} in layer {layer}, got {new.dtype}")
        _checks.same_device("the cache", held, **{name: new})


def _check_bias(key_valid, q_len, dtype) -> torch.Tensor:
    """cache_mask_bias's arguments: key_valid (batch, Tk) 0/1 or bool, 1 <= q_len <= Tk, a floating dtype."""
    key_valid = check_mask("key_valid", key_valid)
    q_len = _checks.positive_int("q_len", q_len)
    _checks.at_most("q_len", q_len, key_valid.shape[-1], "the queries are the last q_len of key_valid's Tk slots")
    if _checks.float_dtype("dtype", dtype) is None:
        raise TypeError("dtype must be a floating-point torch.dtype (the bias's), got None")
    return key_valid


def _check_state(layer: int, state, k, entry: CacheEntry | None) -> None:
    """A token state: None, or a dict name -> floating tensor (batch, *, T, *) with k's batch and T on k's device;
    a layer keeps a state for every token or for none: once it holds an entry, every update of it brings a state
    iff the entry has one, with the same names, sizes (but T) and dtypes."""
    held = None if entry is None else entry.state
    if state is None and held is None:
        return
    if entry is not None and held is None:
        raise ValueError(f"state must be None in layer {layer}: its cached tokens keep no token state, got "
                         f"{sorted(state) if isinstance(state, dict) else type(state).__name__} (a layer keeps a "
                         f"state for every token or for none; start a new cache)")
    if not isinstance(state, dict):
        held_here = "" if held is None else f" (layer {layer} holds one)"
        raise TypeError(f"state must be a dict name -> tensor, the encoding's token_state{held_here}, got "
                        f"{type(state).__name__}")
    if held is not None and sorted(state) != sorted(held):
        raise ValueError(f"state must have the cached names {sorted(held)} in layer {layer}, got {sorted(state)}")
    for name, t in state.items():
        _checks.float_tensor(f"state[{name!r}]", t)
        if t.dim() != 4 or t.shape[0] != k.shape[0] or t.shape[2] != k.shape[2]:
            raise ValueError(f"state[{name!r}] must have shape (batch={k.shape[0]}, *, seq={k.shape[2]}, *), the "
                             f"tokens on dim 2 as in k, got {tuple(t.shape)}")
        _checks.same_device("k", k, **{f"state[{name!r}]": t})
        if held is not None and (t.shape[1] != held[name].shape[1] or t.shape[3] != held[name].shape[3]
                                 or t.dtype != held[name].dtype):
            raise ValueError(f"state[{name!r}] must match the cached one (shape (batch, {held[name].shape[1]}, seq, "
                             f"{held[name].shape[3]}), {held[name].dtype}) in layer {layer}, got {tuple(t.shape)}, "
                             f"{t.dtype}")


def _step_mask(attention_mask, ids) -> torch.Tensor | None:
    """A step's attention_mask (batch, T) for ids (batch, T), on ids' device, as bools (None: every token real)."""
    if attention_mask is None:
        return None
    valid = check_mask("attention_mask", attention_mask, shape=ids.shape)
    _checks.same_device("the token ids", ids, attention_mask=valid)
    return valid


def _check_llama_step(model, input_ids, positions) -> tuple:
    """llama_decode_step's model, token ids (in the vocabulary, on the embedding's device) and positions (on
    their device): (input_ids as int64, positions as int64)."""
    config, embed = getattr(model, "config", None), getattr(model, "get_input_embeddings", None)
    if not isinstance(model, torch.nn.Module) or config is None or embed is None:
        raise TypeError(f"model must be a transformers causal LM (LlamaForCausalLM ...), got {type(model).__name__}")
    input_ids = _checks.token_ids("input_ids", input_ids, config.vocab_size)
    _checks.same_device("model", embed().weight, input_ids=input_ids)
    positions = _checks.positions("positions", positions, seq_len=input_ids.shape[1], device=input_ids.device,
                                  batch=input_ids.shape[0])
    return input_ids, positions


# ============================================================================== Serving (notebook 13)
# Positions one level above a generate() loop: what serving systems do to a cache. Every function here
# returns new tensors (nothing given is modified) made on the input's device.
#   rerotate_keys         keys cached rotated at p, turned to p + offset: R(a) R(b) = R(a + b)
#   context_shift         llama.cpp's shift of a full cache: keep n_keep, drop n_discard, move the rest left
#   RingBufferCache       Mistral's rolling buffer: W slots, the token counted n in slot n % W, text positions
#   window_mask_bias      the sliding-window mask from positions (a ring holds its keys out of order)
#   tree_positions/_mask  a speculative-decoding token tree: position = depth, each node sees its ancestors
#   usable_context_length what a config's lengths and scaling say, and what max_position_embeddings x factor says
from .rope import apply_rope as _apply_rope  # noqa: E402  (kept inside this block: see its heading)


def _an_int(name: str, value) -> int:
    """A Python int (a shift or an offset may be negative), within +-MAX_POSITION."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} ({value!r})")
    if abs(value) > _checks.MAX_POSITION:
        raise ValueError(f"{name} must lie within +-2**53 (angles are computed in float64), got {value}")
    return value


def rerotate_keys(keys: torch.Tensor, offset: int, *, base: float = 10000.0, inv_freq: torch.Tensor | None = None,
                  layout: str = "half") -> torch.Tensor:
    """Keys cached rotated at their positions p, turned to p + offset without recomputing them.

    RoPE's rotations compose, R(a) R(b) = R(a + b), so turning a key rotated at p by R(offset) gives the
    key rotated at p + offset: a context shift uses offset = -n_discard, a cached chunk moved from
    offset a to b uses b - a. keys: (..., seq, head_dim) float; the rotation's settings as in
    `apply_rope` (base or inv_freq, layout), which must be those the keys were rotated with. No
    attention_factor: YaRN's and LongRoPE's scale multiplied the key once, when it was made; a shift
    turns it and must not scale it again. Returns a new tensor of keys' shape, dtype and device (half
    precision is turned in float32 and rounded once: float rounding, about one unit in the last place)."""
    _checks.float_tensor("keys", keys)
    if keys.dim() < 2:
        raise ValueError(f"keys must have shape (..., seq, head_dim), got {tuple(keys.shape)}")
    offset = _an_int("offset", offset)
    turn = torch.full((keys.shape[-2],), offset, dtype=torch.long, device=keys.device)   # (seq,) every key by offset
    return _apply_rope(keys, turn, base=base, inv_freq=inv_freq, layout=layout)


def context_shift(cache: KVCache, n_discard: int, *, n_keep: int = 0, base: float = 10000.0,
                  inv_freq: torch.Tensor | None = None, layout: str = "half") -> KVCache:
    """llama.cpp's context shift on a cache of rotated keys (`KVCache(rotated=True)`, no padding).

    Keep the first `n_keep` cached tokens, drop the next `n_discard`, and move every later one left by
    n_discard: its key turned by R(-n_discard) (`rerotate_keys`), its position lowered by n_discard, its
    value (and the encoding's token state) as it was. The next token then gets the position after the
    last kept one. Exact for the scores of one layer; in a stack, the kept tokens' hidden states (the next
    layers' keys and values) were computed with the dropped tokens in their context, which no rotation
    undoes (notebook 13).
    One rotation for every layer (base or inv_freq, layout: those the keys were rotated with).
    Returns a new KVCache; the given one is left as it was."""
    if type(cache) is not KVCache or not cache.rotated:
        raise TypeError(f"cache must be a KVCache(rotated=True) (keys cached rotated at their text positions), "
                        f"got {type(cache).__name__}" + ("" if type(cache) is not KVCache else " with rotated=False"))
    n_discard = _checks.positive_int("n_discard", n_discard)
    n_keep = _checks.positive_int("n_keep", n_keep, allow_zero=True)
    if n_keep + n_discard > len(cache):
        raise ValueError(f"n_keep + n_discard must be at most the {len(cache)} cached tokens, got "
                         f"{n_keep} + {n_discard} = {n_keep + n_discard}")
    valid = _entry(cache.layers[0]).valid
    if _checks.values_are_cheap(valid) and not bool(valid.all()):
        raise ValueError("cache: context_shift takes a cache without padding (rows shift by the same slots); "
                         "shift a padded batch one row at a time")
    start, device = n_keep + n_discard, valid.device
    kept = torch.cat((torch.arange(n_keep, device=device), torch.arange(start, len(cache), device=device)))
    shifted = KVCache(cache.num_layers, rotated=True)
    for layer, held in enumerate(cache.layers):
        entry = _take(_entry(held), kept)       # whole entries: key, value, position, validity, state
        keys, positions = entry.keys, entry.positions
        moved = rerotate_keys(keys[..., n_keep:, :], -n_discard, base=base, inv_freq=inv_freq, layout=layout)
        shifted.layers[layer] = entry._replace(keys=torch.cat((keys[..., :n_keep, :], moved), -2),
                                               positions=torch.cat((positions[:, :n_keep],
                                                                    positions[:, n_keep:] - n_discard), -1))
    return shifted


class RingBufferCache(KVCache):
    """Mistral's rolling buffer for a sliding window of `window` tokens: W = window slots per layer.

    The n-th token written (counting from 0) goes to slot n % W, over the token n - W, which no later
    query may see: a query at position p sees the keys at p - W < position <= p (transformers'
    sliding-window mask), itself and W - 1 past ones. Keys are cached ROTATED at their TEXT positions
    (RoPE needs the distance in the text; the slot only says where a key is stored). For a stream that
    starts at position 0, slot = position % W.

    update(layer, k, v, positions) returns the keys the new tokens may need, in text order: the held
    ones still inside the first new token's window, then the new ones (a decoding step: W - 1 past keys
    plus the new one, as transformers' DynamicSlidingWindowLayer returns them). Build the mask from the
    returned positions with `window_mask_bias` (causal by slot is wrong once a prefill is longer than W).
    Between steps a layer holds min(tokens so far, W) keys in slot order; `slot_positions(layer)` gives
    the text position in each slot. Positions are given as (seq,) (one stream, shared by every row of
    the batch) and continue by one from step to step; no padding.
    """

    def __init__(self, num_layers: int, *, window: int):
        super().__init__(num_layers, rotated=True)
        self.window = _checks.positive_int("window", window)
        self.written = [0] * self.num_layers          # tokens written so far, per layer (a Python int: no sync)

    def update(self, layer, k, v, positions, valid=None, *, state=None) -> CachedKeys:
        if valid is not None:
            raise ValueError("valid: RingBufferCache takes no padding (one stream per row)")
        if isinstance(positions, torch.Tensor) and positions.dim() != 1:
            raise ValueError(f"positions must have shape (seq,): one stream, the same positions in every row, "
                             f"got {tuple(positions.shape)}")
        positions, valid = self._check(layer, k, v, positions, None, state)       # (B, T) each
        if self.layers[layer] is not None and _checks.values_are_cheap(positions):
            expected = int(_entry(self.layers[layer]).positions[0].max()) + 1
            if int(positions[0, 0]) != expected:
                raise ValueError(f"positions must continue by one: the cache's last position is {expected - 1}, "
                                 f"got {int(positions[0, 0])} (a ring buffer drops the token n - W by counting)")
        W, n, T = self.window, self.written[layer], k.shape[-2]
        new = CacheEntry(k, v, positions, valid, state)   # whole entries go through the slots, state included
        held = _entry(self.layers[layer]) or _per_tensor("narrow", (new,), 0, 0)
        if n >= W:                                      # slot order -> text order: the oldest, n - W, is in slot n % W
            held = _per_tensor("roll", (held,), -(n % W))
        drop = 1 if n >= W else 0                       # the token n - W: outside the first new token's window
        seen = _cat(_per_tensor("narrow", (held,), drop, held.keys.shape[2] - drop), new)
        kept = min(n + T, W)
        first = n + T - kept                            # the count of the oldest token kept: it goes to slot first % W
        both = _cat(held, new)
        self.layers[layer] = _per_tensor("roll", (_per_tensor("narrow", (both,), both.keys.shape[2] - kept, kept),),
                                         first % W)
        self.written[layer] = n + T
        return CachedKeys(seen.keys, seen.values, seen.positions, positions, seen.valid, seen.state)

    def slot_positions(self, layer: int = 0) -> torch.Tensor | None:
        """(batch, slots): the text position of the key in each slot of `layer` (None if empty)."""
        return None if self.layers[layer] is None else _entry(self.layers[layer]).positions


def window_mask_bias(query_positions: torch.Tensor, key_positions: torch.Tensor, window: int,
                     dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """(batch, 1, Tq, Tk) bias: 0 where the query at position q may see the key at position k under a
    sliding window of `window` tokens, q - window < k <= q (transformers' causal mask with its
    sliding_window_overlay), -inf elsewhere. Read from the positions, so the keys may come in any order
    (a ring buffer's slots). query_positions (batch, Tq), key_positions (batch, Tk): ints on one device."""
    window = _checks.positive_int("window", window)
    _checks.float_dtype("dtype", dtype)
    query_positions = _checks.position_values("query_positions", query_positions)
    key_positions = _checks.position_values("key_positions", key_positions)
    if query_positions.dim() != 2 or key_positions.dim() != 2 or query_positions.shape[0] != key_positions.shape[0]:
        raise ValueError(f"query_positions and key_positions must have shapes (batch, Tq) and (batch, Tk), got "
                         f"{tuple(query_positions.shape)} and {tuple(key_positions.shape)}")
    _checks.same_device("query_positions", query_positions, key_positions=key_positions)
    q, k = query_positions[:, :, None], key_positions[:, None, :]                # (B, Tq, 1), (B, 1, Tk)
    allowed = (k <= q) & (k > q - window)
    bias = torch.zeros(allowed.shape, dtype=dtype, device=allowed.device)
    return bias.masked_fill(~allowed, float("-inf"))[:, None]


def _parents(parents) -> list:
    """A token tree as parent indices: parents[i] is the node i's parent (an earlier node) or -1 for a root."""
    if isinstance(parents, torch.Tensor):
        parents = _checks.int_tensor("parents", parents).tolist()
    if not isinstance(parents, (list, tuple)) or not parents:
        raise TypeError(f"parents must be a non-empty list of ints (the parent of each node, -1 for a root), "
                        f"got {parents!r:.60}")
    for i, p in enumerate(parents):
        if isinstance(p, bool) or not isinstance(p, int):
            raise TypeError(f"parents[{i}] must be an int, got {type(p).__name__} ({p!r})")
        if not -1 <= p < i:
            raise ValueError(f"parents[{i}] must be -1 (a root) or an earlier node in [0, {i}), got {p}: list a "
                             f"node after its parent")
    return list(parents)


def token_tree(branching: int, levels: int) -> list:
    """The parents list of a full token tree: one root, then `levels` - 1 levels below it, each node with
    `branching` children, in breadth-first order. token_tree(2, 3) -> [-1, 0, 0, 1, 1, 2, 2]."""
    branching = _checks.positive_int("branching", branching)
    levels = _checks.positive_int("levels", levels)
    if branching ** (levels - 1) > 4096:
        raise ValueError(f"branching ** (levels - 1) must be at most 4096 leaves, got {branching} ** {levels - 1}")
    parents, previous = [-1], [0]                       # previous: the nodes of the level above
    for _ in range(levels - 1):
        first = len(parents)
        parents += [p for p in previous for _ in range(branching)]
        previous = list(range(first, len(parents)))
    return parents


def tree_positions(parents, *, start: int = 0, device=None) -> torch.Tensor:
    """(N,) int64: the position of each node of a token tree verified in one forward pass (speculative
    decoding): start + its depth (a root at `start`, the position after the verified prefix). Siblings,
    the alternatives for one next token, share a position; numbering the nodes in their flattened
    order instead puts a child as many positions away from its parent as there are nodes between them."""
    parents = _parents(parents)
    start = _checks.positive_int("start", start, allow_zero=True)
    depth = []
    for p in parents:
        depth.append(0 if p < 0 else depth[p] + 1)
    return torch.tensor(depth, dtype=torch.long, device=device) + start


def tree_mask(parents, *, prefix_len: int = 0, device=None) -> torch.Tensor:
    """(P + N, P + N) bool, True where query i may attend key j, for a verified prefix of P = prefix_len
    tokens followed by the N tree nodes: the prefix is causal, every node sees the whole prefix and, in
    the tree, only itself and its ancestors (a node must not see its siblings nor their subtrees: they are
    other continuations). With positions `tree_positions(parents, start=P)`, each root-to-leaf path then
    scores as if it were decoded alone."""
    parents = _parents(parents)
    prefix_len = _checks.positive_int("prefix_len", prefix_len, allow_zero=True)
    seen = []                                                                     # seen[i]: i and its ancestors
    for i, p in enumerate(parents):
        seen.append((seen[p] if p >= 0 else set()) | {i})
    rows = [[j in s for j in range(len(parents))] for s in seen]                 # (N, N) ancestors-or-self
    total = prefix_len + len(parents)
    mask = causal_mask(total, total, device=device)                               # the prefix: causal
    mask[prefix_len:, prefix_len:] = torch.tensor(rows, dtype=torch.bool, device=device)
    return mask


class ContextLength(NamedTuple):
    """What a config.json says about lengths (`usable_context_length`). stated: max_position_embeddings.
    trained: the length transformers' code starts the scaling from (original_max_position_embeddings for
    YaRN, Llama 3 and LongRoPE; max_position_embeddings for dynamic NTK; stated without scaling; None where
    no code reads one: linear). rope_type and factor: the scaled layers' (\"default\", 1.0 without scaling).
    usable: the length the config supports, or None where the config cannot say. times_factor: stated x
    factor, what a server that multiplies the two derives. warnings: why usable is what it is, and any
    double scaling (times_factor past usable)."""
    stated: int | None
    trained: int | None
    rope_type: str
    factor: float
    usable: int | None
    times_factor: int | None
    warnings: tuple


def usable_context_length(config: dict) -> ContextLength:
    """Read a config.json (a dict) with `posenc_lib.configs.from_hf_config` and state its lengths.

    YaRN: usable = original_max_position_embeddings x factor (the length the frequencies were set for;
    Qwen's documentation adds {"factor": 4, "original_max_position_embeddings": 32768} to a 32768 config).
    Llama 3, LongRoPE and types whose factor is no length ratio (or absent): usable = max_position_embeddings
    (Llama 3.1 states 131072 with factor 8 over 8192). Linear and dynamic NTK without an original length: None,
    since the config does not say whether max_position_embeddings is before or after the scaling (Gemma
    3's 131072 is after it). No scaling: max_position_embeddings. A warning names a double scaling:
    max_position_embeddings x factor beyond the usable length."""
    if not isinstance(config, dict):
        raise TypeError(f"config must be a dict (a config.json read with json.load), got {type(config).__name__}")
    read = from_hf_config(config)
    stated, warnings = read.max_position_embeddings, []
    scaled = [layer for layer in read.layers if layer.rope and layer.scaling]
    if not scaled:                                      # plain RoPE, or no rotation at all (a learned table: "none")
        kind = "default" if read.position_encoding == "rope" else "none"
        return ContextLength(stated, stated, kind, 1.0, stated, stated, ())
    scaling = scaled[0].scaling
    rope_type, factor = scaled[0].rope_type, float(scaling.get("factor") or 1.0)
    original = scaling.get("original_max_position_embeddings") or read.original_max_position_embeddings
    times_factor = None if stated is None else int(stated * factor)
    if rope_type == "dynamic":                          # transformers 5 starts dynamic NTK from max_position_embeddings
        trained, usable = stated, None
        warnings.append(f"dynamic NTK raises the base past max_position_embeddings = {stated} at every new length: "
                        f"no fixed bound is stated")
    elif rope_type == "linear":
        trained = original
        usable = None if original is None else int(original * factor)
        if usable is None:
            warnings.append(f"linear scaling reads no original length: max_position_embeddings = {stated} may be the "
                            f"trained length (then {times_factor} with factor {factor:g}) or already the scaled one")
    elif rope_type == "yarn":
        trained, usable = original, int(original * factor)
        if stated is not None and stated != usable:
            warnings.append(f"max_position_embeddings = {stated} differs from original_max_position_embeddings x "
                            f"factor = {original} x {factor:g} = {usable}, the length YaRN was set for")
    else:                    # llama3, longrope, and types without a length factor: the config states the length
        trained, usable = original, stated
    if usable is not None and times_factor is not None and times_factor > usable:
        warnings.append(f"double scaling: max_position_embeddings x factor = {stated} x {factor:g} = {times_factor} "
                        f"is past the usable {usable}; max_position_embeddings already includes the scaling")
    return ContextLength(stated, trained, rope_type, factor, usable, times_factor, tuple(warnings))

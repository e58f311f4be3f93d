"""Scaled dot-product attention and the one protocol every positional encoding speaks.

An encoding can act in exactly four places, and `PositionalEncoding` has one hook for each; the
defaults do nothing, so an encoding overrides only the hook(s) it needs:

    add_to_input(x, positions)        x + P[positions]            sinusoidal, learned
    rotate_qk(q, k, q_pos, k_pos)     (R_m q, R_n k)              RoPE
    score_bias(q, q_pos, k_pos)       scores + B[i, j]            T5, Shaw, ALiBi
    value_bias(probs, q_pos, k_pos)   out + sum_j p_ij a_{j-i}    Shaw (value term)

Two more hooks reach further, for encodings whose scores depend on more than the positions:

    edit_scores(scores, inputs)       f(scores, q, k, x, state)   gates from q.k (CoPE), from x (Forgetting
                                                                  Transformer), two merged score matrices
                                                                  (ReRoPE, Self-Extend)
    token_state(x, positions)         {name: s_t} per token        what the score hook needs of each key's x,
                                                                  kept by a KV cache in the key's entry

`ScoreInputs` is what edit_scores reads; its default adds score_bias, so an encoding that overrides the
four hooks above keeps working as it is. `MultiHeadAttention` calls the hooks in one sequence, with or
without a KV cache (no `if kind == ...` ladder anywhere), and calling an encoding module, `enc(...)`,
applies it where it acts (see `PositionalEncoding`). Whether an encoding keeps the protocol's rules
(shapes, dtype, device, no look at later positions, the same result from a cache) is checked beside
it, in `posenc_lib.encoding_rules` (`rule_report`).

With none of them overridden (`NoPE`) the attention has no position information of its own, but
order is not invisible: a causal mask alone already breaks the permutation symmetry (query i sees
i + 1 keys), and stacked causal layers can recover absolute positions from it.
Shapes: q, k, v are (batch, heads, seq, head_dim); positions are (seq,) or (batch, seq) integers.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import nn

from . import _checks
from .i18n import Text


def default_positions(x: torch.Tensor, seq_dim: int = -2) -> torch.Tensor:
    """0, 1, ..., seq-1 on x's device: the positions used when the caller gives none."""
    return torch.arange(x.shape[seq_dim], device=x.device)


# ------------------------------------------------------------------------ the checks every hook uses
def check_input(x, positions) -> torch.Tensor:
    """For add_to_input: x (seq, dim) or (batch, seq, dim), floating; returns the positions, given
    ((seq,) or (batch or 1, seq) integers on x's device) or 0..seq-1."""
    _checks.float_tensor("x", x)
    if x.dim() not in (2, 3):
        raise ValueError(f"x must have shape (seq, dim) or (batch, seq, dim), got {tuple(x.shape)}")
    if positions is None:
        return default_positions(x)
    return _checks.positions("positions", positions, seq_len=x.shape[-2], device=x.device,
                             batch=x.shape[0] if x.dim() == 3 else None)


def _key_positions(k_positions, *, device, batch) -> torch.Tensor:
    k_positions = _checks.int_tensor("k_positions", k_positions)
    return _checks.positions("k_positions", k_positions, seq_len=k_positions.shape[-1] if k_positions.dim() else 1,
                             device=device, batch=batch)


def check_query(q, q_positions, k_positions, *, owner: str, num_heads: int | None = None,
                head_dim: int | None = None):
    """For score_bias: q (batch, heads, Tq, head_dim), floating; returns (q_positions, k_positions),
    (Tq,) / (Tk,) or (batch or 1, T) integers on q's device; both default to 0..Tq-1 (self-attention)."""
    _checks.float_tensor("q", q)
    heads = "heads" if num_heads is None else f"num_heads={num_heads}"
    dim = "head_dim" if head_dim is None else f"head_dim={head_dim}"
    if q.dim() != 4 or (num_heads is not None and q.shape[1] != num_heads) or (
            head_dim is not None and q.shape[-1] != head_dim):
        raise ValueError(f"q must have shape (batch, {heads}, seq, {dim}) for this {owner}, got {tuple(q.shape)}")
    if q_positions is None:
        q_positions = default_positions(q)
    q_positions = _checks.positions("q_positions", q_positions, seq_len=q.shape[-2], device=q.device,
                                    batch=q.shape[0])
    k_positions = q_positions if k_positions is None else _key_positions(k_positions, device=q.device,
                                                                         batch=q.shape[0])
    return q_positions, k_positions


def check_probs(probs, q_positions, k_positions):
    """For value_bias: probs (batch, heads, Tq, Tk), floating, and the positions of its rows and
    columns ((Tq,) / (Tk,) or (batch or 1, T) integers on its device; default 0..Tq-1, 0..Tk-1)."""
    _checks.float_tensor("probs", probs)
    if probs.dim() != 4:
        raise ValueError(f"probs must have shape (batch, heads, q_len, k_len), got {tuple(probs.shape)}")
    batch, _, q_len, k_len = probs.shape
    q_positions = default_positions(probs) if q_positions is None else q_positions
    k_positions = default_positions(probs, -1) if k_positions is None else k_positions
    return (_checks.positions("q_positions", q_positions, seq_len=q_len, device=probs.device, batch=batch),
            _checks.positions("k_positions", k_positions, seq_len=k_len, device=probs.device, batch=batch))


# ------------------------------------------------------------------------------------- the protocol
class ScoreInputs(NamedTuple):
    """What `edit_scores` reads, for Tq new queries over Tk keys: the queries are the last Tq of the keys
    (Tq = Tk in a full forward; a cached decoding step has Tq new tokens after Tk - Tq cached ones)."""
    q: torch.Tensor            # (B, H, Tq, hd): rotated (rotate_qk)
    k: torch.Tensor            # (B, H, Tk, hd): every key, the cached and the new ones, rotated
    q_positions: torch.Tensor  # (Tq,) or (B, Tq) ints
    k_positions: torch.Tensor  # (Tk,) or (B, Tk) ints
    x: torch.Tensor            # (B, Tq, D): the layer's input at the new tokens (what q, k, v are made from)
    state: dict | None         # token_state of every key, name -> (B, *, Tk, *); the queries' are the last Tq


class PositionalEncoding(nn.Module):
    """Base class: every hook defaults to 'no position information here'.

    Calling an encoding applies it where it acts, at positions 0..seq-1 unless given, with the keys
    at the query positions (self-attention). The first hook it overrides, in the order above, decides:

        where it acts           call                                   returns
        added to the input      enc(x, positions=None)                 x + P[positions], x's shape
        rotates q and k         enc(q, k, positions=None)              (R q, R k)
        bias on the scores      enc(q, q_positions=None, k_positions=None)   the bias, (batch or 1, heads, Tq, Tk)
        term on the values      enc(probs, q_positions=None, k_positions=None)  the term, (batch, heads, Tq, hd)
        edits the scores        enc(q, k, positions=None, x=None)      edit_scores of q k^T / sqrt(d)
        keeps a token state     enc(x, positions=None)                 token_state(x, positions)
        nowhere (NoPE)          enc(x, positions=None)                 x itself

    (Called so without positions, add_to_input gets positions=None: it may then say "sequence longer
    than ..." rather than "position out of range"; MultiHeadAttention and TinyLM always pass them.)
    So `SinusoidalEncoding(8)(x)` is the encoded input, `RotaryEmbedding(8)(q, k)` the rotated pair,
    `ALiBi(4)(q)` the bias added to q's scores, `NoPE()(x)` x unchanged. Shaw acts on the scores and
    the values: calling it gives its score bias; the hooks stay the whole interface.

    `TinyLM` builds encodings by name from a `TinyLMConfig` (posenc_lib.model.ENCODINGS): a registered
    class builds itself with `from_config(config)`, which subclasses with settings override.
    """

    def add_to_input(self, x: torch.Tensor, positions: torch.Tensor | None) -> torch.Tensor:  # (B, T, D)
        return x

    def rotate_qk(self, q, k, q_positions, k_positions):  # (B, H, T, hd) each
        return q, k

    def score_bias(self, q: torch.Tensor, q_positions, k_positions):  # -> broadcastable to (B, H, Tq, Tk)
        return None

    def value_bias(self, probs: torch.Tensor, q_positions, k_positions):  # -> (B, H, Tq, hd) or None
        return None

    def edit_scores(self, scores: torch.Tensor, inputs: ScoreInputs) -> torch.Tensor:  # (B, H, Tq, Tk)
        """The scores q k^T / sqrt(d) (float32 or float64, before the mask) as this encoding changes them;
        returns their shape and dtype. Rows are queries, the last Tq of the keys: entries of keys after a
        query are masked afterwards, so a row may use only its own and earlier keys. Default: + score_bias."""
        bias = self.score_bias(inputs.q, inputs.q_positions, inputs.k_positions)
        return scores if bias is None else scores + bias.to(scores.dtype)

    def token_state(self, x: torch.Tensor, positions) -> dict | None:  # name -> (B, *, T, *)
        """What edit_scores needs to know of each token beyond its key, from the layer input x (B, T, D):
        a dict of tensors with the tokens on dim 2, as keys (B, H, T, hd), or None. A token's state may
        depend on its own x and position only: a KV cache computes it once, when the token is new, and
        keeps it beside the token's key (evicted with it, never recomputed)."""
        return None

    def forward(self, *args, **kwargs):
        acts = where_it_acts(self)
        return getattr(self, _CALLS[acts[0] if acts else "add_to_input"])(*args, **kwargs)

    def _input_call(self, x, positions=None):
        check_input(x, positions)
        return self.add_to_input(x, positions)  # None stays None: the hook knows they were not given

    def _rotation_call(self, q, k, positions=None):
        _checks.float_tensor("q", q)
        _checks.float_tensor("k", k)
        if positions is None:  # q and k may differ in length: each counts from 0, as in RotaryEmbedding
            return self.rotate_qk(q, k, default_positions(q), default_positions(k))
        return self.rotate_qk(q, k, positions, positions)

    def _score_call(self, q, q_positions=None, k_positions=None):
        return self.score_bias(q, *check_query(q, q_positions, k_positions, owner=type(self).__name__))

    def _value_call(self, probs, q_positions=None, k_positions=None):
        return self.value_bias(probs, *check_probs(probs, q_positions, k_positions))

    def _scores_call(self, q, k, positions=None, x=None):
        """Self-attention scores of q over k (as long as q) edited by this encoding; x defaults to zeros."""
        _checks.float_tensor("k", k)
        q_positions, k_positions = check_query(q, positions, None, owner=type(self).__name__)
        if x is None:
            x = q.new_zeros(q.shape[0], q.shape[2], q.shape[1] * q.shape[3])
        inputs = ScoreInputs(q, k, q_positions, k_positions, x, self.token_state(x, q_positions))
        return self.edit_scores(_scores(q, k), inputs)                          # (B, H, T, T)

    def _state_call(self, x, positions=None):
        return self.token_state(x, check_input(x, positions))

    @classmethod
    def from_config(cls, config) -> PositionalEncoding:
        """Build this encoding from a posenc_lib.model.TinyLMConfig; the default takes no settings."""
        return cls()

    @classmethod
    def check_config(cls, config) -> None:
        """Raise a ValueError/TypeError naming the setting if `config` (a TinyLMConfig) cannot build this
        encoding; called when the config is made, before any weight is drawn. Default: nothing to check."""


HOOKS = ("add_to_input", "rotate_qk", "score_bias", "value_bias", "edit_scores", "token_state")
# where each hook acts, as a learner reads it (English or Chinese: posenc_lib.i18n)
HOOK_PLACES = {"add_to_input": Text("added to the input", "加到输入上"),
               "rotate_qk": Text("rotates q and k", "旋转 q 和 k"),
               "score_bias": Text("bias on the scores", "加在分数上的偏置"),
               "value_bias": Text("term on the values", "加在值上的项"),
               "edit_scores": Text("edits the scores", "改写注意力分数"),
               "token_state": Text("keeps a state per token", "为每个 token 保存状态")}
_CALLS = {"add_to_input": "_input_call", "rotate_qk": "_rotation_call", "score_bias": "_score_call",
          "value_bias": "_value_call", "edit_scores": "_scores_call", "token_state": "_state_call"}


def where_it_acts(encoding) -> list:
    """The PositionalEncoding hooks an encoding overrides (its class, read off the code, not a table)."""
    cls = encoding if isinstance(encoding, type) else type(encoding)
    if not issubclass(cls, PositionalEncoding):
        raise TypeError(f"encoding must be a PositionalEncoding (instance or class), got {cls.__name__}")
    return [h for h in HOOKS if getattr(cls, h) is not getattr(PositionalEncoding, h)]


class NoPE(PositionalEncoding):
    """No positional encoding. Without a mask, self-attention is then permutation-equivariant (permute
    the tokens and the outputs permute the same way). A causal mask breaks that: each query sees how
    many tokens it can attend to. One causal layer still sees a query's visible prefix as an unordered
    set; two stacked causal layers already see the order inside it, which is how NoPE decoders learn
    positions (Haviv et al. 2022; Kazemnejad et al. 2023; notebook 01). NoPE()(x) returns x."""


# -------------------------------------------------------------------------------------- attention
def _check_attention_inputs(q, k, v, bias):
    for name, t in (("q", q), ("k", k), ("v", v)):
        _checks.float_tensor(name, t)
        if t.dim() < 2:
            raise ValueError(f"{name} must have shape (..., seq, dim), got {tuple(t.shape)}")
    if bias is not None:
        if not isinstance(bias, torch.Tensor):
            raise TypeError(f"bias must be a torch.Tensor or None, got {type(bias).__name__}")
        if not bias.is_floating_point():
            raise TypeError(f"bias must be a floating-point tensor added to the scores, got {bias.dtype}; for a "
                            f"boolean mask (True = may attend) pass bias=torch.zeros_like(mask, dtype=q.dtype)"
                            f".masked_fill(~mask, float('-inf'))")
    _checks.same_device("q", q, k=k, v=v, bias=bias)
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must share the last dimension, got {q.shape[-1]} and {k.shape[-1]}")
    if q.shape[-1] == 0:
        raise ValueError("q and k must have a last dimension >= 1 (the scores are divided by sqrt of it), got 0")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k and v must have the same number of positions, got {k.shape[-2]} and {v.shape[-2]}")
    if k.shape[-2] == 0 and q.shape[-2] > 0:
        raise ValueError("k must have at least one position: a softmax over no keys is undefined, got k_len=0")
    lead = q.shape[:-2]  # (batch, heads, ...): k and v may share theirs over q's (size 1), not grow them
    for name, t in (("k", k), ("v", v)):
        if t.dim() != q.dim() or any(a not in (b, 1) for a, b in zip(t.shape[:-2], lead)):
            raise ValueError(f"{name} of shape {tuple(t.shape)} does not fit q of shape {tuple(q.shape)}: its "
                             f"leading (batch, heads) dims must each equal q's or be 1")
    scores_shape = (*lead, q.shape[-2], k.shape[-2])
    if bias is not None and (bias.dim() > len(scores_shape) or any(
            a not in (b, 1) for a, b in zip(reversed(bias.shape), reversed(scores_shape)))):
        raise ValueError(f"bias of shape {tuple(bias.shape)} must broadcast to the scores' shape "
                         f"{scores_shape} (..., q_len, k_len) without growing it")


def causal_mask(q_len: int, k_len: int, *, device, window: int | None = None,
                key_valid: torch.Tensor | None = None) -> torch.Tensor:
    """True where query i may attend key j; the queries are the last q_len of the k_len positions (all of
    them in a full forward, the new tokens after the cached ones in a decoding step), so query i sits at
    slot k_len - q_len + i and sees the slots j <= it. Returns (q_len, k_len) bool.

    window: also j > slot - window (a sliding window of that many slots, transformers' rule,
    masking_utils.sliding_window_overlay); window=1 leaves each query its own slot only.
    key_valid: (batch, k_len) bool, False at a pad; then (batch, q_len, k_len), pads hidden from every
    query but their own (a pad's row is never all masked; its output is unused)."""
    if q_len > k_len:
        raise ValueError(f"causal attention needs q_len <= k_len (queries are the last q_len of the k_len "
                         f"positions), got q_len={q_len}, k_len={k_len}")
    i = torch.arange(k_len - q_len, k_len, device=device)[:, None]              # (Tq, 1): each query's slot
    j = torch.arange(k_len, device=device)[None, :]                             # (1, Tk)
    allowed = j <= i
    if window is not None:
        allowed = allowed & (j > i - window)
    if key_valid is not None:
        allowed = allowed & (key_valid[:, None, :] | (j == i))                  # (B, Tq, Tk)
    return allowed


def attention(q, k, v, *, bias=None, causal: bool = False, return_weights: bool = False):
    """softmax(q k^T / sqrt(d) + bias) v.

    q: (..., Tq, d), k: (..., Tk, d), v: (..., Tk, dv), all on one device; k's and v's leading dims
    equal q's or are 1 (shared, e.g. one key head for all query heads). bias: a floating tensor
    broadcastable to (..., Tq, Tk), added to the scores before the softmax (a boolean mask is refused:
    turn it into 0 / -inf, see the error). `causal=True` masks key j > query i (`causal_mask`: queries
    are taken to be the last Tq of the Tk positions, so Tq < Tk works for cached decoding).
    Returns the output (..., Tq, dv), and the weights (..., Tq, Tk) too if `return_weights`.
    The softmax runs in float32 or better; the output comes back in q's dtype.
    """
    _check_attention_inputs(q, k, v, bias)
    _checks.boolean("causal", causal)
    _checks.boolean("return_weights", return_weights)
    scores = _scores(q, k)
    if bias is not None:
        scores = scores + bias.to(scores.dtype)
    mask = causal_mask(q.shape[-2], k.shape[-2], device=q.device) if causal else None
    out, weights = _mix(scores, mask, v, q.dtype)
    return (out, weights) if return_weights else out


def _scores(q, k) -> torch.Tensor:
    """q k^T / sqrt(d) in float32 or better: (..., Tq, Tk)."""
    work = _checks.compute_dtype(q.dtype)
    return q.to(work) @ k.to(work).transpose(-2, -1) / math.sqrt(q.shape[-1])


def _mix(scores, mask, v, dtype) -> tuple:
    """softmax over the keys the mask allows (None: all), then the weighted values: (out, weights) in dtype."""
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return (weights @ v.to(weights.dtype)).to(dtype), weights.to(dtype)


class MultiHeadAttention(nn.Module):
    """Multi-head self-attention over x (batch, seq, d_model), with one positional encoding.

    forward(x, positions=None) calls the encoding's hooks in order: add its input term to x
    (sinusoidal, learned), project to q, k, v, rotate q and k, its token state, edit the scores (by
    default: add its score bias), add its value term. `apply_input_encoding=False` skips the first:
    TinyLM passes it, because it adds an input encoding once, to the residual stream before the first
    block, not in every layer. Pass the same encoding object to every layer to share it (T5 shares its
    bias). Variants of RoPE are settings of the encoding, not of the attention:
    `encoding=RotaryEmbedding(head_dim, partial_rotary_factor=0.25)` is GPT-NeoX's partial-rotary
    attention (tests/test_attention.py checks it against HF's), and a scaling dict gives YaRN,
    LongRoPE, ... (posenc_lib.scaling).

    With a KV cache (posenc_lib.inference.KVCache or a subclass; causal attention only), x holds the
    new tokens only and the same hooks run over every cached key: forward(x, positions, cache=cache,
    layer=i, valid=None, window=None) stores this step's keys, values and token state in the cache's
    layer i and attends over all it holds. q and k are rotated before caching if cache.rotated, else
    all cached keys at their key_positions at every step; valid (batch, T) marks the real tokens (False
    at a pad); window: a sliding window of that many slots (`causal_mask`). positions default to the
    cache's next ones.
    """

    def __init__(self, d_model: int, num_heads: int, *, encoding: PositionalEncoding | None = None,
                 causal: bool = False, bias: bool = False, apply_input_encoding: bool = True,
                 keep_weights: bool = False):
        super().__init__()
        _checks.positive_int("d_model", d_model)
        _checks.positive_int("num_heads", num_heads)
        for name, flag in (("causal", causal), ("bias", bias), ("apply_input_encoding", apply_input_encoding),
                           ("keep_weights", keep_weights)):
            _checks.boolean(name, flag)
        if d_model % num_heads:
            raise ValueError(f"d_model must be divisible by num_heads, got d_model={d_model}, num_heads={num_heads}")
        if encoding is not None and not isinstance(encoding, PositionalEncoding):
            raise TypeError(f"encoding must be a posenc_lib PositionalEncoding or None, got {type(encoding).__name__}")
        self.num_heads, self.head_dim, self.causal = num_heads, d_model // num_heads, causal
        self.apply_input_encoding = apply_input_encoding
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.proj = nn.Linear(d_model, d_model, bias=bias)
        self.encoding = encoding if encoding is not None else NoPE()
        # keep_weights (as transformers' output_attentions): store the last forward's attention weights
        # (B, H, T, T) in last_weights, for plots; off by default, so a forward keeps no T x T tensor alive
        self.keep_weights = keep_weights
        self.last_weights = None

    def forward(self, x: torch.Tensor, positions: torch.Tensor | None = None, *, cache=None, layer: int = 0,
                valid: torch.Tensor | None = None, window: int | None = None) -> torch.Tensor:
        self._check_input(x, cache, window)
        B, T, D = x.shape
        if positions is None and cache is not None:
            positions = _next_positions(cache, B, T, x.device)
        positions = check_input(x, positions)
        enc = self.encoding
        if self.apply_input_encoding:
            x = enc.add_to_input(x, positions)
        q, k, v = self.qkv(x).view(B, T, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)  # 3 x (B, H, T, hd)
        state = enc.token_state(x, positions)                                   # name -> (B, *, T, *) or None
        if cache is None:
            q, k = enc.rotate_qk(q, k, positions, positions)
            keys, values, q_positions, k_positions = k, v, positions, positions
            mask = causal_mask(T, T, device=x.device, window=window) if self.causal else None
        else:
            if cache.rotated:                                                   # k rotated once, at its position
                q, k = enc.rotate_qk(q, k, positions, positions)
            got = cache.update(layer, k, v, positions, valid, state=state)
            keys, values, state = got.keys, got.values, got.state
            q_positions, k_positions = got.query_positions, got.key_positions
            if not cache.rotated:                                               # every key rotated at this step
                q, keys = enc.rotate_qk(q, keys, q_positions, k_positions)
            mask = causal_mask(T, keys.shape[-2], device=x.device, window=window,
                               key_valid=got.key_valid)[:, None]                # (B, 1, Tq, Tk)
        raw = _scores(q, keys)                                                  # (B, H, T, Tk)
        scores = enc.edit_scores(raw, ScoreInputs(q, keys, q_positions, k_positions, x, state))
        _check_edited(enc, scores, raw)
        out, weights = _mix(scores, mask, values, q.dtype)                      # (B, H, T, hd), (B, H, T, Tk)
        extra = enc.value_bias(weights, q_positions, k_positions)
        if extra is not None:
            out = out + extra.to(out.dtype)
        if self.keep_weights:
            self.last_weights = weights.detach()
        return self.proj(out.transpose(1, 2).reshape(B, T, D))

    def _check_input(self, x, cache, window) -> None:
        """x (batch, seq, d_model) of this layer's device (and, with a cache, its dtype and seq >= 1); a
        cache with update(); a window only with causal attention."""
        _checks.float_tensor("x", x)
        d_model = self.num_heads * self.head_dim
        if x.dim() != 3 or x.shape[-1] != d_model or (cache is not None and x.shape[1] == 0):
            seq = "seq" if cache is None else "seq >= 1"
            raise ValueError(f"x must have shape (batch, {seq}, d_model={d_model}), got {tuple(x.shape)}")
        _checks.same_device("x", x, qkv=self.qkv.weight)
        if window is not None:
            _checks.positive_int("window", window)
            if not self.causal:
                raise ValueError("window: a sliding window masks a causal attention; this one has causal=False")
        if cache is None:
            return
        if not (callable(getattr(cache, "update", None)) and hasattr(cache, "rotated")):
            raise TypeError(f"cache must be a posenc_lib KVCache, got {type(cache).__name__}")
        if not self.causal:
            raise ValueError("cache: a KV cache holds the earlier tokens of a causal decoder; this attention has "
                             "causal=False")
        if x.dtype != self.qkv.weight.dtype:
            raise ValueError(f"x must have the attention's dtype {self.qkv.weight.dtype}, got {x.dtype}")


def _check_edited(enc, scores, raw) -> None:
    """The encoding's edit_scores must return the scores' shape (a bias may broadcast; the result may not grow)."""
    if not isinstance(scores, torch.Tensor) or scores.shape != raw.shape:
        got = tuple(scores.shape) if isinstance(scores, torch.Tensor) else type(scores).__name__
        raise ValueError(f"encoding: {type(enc).__name__}'s scores must keep the shape (batch, heads, q_len, k_len) = "
                         f"{tuple(raw.shape)}, got {got} (a score bias must broadcast to it without growing it)")


def _next_positions(cache, batch: int, seq: int, device) -> torch.Tensor:
    """(batch, seq): the positions after each row's last cached one (0.. for an empty cache)."""
    start = cache.next_positions()
    if start is None:
        start = torch.zeros(batch, dtype=torch.long, device=device)
    return start[:, None] + torch.arange(seq, device=device)

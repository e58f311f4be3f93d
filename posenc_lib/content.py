"""Positions that depend on the content: CoPE, the Forgetting Transformer's forget gate, PaTH.

Every encoding before this module gives query i and key j a term that depends on their positions
alone. These three let the tokens themselves say how far apart they are, through the two hooks of
the protocol that see more than positions (posenc_lib.attention: `edit_scores` reads q, every key k,
the layer input x and each key's `token_state`):

    CoPE     p_ij = sum_{l=j..i} sigmoid(q_i . k_l / sqrt(d))      a count of the keys the query selects;
             score_ij += q_i . e[p_ij] / sqrt(d)                    e interpolated between integer p
    FoX      score_ij += sum_{l=j+1..i} log f_l,  f_l = sigmoid(w_h . x_l + b_h)     a data-dependent ALiBi
    PaTH     score_ij = q_i^T H_i H_{i-1} ... H_{j+1} k_j / sqrt(d),  H_t = I - beta_t w_t w_t^T
             (RoPE's fixed rotation R^{i-j} replaced by a product of data-dependent Householder-like maps)

What each must keep per cached token differs (the notebook says so; `KVCache` keeps a token's state
beside its key, computed once, from the token's own x):
  * CoPE keeps nothing extra: p_ij depends on the QUERY (its gates sigmoid(q_i . k_l)), so no count can
    be stored per key; each step recomputes the gates of the new query over every cached key.
  * FoX keeps log f_t per token; a step sums them over the keys it sees (a difference of running sums).
  * PaTH keeps (w_t, beta_t) per token. The paper's cache instead stores each key already transformed and
    applies every new token's H_t to all cached keys (one rank-1 update per step); our KVCache holds the raw
    keys, so edit_scores re-applies the products over the cache at each step (the same numbers, more work).

Parameters. Each encoding is one nn.Module, and TinyLM shares one encoding object between its layers
(posenc_lib.model), so the gate, table and projections here are shared by every layer; the papers give
each layer its own. Shared, the layers still compute different gates (each sees its own x, q and k),
but they cannot learn different kinds of counting or forgetting per layer the way the papers' models can.
None of the three reads the integer positions: with a causal mask alone they are NoPE plus what the
content says, so each works at any length (CoPE's count is capped at npos - 1).
Padding: a cache's left pads sit before every real token, so no real query's sum passes over them; pads
in the middle of a row (a step's own padding) would be counted as tokens by all three.
"""
from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from . import _checks
from .attention import PositionalEncoding, ScoreInputs, causal_mask


def _query_rows(inputs: ScoreInputs) -> int:
    """The slot of the first query among the keys: the queries are the last Tq of the Tk keys."""
    return inputs.k.shape[-2] - inputs.q.shape[-2]


def _check_heads(owner: str, name: str, t: torch.Tensor, num_heads: int, head_dim: int) -> None:
    if t.dim() != 4 or t.shape[1] != num_heads or t.shape[-1] != head_dim:
        raise ValueError(f"{name} must have shape (batch, num_heads={num_heads}, seq, head_dim={head_dim}) for this "
                         f"{owner}, got {tuple(t.shape)}")


def _check_input(x: torch.Tensor, d_model: int) -> None:
    _checks.float_tensor("x", x)
    if x.dim() != 3 or x.shape[-1] != d_model:
        raise ValueError(f"x must have shape (batch, seq, d_model={d_model}), got {tuple(x.shape)}")


# ------------------------------------------------------------------------------------------------ CoPE
class CoPE(PositionalEncoding):
    """Contextual Position Encoding (Golovneva et al. 2024, arXiv 2405.18719): positions that count only
    the tokens a gate selects.

        g_ij = sigmoid(q_i . k_j / sqrt(d))              for keys j <= i (0 for later keys)
        p_ij = g_ij + g_i,j+1 + ... + g_ii               how many selected tokens lie from j to i (in (0, i-j+1])
        e[p] = (ceil p - p) e[floor p] + (p - floor p) e[ceil p]     one learned vector e[n] per integer n < npos
        score_ij = (q_i . k_j + q_i . e[p_ij]) / sqrt(d)

    With every gate 1, p_ij = i - j + 1 and CoPE is a learned relative encoding; with the gates of
    a query open only on (say) full stops, p_ij counts the sentences between. p is capped at npos - 1.
    The scale: the paper writes sigmoid(q_i . k_j); the authors' code (facebookresearch/RAM,
    projects/cope/src/cope/context_position.py, ContextPosSelfAttn) divides the gate logits by sqrt(d)
    and adds q . e[p] before the one division by sqrt(d): we follow the code. As there, the table e
    (npos, head_dim) starts at zero (CoPE starts as NoPE and learns e), is shared by the heads, and
    npos defaults to the context length + 1 (`from_config`: max_len + 1).

    Hooks: edit_scores only. Nothing is cached beyond the keys: p_ij depends on the query through its
    gates, so each step recomputes them over every cached key. CoPE(head_dim, npos)(q, k) gives the
    edited scores of q over k (as long as q).
    """

    def __init__(self, head_dim: int, npos: int = 64):
        super().__init__()
        self.head_dim = _checks.positive_int("head_dim", head_dim)
        self.npos = _checks.positive_int("npos", npos)
        if self.npos < 2:
            raise ValueError(f"npos must be >= 2 (positions 0 and 1 at least: p lies in (0, npos - 1]), got {npos}")
        self.pos_emb = nn.Parameter(torch.zeros(self.npos, self.head_dim))  # e[n], n = 0 .. npos-1

    @classmethod
    def from_config(cls, config) -> CoPE:
        return cls(config.head_dim, npos=config.max_len + 1)  # as the authors' code: block size + 1

    def positions(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        """p_ij (B, H, Tq, Tk), in float32 or better: the queries are the last Tq of the Tk keys; 0 at keys
        after a query; capped at npos - 1."""
        work = _checks.compute_dtype(q.dtype)
        gates = torch.sigmoid(q.to(work) @ k.to(work).transpose(-2, -1) / math.sqrt(q.shape[-1]))
        gates = gates.masked_fill(~causal_mask(q.shape[-2], k.shape[-2], device=q.device), 0.0)  # j <= i only
        return gates.flip(-1).cumsum(-1).flip(-1).clamp(max=self.npos - 1)     # sum over the keys j..Tk-1

    def edit_scores(self, scores: torch.Tensor, inputs: ScoreInputs) -> torch.Tensor:  # (B, H, Tq, Tk)
        q, k = inputs.q, inputs.k
        if q.shape[-1] != self.head_dim or k.shape[-1] != self.head_dim:
            raise ValueError(f"q and k must have head_dim={self.head_dim} (their last dim) for this CoPE, got "
                             f"{q.shape[-1]} and {k.shape[-1]}")
        p = self.positions(q, k).to(scores.dtype)                                 # (B, H, Tq, Tk)
        at_integers = q.to(scores.dtype) @ self.pos_emb.to(scores.dtype).T       # (B, H, Tq, npos): q_i . e[n]
        low = p.floor()
        frac = p - low                                                            # weight of the ceiling
        at_low = at_integers.gather(-1, low.long())
        at_high = at_integers.gather(-1, p.ceil().long())
        return scores + (at_low * (1 - frac) + at_high * frac) / math.sqrt(self.head_dim)

    def extra_repr(self):
        return f"head_dim={self.head_dim}, npos={self.npos}"


# ------------------------------------------------------------------------ gates read off the layer input
class _GatedByInput(PositionalEncoding):
    """What FoX and PaTH share: d_model and num_heads (from_config), and linear maps of the layer input x
    evaluated in float32 or better (`_linear`), whatever the model's dtype."""

    def __init__(self, d_model: int, num_heads: int):
        super().__init__()
        self.d_model = _checks.positive_int("d_model", d_model)
        self.num_heads = _checks.positive_int("num_heads", num_heads)

    @classmethod
    def from_config(cls, config):
        return cls(config.d_model, config.num_heads)

    def _linear(self, x: torch.Tensor, layer: nn.Linear) -> torch.Tensor:
        """layer(x) in float32 or better, after checking x (batch, seq, d_model): (B, T, out)."""
        _check_input(x, self.d_model)
        work = _checks.compute_dtype(x.dtype)
        return F.linear(x.to(work), layer.weight.to(work), None if layer.bias is None else layer.bias.to(work))

    def extra_repr(self):
        return f"d_model={self.d_model}, num_heads={self.num_heads}"


# ---------------------------------------------------------------------------------- Forgetting Transformer
class ForgettingGate(_GatedByInput):
    """The Forgetting Transformer's forget gate (Lin et al. 2025, "Forgetting Transformer: Softmax Attention
    with a Forget Gate", arXiv 2503.02130), as a positional encoding: a data-dependent ALiBi.

        f_t = sigmoid(w_h . x_t + b_h)                   per head h, from the layer input x_t
        score_ij += log f_{j+1} + ... + log f_i = c_i - c_j,    c_t = log f_0 + ... + log f_t

    Each token says how much of the past to forget as the query moves past it: f = 1 everywhere is NoPE,
    a constant f_t = exp(-m_h) is ALiBi with slope m_h (score -m_h (i - j)), and a token with f_t near 0
    hides every key before it from the queries after it. Key j's own gate f_j does not count (the sum starts
    at j + 1), and the query's f_i does. As in the authors' code (zhixuan-lin/forgetting-transformer,
    src/forgetting_transformer/model/forgetting_transformer/modeling_forgetting_transformer.py:
    fgate_proj = Linear(hidden, num_heads, bias=True), log_fgate = logsigmoid, and the decay bias
    log_lambda[i] - log_lambda[j] with log_lambda the cumsum), the gate is one linear map per head.
    FoX uses no other position information: the authors' layer has use_rope=False by default, and the
    paper's abstract says FoX does not require positional embeddings (NoPE plus the gate).

    Hooks: token_state keeps log f_t per token, {"log_forget": (B, H, T, 1)} (a token's gate depends on
    its own x only, so a KV cache computes it once); edit_scores takes the running sum over the keys
    it is given and subtracts (the cache's "running sum of log-gates per cached key"). The sum runs in
    the scores' dtype (float32 or float64), as the authors' kernel keeps it in float32.
    """

    def __init__(self, d_model: int, num_heads: int):
        super().__init__(d_model, num_heads)
        self.gate = nn.Linear(self.d_model, self.num_heads)                       # w_h (rows), b_h

    def token_state(self, x: torch.Tensor, positions) -> dict:
        logits = self._linear(x, self.gate)                                       # (B, T, H): w_h . x_t + b_h
        return {"log_forget": F.logsigmoid(logits).transpose(1, 2)[..., None]}               # (B, H, T, 1)

    def edit_scores(self, scores: torch.Tensor, inputs: ScoreInputs) -> torch.Tensor:  # (B, H, Tq, Tk)
        log_forget = _state(inputs, "log_forget", "ForgettingGate")[..., 0].to(scores.dtype)   # (B, H, Tk)
        total = log_forget.cumsum(-1)                                             # c_t
        queries = total[..., _query_rows(inputs):]                                # c_i of the last Tq keys
        return scores + queries[..., :, None] - total[..., None, :]              # c_i - c_j


def _state(inputs: ScoreInputs, name: str, owner: str) -> torch.Tensor:
    state = inputs.state
    if not isinstance(state, dict) or name not in state:
        raise ValueError(f"inputs.state must hold {owner}'s token_state ({name!r}) of every key, got "
                         f"{None if state is None else sorted(state)}: pass token_state(x, positions) of the keys")
    t = state[name]
    if t.shape[2] != inputs.k.shape[-2]:
        raise ValueError(f"inputs.state[{name!r}] must hold one entry per key (dim 2 = {inputs.k.shape[-2]}), "
                         f"got shape {tuple(t.shape)}")
    return t


# ------------------------------------------------------------------------------------------------ PaTH
class PaTH(_GatedByInput):
    """PaTH attention (Yang et al. 2025, "PaTH Attention: Position Encoding via Accumulating Householder
    Transformations", arXiv 2505.16381): RoPE's rotation R^{i-j} between query i and key j replaced by a
    product of data-dependent maps, one per token passed on the way.

        H_t = I - beta_t w_t w_t^T,   w_t = normalize(W_h x_t) (unit, per head),   beta_t = 2 sigmoid(u_h . x_t + b_h)
        score_ij = q_i^T H_i H_{i-1} ... H_{j+1} k_j / sqrt(d)           (j = i: no map)

    beta in (0, 2) makes each H_t's eigenvalue along w_t, 1 - beta_t, lie in (-1, 1): beta = 2 is a
    Householder reflection (orthogonal, like a rotation, but chosen by the token), beta = 1 a projection
    that erases the w_t direction from every earlier key. The order: key j is mapped first by H_{j+1},
    the token right after it, and last by the query's own H_i, as in the paper's recurrence and the
    flash-linear-attention layer (fla-org/flash-linear-attention, fla/layers/path_attn.py, PaTHAttention:
    at each decoding step `rank_one_update` applies the new token's (w, beta) to every cached key).
    Simplified here: the paper's w_t comes from a low-rank projection (rank 32 in that layer) followed by a
    short causal convolution (kernel 3) and an L2 norm; ours is one full linear map and the L2 norm, no
    convolution, so w_t depends on x_t alone (the rule of token_state) -- a convolution would mix in the
    tokens before t, which a cache would then have to keep too.

    Two ways to compute it. The plain form (`sequential_scores`) walks t = 1 .. Tk-1 and applies H_t to
    every key before t: Tk rank-1 updates, the recurrence the paper's decoding uses on its cache. The
    paper trains with the compact form of a product of Householder-like maps (the UT transform;
    `householder_product` below builds one product so):

        H_L ... H_2 H_1 = I - W^T A W,   A = (I + strictly_lower(diag(beta) W W^T))^{-1} diag(beta)

    (W: the L unit vectors w_t as rows). edit_scores uses it for every (query, key) pair at once: the
    inverse N = (I + strictly_lower(diag(beta) W W^T))^{-1} is lower-triangular, so the block of N over the
    tokens j+1..i is the inverse of that block of I + strictly_lower(...), and

        q_i^T H_i ... H_{j+1} k_j = q_i . k_j - sum_{j < b <= a <= i} (w_a . q_i) N[a, b] beta_b (w_b . k_j)

    is three matrix products after one triangular solve over the Tk keys (a TinyLM training step at T = 64
    took about a third of the loop's time on one CPU thread). The paper goes further: blocks of tokens,
    each with its own UT form, combined FlashAttention-style without a T x T matrix in memory. One solve
    over a whole sequence is less precise in float32 than the loop (tests/test_content.py holds the two
    within 1e-4 at T = 128 in float32 with random maps, within 1e-12 in float64).

    Hooks: token_state keeps {"w": (B, H, T, head_dim), "beta": (B, H, T, 1)} per token; edit_scores
    recomputes the products over the keys it is given (the raw keys the KVCache keeps), at every step, and
    returns these scores in place of the plain q k^T / sqrt(d) it is handed (PaTH changes the bilinear form
    itself, as RoPE does, rather than adding a bias). No rotate_qk beside it: PaTH replaces RoPE.
    """

    def __init__(self, d_model: int, num_heads: int):
        super().__init__(d_model, num_heads)
        if d_model % num_heads:
            raise ValueError(f"d_model must be divisible by num_heads, got d_model={d_model}, num_heads={num_heads}")
        self.head_dim = d_model // num_heads
        self.w_proj = nn.Linear(self.d_model, self.d_model, bias=False)         # W_h, all heads at once
        self.beta_proj = nn.Linear(self.d_model, self.num_heads)                  # u_h, b_h

    def token_state(self, x: torch.Tensor, positions) -> dict:
        w = self._linear(x, self.w_proj).unflatten(-1, (self.num_heads, self.head_dim))   # (B, T, H, hd)
        w = F.normalize(w, dim=-1).transpose(1, 2)                                # (B, H, T, hd), unit rows
        beta = 2 * torch.sigmoid(self._linear(x, self.beta_proj))                 # (B, T, H)
        return {"w": w, "beta": beta.transpose(1, 2)[..., None]}                  # beta (B, H, T, 1) in (0, 2)

    def edit_scores(self, scores: torch.Tensor, inputs: ScoreInputs) -> torch.Tensor:  # (B, H, Tq, Tk)
        q, k, w, beta = self._inputs(scores, inputs)
        Tk, first = k.shape[-2], _query_rows(inputs)
        eye = torch.eye(Tk, dtype=scores.dtype, device=k.device)
        lower = torch.tril(beta * (w @ w.transpose(-2, -1)), diagonal=-1)       # beta_a (w_a . w_b), b < a
        N = torch.linalg.solve_triangular(eye + lower, eye.expand_as(lower), upper=False, unitriangular=True)
        slots = torch.arange(Tk, device=k.device)
        U = (q @ w.transpose(-2, -1)) * (slots[None, :] <= slots[first:, None])  # (B, H, Tq, Tk): w_a . q_i, a <= i
        V = (w @ k.transpose(-2, -1)) * (slots[:, None] > slots[None, :])        # (B, H, Tk, Tk): w_b . k_j, b > j
        mapped = U @ (N * beta.transpose(-2, -1)) @ V                            # the sum over j < b <= a <= i
        return (q @ k.transpose(-2, -1) - mapped) / math.sqrt(self.head_dim)

    def sequential_scores(self, scores: torch.Tensor, inputs: ScoreInputs) -> torch.Tensor:  # (B, H, Tq, Tk)
        """What edit_scores returns, the plain way: token t's map applied to every key before it, t = 1 ..
        Tk-1, and each query's row read once its own map is applied (a loop of Tk rank-1 updates)."""
        q, keys, w, beta = self._inputs(scores, inputs)
        first, Tk = _query_rows(inputs), keys.shape[-2]
        slots = torch.arange(Tk, device=keys.device)
        rows = [] if first > 0 else [q[..., :1, :] @ keys.transpose(-2, -1)]     # query at slot 0: no map yet
        for t in range(1, Tk):
            w_t, beta_t = w[..., t:t + 1, :], beta[..., t:t + 1, :]              # (B, H, 1, hd), (B, H, 1, 1)
            before = (slots < t).to(scores.dtype)[:, None]                        # (Tk, 1)
            keys = keys - before * beta_t * (keys @ w_t.transpose(-2, -1)) * w_t  # H_t k_j for j < t
            if t >= first:
                rows.append(q[..., t - first:t - first + 1, :] @ keys.transpose(-2, -1))   # (B, H, 1, Tk)
        return torch.cat(rows, -2) / math.sqrt(self.head_dim)

    def _inputs(self, scores, inputs: ScoreInputs) -> tuple:
        """q, k, w (B, H, Tk, hd) and beta (B, H, Tk, 1) in the scores' dtype, k and the state checked."""
        _check_heads("PaTH", "k", inputs.k, self.num_heads, self.head_dim)
        w = _state(inputs, "w", "PaTH").to(scores.dtype)
        beta = _state(inputs, "beta", "PaTH").to(scores.dtype)
        return inputs.q.to(scores.dtype), inputs.k.to(scores.dtype), w, beta


def householder_product(w: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """H_L ... H_2 H_1 (the last token's map leftmost, as PaTH applies them), H_t = I - beta_t w_t w_t^T, in
    the compact UT form the paper uses to parallelise: I - W^T A W with A = (I + strictly_lower(diag(beta)
    W W^T))^{-1} diag(beta), found by one triangular solve instead of L products.

    w: (..., L, d) (rows w_t; unit vectors in PaTH, any here), beta: (..., L). Returns (..., d, d) in
    w's dtype (computed in float32 or better)."""
    _checks.float_tensor("w", w)
    _checks.float_tensor("beta", beta)
    if w.dim() < 2 or beta.shape != w.shape[:-1]:
        raise ValueError(f"w must have shape (..., L, d) and beta (..., L), got {tuple(w.shape)} and "
                         f"{tuple(beta.shape)}")
    work = _checks.compute_dtype(w.dtype)
    W, b = w.to(work), beta.to(work)
    eye_l = torch.eye(W.shape[-2], dtype=work, device=w.device)
    lower = torch.tril(b[..., :, None] * (W @ W.transpose(-2, -1)), diagonal=-1)       # (..., L, L)
    A = torch.linalg.solve_triangular(eye_l + lower, torch.diag_embed(b), upper=False)  # (..., L, L)
    eye_d = torch.eye(W.shape[-1], dtype=work, device=w.device)
    return (eye_d - W.transpose(-2, -1) @ A @ W).to(w.dtype)

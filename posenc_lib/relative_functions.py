"""Learned functions of the distance as score biases: Kerple (a kernel with two numbers per head) and FIRE (a small
MLP of a normalised log distance). Both add b_h(i, j) to the score of query i and key j, like ALiBi and T5; the
course's relative position is r = key - query = j - i (relative.py), so the distance a causal query sees is
i - j = -r >= 0.

Kerple (Chi et al. 2022, arXiv 2205.09921), the logarithmic kernel, per head h:

    b_h(i, j) = -r1_h * log(1 + r2_h * |i - j|),        r1_h, r2_h > 0, learned

ALiBi is the straight line -m_h |i - j|; the log bends it, so far keys keep more weight. The power variant is
b_h = -r1_h * |i - j| ** r2_h with 0 < r2_h <= 2. Checked against the authors' code (chijames/KERPLE, a gpt-neox
fork: `ParallelKerpleLog` and `ParallelKerplePower`): log: r1 drawn from U(0, 2), r2 from U(0, 1); power: the
coefficient r1 from U(0, 1), the exponent r2 from U(0, 2); each kept >= eps = 0.01 (the exponent also <= 2) by
clamping the parameters in every forward.
Here the clamp is in the forward, with the gradient passed straight through (the value is clamped, the parameter
is not changed in place): the same values, and a parameter below eps still gets its gradient back.

FIRE (Li et al. 2023, "Functional Interpolation for Relative Positions Improves Long Context Transformers",
arXiv 2310.04418), per head h, for a query at position i:

    b_h(i, j) = f_h( psi(i - j) / psi(max(L, i)) ),      psi(x) = log(c |x| + 1)

f: R -> R^heads an MLP (1 -> 32 -> heads, ReLU), c > 0 and the threshold L learned (L = |L_mult * L0|, L0
fixed). Dividing by psi of the query's own position ("progressive interpolation") maps every causal distance into
[0, 1], whatever the length; the threshold keeps short prefixes from being stretched. Checked against the reference
code printed in the paper's appendix (copied in public repositories, e.g. mcleish7/arithmetic,
cramming/architectures/embeddings.py `FIRE`): c = 0.1 and L0 = 512 at the start, L's multiplier 1, eps = 1e-6
added to the denominator.
"""
from __future__ import annotations

import torch
from torch import nn

from . import _checks
from .attention import PositionalEncoding, check_query
from .relative import relative_positions

KERPLE_VARIANTS = ("log", "power")


def _clamped(p: torch.Tensor, low: float, high: float | None = None) -> torch.Tensor:
    """p clamped to [low, high] in value, its gradient passed straight through (the authors clamp the parameter)."""
    return p + (p.clamp(min=low, max=high) - p).detach()


class Kerple(PositionalEncoding):
    """Kerple's score bias (see the module docstring): Kerple(num_heads, variant="log", eps=0.01).

    enc(q, q_positions=None, k_positions=None) -> the bias (batch or 1, num_heads, Tq, Tk) in q's dtype, from q
    (batch, num_heads, Tq, head_dim). Registered as "kerple" (the log variant) in model.ENCODINGS."""

    def __init__(self, num_heads: int, *, variant: str = "log", eps: float = 1e-2):
        super().__init__()
        self.num_heads = _checks.positive_int("num_heads", num_heads)
        self.variant = _checks.choice("variant", variant, KERPLE_VARIANTS)
        self.eps = _checks.positive_float("eps", eps)
        log = variant == "log"                   # the authors' draws: log r1 ~ U(0, 2), r2 ~ U(0, 1); power swapped
        self.r1 = nn.Parameter(torch.rand(num_heads, device="cpu") * (2.0 if log else 1.0))
        self.r2 = nn.Parameter(torch.rand(num_heads, device="cpu") * (1.0 if log else 2.0))

    @classmethod
    def from_config(cls, config) -> Kerple:
        return cls(config.num_heads)

    def score_bias(self, q, q_positions, k_positions):
        q_positions, k_positions = check_query(q, q_positions, k_positions, owner="Kerple", num_heads=self.num_heads)
        distance = relative_positions(q_positions, k_positions).abs()[:, None].to(self.r1.dtype)  # (B, 1, Tq, Tk)
        r1 = _clamped(self.r1, self.eps)[:, None, None]                                         # (H, 1, 1)
        if self.variant == "log":
            bias = -r1 * torch.log1p(_clamped(self.r2, self.eps)[:, None, None] * distance)
        else:
            bias = -r1 * distance.pow(_clamped(self.r2, self.eps, 2.0)[:, None, None])
        return bias.to(q.dtype)

    def extra_repr(self):
        return f"num_heads={self.num_heads}, variant={self.variant!r}, eps={self.eps}"


class FIRE(PositionalEncoding):
    """FIRE's score bias (see the module docstring): FIRE(num_heads, mlp_width=32, init_c=0.1, init_L=512.0,
    eps=1e-6).

    enc(q, q_positions=None, k_positions=None) -> the bias (batch or 1, num_heads, Tq, Tk) in q's dtype. Registered
    as "fire" in model.ENCODINGS; from a TinyLMConfig, init_L is config.max_len (the experiments' training length;
    the reference code's default 512 is its models' length scale)."""

    def __init__(self, num_heads: int, *, mlp_width: int = 32, init_c: float = 0.1, init_L: float = 512.0,
                 eps: float = 1e-6):
        super().__init__()
        self.num_heads = _checks.positive_int("num_heads", num_heads)
        mlp_width = _checks.positive_int("mlp_width", mlp_width)
        self.eps = _checks.positive_float("eps", eps)
        self.mlp = nn.Sequential(nn.Linear(1, mlp_width), nn.ReLU(), nn.Linear(mlp_width, num_heads))
        self.c = nn.Parameter(torch.tensor(_checks.positive_float("init_c", init_c), device="cpu"))
        self.register_buffer("init_L", torch.tensor(_checks.positive_float("init_L", init_L), device="cpu"))
        self.L_multiplier = nn.Parameter(torch.tensor(1.0, device="cpu"))

    @classmethod
    def from_config(cls, config) -> FIRE:
        return cls(config.num_heads, init_L=float(config.max_len))

    def normalized_distance(self, q_positions: torch.Tensor, k_positions: torch.Tensor) -> torch.Tensor:
        """psi(i - j) / psi(max(L, i)): (B, Tq, Tk) in the MLP's dtype, for query positions i and key positions j."""
        work = self.c.dtype
        distance = -relative_positions(q_positions, k_positions).to(work)          # (B, Tq, Tk): i - j
        query = q_positions.to(work)
        query = query[None] if query.dim() == 1 else query                          # (B, Tq)
        threshold = (self.L_multiplier * self.init_L).abs()
        normalizer = torch.maximum(query, threshold)[..., None]                     # (B, Tq, 1)
        return torch.log1p((self.c * distance).abs()) / (torch.log1p((self.c * normalizer).abs()) + self.eps)

    def score_bias(self, q, q_positions, k_positions):
        q_positions, k_positions = check_query(q, q_positions, k_positions, owner="FIRE", num_heads=self.num_heads)
        bias = self.mlp(self.normalized_distance(q_positions, k_positions)[..., None])    # (B, Tq, Tk, H)
        return bias.permute(0, 3, 1, 2).to(q.dtype)

    def extra_repr(self):
        return f"num_heads={self.num_heads}, eps={self.eps}"

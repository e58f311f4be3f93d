"""xPos (Sun et al. 2022, "A Length-Extrapolatable Transformer", arXiv 2212.10554): RoPE with a decay per pair.

RoPE rotates pair i of a query at position n and of a key at position m by n * theta_i and m * theta_i
(posenc_lib.rope). xPos also scales pair i of the query by zeta_i ** (n / B) and of the key by
zeta_i ** (-m / B), so their product carries

    zeta_i ** ((n - m) / B),     zeta_i = (i / (d/2) + gamma) / (1 + gamma),  i = 0 .. d/2 - 1

(gamma = 0.4, B = scale_base = 512 in the paper). Every zeta_i < 1: a key n - m tokens before its query
(n - m > 0) is damped, the fastest pairs (small i, zeta_0 = gamma / (1 + gamma) = 0.29) most, the slowest
least; the score still depends on n - m only. The values and the split between q (up-scaled) and k
(down-scaled) are torchscale's `XPOS` (torchscale/component/xpos_relative_position.py, microsoft/torchscale:
scale = (arange(0, d, 2) + 0.4 d) / (1.4 d), q with scale ** (pos / scale_base), k with its inverse).

Course conventions: the pairs follow RoPE's `layout` (half-split by default; torchscale pairs interleaved dims,
which is the same encoding up to `absolute.layout_permutation`), and the relative position of the course is
r = key - query = m - n, so the factor is zeta_i ** (-r / B).

Range: torchscale centres the positions of a sequence on 0 before the powers; here the positions are used as
given (so a KV cache's keys keep their factors), and zeta_0 ** (n / B) leaves float32's range past about
n = 87 / ln(1 / zeta_0) * B = 69 B (35,000 positions at B = 512). The factors are computed in float64 and the
scaled q and k returned in their own dtype.
"""
from __future__ import annotations

import math

import torch

from . import _checks
from .attention import PositionalEncoding
from .rope import LAYOUTS, RotaryEmbedding, _over_heads, _positions


def xpos_zeta(dim: int, gamma: float = 0.4, *, device=None, dtype=torch.float64) -> torch.Tensor:
    """The (dim/2,) decay bases zeta_i = (i / (dim/2) + gamma) / (1 + gamma), i = 0 .. dim/2 - 1, each in (0, 1)."""
    dim = _checks.even_int("dim", dim)
    gamma = _checks.positive_float("gamma", gamma)
    i = torch.arange(dim // 2, device=device, dtype=torch.float64)
    return ((i / (dim // 2) + gamma) / (1 + gamma)).to(_checks.float_dtype("dtype", dtype))


def _pairs_to_dims(t: torch.Tensor, layout: str) -> torch.Tensor:
    """(..., d/2) one value per pair -> (..., d), the value on both members of its pair in `layout`."""
    return torch.cat((t, t), dim=-1) if layout == "half" else t.repeat_interleave(2, dim=-1)


class XPos(PositionalEncoding):
    """xPos as an encoding for MultiHeadAttention: RoPE(q, k), then q * zeta ** (n / B), k * zeta ** (-m / B).

    XPos(dim, base=10000.0, scale_base=512.0, gamma=0.4, layout="half"); calling it, enc(q, k, positions=None),
    returns the pair (q', k') of q's and k's shapes, dtypes and device. Registered as "xpos" in model.ENCODINGS
    (from a TinyLMConfig: head_dim, rope_base)."""

    def __init__(self, dim: int, *, base: float = 10000.0, scale_base: float = 512.0, gamma: float = 0.4,
                 layout: str = "half"):
        super().__init__()
        self.dim = _checks.even_int("dim", dim)
        self.scale_base = _checks.positive_float("scale_base", scale_base)
        self.gamma = _checks.positive_float("gamma", gamma)
        self.layout = _checks.choice("layout", layout, LAYOUTS)
        self.rope = RotaryEmbedding(dim, base=base, layout=layout)
        # ln(zeta_i) / B, kept per device in float64: a forward never copies from the host
        self._log_rate: dict = {}

    @classmethod
    def from_config(cls, config) -> XPos:
        return cls(config.d_model // config.num_heads, base=config.rope_base)

    @classmethod
    def check_config(cls, config) -> None:
        RotaryEmbedding.check_config(config)

    def _factor(self, x: torch.Tensor, positions: torch.Tensor, sign: float) -> torch.Tensor:
        """zeta ** (sign * position / B) per dim of x, (..., seq, dim) lined up over x's heads, in x's compute dtype."""
        work = _checks.angle_dtype(x.device)
        key = (x.device, work)
        if key not in self._log_rate:
            self._log_rate[key] = xpos_zeta(self.dim, self.gamma, device=x.device, dtype=work).log() / self.scale_base
        exponent = sign * positions.to(work).unsqueeze(-1) * self._log_rate[key]      # (..., seq, d/2)
        factor = _pairs_to_dims(exponent.exp(), self.layout).to(_checks.compute_dtype(x.dtype))
        return _over_heads(factor, x, positions)

    def rotate_qk(self, q, k, q_positions=None, k_positions=None):
        rq, rk = self.rope.rotate_qk(q, k, q_positions, k_positions)            # checks q, k, positions
        q_positions = _positions(q_positions, q, "q_positions")
        k_positions = _positions(k_positions, k, "k_positions")
        q_out = (rq.to(_checks.compute_dtype(q.dtype)) * self._factor(q, q_positions, 1.0)).to(q.dtype)
        k_out = (rk.to(_checks.compute_dtype(k.dtype)) * self._factor(k, k_positions, -1.0)).to(k.dtype)
        return q_out, k_out

    def extra_repr(self):
        return f"dim={self.dim}, base={self.rope.base}, scale_base={self.scale_base}, gamma={self.gamma}, " \
               f"layout={self.layout!r}"


def xpos_float32_limit(scale_base: float = 512.0, gamma: float = 0.4) -> float:
    """The largest |position| at which zeta_0 ** (position / B) stays inside float32's normal range (about 87 in
    natural log): past it, torchscale centres the positions of one sequence; see the module docstring."""
    scale_base = _checks.positive_float("scale_base", scale_base)
    gamma = _checks.positive_float("gamma", gamma)
    return math.log(torch.finfo(torch.float32).max) / math.log((1 + gamma) / gamma) * scale_base

"""One family: every fixed linear position encoding as a one-parameter group exp(t M) (notebook 14, section 1).

A generator M is a (d, d) matrix; position t acts on a d-vector by the matrix exponential exp(t M)
(exp(0) = I, exp(s M) exp(t M) = exp((s + t) M)). Two ways to act on a query q at position m and a key k
at position n:

    same action              q -> exp(m M) q,      k -> exp(n M) k
                             score = q^T exp(m M^T) exp(n M) k
    inverse-transpose action q -> exp(-m M^T) q,   k -> exp(n M) k
                             score = q^T exp(-m M) exp(n M) k = q^T exp((n - m) M) k

The inverse-transpose score depends on n - m (the course's relative position r = key - query) for ANY M.
The same-action score does for every q, k only when exp(m M^T) exp(m M) = I for all m, i.e. M^T = -M
(differentiate at m = 0): a skew-symmetric M, a rotation, which is RoPE. For a skew M both actions are the
same map, since exp(-m M^T) = exp(m M). (Jane Street's tech blog, "Using group theory to explore the space
of positional encodings for attention", Apr 2026; GRAPE, Zhang et al., arXiv 2512.07805.)

Which generator is which encoding (pair i = dims (a, b) of a layout, see rope.pair_indices):
    RoPE (RoFormer, arXiv 2104.09864)  M = S, S[a, b] = -theta_i, S[b, a] = theta_i: exp(m S) turns pair i
                                       counter-clockwise by m theta_i, exactly rope.apply_rope's rotation
    a scalar                           M = lam I: the score times exp(lam (n - m)) (inverse-transpose), or
                                       exp(lam (m + n)) (same action: not relative)
    xPos (Sun et al., arXiv 2212.10554) M = S + c_i I on pair i, c_i = -log(zeta_i) / scale_base > 0, with
                                       zeta_i = (2i + 0.4 d) / (1.4 d) (microsoft/torchscale,
                                       torchscale/component/xpos_relative_position.py): keys get exp(n M),
                                       queries exp(-m M^T), score factor zeta_i ** ((m - n) / scale_base)
    ALiBi (Press et al., arXiv 2108.12409) a nilpotent N (N @ N = 0, so exp(t N) = I + t N) on q and k lifted
                                       by two coordinates: see alibi_generator
    NoPE                               M = 0

Causal direction: a query at m sees keys n <= m, so n - m <= 0. A real part lam > 0 (inverse-transpose)
makes exp(lam (n - m)) shrink with the distance m - n: a decay. lam < 0 grows with the distance: it blows up.

Matrices are made and exponentiated in float64 (float32 on devices without it, as rope's angles), the
result is rounded once to the input's dtype, on its device; no input is modified.
"""
from __future__ import annotations

import math

import torch

from . import _checks
from .attention import default_positions
from .rope import pair_indices
from .scaling import rope_inv_freq

ACTIONS = ("same", "inverse_transpose")
MAX_MATRIX_ELEMENTS = 1 << 27  # positions x d x d entries of exp(t M) made at once: about 1 GiB of float64


# ----------------------------------------------------------------------------- checks
def _check_generator(M, *, owner: torch.Tensor | None = None) -> torch.Tensor:
    """M: a finite floating (d, d) tensor (on owner's device when given)."""
    if not isinstance(M, torch.Tensor):
        raise TypeError(f"M must be a torch.Tensor (the (d, d) generator), got {type(M).__name__}")
    if not M.is_floating_point():
        raise TypeError(f"M must be a real floating-point tensor (float32 or float64), got {M.dtype}")
    if M.dim() != 2 or M.shape[0] != M.shape[1]:
        raise ValueError(f"M must be a square (d, d) matrix, got shape {tuple(M.shape)}")
    _checks.at_most("M's size d", M.shape[0], _checks.MAX_HEAD_DIM + 2, "a head's dims, plus two lifted ones")
    if owner is not None:
        _checks.same_device("x", owner, M=M)
    return _checks.finite_tensor("M", M)


def _check_vectors(name: str, x, M: torch.Tensor) -> None:
    _checks.float_tensor(name, x)
    if x.dim() < 2:
        raise ValueError(f"{name} must have shape (..., seq, d), got shape {tuple(x.shape)}")
    if x.shape[-1] != M.shape[0]:
        raise ValueError(f"{name}'s last dimension ({x.shape[-1]}) must equal M's size d ({M.shape[0]}): "
                         f"M acts on d-vectors")
    _checks.same_device(name, x, M=M)


# ----------------------------------------------------------------------------- the action
def generator_matrices(M: torch.Tensor, positions: torch.Tensor, *, inverse_transpose: bool = False) -> torch.Tensor:
    """exp(t M) for every position t: positions (...,) integers on M's device -> (..., d, d) in float64 (float32
    on devices without it). inverse_transpose=True: exp(-t M^T), the inverse transpose of exp(t M)."""
    _check_generator(M)
    positions = _checks.position_values("positions", positions)
    _checks.same_device("M", M, positions=positions)
    d = M.shape[0]
    _checks.at_most("positions x d x d", positions.numel() * d * d, MAX_MATRIX_ELEMENTS,
                    "exp(t M) is made for every position at once")
    work = _checks.angle_dtype(M.device)
    G = -M.to(work).T if _checks.boolean("inverse_transpose", inverse_transpose) else M.to(work)
    return torch.linalg.matrix_exp(positions.to(work)[..., None, None] * G)  # (..., d, d)


def apply_generator(x: torch.Tensor, positions: torch.Tensor | None, M: torch.Tensor, *,
                    inverse_transpose: bool = False) -> torch.Tensor:
    """x (..., seq, d) -> exp(t M) x at each vector's position t (inverse_transpose: exp(-t M^T) x).

    positions: (seq,) or (batch, seq) integers on x's device (batch = x's first dimension, or 1), default
    0 .. seq-1. Keys always get exp(n M); queries get exp(m M) (the same action) or exp(-m M^T) (the
    inverse-transpose action, which makes every generator relative). Returns x's shape, dtype and device.
    """
    _check_generator(M)
    _check_vectors("x", x, M)
    if positions is None:
        positions = default_positions(x)
    batch = x.shape[0] if x.dim() >= 3 else None
    positions = _checks.positions("positions", positions, seq_len=x.shape[-2], device=x.device, batch=batch)
    if positions.dim() == 2:  # (batch, seq) -> (batch, 1, ..., 1, seq): one position per vector of x
        positions = positions.reshape(positions.shape[0], *([1] * (x.dim() - 3)), positions.shape[1])
    E = generator_matrices(M, positions, inverse_transpose=inverse_transpose)  # (..., seq, d, d)
    y = (E @ x.to(E.dtype).unsqueeze(-1)).squeeze(-1)  # (..., seq, d)
    return y.to(x.dtype)


def generator_scores(q: torch.Tensor, k: torch.Tensor, M: torch.Tensor, q_positions: torch.Tensor | None = None,
                     k_positions: torch.Tensor | None = None, *, action: str = "same") -> torch.Tensor:
    """Scores <encoded q_m, encoded k_n>: q (..., Tq, d), k (..., Tk, d) -> (..., Tq, Tk) in q's dtype.

    action "same": q -> exp(m M) q, k -> exp(n M) k; "inverse_transpose": q -> exp(-m M^T) q, so the
    score is q^T exp((n - m) M) k. Positions default to 0 .. T-1 for each; no scaling by sqrt(d)."""
    _checks.choice("action", action, ACTIONS)
    _check_generator(M)
    _check_vectors("q", q, M)
    _check_vectors("k", k, M)
    if q.dtype != k.dtype:
        raise TypeError(f"q and k must have one dtype, got q {q.dtype} and k {k.dtype}")
    eq = apply_generator(q.to(_checks.angle_dtype(q.device)), q_positions, M,
                         inverse_transpose=action == "inverse_transpose")
    ek = apply_generator(k.to(eq.dtype), k_positions, M)
    return (eq @ ek.transpose(-1, -2)).to(q.dtype)


# ----------------------------------------------------------------------------- the generators of known encodings
def _zeros(dim: int, device, dtype) -> torch.Tensor:
    dtype = _checks.float_dtype("dtype", dtype) or torch.float64
    return torch.zeros(dim, dim, device=device, dtype=dtype)


def rope_generator(dim: int, *, base: float = 10000.0, inv_freq: torch.Tensor | None = None, layout: str = "half",
                   device=None, dtype=torch.float64) -> torch.Tensor:
    """RoPE's skew-symmetric (dim, dim) generator S: for pair i = dims (a, b) of `layout` (rope.pair_indices),
    S[a, b] = -theta_i and S[b, a] = theta_i, zero elsewhere. exp(m S) is rope.rope_matrix(m): pair i turned
    counter-clockwise by m theta_i, as apply_rope(layout=layout) does. In the interleaved layout S is
    block-diagonal with 2 x 2 blocks theta_i [[0, -1], [1, 0]]; the half layout's S is that one with rows and
    columns permuted by absolute.layout_permutation(dim). inv_freq: (dim/2,) frequencies, default
    theta_i = base ** (-2i/dim)."""
    dim = _checks.even_int("dim", dim)
    if inv_freq is None:
        inv_freq, _ = rope_inv_freq(dim, base=base, device=device)
    elif not isinstance(inv_freq, torch.Tensor) or inv_freq.shape != (dim // 2,):
        shown = tuple(inv_freq.shape) if isinstance(inv_freq, torch.Tensor) else type(inv_freq).__name__
        raise ValueError(f"inv_freq must be a tensor of shape (dim/2,) = ({dim // 2},), got {shown}")
    S = _zeros(dim, device, dtype)
    first, second = pair_indices(dim, layout, device=S.device)
    theta = _checks.finite_tensor("inv_freq", inv_freq).to(S.device, S.dtype)
    S[first, second], S[second, first] = -theta, theta
    return S


def scalar_generator(dim: int, lam: float, *, device=None, dtype=torch.float64) -> torch.Tensor:
    """lam * I (dim, dim): exp(t lam I) = exp(lam t) I. Inverse-transpose action: the score times
    exp(lam (n - m)), which decays with the causal distance m - n >= 0 for lam > 0 and blows up for lam < 0.
    Same action: exp(lam (m + n)), which depends on m + n: not relative."""
    dim = _checks.positive_int("dim", dim)
    if isinstance(lam, bool) or not isinstance(lam, (int, float)) or not math.isfinite(lam):
        raise TypeError(f"lam must be a finite real number, got {lam!r}")
    return _zeros(dim, device, dtype) + float(lam) * torch.eye(dim, device=device, dtype=dtype)


def xpos_zeta(dim: int, *, device=None, dtype=torch.float64) -> torch.Tensor:
    """xPos's per-pair base zeta_i = (2i + 0.4 dim) / (1.4 dim), i = 0 .. dim/2 - 1, in (0, 1): torchscale's
    `(torch.arange(0, head_dim, 2) + 0.4 * head_dim) / (1.4 * head_dim)`."""
    dim = _checks.even_int("dim", dim)
    return (torch.arange(0, dim, 2, device=device, dtype=dtype) + 0.4 * dim) / (1.4 * dim)


def xpos_generator(dim: int, *, scale_base: float = 512.0, base: float = 10000.0, layout: str = "half",
                   device=None, dtype=torch.float64) -> torch.Tensor:
    """xPos as one generator: RoPE's S plus c_i on the diagonal of pair i, c_i = -log(zeta_i) / scale_base > 0.

    Under the inverse-transpose action (keys exp(n M), queries exp(-m M^T)) the key at n is zeta_i ** (-n /
    scale_base) R_n k and the query zeta_i ** (m / scale_base) R_m q, torchscale's XPOS with downscale=True
    on the keys (its positions are shifted by a constant, which a relative score does not see); the score of
    pair i is multiplied by zeta_i ** ((m - n) / scale_base), a decay with the distance m - n."""
    scale_base = _checks.positive_float("scale_base", scale_base)
    S = rope_generator(dim, base=base, layout=layout, device=device, dtype=dtype)
    c = -xpos_zeta(dim, device=S.device, dtype=S.dtype).log() / scale_base  # (dim/2,) one rate per pair
    first, second = pair_indices(dim, layout, device=S.device)
    S[first, first], S[second, second] = c, c
    return S


def alibi_generator(dim: int, slope: float, *, device=None, dtype=torch.float64) -> torch.Tensor:
    """The nilpotent (dim + 2, dim + 2) generator N = slope * e_a e_b^T, a = dim, b = dim + 1, for q and k
    lifted by alibi_lift (q~ = [q, 1, 0], k~ = [k, 0, 1]). N @ N = 0, so exp(t N) = I + t N (unipotent):

        key at n:    exp(n N) k~    = [k, slope * n, 1]
        query at m:  exp(-m N^T) q~ = [q, 1, -slope * m]
        score        q.k + slope * (n - m) = q.k - slope * (m - n)

    ALiBi's causal bias -slope * (i - j) (query i, key j <= i) exactly. The symmetric -slope * |i - j| cannot
    come from any generator: q^T exp(t M) k is analytic in t, |t| is not."""
    dim = _checks.positive_int("dim", dim)
    if isinstance(slope, bool) or not isinstance(slope, (int, float)) or not math.isfinite(slope):
        raise TypeError(f"slope must be a finite real number, got {slope!r}")
    N = _zeros(dim + 2, device, dtype)
    N[dim, dim + 1] = float(slope)
    return N


def alibi_lift(q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """q (..., d) -> [q, 1, 0] and k (..., d) -> [k, 0, 1], (..., d + 2) each: the lifted vectors on which
    alibi_generator's N acts (their plain dot product is still q.k). New tensors in q's and k's dtypes."""
    _checks.float_tensor("q", q)
    _checks.float_tensor("k", k)
    _checks.same_device("q", q, k=k)
    one_zero = torch.tensor([1.0, 0.0], device=q.device, dtype=q.dtype).expand(*q.shape[:-1], 2)
    zero_one = torch.tensor([0.0, 1.0], device=k.device, dtype=k.dtype).expand(*k.shape[:-1], 2)
    return torch.cat((q, one_zero), dim=-1), torch.cat((k, zero_one), dim=-1)

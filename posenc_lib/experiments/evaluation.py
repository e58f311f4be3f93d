"""Evaluation: the loss on the LAST L positions of windows of L, 2L, 4L, 8L that END at the same places.

The predicted characters are identical at every length; only the positions they sit at (and how
much context precedes them) change, so a rise of the loss with the window is the encoding's doing.

In a window of L the scored characters have 1..L characters of context (the first ones almost none);
in a window of mL, (m-1)L+1..mL. `evaluate_sliding` is the baseline between the two: the SAME
characters, each predicted from exactly L preceding characters (one window of L per character,
scored at its last position), so "loss at mL below the baseline" means the longer context helped.
`losses_at_multiples` is the loss at every multiple of L (07's runner, 08's scalings, the arena, DroPE).

Notebook 08's context-extension methods swap a trained model's RoPE for a rescaled one
(`set_rope_scaling`), weights untouched; `rope_scaling` also gives the fine-tune arm "abf" (the
base raised to config.abf_base).
"""
from __future__ import annotations

import contextlib

import torch
from torch.nn import functional as F

from .. import _checks
from ..absolute import LearnedEncoding
from ..model import TinyLM, make_encoding
from ..rope import RotaryEmbedding
from ..scaling import EXTENSION_METHODS, extension_scaling
from .config import FINETUNE_ARMS, ExperimentConfig


def eval_ends(valid: torch.Tensor, longest: int, windows: int) -> torch.Tensor:
    """(windows,) int64 evenly spaced end indices e in [longest, len(valid) - 1]: the window of n ids is
    valid[e - n : e], its targets valid[e - n + 1 : e + 1]."""
    valid = _check_text(valid)
    longest, windows = _checks.positive_int("longest", longest), _checks.positive_int("windows", windows)
    lo, hi = longest, valid.numel() - 1
    if hi <= lo:
        raise ValueError(f"validation text ({valid.numel()} ids) is shorter than the longest window ({longest})")
    return torch.linspace(lo, hi, windows, device=valid.device).round().to(torch.int64)


def supports_length(model: TinyLM, length: int) -> bool:
    """False when the model has no encoding for `length` positions (a learned table past max_len)."""
    _check_model(model)
    length = _checks.positive_int("length", length)
    enc = model.encoding
    return not (isinstance(enc, LearnedEncoding) and length > enc.max_len)


@torch.no_grad()
def evaluate(model: TinyLM, valid: torch.Tensor, *, context_len: int, score_len: int, ends: torch.Tensor,
             batch: int = 32, per_position: bool = False):
    """Mean cross-entropy (nats/char) over the LAST `score_len` positions of windows of `context_len`
    ending at `ends` (see eval_ends).

    Returns None if the model cannot take `context_len` positions (see `supports_length`). With
    per_position=True returns (loss, (context_len,) float64 tensor of the mean loss at each position).
    """
    context_len, score_len = _checks.positive_int("context_len", context_len), _checks.positive_int("score_len",
                                                                                                   score_len)
    batch = _checks.positive_int("batch", batch)
    if score_len > context_len:
        raise ValueError(f"score_len ({score_len}) must be <= context_len ({context_len})")
    _checks.boolean("per_position", per_position)
    _check_windows(model, valid, ends, context_len)
    if not supports_length(model, context_len):
        return (None, None) if per_position else None
    model.eval()
    offsets = torch.arange(-context_len, 1, device=valid.device)
    total = torch.zeros(context_len, dtype=torch.float64, device=valid.device)
    for i in range(0, ends.numel(), batch):
        window = valid[ends[i:i + batch, None] + offsets]  # (b, n + 1)
        logits, _ = model(window[:, :-1])
        nll = F.cross_entropy(logits.transpose(1, 2), window[:, 1:], reduction="none")  # (b, n)
        total += nll.sum(0).double()
    per_pos = total / ends.numel()
    loss = float(per_pos[-score_len:].mean())
    return (loss, per_pos) if per_position else loss


@torch.no_grad()
def evaluate_sliding(model: TinyLM, valid: torch.Tensor, *, context_len: int, score_len: int, ends: torch.Tensor,
                     tokens: int = 4096):
    """Mean cross-entropy (nats/char) over the same characters as `evaluate(..., score_len=score_len)`
    (the last `score_len` targets of the windows ending at `ends`), each predicted from EXACTLY
    `context_len` preceding characters: target valid[t] gets its own window valid[t - context_len : t],
    scored at its last position only (ends.numel() * score_len windows, `tokens` // context_len of them
    per forward pass). None if the model cannot take `context_len` positions."""
    context_len, score_len = _checks.positive_int("context_len", context_len), _checks.positive_int("score_len",
                                                                                                   score_len)
    tokens = _checks.positive_int("tokens", tokens)
    _check_windows(model, valid, ends, context_len + score_len - 1)
    if not supports_length(model, context_len):
        return None
    model.eval()
    targets = (ends[:, None] + torch.arange(-score_len + 1, 1, device=valid.device)).reshape(-1)  # (W * score_len,)
    if int(targets.min()) < context_len:
        raise ValueError(f"ends must leave context_len + score_len - 1 = {context_len + score_len - 1} characters "
                         f"before them, got an end at {int(ends.min())}")
    offsets = torch.arange(-context_len, 1, device=valid.device)
    batch = max(1, tokens // context_len)
    total = torch.zeros((), dtype=torch.float64, device=valid.device)
    for i in range(0, targets.numel(), batch):
        window = valid[targets[i:i + batch, None] + offsets]  # (b, context_len + 1): inputs, then the target
        logits, _ = model(window[:, :-1])
        total += F.cross_entropy(logits[:, -1], window[:, -1], reduction="sum").double()
    return float(total / targets.numel())


def losses_at_multiples(model: TinyLM, valid: torch.Tensor, cfg: ExperimentConfig, ends: torch.Tensor, *,
                        within=None, per_position: bool = False):
    """07's scoring at every multiple m of cfg.eval_multiples, in ascending order: the mean cross-entropy
    (nats/char) over the last L = cfg.train_len positions of the windows of m * L ending at `ends` (`evaluate`,
    batch cfg.eval_batch), rounded to 5 decimals; None where the model cannot take m * L positions.

    within: None, or m -> a context manager in which the windows of m * L are scored (e.g. a method put on for
    factor m and taken off again). Returns {"1": loss at L, "2": at 2L, ...}; with per_position=True, (that dict,
    the (m * L,) float64 mean loss at each position of the longest window the model takes, None if it takes none).
    """
    _check_config(cfg)
    if within is not None and not callable(within):
        raise TypeError(f"within must be None or a function m -> context manager, got {type(within).__name__}")
    _checks.boolean("per_position", per_position)
    losses, curve = {}, None
    for m in sorted(cfg.eval_multiples):
        with contextlib.nullcontext() if within is None else within(m):
            loss, per_pos = evaluate(model, valid, context_len=cfg.train_len * m, score_len=cfg.train_len, ends=ends,
                                     batch=cfg.eval_batch, per_position=True)
        losses[str(m)] = None if loss is None else round(loss, 5)
        curve = curve if per_pos is None else per_pos
    return (losses, curve) if per_position else losses


def rope_scaling(method: str, factor: float, cfg: ExperimentConfig) -> dict | None:
    """The `scaling` dict that extends a RoPE model trained at cfg.train_len by `factor` with `method`
    (posenc_lib.scaling.extension_scaling with the config's dynamic NTK and Llama 3.1 settings).
    method "abf" (a fine-tune arm, not a no-fine-tuning method): plain RoPE with the base raised to
    cfg.abf_base, {"rope_type": "default", "rope_theta": cfg.abf_base}, whatever the factor."""
    _check_config(cfg)
    if method == "abf":
        return {"rope_type": "default", "rope_theta": float(cfg.abf_base)}
    if method not in FINETUNE_ARMS and method not in EXTENSION_METHODS:
        raise ValueError(f"method must be one of {list(dict.fromkeys(EXTENSION_METHODS + FINETUNE_ARMS))}, "
                         f"got {method!r}")
    return extension_scaling(method, factor, original_max_position_embeddings=cfg.train_len,
                             dynamic_factor=cfg.dynamic_factor, low_freq_factor=cfg.llama3_low_freq_factor,
                             high_freq_factor=cfg.llama3_high_freq_factor)


def set_rope_scaling(model: TinyLM, scaling: dict | None, cfg: ExperimentConfig) -> TinyLM:
    """Change `model` in place: its RoPE becomes one with `scaling` (weights untouched); returns the same model.
    A model without RoPE is refused: swapping its encoding for RoPE would be another model, not a rescaled one."""
    _check_rope_model(model, cfg)
    model.replace_encoding(make_encoding("rope", d_model=cfg.d_model, num_heads=cfg.num_heads, rope_scaling=scaling))
    return model


def _check_model(model) -> None:
    """A model to score: a TinyLM, or any torch module like it (model(idx) -> (logits, loss), an .encoding)."""
    if not isinstance(model, torch.nn.Module) or not hasattr(model, "encoding"):
        raise TypeError(f"model must be a posenc_lib TinyLM (a torch module with an .encoding), got "
                        f"{type(model).__name__}")


def _check_text(valid) -> torch.Tensor:
    """The validation text: a non-empty 1-D tensor of token ids."""
    valid = _checks.int_tensor("valid", valid)
    if valid.dim() != 1 or not valid.numel():
        raise ValueError(f"valid must be a 1-D tensor of token ids (the validation text), got shape "
                         f"{tuple(valid.shape)}")
    return valid


def _check_windows(model, valid, ends, reach: int) -> None:
    """evaluate's model, text and window ends: each end e in [reach, len(valid) - 1] (a window reaches `reach`
    characters back from e; a smaller e would index from the text's end, a larger one past it), on valid's device."""
    _check_model(model)
    valid = _check_text(valid)
    ends = _checks.int_tensor("ends", ends)
    if ends.dim() != 1 or not ends.numel():
        raise ValueError(f"ends must be a 1-D tensor of window ends (eval_ends), got shape {tuple(ends.shape)}")
    _checks.same_device("valid", valid, ends=ends)
    if _checks.values_are_cheap(ends):
        low, high = _checks.value_range(ends)
        if low < reach or high > valid.numel() - 1:
            raise ValueError(f"ends must lie in [{reach}, len(valid) - 1 = {valid.numel() - 1}] (each window reaches "
                             f"{reach} characters back), got min {low}, max {high}")


def _check_config(cfg) -> None:
    if not isinstance(cfg, ExperimentConfig):
        raise TypeError(f"cfg must be an ExperimentConfig, got {type(cfg).__name__}")


def _check_rope_model(model, cfg) -> None:
    """set_rope_scaling's model: a TinyLM with RoPE, of the head size the config's RoPE is made for."""
    if not isinstance(model, TinyLM):
        raise TypeError(f"model must be a posenc_lib TinyLM, got {type(model).__name__}")
    if not isinstance(model.encoding, RotaryEmbedding):
        raise ValueError(f"model must use RoPE to have its RoPE rescaled, got a {model.kind} model "
                         f"({type(model.encoding).__name__}); a context-extension scaling applies to RoPE only")
    _check_config(cfg)
    ours, theirs = (model.config.d_model, model.config.num_heads), (cfg.d_model, cfg.num_heads)
    if ours != theirs:
        raise ValueError(f"cfg's (d_model, num_heads) = {theirs} must be the model's {ours} (the new RoPE turns heads "
                         f"of d_model / num_heads dims)")


def method_position_loss(model: TinyLM, valid: torch.Tensor, *, methods=EXTENSION_METHODS, multiple: int = 8,
                         windows: int = 16, cfg: ExperimentConfig | None = None, scalings: dict | None = None) -> dict:
    """Per-position loss of a trained RoPE model on windows of multiple * L with each method's scaling
    (factor = multiple), on `windows` of notebook 07's window ends. `scalings` (label -> scaling
    dict) adds or overrides entries. The model's own encoding is put back afterwards.
    Returns dict(L, multiple, curves: {label: (n,) tensor}, loss: {label: mean over the last L})."""
    cfg = ExperimentConfig() if cfg is None else cfg
    _check_rope_model(model, cfg)
    multiple = _checks.positive_int("multiple", multiple)
    if scalings is not None and not isinstance(scalings, dict):
        raise TypeError(f"scalings must be a dict {{label: scaling dict or None}} or None, got "
                        f"{type(scalings).__name__}")
    n = cfg.train_len * multiple
    todo = {m: rope_scaling(m, float(multiple), cfg) for m in methods}
    todo.update(scalings or {})
    ends = eval_ends(valid, cfg.train_len * max(cfg.eval_multiples), windows)
    original = model.encoding
    curves, losses = {}, {}
    try:
        for label, scaling in todo.items():
            set_rope_scaling(model, scaling, cfg)
            losses[label], curves[label] = evaluate(model, valid, context_len=n, score_len=cfg.train_len, ends=ends,
                                                    batch=cfg.eval_batch, per_position=True)
    finally:
        model.replace_encoding(original)
    return {"L": cfg.train_len, "multiple": multiple, "curves": curves, "loss": losses}

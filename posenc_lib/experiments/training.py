"""Training: ONE AdamW loop (`fit`) for every model the course trains, and the experiment's TinyLM.

    for step in 0 .. steps-1:
        lr_t = lr_at(step)                    (if a schedule is given; else AdamW keeps `lr`)
        inputs, targets = next_batch()        (B, T) ids each
        loss = model(inputs, targets)         mean next-token cross-entropy
        zero the grads; loss.backward()
        clip the gradient norm to grad_clip   (if grad_clip)
        AdamW step (decoupled weight decay)
        on_step(step, loss)

Two users: `train` (notebooks 07/08: random windows of the corpus, warm-up then cosine learning
rate, gradient clipping, a loss curve) and `learned.train_position_demo` (notebook 04: lag-copy
batches, constant learning rate, a snapshot of the position table every few steps).
"""
from __future__ import annotations

import math
from typing import Callable

import torch

from .. import _checks
from ..model import TinyLM
from .config import ExperimentConfig
from .corpus import VOCAB_SIZE


def seeded_tinylm(seed: int, vocab_size: int, **settings) -> TinyLM:
    """torch.manual_seed(seed), then TinyLM(vocab_size, **settings): one seed, one set of initial weights
    (TinyLM builds its encoding last, so the shared weights do not depend on the encoding)."""
    torch.manual_seed(_checks.positive_int("seed", seed, allow_zero=True))
    return TinyLM(vocab_size, **settings)


def build_model(encoding, cfg: ExperimentConfig, seed: int) -> TinyLM:
    """The experiment's TinyLM: the same architecture and the same init seed for every encoding (a name in
    ENCODINGS, or a PositionalEncoding used as it is, e.g. a partial RoPE). Every encoding gets the same
    settings; each takes the ones it uses (T5 its buckets, learned max_len)."""
    return seeded_tinylm(seed, VOCAB_SIZE, encoding=encoding, d_model=cfg.d_model, num_heads=cfg.num_heads,
                         num_layers=cfg.num_layers, max_len=cfg.train_len, num_buckets=cfg.t5_num_buckets,
                         max_distance=cfg.t5_max_distance)


def warmup_cosine_lr(step: int, total: int, lr: float, warmup: int, min_ratio: float) -> float:
    """Linear warm-up to `lr` over `warmup` steps, then cosine decay to lr * min_ratio at step `total`:

        lr_t = lr * (t + 1) / warmup                                   for t < warmup
        lr_t = lr * (min_ratio + (1 - min_ratio) * (1 + cos(pi * p)) / 2),  p = (t - warmup) / (total - warmup)
    """
    if step < warmup:
        return lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return lr * (min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


def fit(model: torch.nn.Module, next_batch: Callable[[], tuple], *, steps: int, lr: float, weight_decay: float,
        lr_at: Callable[[int], float] | None = None, grad_clip: float | None = None,
        on_step: Callable[[int, float], None] | None = None,
        position_sampler: Callable[[torch.Tensor], torch.Tensor] | None = None) -> list:
    """The one training loop (see the module docstring): AdamW(model.parameters(), lr, weight_decay)
    for `steps` steps on `next_batch()`; returns the training loss of every step (floats). The model is
    in train mode during the loop and in eval mode after it. position_sampler: inputs (B, T) -> the
    positions (B, T) the model is given (experiments.positions: randomized positions, PoSE); None: the
    model's own 0 .. T-1."""
    steps = _checks.positive_int("steps", steps, allow_zero=True)
    lr = _checks.positive_float("lr", lr)
    weight_decay = _checks.positive_float("weight_decay", weight_decay, inclusive=True)
    if grad_clip is not None:
        _checks.positive_float("grad_clip", grad_clip, inclusive=True)
    if position_sampler is not None and not callable(position_sampler):
        raise TypeError(f"position_sampler must be a function inputs (B, T) -> positions (B, T), or None, got "
                        f"{type(position_sampler).__name__}")
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    model.train()
    losses = []
    for step in range(steps):
        if lr_at is not None:
            for group in optimizer.param_groups:
                group["lr"] = lr_at(step)
        inputs, targets = next_batch()
        if position_sampler is None:
            _, loss = model(inputs, targets)
        else:
            _, loss = model(inputs, targets, positions=position_sampler(inputs))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if grad_clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        optimizer.step()
        losses.append(loss.item())
        if on_step is not None:
            on_step(step, losses[-1])
    model.eval()
    return losses


def train(model: TinyLM, data: torch.Tensor, *, seq_len: int, steps: int, batch_size: int, lr: float,
          seed: int, warmup: int = 100, min_lr_ratio: float = 0.1, weight_decay: float = 0.01,
          grad_clip: float = 1.0, log_every: int = 50, progress=None, position_sampler=None,
          shard: tuple | None = None) -> list:
    """`fit` on random windows of `seq_len + 1` ids of `data` (inputs: the first seq_len, targets: the
    last seq_len) with `warmup_cosine_lr`; returns the curve [[step, mean loss of the last log_every
    steps], ...].

    The windows come from a generator seeded with 10_000 + seed, so two encodings trained with the same
    seed see exactly the same batches. progress(n) is called with the number of steps just logged;
    position_sampler goes to `fit`.

    shard=(rank, world_size): one process of a DistributedDataParallel run (`model` wrapped in DDP). Every rank
    draws the same global batch of batch_size windows (and its positions) and trains on rows
    rank * b .. (rank + 1) * b - 1, b = batch_size / world_size; DDP averages the gradients, so the update is
    the single-process one up to float rounding. The logged loss is the global batch's (mean over ranks).
    """
    _checks.int_tensor("data", data)
    seq_len, batch_size = _checks.positive_int("seq_len", seq_len), _checks.positive_int("batch_size", batch_size)
    log_every = _checks.positive_int("log_every", log_every)
    if data.dim() != 1 or data.numel() <= seq_len + 1:
        raise ValueError(f"data must be a 1-D tensor of more than seq_len + 1 = {seq_len + 1} ids, got shape "
                         f"{tuple(data.shape)}")
    rank, world = _shard(shard, batch_size)
    rows = slice(rank * batch_size // world, (rank + 1) * batch_size // world)   # this rank's part of the batch
    gen = torch.Generator().manual_seed(10_000 + seed)
    offsets = torch.arange(seq_len + 1, device=data.device)
    drawn, sample = {}, position_sampler   # a sharded run's positions: sample(global batch), this rank's rows

    def next_batch():
        starts = torch.randint(0, data.numel() - seq_len - 1, (batch_size,), generator=gen, device=gen.device)
        batch = data[starts.to(data.device)[:, None] + offsets]  # (B, T + 1)
        if world > 1 and sample is not None:
            drawn["positions"] = sample(batch[:, :-1])[rows]
        batch = batch[rows]                                      # (B / world, T + 1)
        return batch[:, :-1], batch[:, 1:]

    curve, running, count = [], 0.0, 0

    def log(step, loss):
        nonlocal running, count
        if world > 1:   # the global batch's loss: the mean of the ranks' (equal) shares
            total = torch.tensor([loss], dtype=torch.float64, device=data.device)   # NCCL reduces GPU tensors
            torch.distributed.all_reduce(total)
            loss = float(total) / world
        running, count = running + loss, count + 1
        if (step + 1) % log_every == 0 or step + 1 == steps:
            curve.append([step + 1, round(running / count, 4)])
            running, count = 0.0, 0
            if progress is not None:
                progress(step + 1 - (curve[-2][0] if len(curve) > 1 else 0))

    if world > 1 and position_sampler is not None:
        if not callable(position_sampler):
            raise TypeError(f"position_sampler must be a function inputs (B, T) -> positions (B, T), or None, got "
                            f"{type(position_sampler).__name__}")
        position_sampler = lambda inputs: drawn["positions"]  # noqa: E731  (drawn with the global batch)
    fit(model, next_batch, steps=steps, lr=lr, weight_decay=weight_decay, grad_clip=grad_clip, on_step=log,
        position_sampler=position_sampler,
        lr_at=lambda step: warmup_cosine_lr(step, steps, lr, warmup, min_lr_ratio))
    return curve


def _shard(shard, batch_size: int) -> tuple[int, int]:
    """train's shard: (rank, world_size) with 0 <= rank < world_size and world_size dividing batch_size."""
    if shard is None:
        return 0, 1
    if not isinstance(shard, tuple) or len(shard) != 2:
        raise TypeError(f"shard must be a tuple (rank, world_size) or None, got {shard!r}")
    rank, world = _checks.positive_int("shard's rank", shard[0], allow_zero=True), _checks.positive_int(
        "shard's world_size", shard[1])
    if world > 1 and not (torch.distributed.is_available() and torch.distributed.is_initialized()):
        raise ValueError(f"shard={shard} needs torch.distributed's process group (run under torchrun, or call "
                         f"torch.distributed.init_process_group first)")
    if rank >= world or batch_size % world:
        raise ValueError(f"shard must have rank < world_size and world_size dividing batch_size = {batch_size} "
                         f"(every rank trains on an equal part of the global batch), got {shard}")
    return rank, world

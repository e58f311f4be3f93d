"""Training-time position recipes: which positions a training window of L tokens is given, so that a model trained
at L meets the positions (and distances) of a longer target length. Each builder returns a `position_sampler`
for `training.fit` / `training.train`: a function inputs (B, L) ids -> positions (B, L) int64 on the inputs'
device, drawn from its own seeded generator (the global RNG is not touched, so two runs with one seed see the
same positions). The text of a window stays contiguous; only its positions change.

    randomized_positions(max_pos)   Ruoss et al. 2023 (arXiv 2305.16843): each row a sorted random subset of L
                                    distinct positions of [0, max_pos), max_pos > L
    pose_positions(target_len)      Zhu et al. 2023, PoSE (arXiv 2309.10400): the window in two chunks; the
                                    first at 0 .. l1 - 1, the second moved on by a skip u, so the positions
                                    reach up to target_len - 1

PoSE as the authors' code draws it (dwzhu-pku/PoSE, src/train_pose.py `train_preprocess_function_pose`): the
first chunk's length l1 ~ U{1 .. (L + 1) // 2}, the skip u ~ U{0 .. target_len - L}; positions 0 .. l1 - 1 then
l1 + u .. L - 1 + u. The authors' code also takes the second chunk's TEXT from further on in the document (the
skipped text is left out); here the text stays contiguous, so only the positions jump. Their randomized baseline
(`train_preprocess_function_randomized`, the same file) is Ruoss et al.'s sorted random subset.
"""
from __future__ import annotations

from typing import Callable

import torch

from .. import _checks


def _generator(seed: int) -> torch.Generator:
    return torch.Generator(device="cpu").manual_seed(_checks.positive_int("seed", seed, allow_zero=True))


def _check_inputs(inputs, name: str, limit: int, why: str) -> tuple[int, int]:
    """(batch, seq) of a training batch of ids (batch, seq >= 1), seq at most the recipe's `name` = limit."""
    _checks.int_tensor("inputs", inputs)
    if inputs.dim() != 2 or inputs.shape[1] == 0:
        raise ValueError(f"inputs must have shape (batch, seq) with seq >= 1, got {tuple(inputs.shape)}")
    if inputs.shape[1] > limit:
        raise ValueError(f"inputs of {inputs.shape[1]} tokens need {name} >= seq ({why}), got {name}={limit}")
    return inputs.shape[0], inputs.shape[1]


def randomized_positions(max_pos: int, *, seed: int = 0) -> Callable[[torch.Tensor], torch.Tensor]:
    """Ruoss et al.'s randomized positions: a sampler giving each row of a (B, L) batch a sorted random subset of L
    distinct positions of [0, max_pos) (every subset equally likely). max_pos must be > L at the call."""
    max_pos = _checks.positive_int("max_pos", max_pos)
    gen = _generator(seed)

    def sample(inputs: torch.Tensor) -> torch.Tensor:
        batch, seq = _check_inputs(inputs, "max_pos", max_pos, "distinct positions of [0, max_pos)")
        keys = torch.rand(batch, max_pos, generator=gen, device="cpu")            # a uniform random order per row
        chosen = keys.topk(seq, dim=-1).indices.sort(dim=-1).values               # (B, L): L distinct, sorted
        return chosen.to(inputs.device)

    return sample


def pose_positions(target_len: int, *, seed: int = 0) -> Callable[[torch.Tensor], torch.Tensor]:
    """PoSE's positions (two chunks, as the authors' code): a sampler giving row b of a (B, L) batch the positions
    0 .. l1 - 1, then l1 + u .. L - 1 + u, with l1 ~ U{1 .. (L + 1) // 2} and u ~ U{0 .. target_len - L}
    drawn per row. target_len must be >= L at the call (target_len = L gives 0 .. L - 1)."""
    target_len = _checks.positive_int("target_len", target_len)
    gen = _generator(seed)

    def sample(inputs: torch.Tensor) -> torch.Tensor:
        batch, seq = _check_inputs(inputs, "target_len", target_len, "PoSE covers target_len positions with windows "
                                   "of seq")
        first = torch.randint(1, (seq + 1) // 2 + 1, (batch, 1), generator=gen, device="cpu")   # l1, (B, 1)
        skip = torch.randint(0, target_len - seq + 1, (batch, 1), generator=gen, device="cpu")  # u, (B, 1)
        offsets = torch.arange(seq, device="cpu")[None]                                         # (1, L)
        return (offsets + torch.where(offsets >= first, skip, 0)).to(inputs.device)

    return sample

"""DistributedDataParallel for the arena: the same command under `torchrun --nproc_per_node=N` trains each model
on N processes (gloo on CPU, NCCL on GPUs).

    rank r of N: same seed -> same initial weights; same generator -> same global batch of B windows each step;
                 rank r trains on rows r*B/N .. (r+1)*B/N - 1 (experiments.training.train's `shard`), DDP averages
                 the gradients: the update of a single process with the whole batch, up to float rounding
    rank 0:      evaluates, runs the inference methods, writes every file; the others wait (barrier)

Without torchrun (no WORLD_SIZE in the environment, or 1) nothing here starts a process group.
"""
from __future__ import annotations

import gc
import os
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Dist:
    rank: int = 0
    world: int = 1
    device: str = "cpu"

    @property
    def shard(self):
        """train's shard: None for one process, else (rank, world)."""
        return None if self.world == 1 else (self.rank, self.world)


_CURRENT = Dist()


def current() -> Dist:
    """This process's place (set by `setup`; one process on the CPU by default)."""
    return _CURRENT


def setup(device: str | None = None) -> Dist:
    """Join torchrun's process group when WORLD_SIZE > 1 (NCCL if CUDA is available, else gloo); the device is
    `device`, else cuda:LOCAL_RANK with CUDA, else cpu. Returns (and remembers) this process's Dist."""
    global _CURRENT
    world = int(os.environ.get("WORLD_SIZE", "1"))
    cuda = torch.cuda.is_available() and device != "cpu"
    if world > 1:
        local = int(os.environ.get("LOCAL_RANK", "0"))
        if cuda:
            torch.cuda.set_device(local)
        if not torch.distributed.is_initialized():
            torch.distributed.init_process_group("nccl" if cuda else "gloo")
        rank = torch.distributed.get_rank()
        device = device or (f"cuda:{local}" if cuda else "cpu")
    else:
        rank, device = 0, device or ("cuda" if cuda else "cpu")
    _CURRENT = Dist(rank, world, device)
    return _CURRENT


def teardown(*, failed: bool = False) -> None:
    """Leave the process group, every rank at the same point: a barrier (skipped after a failure, when another
    rank may be inside a collective), the DDP wrappers collected, then destroy. A rank that left while gloo's
    threads still served the others' last messages aborted at exit ("terminate called without an active
    exception", once in a CI run under load)."""
    global _CURRENT
    if torch.distributed.is_initialized():
        if not failed:
            torch.distributed.barrier()
        gc.collect()   # a DDP wrapper in a reference cycle still holds the group's reducer
        torch.distributed.destroy_process_group()
    _CURRENT = Dist()


def wrap(model: torch.nn.Module, dist: Dist) -> torch.nn.Module:
    """`model` itself for one process, else DistributedDataParallel(model) (on dist.device)."""
    if dist.world == 1:
        return model
    ids = [torch.device(dist.device).index] if dist.device.startswith("cuda") else None
    return torch.nn.parallel.DistributedDataParallel(model, device_ids=ids)


def barrier(dist: Dist) -> None:
    if dist.world > 1:
        torch.distributed.barrier()


def from_rank0(obj, dist: Dist):
    """Rank 0's `obj` on every rank (a picklable object: the plan every rank follows)."""
    if dist.world == 1:
        return obj
    box = [obj]
    torch.distributed.broadcast_object_list(box, src=0)
    return box[0]

"""The arena: every method the course teaches (posenc_lib.experiments.arena_methods) under notebook 07's
protocol, one command, one table with confidence intervals, one figure; from a laptop to many GPUs.

    python -m posenc_lib.arena                       # = make arena: the laptop preset, every method, seeds 0, 1, 2
    python -m posenc_lib.arena --preset quick        # a smoke run of the whole path (its numbers mean nothing)
    python -m posenc_lib.arena --methods rope alibi rerope --seeds 0 1
    python -m posenc_lib.arena --preset large --corpus DIR      # a bigger TinyLM, longer L, your own text files
    torchrun --nproc_per_node=N -m posenc_lib.arena --preset large   # DistributedDataParallel (NCCL / gloo)

One module per job:
    presets      ArenaConfig, the one configuration object (protocol sizes, methods, corpus), and its presets
    run          one run of a method and seed (train, then 07's measurements), the plan of what is missing
    cache        one JSON record per run in data/arena/<preset>/runs/, written atomically; weights in states/
    table        the table: mean and 95% t-interval over seeds, the budget, what each number means
    claims       the papers' length claims (PaperClaim, CLAIMS) and whether the table agrees (paper_comparison)
    distributed  torchrun's process group, DDP, rank 0 writing
The figure: posenc_lib.plots.arena.render_arena.
"""
from .cache import cached_records, read_record, record_path, write_record
from .claims import CLAIMS, PaperClaim, format_comparison, paper_comparison
from .presets import PRESETS, ArenaConfig, all_methods, arena_config
from .run import measure, plan, run_arena
from .table import arena_table, format_table

__all__ = ["CLAIMS", "PRESETS", "ArenaConfig", "PaperClaim", "all_methods", "arena_config", "arena_table",
           "cached_records", "format_comparison", "format_table", "measure", "paper_comparison", "plan",
           "read_record", "record_path", "run_arena", "write_record"]

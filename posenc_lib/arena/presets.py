"""The arena's one configuration object: the protocol's sizes (an ExperimentConfig: model, L, steps, batch, seeds,
evaluation windows, probe), the methods, the corpus; and its presets, chosen by one flag (`--preset`).

    quick    a smoke run of the whole path: 20 steps, 1 seed, 16 evaluation windows and probes (about a minute of
             CPU per 10 methods; its numbers mean nothing)
    laptop   07's protocol with 2 heads of 32 dims (partial RoPE needs >= 32, arena_methods): 1000 steps of
             32 x 64 characters, seeds 0, 1, 2, 128 evaluation windows, 64 probes per cell; every method
    large    a bigger TinyLM (4 layers, d_model 128, 4 heads of 32), L = 128, 2000 steps of 64 x 128 characters,
             seeds 0, 1, 2; for a GPU (or many: torchrun), slow on a CPU; `--corpus DIR`: your own text files

Every training method gets the same protocol (steps, batch, learning rate, schedule, seeds, batches); an inference
method gets no training at all (it changes the trained RoPE model of the same seed). No method is tuned.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace

from .. import _checks
from ..experiments.arena_methods import ARENA_METHODS
from ..experiments.config import ExperimentConfig
from ..experiments.record_cache import field_differences

#: the protocol's sizes per preset (ExperimentConfig fields that differ from 07's defaults)
PRESET_SIZES = {
    "quick": dict(num_heads=2, steps=20, warmup_steps=4, log_every=5, seeds=(0,), eval_windows=16, probe_windows=16),
    "laptop": dict(num_heads=2),
    "large": dict(train_len=128, d_model=128, num_heads=4, num_layers=4, steps=2000, batch_size=64, lr=3e-3,
                  warmup_steps=200, t5_max_distance=128, eval_windows=256, eval_batch=16, log_every=100),
}
PRESETS = tuple(PRESET_SIZES)


def all_methods() -> tuple:
    """Every method of the arena, training methods first (each in the registry's order)."""
    return tuple(sorted(ARENA_METHODS, key=lambda name: ARENA_METHODS[name].kind != "training"))


@dataclass(frozen=True)
class ArenaConfig:
    """preset: its name (the cache folder's default name); protocol: the sizes every method is run with
    (protocol.seeds are the arena's seeds); methods: names of ARENA_METHODS; corpus: None (07's shipped text) or a
    folder of your own text files (experiments.corpus.load_text_folder)."""
    preset: str
    protocol: ExperimentConfig
    methods: tuple = field(default_factory=all_methods)
    corpus: str | None = None

    def __post_init__(self):
        if not isinstance(self.preset, str) or not self.preset:
            raise TypeError(f"preset must be a non-empty str, got {self.preset!r}")
        if not isinstance(self.protocol, ExperimentConfig):
            raise TypeError(f"protocol must be an ExperimentConfig, got {type(self.protocol).__name__}")
        if not isinstance(self.methods, tuple) or not self.methods:
            raise TypeError(f"methods must be a non-empty tuple of method names, got {self.methods!r}")
        unknown = [m for m in self.methods if m not in ARENA_METHODS]
        if unknown:
            raise ValueError(f"methods: unknown {unknown}; the arena's methods are {list(all_methods())}")
        if len(set(self.methods)) != len(self.methods):
            raise ValueError(f"methods must not repeat a name, got {list(self.methods)}")
        if self.corpus is not None and not isinstance(self.corpus, str):
            raise TypeError(f"corpus must be a folder path (str) or None, got {type(self.corpus).__name__}")

    @property
    def seeds(self) -> tuple:
        return self.protocol.seeds


def arena_config(preset: str = "laptop", *, methods=None, seeds=None, corpus: str | None = None,
                 overrides: dict | None = None) -> ArenaConfig:
    """The ArenaConfig of `preset`, with `methods` (default: all), `seeds` (default: the preset's) and
    `overrides` ({ExperimentConfig field: value}, e.g. {"steps": 4}) replacing the preset's sizes."""
    _checks.choice("preset", preset, PRESETS)
    sizes = dict(PRESET_SIZES[preset])
    known = {f.name for f in fields(ExperimentConfig)}
    bad = sorted(set(overrides or {}) - known)
    if bad:
        raise ValueError(f"overrides: unknown ExperimentConfig fields {bad}; known: {sorted(known)}")
    sizes.update(overrides or {})
    if seeds is not None:
        sizes["seeds"] = tuple(seeds)
    protocol = replace(ExperimentConfig(), **sizes)
    return ArenaConfig(preset, protocol, all_methods() if methods is None else tuple(methods), corpus)


def config_differences(stored: dict, cfg: ExperimentConfig) -> list:
    """['field: stored -> cfg's', ...] between a record's stored protocol (JSON: lists for tuples) and `cfg`,
    ignoring the fields that do not change a run's numbers (seeds, encodings: the record has its own seed)."""
    ours = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(cfg).items()}
    return field_differences(stored, ours, ignore=("seeds", "encodings"))

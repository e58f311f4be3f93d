"""Every setting of a run, in one frozen dataclass that is stored with the results."""
from __future__ import annotations

from dataclasses import dataclass

from .. import _checks
from ..scaling import EXTENSION_METHODS

#: the encodings notebook 07 compares (names in posenc_lib.model.ENCODINGS)
EXPERIMENT_ENCODINGS = ("nope", "sinusoidal", "learned", "t5", "rope", "alibi")
#: the fine-tune arms of notebook 08: an extension method's scaling (plain RoPE, PI, YaRN), or "abf": the
#: RoPE base raised to config.abf_base (adjusted base frequency, as Llama 2 Long / Llama 3 / Qwen2.5 deploy it)
FINETUNE_ARMS = ("none", "linear", "yarn", "abf")


@dataclass(frozen=True)
class ExperimentConfig:
    """Every setting of notebook 07's and 08's runs; checked when made, stored in each result's provenance."""
    train_len: int = 64
    steps: int = 1000             # 1000 * 32 * 64 chars: about one pass over the training text (undertrained)
    batch_size: int = 32
    lr: float = 1e-2
    min_lr_ratio: float = 0.1      # cosine decay from lr to lr * min_lr_ratio
    warmup_steps: int = 100
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    seeds: tuple = (0, 1, 2)
    encodings: tuple = EXPERIMENT_ENCODINGS
    eval_multiples: tuple = (1, 2, 4, 8)
    eval_windows: int = 128        # windows per length (same end points at every length)
    eval_batch: int = 32
    d_model: int = 64
    num_heads: int = 4
    num_layers: int = 2
    t5_num_buckets: int = 32
    t5_max_distance: int = 64      # = train_len, so every bucket is trained (T5: 128 < its 512 training length)
    log_every: int = 50
    # context extension (notebook 08)
    extension_methods: tuple = EXTENSION_METHODS
    dynamic_factor: float = 2.0    # dynamic NTK is deployed with one fixed factor; the length does the rest
    llama3_low_freq_factor: float = 1.0   # Llama 3.1's rope_type "llama3" (its config.json values)
    llama3_high_freq_factor: float = 4.0
    finetune_multiple: int = 4     # fine-tune at finetune_multiple * train_len
    finetune_steps: int = 200
    finetune_lr: float = 1e-3
    finetune_warmup: int = 20
    finetune_seeds: tuple = (0, 1, 2)
    finetune_methods: tuple = FINETUNE_ARMS   # each arm: the same steps, batches and learning rate
    # "abf": the base of continued training, 10000 -> 500000 (Llama 3's): at 4 * 64 the turns criterion of
    # notebook 08 needs >= 10000 * 4 ** (16 / 6) = 4.0e5 (head dim 16, first slow pair 3); 5e5 is the next round one
    abf_base: float = 500000.0
    # the retrieval probe (notebook 07): a random lowercase string written twice into held-out text
    probe_len: int | None = None   # characters per copy (None: train_len // 4, min 2: 16 at L = 64); the last
                                   # probe_len - 1 of the second copy are scored
    probe_windows: int = 64        # probes per (window, distance) cell; the same seeded set for every model
    probe_on_finetuned: bool = True   # also probe the fine-tuned RoPE models of notebook 08
    eval_tokens: int = 4096        # tokens per forward pass of the sliding-window baseline and of the probe

    def __post_init__(self):
        for name in ("train_len", "steps", "batch_size", "eval_windows", "eval_batch", "log_every", "d_model",
                     "num_heads", "num_layers", "t5_num_buckets", "t5_max_distance", "finetune_multiple",
                     "finetune_steps", "probe_windows", "eval_tokens"):
            _checks.positive_int(name, getattr(self, name))
        for name in ("warmup_steps", "finetune_warmup"):
            _checks.positive_int(name, getattr(self, name), allow_zero=True)
        for name in ("lr", "finetune_lr"):
            _checks.positive_float(name, getattr(self, name))
        for name in ("min_lr_ratio", "weight_decay", "grad_clip"):
            _checks.positive_float(name, getattr(self, name), inclusive=True)
        _checks.positive_float("dynamic_factor", self.dynamic_factor, minimum=1.0, inclusive=True)
        _checks.positive_float("abf_base", self.abf_base, minimum=1.0)
        _checks.boolean("probe_on_finetuned", self.probe_on_finetuned)
        for name in ("llama3_low_freq_factor", "llama3_high_freq_factor"):
            _checks.positive_float(name, getattr(self, name))
        for name in ("seeds", "finetune_seeds"):
            for seed in getattr(self, name):
                _checks.positive_int(f"{name} entries", seed, allow_zero=True)
        for m in self.eval_multiples:
            _checks.positive_int("eval_multiples entries", m)
        unknown = [e for e in self.encodings if e not in EXPERIMENT_ENCODINGS]
        if unknown:
            raise ValueError(f"encodings must be among {list(EXPERIMENT_ENCODINGS)}, got unknown {unknown}")
        bad = [m for m in self.extension_methods if m not in EXTENSION_METHODS]
        if bad:
            raise ValueError(f"extension_methods must be among {list(EXTENSION_METHODS)}, got unknown {bad}")
        bad = [m for m in self.finetune_methods if m not in FINETUNE_ARMS]
        if bad:
            raise ValueError(f"finetune_methods must be among {list(FINETUNE_ARMS)}, got unknown {bad}")
        if self.probe_len is not None and (_checks.positive_int("probe_len", self.probe_len) < 2
                                           or 3 * self.probe_len > self.train_len):
            raise ValueError(f"probe_len must be >= 2 and fit three times into train_len = {self.train_len} (a "
                             f"window of L holds both copies and text before them), or None, got {self.probe_len}")
        if 1 not in self.eval_multiples:
            raise ValueError(f"eval_multiples must include 1 (the training length), got {self.eval_multiples}")


def stored_config(results: dict, cls: type, *, key: str = "config", written_by: str = "posenc_lib.experiments"):
    """The config dataclass `cls` stored in a results dict under provenance[key] (JSON lists become tuples)."""
    try:
        stored = results["provenance"][key]
    except (KeyError, TypeError):
        raise ValueError(f"results must be a dict written by {written_by} (with provenance.{key}), "
                         f"got {type(results).__name__}") from None
    return config_of(stored, cls)


def config_of(stored: dict, cls: type):
    """The config dataclass `cls` from its stored fields (a JSON dict: lists become tuples)."""
    return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in stored.items()})


def config_from(results: dict) -> ExperimentConfig:
    """The ExperimentConfig stored in a results dict's provenance (JSON lists become tuples)."""
    return stored_config(results, ExperimentConfig)


def probe_length(cfg: ExperimentConfig) -> int:
    """The retrieval probe's string length: cfg.probe_len, or train_len // 4 (at least 2) when it is None."""
    return cfg.probe_len if cfg.probe_len is not None else max(2, cfg.train_len // 4)

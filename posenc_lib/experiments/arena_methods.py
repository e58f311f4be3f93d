"""The arena's methods: one registry of named records, each a way to get a model that reads positions
beyond its training length L, attributed to its paper. Two kinds:

    training    a model trained under the protocol (07's TinyLM, corpus, steps): an encoding of
                model.ENCODINGS, a configuration of one (partial RoPE, a RoPE/NoPE hybrid), or RoPE trained
                with other positions (randomized positions, PoSE: experiments.positions)
                    model = method.make(cfg, seed);  train(..., position_sampler=method.sampler(cfg, seed))
    inference   a change to the trained RoPE model (method.base = "rope") at evaluation, weights untouched:
                08's scalings (PI, NTK, dynamic NTK, YaRN, Llama 3) and posenc_lib.inference_time's ReRoPE, Leaky
                ReRoPE, Self-Extend, log-n scaling
                    model.replace_encoding(method.make(model.encoding, cfg, factor))   (`use_inference_method`)

`factor` is the length multiple evaluated (a window of factor * L): the scalings are made for it, as 08 does.
The inference methods' windows are ours, not the papers' (they tune them per model): window w = L // 2; Leaky
ReRoPE's k and Self-Extend's group G are the smallest integers with w + (D - w) / k <= L - 1 for the longest
distance D = factor * L - 1, so every distance of a window of factor * L reads as one the model was trained on
(Self-Extend's floors can make a smaller G fit too).

Partial RoPE needs a head of at least 32 dims (1/8 of it is then 2 pairs): the arena's model is d_model 64 with 2
heads (head_dim 32), not 07's 4 heads of 16. The "about 10% of the dims suffice" claim the issue mentions traces
to Khan et al. 2026, "Fractional Rotation, Full Potential? Investigating Performance and Convergence of Partial
RoPE" (arXiv 2603.11611): RoPE on about 10% of the dims converges to a final loss comparable to full RoPE, at the
training length. It is a claim about training, not about lengths beyond L; the arena's 1/8 arm (12.5%) is the
nearest fraction, and what it shows past L is the arena's own measurement.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from .. import _checks
from ..attention import NoPE, PositionalEncoding
from ..inference_time import LogNScaling, ReRoPE, SelfExtend
from ..model import ENCODINGS, TinyLM, make_encoding
from ..rope import RotaryEmbedding
from ..scaling import EXTENSION_METHODS
from .config import ExperimentConfig
from .evaluation import rope_scaling
from .positions import pose_positions, randomized_positions
from .training import build_model

KINDS = ("training", "inference")
PARTIAL_FRACTIONS = {"1_8": 1 / 8, "1_4": 1 / 4, "1_2": 1 / 2}   # fraction 1 is "rope" itself
MIN_PARTIAL_HEAD_DIM = 32
HYBRID_INTERVAL = 2   # NoPE on every 2nd layer: the arena's TinyLM has 2 layers (Llama 4 and SmolLM3 use every 4th)


@dataclass(frozen=True)
class ArenaMethod:
    """One arena method. make: for kind "training", make(cfg, seed) -> TinyLM (untrained); for "inference",
    make(rope, cfg, factor) -> the encoding that replaces the trained model's RotaryEmbedding `rope`.
    sampler (training only): sampler(cfg, seed) -> a position_sampler for training.fit, or None for 0..L-1.
    base (inference only): the training method whose model it changes. paper: where the idea comes from."""
    name: str
    kind: str
    paper: str
    make: Callable
    sampler: Callable | None = None
    base: str | None = None
    note: str = ""

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"name must be a non-empty str, got {self.name!r}")
        _checks.choice("kind", self.kind, KINDS)
        if not callable(self.make):
            raise TypeError(f"make must be a function, got {type(self.make).__name__}")
        if self.kind == "inference" and (self.base is None or self.sampler is not None):
            raise ValueError(f"an inference method ({self.name}) needs base= (the trained method it changes) and "
                             f"no sampler")
        if self.kind == "training" and self.base is not None:
            raise ValueError(f"a training method ({self.name}) trains its own model: base must be None")


def _protocol(cfg) -> ExperimentConfig:
    """Every make's first check: the protocol's sizes, an ExperimentConfig."""
    if not isinstance(cfg, ExperimentConfig):
        raise TypeError(f"cfg must be an ExperimentConfig, got {type(cfg).__name__}")
    return cfg


# ----------------------------------------------------------------------------------------- training methods
def _seeded_sampler(builder, cfg: ExperimentConfig, seed: int):
    """builder(target_len, seed=...) for the longest evaluated length; its own seed, apart from the data's."""
    return builder(cfg.train_len * max(cfg.eval_multiples), seed=20_000 + seed)


def partial_rope_model(fraction: float, cfg: ExperimentConfig, seed: int) -> TinyLM:
    """07's TinyLM with RoPE on the first `fraction` of each head's dims (GPT-NeoX's partial rotary), the rest
    unrotated; the head must have >= 32 dims."""
    head_dim = _protocol(cfg).d_model // cfg.num_heads
    if head_dim < MIN_PARTIAL_HEAD_DIM:
        raise ValueError(f"cfg: partial RoPE needs head_dim = d_model / num_heads >= {MIN_PARTIAL_HEAD_DIM} (1/8 of "
                         f"it is then 2 pairs), got d_model={cfg.d_model}, num_heads={cfg.num_heads} "
                         f"(head_dim {head_dim}): use e.g. d_model=64, num_heads=2")
    return build_model(RotaryEmbedding(head_dim, partial_rotary_factor=fraction), cfg, seed)


def hybrid_model(cfg: ExperimentConfig, seed: int, *, interval: int = HYBRID_INTERVAL) -> TinyLM:
    """07's RoPE TinyLM with NoPE in every `interval`-th block (blocks i with (i + 1) % interval == 0, as
    transformers' Llama 4 and SmolLM3 configs pick their no_rope_layers) and the shared RoPE elsewhere."""
    interval = _checks.positive_int("interval", interval)
    if interval > _protocol(cfg).num_layers:
        raise ValueError(f"interval must be <= num_layers={cfg.num_layers} (else no block is NoPE), got {interval}")
    model = build_model("rope", cfg, seed)
    for i, block in enumerate(model.blocks):
        if (i + 1) % interval == 0:
            block.attn.encoding = NoPE()      # model.encoding stays the RoPE of the other blocks
    return model


def _encoding_method(name: str) -> ArenaMethod:
    return ArenaMethod(name, "training", _ENCODING_PAPERS.get(name, "posenc_lib.model.ENCODINGS"),
                       lambda cfg, seed: build_model(name, _protocol(cfg), seed))


_ENCODING_PAPERS = {
    "nope": "Kazemnejad et al. 2023, arXiv 2305.19466", "sinusoidal": "Vaswani et al. 2017, arXiv 1706.03762",
    "learned": "Gehring et al. 2017, arXiv 1705.03122", "t5": "Raffel et al. 2020, arXiv 1910.10683",
    "shaw": "Shaw et al. 2018, arXiv 1803.02155", "rope": "Su et al. 2021, arXiv 2104.09864",
    "alibi": "Press et al. 2022, arXiv 2108.12409", "xpos": "Sun et al. 2022, arXiv 2212.10554",
    "kerple": "Chi et al. 2022, arXiv 2205.09921", "fire": "Li et al. 2023, arXiv 2310.04418",
    "cope": "Golovneva et al. 2024, arXiv 2405.18719", "fox": "Lin et al. 2025, arXiv 2503.02130",
    "path": "Yang et al. 2025, arXiv 2505.16381"}


def _training_methods() -> list:
    methods = [_encoding_method(name) for name in ENCODINGS]
    methods += [ArenaMethod(f"partial_rope_{label}", "training", "GPT-NeoX (Black et al. 2022, arXiv 2204.06745)",
                            lambda cfg, seed, f=f: partial_rope_model(f, cfg, seed),
                            note=f"RoPE on {label.replace('_', '/')} of each head's dims")
                for label, f in PARTIAL_FRACTIONS.items()]
    methods += [
        ArenaMethod("rope_nope_hybrid", "training", "Yang et al. 2025, arXiv 2501.18795; Llama 4; SmolLM3",
                    hybrid_model, note=f"NoPE in every {HYBRID_INTERVAL}nd block, RoPE elsewhere"),
        ArenaMethod("randomized_positions", "training", "Ruoss et al. 2023, arXiv 2305.16843",
                    lambda cfg, seed: build_model("rope", _protocol(cfg), seed),
                    sampler=lambda cfg, seed: _seeded_sampler(randomized_positions, cfg, seed),
                    note="RoPE; sorted random positions of [0, max multiple * L)"),
        ArenaMethod("pose", "training", "Zhu et al. 2023, arXiv 2309.10400",
                    lambda cfg, seed: build_model("rope", _protocol(cfg), seed),
                    sampler=lambda cfg, seed: _seeded_sampler(pose_positions, cfg, seed),
                    note="RoPE; two chunks, the second skipped on within max multiple * L"),
    ]
    return methods


# ---------------------------------------------------------------------------------------- inference methods
def rerope_window(cfg: ExperimentConfig) -> int:
    """The window w of ReRoPE, Leaky ReRoPE and Self-Extend in the arena: L // 2 (at least 1)."""
    return max(1, _protocol(cfg).train_len // 2)


def _compression(cfg: ExperimentConfig, factor: float) -> int:
    """The smallest integer k >= 1 with w + (D - w) / k <= L - 1, D = factor * L - 1 the largest distance: Leaky
    ReRoPE's k and Self-Extend's group G (both read a distance d >= w as about w + (d - w) / k, Self-Extend up to
    its floors)."""
    w, longest = rerope_window(cfg), math.ceil(factor * cfg.train_len) - 1
    room = cfg.train_len - 1 - w
    return 1 if longest <= cfg.train_len - 1 else max(1, math.ceil((longest - w) / max(room, 1)))


def _scaled_rope(method: str) -> Callable:
    def make(rope, cfg, factor):
        scaling = rope_scaling(method, float(factor), cfg)   # as evaluation.set_rope_scaling builds 08's RoPE
        return make_encoding("rope", d_model=cfg.d_model, num_heads=cfg.num_heads, rope_scaling=scaling)
    return make


_SCALING_PAPERS = {"none": "Su et al. 2021, arXiv 2104.09864 (no change)",
                   "linear": "Chen et al. 2023, arXiv 2306.15595 (PI)", "ntk": "bloc97 2023 (NTK-aware, reddit)",
                   "dynamic": "emozilla 2023 (dynamic NTK, reddit)", "yarn": "Peng et al. 2023, arXiv 2309.00071",
                   "llama3": "Llama 3.1 (Dubey et al. 2024, arXiv 2407.21783)"}


def _inference_methods() -> list:
    methods = [ArenaMethod(f"scaling_{m}", "inference", _SCALING_PAPERS[m], _scaled_rope(m), base="rope")
               for m in EXTENSION_METHODS if m != "none"]
    methods += [
        ArenaMethod("rerope", "inference", "Su 2023, kexue.fm/archives/9708",
                    lambda rope, cfg, factor: ReRoPE(rope, rerope_window(cfg)), base="rope"),
        ArenaMethod("rerope_log_n", "inference", "Su 2023, kexue.fm/archives/9708 (with log-n, as its code)",
                    lambda rope, cfg, factor: ReRoPE(rope, rerope_window(cfg), log_n_length=cfg.train_len),
                    base="rope"),
        ArenaMethod("leaky_rerope", "inference", "Su 2023, kexue.fm/archives/9708",
                    lambda rope, cfg, factor: ReRoPE(rope, rerope_window(cfg),
                                                     k=float(max(2, _compression(cfg, factor)))), base="rope"),
        ArenaMethod("self_extend", "inference", "Jin et al. 2024, arXiv 2401.01325",
                    lambda rope, cfg, factor: SelfExtend(rope, rerope_window(cfg), _compression(cfg, factor)),
                    base="rope"),
        ArenaMethod("log_n", "inference", "Su 2021, kexue.fm/archives/8823",
                    lambda rope, cfg, factor: LogNScaling(rope, _protocol(cfg).train_len), base="rope"),
    ]
    return methods


#: name -> ArenaMethod, every method of the arena (the encodings of model.ENCODINGS when this module was imported)
ARENA_METHODS: dict[str, ArenaMethod] = {m.name: m for m in _training_methods() + _inference_methods()}


def register_arena_method(method: ArenaMethod) -> ArenaMethod:
    """Add a method to ARENA_METHODS (e.g. an encoding registered after this module was imported)."""
    if not isinstance(method, ArenaMethod):
        raise TypeError(f"method must be an ArenaMethod, got {type(method).__name__}")
    if method.name in ARENA_METHODS and ARENA_METHODS[method.name] != method:
        raise ValueError(f"name {method.name!r} is already an arena method")
    if method.kind == "inference" and method.base not in ARENA_METHODS:
        raise ValueError(f"base must name a training method of the arena, got {method.base!r}")
    ARENA_METHODS[method.name] = method
    return method


def _method(name) -> ArenaMethod:
    if isinstance(name, ArenaMethod):
        return name
    return ARENA_METHODS[_checks.choice("method", name, ARENA_METHODS)]


def build_arena_model(name, cfg: ExperimentConfig, seed: int) -> tuple:
    """(untrained TinyLM, position_sampler or None) of the training method `name` (a name or an ArenaMethod)."""
    method = _method(name)
    if method.kind != "training":
        raise ValueError(f"method {method.name!r} is an inference method: train its base {method.base!r}, then "
                         f"use_inference_method")
    _protocol(cfg)
    seed = _checks.positive_int("seed", seed, allow_zero=True)
    return method.make(cfg, seed), (None if method.sampler is None else method.sampler(cfg, seed))


def use_inference_method(name, model: TinyLM, cfg: ExperimentConfig, factor: float) -> PositionalEncoding:
    """Put the inference method `name` on a trained RoPE `model` for windows of factor * L (in place: every block's
    encoding replaced, weights untouched); returns the model's previous encoding, to put back with
    model.replace_encoding(previous)."""
    method = _method(name)
    if method.kind != "inference":
        raise ValueError(f"method {method.name!r} is a training method; use_inference_method takes one of "
                         f"{sorted(n for n, m in ARENA_METHODS.items() if m.kind == 'inference')}")
    if not isinstance(model, TinyLM) or type(model.encoding) is not RotaryEmbedding or any(
            block.attn.encoding is not model.encoding for block in model.blocks):
        got = type(getattr(model, "encoding", None)).__name__
        raise ValueError(f"model must be a TinyLM trained with plain RoPE in every block (method {method.name!r} "
                         f"changes its RotaryEmbedding), got encoding {got}")
    _protocol(cfg)
    factor = _checks.positive_float("factor", factor, minimum=1.0, inclusive=True)
    previous = model.encoding
    model.replace_encoding(method.make(previous, cfg, factor))
    return previous

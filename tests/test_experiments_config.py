"""posenc_lib.experiments.config: every setting checked when made, and read back from stored results."""
from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from posenc_lib.experiments import config as C


@pytest.mark.parametrize("field, value, exc, match", [
    ("steps", 0, ValueError, "steps"),
    ("train_len", 6.5, TypeError, "train_len"),
    ("batch_size", True, TypeError, "batch_size"),
    ("lr", -1.0, ValueError, "lr"),
    ("lr", float("nan"), ValueError, "lr"),
    ("finetune_lr", "1e-3", TypeError, "finetune_lr"),
    ("weight_decay", -0.1, ValueError, "weight_decay"),
    ("dynamic_factor", 0.5, ValueError, "dynamic_factor"),
    ("seeds", (0, -1), ValueError, "seeds"),
    ("encodings", ("rope", "xpos"), ValueError, "xpos"),
    ("extension_methods", ("linear", "longrope"), ValueError, "longrope"),
    ("eval_multiples", (2, 4), ValueError, "eval_multiples"),
    ("eval_multiples", (1, 0), ValueError, "eval_multiples"),
    ("finetune_methods", ("linear", "ntk"), ValueError, "ntk"),
    ("abf_base", 0.5, ValueError, "abf_base"),
    ("probe_len", 22, ValueError, "probe_len"),          # 3 * 22 > train_len 64: the copies do not fit in L
    ("probe_len", 1, ValueError, "probe_len"),
    ("probe_len", 4.0, TypeError, "probe_len"),
    ("probe_windows", 0, ValueError, "probe_windows"),
    ("probe_on_finetuned", "yes", TypeError, "probe_on_finetuned"),
    ("eval_tokens", 0, ValueError, "eval_tokens"),
])
def test_bad_config_names_the_field(field, value, exc, match):
    with pytest.raises(exc, match=match):
        C.ExperimentConfig(**{field: value})


def test_config_survives_a_json_round_trip():
    cfg = C.ExperimentConfig(steps=7, seeds=(3, 4), encodings=("rope", "alibi"))
    stored = {"provenance": {"config": json.loads(json.dumps(asdict(cfg)))}}
    assert C.config_from(stored) == cfg


def test_config_from_refuses_a_dict_without_provenance():
    with pytest.raises(ValueError, match="provenance"):
        C.config_from({"runs": []})


def test_the_probe_length_follows_the_training_length_unless_given():
    assert C.probe_length(C.ExperimentConfig()) == 16                       # L / 4 at L = 64
    assert C.probe_length(C.ExperimentConfig(train_len=16)) == 4
    assert C.probe_length(C.ExperimentConfig(train_len=4)) == 2
    assert C.probe_length(C.ExperimentConfig(probe_len=8)) == 8


def test_the_defaults_are_the_documented_experiment():
    cfg = C.ExperimentConfig()
    assert cfg.finetune_seeds == cfg.seeds == (0, 1, 2)                     # every fine-tune on three seeds
    assert cfg.finetune_methods == C.FINETUNE_ARMS == ("none", "linear", "yarn", "abf")
    assert cfg.abf_base == 500000.0                                         # Llama 3's base
    # the turns criterion of notebook 08: the first pair under one turn in L0 (pair 3 of 8 at head dim 16)
    # must turn at most as far over 4 L0 as over L0: base' >= base * 4 ** (d / (2 * i0))
    import math
    d = cfg.d_model // cfg.num_heads
    i0 = next(i for i in range(d // 2) if cfg.train_len * 10000.0 ** (-2 * i / d) / (2 * math.pi) < 1)
    needed = 10000.0 * cfg.finetune_multiple ** (d / (2 * i0))
    assert i0 == 3 and 4.0e5 < needed < cfg.abf_base < 1.3 * needed

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

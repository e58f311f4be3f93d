"""The cached results in data/ (found by posenc_lib.experiments.paths): reading them, writing them.

The files (formats in data/README.md):
    experiments_extrapolation.json       notebook 07 (run_all's "extrapolation" dict)
    experiments_context_extension.json   notebook 08 (run_all's "context_extension" dict)
    experiments_rope_L64_seed0.pt        the seed-0 RoPE model's state_dict (load_rope_model)
    experiments_sinusoidal_L64_seed0.pt  the seed-0 sinusoidal model's state_dict (load_seed0_model, notebook 03)
    learned_snapshots.npz / .json        notebook 04 (posenc_lib.experiments.learned)
    model_configs.json                   notebook 10: position fields of public models' config.json (load_model_configs)
"""
from __future__ import annotations

import json
from pathlib import Path

import torch

from ..model import TinyLM
from .config import ExperimentConfig
from .paths import data_file
from .training import build_model

EXTRAPOLATION_FILE = "experiments_extrapolation.json"
EXTENSION_FILE = "experiments_context_extension.json"
ROPE_STATE_FILE = "experiments_rope_L64_seed0.pt"
# the trained models the notebooks read: seed 0 of these encodings, as run_all trained them
STATE_FILES = {"rope": ROPE_STATE_FILE, "sinusoidal": "experiments_sinusoidal_L64_seed0.pt"}
RESULT_FILES = {"extrapolation": EXTRAPOLATION_FILE, "context_extension": EXTENSION_FILE}
MODEL_CONFIGS_FILE = "model_configs.json"


def load_results(name: str = "extrapolation", data_dir: Path | str | None = None) -> dict:
    """The cached JSON of 'extrapolation' (notebook 07) or 'context_extension' (notebook 08)."""
    if name not in RESULT_FILES:
        raise ValueError(f"name must be one of {list(RESULT_FILES)}, got {name!r}")
    return json.loads(data_file(RESULT_FILES[name], data_dir).read_text(encoding="utf-8"))


def load_model_configs(data_dir: Path | str | None = None) -> list:
    """data/model_configs.json's models, in file order: each {"name", "repo", "source", "unverified", "config"},
    config being the position-related fields of the model's config.json (read it with
    posenc_lib.configs.from_hf_config). Written by hand from the cited sources, not by a command."""
    path = data_file(MODEL_CONFIGS_FILE, data_dir, made_by="it is part of the repository (written by hand; "
                                                           "see data/README.md), restore it from git")
    return json.loads(path.read_text(encoding="utf-8"))["models"]


def load_seed0_model(encoding: str, data_dir: Path | str | None = None,
                     cfg: ExperimentConfig | None = None) -> TinyLM:
    """Notebook 07's TinyLM of `encoding` (a key of STATE_FILES), seed 0, trained at L = 64, on the CPU in
    eval mode."""
    if encoding not in STATE_FILES:
        raise ValueError(f"encoding must be one of {list(STATE_FILES)} (the trained models data/ keeps), "
                         f"got {encoding!r}")
    path = data_file(STATE_FILES[encoding], data_dir)
    model = build_model(encoding, cfg or ExperimentConfig(), 0)
    model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    return model.eval()


def load_rope_model(data_dir: Path | str | None = None, cfg: ExperimentConfig | None = None) -> TinyLM:
    """The RoPE TinyLM of notebook 07 (seed 0), trained at L = 64, on the CPU in eval mode."""
    return load_seed0_model("rope", data_dir, cfg)


def write_results(out_dir: Path | str, results: dict, states: dict | None = None) -> None:
    """Write run_all's results ({"extrapolation": ..., "context_extension": ... or None}) as JSON, and the
    seed-0 state_dicts given ({encoding: state}, encodings of STATE_FILES), into out_dir (created if needed)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, result in results.items():
        if result is not None:
            (out_dir / RESULT_FILES[name]).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    for encoding, state in (states or {}).items():
        torch.save(state, out_dir / STATE_FILES[encoding])

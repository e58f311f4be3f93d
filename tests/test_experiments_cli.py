"""python -m posenc_lib.experiments (make experiments): the flags reach the run."""
from __future__ import annotations

import subprocess
import sys

import pytest

from posenc_lib.experiments import __main__ as cli
from posenc_lib.experiments.paths import data_dir


@pytest.fixture
def calls(monkeypatch):
    seen = []

    def fake_run_all(cfg, **kwargs):
        seen.append((cfg, kwargs))
        return {"extrapolation": {"provenance": {"timing_whole_command": {}}, "summary": {}}}

    monkeypatch.setattr(cli, "run_all", fake_run_all)
    return seen


@pytest.mark.parametrize("argv, check", [
    ([], lambda cfg, kw: cfg.steps == 1000 and kw["out_dir"] == data_dir(must_exist=False) and kw["extension"]),
    (["--no-extension", "--workers", "3", "--threads", "2"],
     lambda cfg, kw: not kw["extension"] and (kw["workers"], kw["threads"]) == (3, 2)),
    (["--steps", "7", "--seeds", "4", "5", "--encodings", "rope", "--finetune-steps", "3"],
     lambda cfg, kw: (cfg.steps, cfg.seeds, cfg.encodings, cfg.finetune_steps) == (7, (4, 5), ("rope",), 3)),
    (["--quick"], lambda cfg, kw: cfg.steps == 60 and cfg.seeds == (0,) and kw["out_dir"] == cli.QUICK_DIR),
    (["--quick", "--out", "somewhere"], lambda cfg, kw: str(kw["out_dir"]) == "somewhere"),
])
def test_flags_reach_the_run(calls, argv, check):
    cli.main(argv)
    [(cfg, kwargs)] = calls
    assert check(cfg, kwargs)


def test_a_bad_flag_value_is_refused_by_the_config(calls):
    with pytest.raises(ValueError, match="encodings"):
        cli.main(["--encodings", "xpos"])
    assert calls == []


def test_the_package_runs_as_a_module():
    out = subprocess.run([sys.executable, "-m", "posenc_lib.experiments", "--help"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and "--learned-snapshots" in out.stdout and "--no-extension" in out.stdout

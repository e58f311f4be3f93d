"""The arena's command (issue 40, points 2-4): presets and bad input, the cache (a rerun fills only what is missing;
a corrupt or foreign file is refused, never overwritten), the plan, the table's confidence intervals against an
independent formula, measure's inference factors, train's shard, the figure, the corpus folder."""
import inspect
import json
import math
import statistics
from dataclasses import asdict

import matplotlib.pyplot as plt
import pytest
import torch

from posenc_lib.arena import __main__ as cli, cache, run
from posenc_lib.arena.presets import PRESETS, ArenaConfig, all_methods, arena_config
from posenc_lib.arena.table import arena_table, format_table
from posenc_lib.experiments import ExperimentConfig, load_corpus, record_cache, train
from posenc_lib.experiments.arena_methods import build_arena_model
from posenc_lib.experiments.corpus import load_text_folder
from posenc_lib.plots import render_arena
from posenc_lib.plots._style import smallest_text
from posenc_lib.printing import mean_ci, t_quantile

TINY = dict(steps=2, log_every=1, warmup_steps=1, eval_windows=2, probe_windows=2, batch_size=4,
            eval_multiples=(1, 2))


def tiny(methods, seeds=(0,)):
    return arena_config("quick", methods=methods, seeds=seeds, overrides=TINY)


# ------------------------------------------------------------------------------------------ presets, bad input
def test_presets_share_one_protocol_object_and_every_method():
    assert PRESETS == ("quick", "laptop", "large")
    laptop = arena_config("laptop")
    assert laptop.protocol.steps == ExperimentConfig.steps and laptop.seeds == (0, 1, 2)
    assert laptop.protocol.d_model // laptop.protocol.num_heads >= 32          # partial RoPE's 1/8 = 2 pairs
    assert set(laptop.methods) == set(all_methods()) and len(laptop.methods) >= 26
    large = arena_config("large")
    assert large.protocol.train_len > laptop.protocol.train_len and large.protocol.d_model > laptop.protocol.d_model


def test_unknown_methods_are_listed_with_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown \['bogus', 'ropee'\].*'rerope'"):
        arena_config("quick", methods=["rope", "bogus", "ropee"])
    with pytest.raises(SystemExit, match=r"bogus.*'alibi'"):
        cli.main(["--preset", "quick", "--methods", "bogus"])


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(preset="huge"), ValueError, "preset must be one of"),
    (dict(preset="quick", overrides={"stepz": 3}), ValueError, r"unknown ExperimentConfig fields \['stepz'\]"),
    (dict(preset="quick", overrides={"steps": 0}), ValueError, "steps must be >= 1"),
    (dict(preset="quick", methods=["rope", "rope"]), ValueError, "must not repeat"),
    (dict(preset="quick", methods=[]), TypeError, "non-empty tuple"),
])
def test_bad_config(kwargs, error, match):
    preset = kwargs.pop("preset")
    with pytest.raises(error, match=match):
        arena_config(preset, **kwargs)


def test_arena_config_checks_its_fields():
    with pytest.raises(TypeError, match="protocol must be an ExperimentConfig"):
        ArenaConfig("x", {"steps": 3})
    with pytest.raises(SystemExit, match="KEY=VALUE"):
        cli.main(["--preset", "quick", "--set", "steps"])


# ------------------------------------------------------------------------------------------ the table's CI
def test_t_quantile_matches_closed_forms_and_the_table():
    assert t_quantile(0.975, 1) == pytest.approx(math.tan(math.pi * 0.475), rel=1e-8)        # Cauchy
    p = 0.975
    assert t_quantile(p, 2) == pytest.approx((2 * p - 1) / math.sqrt(2 * p * (1 - p)), rel=1e-8)
    assert t_quantile(0.975, 4) == pytest.approx(2.776445105, rel=1e-8)    # printed t tables
    assert t_quantile(0.975, 100000) == pytest.approx(statistics.NormalDist().inv_cdf(0.975), rel=1e-4)
    with pytest.raises(ValueError, match="df must be an int >= 1"):
        t_quantile(0.975, 0)
    with pytest.raises(ValueError, match=r"p must be a number in \(0.5, 1\)"):
        t_quantile(0.4, 3)


def _record(method, seed, values, kind="training"):
    """A synthetic record: loss at L = values[0], at 2L = values[1], sliding = values[2]."""
    cfg = arena_config("quick", overrides=TINY).protocol
    return {"arena_record": 1, "method": method, "kind": kind, "seed": seed, "base": None, "paper": "p", "note": "",
            "protocol": {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(cfg).items()},
            "corpus_sha256": "x", "loss": {"1": values[0], "2": values[1]}, "sliding_loss": values[2],
            "probe": [{"multiple": 1, "distance": 16, "gain": 0.01}, {"multiple": 1, "distance": 32, "gain": 0.02},
                      {"multiple": 2, "distance": 96, "gain": 0.03}],
            "budget": ({"steps": 2, "batch_size": 4, "train_len": 64} if kind == "training"
                       else {"steps": 0, "trained_model": "rope seed 0"}),
            "posenc_lib_version": "v", "torch_version": "t", "threads": 1, "world_size": 1, "device": "cpu"}


def test_table_intervals_equal_an_independent_formula():
    losses = {0: [2.1, 2.5, 2.2], 1: [2.3, 2.9, 2.25], 2: [2.0, 2.6, 2.3]}
    records = {("rope", s): _record("rope", s, v) for s, v in losses.items()}
    records["learned", 0] = _record("learned", 0, [2.4, None, 2.4])
    records["rerope", 0] = _record("rerope", 0, [2.2, 2.3, 2.2], kind="inference")
    table = arena_table(records, ["rope", "learned", "rerope"], [0, 1, 2])
    rope = table["rows"][0]["cells"]
    t2 = 4.302652729749472   # t_{0.975, 2} (printed tables: 4.303)
    for key, i in (("loss_1L", 0), ("loss_2L", 1), ("exactly_L", 2)):
        values = [losses[s][i] for s in (0, 1, 2)]
        assert rope[key]["mean"] == pytest.approx(statistics.mean(values), abs=1e-12)
        assert rope[key]["half_width"] == pytest.approx(t2 * statistics.stdev(values) / math.sqrt(3), rel=1e-8)
    assert rope["probe_gain_L"]["mean"] == pytest.approx(0.02) and rope["probe_gain_2L"]["mean"] == pytest.approx(0.03)
    learned = table["rows"][1]
    assert learned["seeds"] == [0] and learned["cells"]["loss_2L"] is None
    assert learned["cells"]["loss_1L"]["half_width"] is None              # one seed: no interval
    assert table["rows"][2]["budget"] == "0 steps (rope's)"
    text = format_table(table)
    assert f"{statistics.mean(losses[s][0] for s in losses):.3f} ± " in text and "n/a" in text
    assert "nats per character (lower is better)" in text and "95% confidence interval" in text
    assert mean_ci([1.0, None]) is None
    with pytest.raises(ValueError, match="records: no record"):
        arena_table(records, ["alibi"], [0])


def test_the_figure_draws_the_table():
    records = {("rope", s): _record("rope", s, [2.0 + s / 10, 2.2, 2.1]) for s in (0, 1)}
    records["rerope", 0] = _record("rerope", 0, [2.0, 2.1, 2.0], kind="inference")
    table = arena_table(records, ["rope", "rerope"], [0, 1])
    fig, axes = plt.subplots(1, 2, figsize=(9.5, 4.2))
    drawn = render_arena(axes, table)
    assert drawn["panels"] == {"training": ["rope"], "inference": ["rope", "rerope"]}
    assert drawn["mean"]["rope"].tolist() == pytest.approx([2.05, 2.2])
    assert drawn["half"]["rope"][0] == pytest.approx(12.706204736 * statistics.stdev([2.0, 2.1]) / math.sqrt(2))
    assert smallest_text(fig)[0] >= 8
    plt.close(fig)
    with pytest.raises(TypeError, match="arena_table's dict"):
        render_arena(axes, {"rows": []})


# ------------------------------------------------------------------------------------------ the plan, the cache
def test_plan_trains_bases_first_and_only_what_is_missing():
    arena = tiny(["alibi", "rerope", "rope", "log_n"], seeds=(0, 1))
    todo = run.plan(arena, done=set(), states=set())
    assert todo["train"][:2] == [("rope", 0, True, True), ("rope", 1, True, True)]
    assert sorted(todo["train"][2:]) == [("alibi", 0, True, False), ("alibi", 1, True, False)]
    assert todo["infer_now"] == [] and todo["infer_after"] == {("rope", 0): ["rerope", "log_n"],
                                                                ("rope", 1): ["rerope", "log_n"]}
    done = {(m, s) for m in ("alibi", "rope", "rerope") for s in (0, 1)}
    todo = run.plan(arena, done=done, states={("rope", 0)})     # log_n missing; seed 1's weights are not cached
    assert todo["train"] == [("rope", 1, False, True)]          # weights only: its record exists
    assert todo["infer_now"] == [("log_n", 0)] and todo["infer_after"] == {("rope", 1): ["log_n"]}
    assert run.plan(arena, done=done | {("log_n", 0), ("log_n", 1)}, states=set()) == {
        "train": [], "infer_now": [], "infer_after": {}}


@pytest.fixture
def counted(monkeypatch):
    """Counts the jobs run_arena runs (workers=1: in this process)."""
    calls = []
    for name in ("train_job", "inference_job"):
        real = getattr(run, name)

        def job(*args, _real=real, _name=name, **kwargs):
            calls.append((_name, args[0], args[1]) + tuple(args[4:]))
            return _real(*args, **kwargs)
        job.__signature__ = inspect.signature(real)
        monkeypatch.setattr(run, name, job)
    return calls


def test_a_rerun_fills_only_what_is_missing(tmp_path, counted):
    arena = tiny(["rope", "rerope", "alibi"])
    records = run.run_arena(arena, tmp_path, workers=1, show_progress=False)
    assert sorted(records) == [("alibi", 0), ("rerope", 0), ("rope", 0)]
    assert sorted(counted) == [("inference_job", "rerope", 0), ("train_job", "alibi", 0, True, False),
                               ("train_job", "rope", 0, True, True)]
    rope_bytes = cache.record_path(tmp_path, "rope", 0).read_bytes()
    counted.clear()
    assert run.run_arena(arena, tmp_path, workers=1, show_progress=False) == records and counted == []
    cache.record_path(tmp_path, "alibi", 0).unlink()
    cache.record_path(tmp_path, "rerope", 0).unlink()
    cache.state_path(tmp_path, "rope", 0).unlink()
    again = run.run_arena(tiny(["alibi", "rerope"]), tmp_path, workers=1, show_progress=False)   # RoPE unselected
    assert sorted(counted) == [("inference_job", "rerope", 0), ("train_job", "alibi", 0, True, False),
                               ("train_job", "rope", 0, False, True)]     # RoPE's weights again, not its record
    assert cache.record_path(tmp_path, "rope", 0).read_bytes() == rope_bytes
    assert sorted(again) == sorted(records)
    for key in again:   # the same numbers: the runs are seeded and single-threaded
        assert again[key]["loss"] == records[key]["loss"] and again[key]["probe"] == records[key]["probe"]


def test_a_run_that_crashes_keeps_the_runs_before_it(tmp_path, monkeypatch):
    arena = tiny(["rope", "alibi"])
    real = run.measure

    def measure(model, valid, cfg, inference=None):
        if type(model.encoding).__name__ == "ALiBi":
            raise RuntimeError("power cut")
        return real(model, valid, cfg, inference)
    monkeypatch.setattr(run, "measure", measure)
    with pytest.raises(RuntimeError, match="power cut"):
        run.run_arena(arena, tmp_path, workers=1, show_progress=False)
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["rope.seed0.json"]   # no partial file
    monkeypatch.setattr(run, "measure", real)
    assert sorted(run.run_arena(arena, tmp_path, workers=1, show_progress=False)) == [("alibi", 0), ("rope", 0)]


@pytest.mark.parametrize("damage, match", [
    (lambda text: text[: len(text) // 2], "not a complete arena record"),
    (lambda text: json.dumps({"method": "alibi"}), r"missing \['arena_record'"),
    (lambda text: text.replace('"steps": 2', '"steps": 3'), r"another protocol \(steps: 3 -> 2\)"),
    (lambda text: text.replace('"seed": 0', '"seed": 1'), "not what its name says"),
])
def test_a_corrupt_or_foreign_record_is_refused_never_overwritten(tmp_path, damage, match):
    arena = tiny(["alibi"])
    run.run_arena(arena, tmp_path, workers=1, show_progress=False)
    path = cache.record_path(tmp_path, "alibi", 0)
    path.write_text(damage(path.read_text()))
    before = path.read_bytes()
    with pytest.raises(ValueError, match=match) as err:
        run.run_arena(arena, tmp_path, workers=1, show_progress=False)
    assert str(path) in str(err.value) and "\n" not in str(err.value)
    assert path.read_bytes() == before
    with pytest.raises(SystemExit, match=match):
        cli.main(["--preset", "quick", "--methods", "alibi", "--set", *[f"{k}={json.dumps(v)}" for k, v in
                  TINY.items()], "--out", str(tmp_path), "--no-progress", "--workers", "1"])
    assert path.read_bytes() == before


def test_a_crash_while_writing_leaves_the_old_record(tmp_path, monkeypatch):
    record = _record("alibi", 0, [2.0, 2.1, 2.0])
    path = cache.write_record(tmp_path, record)
    before = path.read_bytes()

    def crash(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(record_cache.os, "fsync", crash)
    with pytest.raises(KeyboardInterrupt):
        cache.write_record(tmp_path, {**record, "sliding_loss": 9.0})
    assert path.read_bytes() == before and list(path.parent.iterdir()) == [path]
    with pytest.raises(ValueError, match=r"record is missing \['loss'\]"):
        cache.write_record(tmp_path, {k: v for k, v in record.items() if k != "loss"})


# ------------------------------------------------------------------------------------------ measuring, training
def test_inference_methods_get_each_windows_factor():
    """Position interpolation at factor 1 is RoPE itself; at factor 2 it changes the 2L window's loss."""
    cfg = tiny(["rope"]).protocol
    model, _ = build_arena_model("rope", cfg, 0)
    valid = load_corpus().valid
    plain = run.measure(model, valid, cfg)
    pi = run.measure(model, valid, cfg, inference="scaling_linear")
    assert pi["loss"]["1"] == plain["loss"]["1"] and pi["sliding_loss"] == plain["sliding_loss"]
    assert pi["loss"]["2"] != plain["loss"]["2"]
    assert [(c["multiple"], c["distance"]) for c in pi["probe"]] == [(c["multiple"], c["distance"])
                                                                      for c in plain["probe"]]
    assert pi["probe"][:2] == plain["probe"][:2] and pi["probe"][2:] != plain["probe"][2:]
    assert type(model.encoding).__name__ == "RotaryEmbedding"    # put back


class _Spy(torch.nn.Module):
    """A stand-in model: remembers the inputs and positions it is given; loss = a parameter's square."""

    def __init__(self):
        super().__init__()
        self.w, self.seen = torch.nn.Parameter(torch.ones(())), []

    def forward(self, inputs, targets, positions=None):
        self.seen.append((inputs.clone(), None if positions is None else positions.clone()))
        return None, self.w ** 2


def test_train_shard_takes_its_rows_of_the_global_batch_and_positions(tmp_path):
    data = torch.arange(500) % 129

    def sampler():
        gen = torch.Generator().manual_seed(3)
        return lambda inputs: torch.randint(0, 99, inputs.shape, generator=gen)

    with pytest.raises(ValueError, match="needs torch.distributed's process group"):
        train(_Spy(), data, seq_len=8, steps=1, batch_size=4, lr=0.1, seed=0, shard=(1, 2))
    runs = {}
    store = torch.distributed.FileStore(str(tmp_path / "store"), 1)
    torch.distributed.init_process_group("gloo", store=store, rank=0, world_size=1)   # the group train's log needs
    try:
        for shard in (None, (1, 2)):
            spy = _Spy()
            train(spy, data, seq_len=8, steps=3, batch_size=4, lr=0.1, seed=0, warmup=1, log_every=1,
                  position_sampler=sampler(), shard=shard)
            runs[shard] = spy.seen
        for bad, error in (((2, 2), ValueError), ((0, 3), ValueError), ([0, 2], TypeError)):
            with pytest.raises(error, match="shard"):
                train(_Spy(), data, seq_len=8, steps=1, batch_size=4, lr=0.1, seed=0, shard=bad)
    finally:
        torch.distributed.destroy_process_group()
    for (x_all, p_all), (x_half, p_half) in zip(runs[None], runs[1, 2]):
        assert x_half.shape[0] == 2 and torch.equal(x_half, x_all[2:]) and torch.equal(p_half, p_all[2:])


def test_load_text_folder(tmp_path):
    (tmp_path / "b.txt").write_text("hello world " * 20)
    (tmp_path / "a.txt").write_text("é" + "x" * 99)
    corpus = load_text_folder(tmp_path)
    whole = ("é" + "x" * 99) + "\n" + "hello world " * 20
    assert corpus.info["files"] == ["a.txt", "b.txt"] and corpus.info["chars"] == len(whole)
    assert corpus.train.numel() + corpus.valid.numel() == len(whole) and corpus.valid.numel() == len(whole) // 10
    assert int(corpus.train[0]) == 128 and corpus.info["non_ascii_chars"] == 1
    with pytest.raises(FileNotFoundError, match="not a directory"):
        load_text_folder(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="holds no files"):
        load_text_folder(tmp_path / "empty")
    with pytest.raises(ValueError, match=r"valid_share must lie in \(0, 1\)"):
        load_text_folder(tmp_path, valid_share=1.0)

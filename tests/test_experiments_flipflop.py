"""posenc_lib.experiments.flipflop: the flip-flop data (against a per-token loop), its config and bad input,
its cache in the arena's format (data/arena/flipflop/: one record per (arm, seed), written atomically; a corrupt
or other-config file refused, never overwritten), the committed records (shape, provenance, summary), and that a
rerun reproduces them."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch

from posenc_lib.experiments import flipflop as FF, record_cache
from posenc_lib.model import IGNORE_INDEX


def _reference(seq: list) -> tuple[list, list]:
    """Per token, written out: (is each pair well formed, the read bits' positions and the bit a reader expects)."""
    pairs = list(zip(seq[0::2], seq[1::2]))
    memory, reads = None, []
    for p, (instr, bit) in enumerate(pairs):
        assert instr in (FF.WRITE, FF.READ, FF.IGNORE) and bit in (FF.ZERO, FF.ONE)
        if instr == FF.WRITE:
            memory = bit
        elif instr == FF.READ:
            reads.append((2 * p, memory))  # the input position of r; its target is the next token
    return pairs, reads


def test_sequences_follow_the_papers_rules():
    gen = torch.Generator().manual_seed(3)
    seq, inputs, targets = FF.flipflop_batch(64, 40, 0.5, gen)
    assert seq.shape == (64, 40) and inputs.shape == targets.shape == (64, 39) and seq.dtype == torch.int64
    assert torch.equal(inputs, seq[:, :-1])
    for row, tgt in zip(seq.tolist(), targets.tolist()):
        pairs, reads = _reference(row)
        assert pairs[0][0] == FF.WRITE and pairs[-1][0] == FF.READ
        want = [IGNORE_INDEX] * 39
        for pos, bit in reads:
            want[pos] = bit
        assert tgt == want  # only the read bits are scored, each the last written bit


def test_instruction_frequencies_match_p_ignore():
    """The middle instructions: i with probability p_ignore, w and r with (1 - p_ignore) / 2 each (8 sigma)."""
    for p in (0.8, 0.98, 0.1):
        seq, _, _ = FF.flipflop_batch(400, 102, p, torch.Generator().manual_seed(1))
        middle = seq[:, 2:-2:2].flatten()                       # 400 * 49 instructions
        n = middle.numel()
        for token, prob in ((FF.IGNORE, p), (FF.WRITE, (1 - p) / 2), (FF.READ, (1 - p) / 2)):
            share = float((middle == token).float().mean())
            assert abs(share - prob) < 8 * (prob * (1 - prob) / n) ** 0.5 + 1e-9, (p, token, share)
        bits = seq[:, 1::2][seq[:, 0::2] != FF.READ].float() - FF.ZERO
        assert abs(float(bits.mean()) - 0.5) < 0.02               # written and ignored bits are fair coins


def test_the_same_generator_state_gives_the_same_sequences_and_decode_reads_them():
    a = FF.flipflop_batch(4, 12, 0.8, torch.Generator().manual_seed(7))[0]
    b = FF.flipflop_batch(4, 12, 0.8, torch.Generator().manual_seed(7))[0]
    assert torch.equal(a, b)
    text = FF.decode_flipflop(a[0])
    assert len(text.split()) == 6 and text.startswith("w") and text.split()[-1][0] == "r"
    with pytest.raises(ValueError, match="seq"):
        FF.decode_flipflop([0, 7])


@pytest.mark.parametrize("kwargs, err, match", [
    (dict(length=7), ValueError, "length must be even"),
    (dict(length=2), ValueError, "length must be >= 4"),
    (dict(length=8.0), TypeError, "length must be an int"),
    (dict(p_ignore=1.0), ValueError, "p_ignore must be < 1"),
    (dict(p_ignore=-0.1), ValueError, "p_ignore must be >= 0"),
    (dict(batch=0), ValueError, "batch must be >= 1"),
    (dict(generator=3), TypeError, "generator must be a torch.Generator"),
])
def test_bad_batch_arguments_are_named(kwargs, err, match):
    args = dict(batch=2, length=8, p_ignore=0.8, generator=torch.Generator())
    args.update(kwargs)
    with pytest.raises(err, match=match):
        FF.flipflop_batch(args.pop("batch"), args.pop("length"), args.pop("p_ignore"), args.pop("generator"))


@pytest.mark.parametrize("fields, err, match", [
    (dict(encodings=("nope", "mine")), ValueError, "encodings must be names"),
    (dict(train_len=63), ValueError, "train_len must be even"),
    (dict(tests=(("a", 64, 0.8), ("a", 128, 0.8))), ValueError, "distinct names"),
    (dict(tests=(("a", 64),)), TypeError, "tests entries"),
    (dict(tests=(("a", 64, 1.0),)), ValueError, r"tests p_ignore must be in \[0, 1\)"),
    (dict(p_ignore=1.0), ValueError, "p_ignore must be < 1"),
    (dict(steps=0), ValueError, "steps must be >= 1"),
    (dict(lr=0.0), ValueError, "lr must be > 0"),
])
def test_bad_config_is_named(fields, err, match):
    with pytest.raises(err, match=match):
        FF.FlipFlopConfig(**fields)


def test_bad_run_arguments_are_named():
    cfg = replace(FF.FlipFlopConfig(), steps=1)
    with pytest.raises(ValueError, match="encoding must be one of"):
        FF.train_flipflop_arm("mine", 0, cfg)
    with pytest.raises(TypeError, match="cfg must be a FlipFlopConfig"):
        FF.train_flipflop_arm("nope", 0, {"steps": 1})
    with pytest.raises(ValueError, match="key must be"):
        FF.summarize_flipflop([], key="accuracy")


_TINY = replace(FF.FlipFlopConfig(), train_len=16, steps=4, warmup_steps=1, log_every=2, batch_size=4,
                eval_sequences=6, eval_batch=4, seeds=(0,), encodings=("nope",),
                tests=(("in_distribution", 16, 0.8), ("longer", 32, 0.8)))


def _files(folder) -> list:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def test_a_rerun_keeps_the_records_it_has_and_fills_the_missing(tmp_path):
    first = FF.run_flipflop(_TINY, out_dir=tmp_path, workers=1, show_progress=False)
    assert first["last_command"]["records_made"] == 1 and len(first["check_runs"]) == 1
    assert _files(tmp_path) == ["check/runs/nope.seed0.json", "last_command.json", "runs/nope.seed0.json"]
    nope = record_cache.record_path(tmp_path, "nope", 0).read_bytes()
    more = replace(_TINY, encodings=("nope", "alibi"), seeds=(0, 1))
    second = FF.run_flipflop(more, out_dir=tmp_path, workers=1, show_progress=False)
    assert (second["last_command"]["records_made"], second["last_command"]["records_kept"]) == (3, 1)
    assert [(r["method"], r["seed"]) for r in second["runs"]] == [("nope", 0), ("alibi", 0), ("nope", 1),
                                                                    ("alibi", 1)]
    assert second["runs"][0] == json.loads(json.dumps(first["runs"][0]))   # kept as it was, not rerun
    assert record_cache.record_path(tmp_path, "nope", 0).read_bytes() == nope
    assert FF.load_flipflop(tmp_path, more) == json.loads(json.dumps(second))   # read back: the same results
    # --fresh: every record made again (the same numbers: seeded, one thread) and rewritten
    third = FF.run_flipflop(more, out_dir=tmp_path, workers=1, fresh=True, show_progress=False)
    assert (third["last_command"]["records_made"], third["last_command"]["records_kept"]) == (4, 0)
    assert [r["loss"] for r in third["runs"]] == [r["loss"] for r in second["runs"]]
    # nothing to make: every record kept, and the last command's account (what made them) left as it was
    account = (tmp_path / FF.LAST_COMMAND).read_bytes()
    fourth = FF.run_flipflop(more, out_dir=tmp_path, workers=1, show_progress=False)
    assert (fourth["last_command"]["records_made"], fourth["last_command"]["records_kept"]) == (0, 4)
    assert (tmp_path / FF.LAST_COMMAND).read_bytes() == account and fourth["runs"] == third["runs"]


def test_a_crash_loses_only_the_run_it_was_in(tmp_path, monkeypatch):
    real = FF.train_flipflop_arm

    def power_cut(encoding, seed, cfg, **kwargs):
        if encoding == "alibi":
            raise RuntimeError("power cut")
        return real(encoding, seed, cfg, **kwargs)
    monkeypatch.setattr(FF, "train_flipflop_arm", power_cut)
    with pytest.raises(RuntimeError, match="power cut"):
        FF.run_flipflop(replace(_TINY, encodings=("nope", "alibi")), out_dir=tmp_path, workers=1, show_progress=False)
    assert _files(tmp_path) == ["runs/nope.seed0.json"]   # written when it was done; no partial file


@pytest.mark.parametrize("damage, match", [
    (lambda text: text[: len(text) // 2], "not a complete flip-flop record"),
    (lambda text: json.dumps({"method": "nope"}), r"missing \['arena_record'"),
    (lambda text: text.replace('"seed": 0', '"seed": 1'), "not what its name says"),
    (lambda text: text.replace('"task": "flipflop"', '"task": "lm"'), "a record of task 'lm'"),
    (lambda text: text.replace('"steps": 4', '"steps": 5'), r"other settings \(steps: 5 -> 4\)"),
])
def test_a_corrupt_or_foreign_record_is_refused_never_overwritten(tmp_path, damage, match):
    FF.run_flipflop(_TINY, out_dir=tmp_path, workers=1, show_progress=False)
    path = record_cache.record_path(tmp_path, "nope", 0)
    path.write_text(damage(path.read_text()))
    before = path.read_bytes()
    with pytest.raises(ValueError, match=match) as err:
        FF.run_flipflop(_TINY, out_dir=tmp_path, workers=1, show_progress=False)
    assert str(path) in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(ValueError, match=match):
        FF.load_flipflop(tmp_path, _TINY)
    assert path.read_bytes() == before


def test_the_command_refuses_a_record_of_other_settings_in_one_line(tmp_path):
    FF.run_flipflop(replace(FF.FlipFlopConfig(), steps=2, encodings=("nope",), seeds=(0,)), out_dir=tmp_path,
                    workers=1, show_progress=False)
    path = record_cache.record_path(tmp_path, "nope", 0)
    before = path.read_bytes()
    with pytest.raises(SystemExit, match=r"flipflop: .*nope.seed0.json: made with other settings \(steps: 2 -> 3\)"):
        FF.main(["--encodings", "nope", "--seeds", "0", "--steps", "3", "--workers", "1", "--out", str(tmp_path)])
    assert path.read_bytes() == before


def test_the_arena_and_the_flip_flop_task_share_one_format_and_refuse_each_others_records(tmp_path):
    """One writer and one reader (record_cache): a flip-flop record is not a complete arena record, and an
    arena-shaped record in a flip-flop folder is refused by the flip-flop reader."""
    from posenc_lib.arena import cache

    FF.run_flipflop(_TINY, out_dir=tmp_path, workers=1, show_progress=False)
    path = record_cache.record_path(tmp_path, "nope", 0)
    assert cache.record_path(tmp_path, "nope", 0) == path and cache.RECORD_KEYS[:3] == FF.RECORD_KEYS[:3]
    with pytest.raises(ValueError, match="not a complete arena record"):
        cache.read_record(path)
    arena_like = {k: 0 for k in cache.RECORD_KEYS} | {"arena_record": 1, "method": "nope", "seed": 0}
    path.write_text(json.dumps(arena_like))
    with pytest.raises(ValueError, match="not a complete flip-flop record"):
        FF.read_flipflop_record(path, _TINY)


# ------------------------------------------------------------------------------------------------ the cache

@pytest.fixture(scope="module")
def cached():
    return FF.load_flipflop()


def test_a_missing_cache_names_the_command(tmp_path):
    with pytest.raises(FileNotFoundError, match="make flipflop"):
        FF.load_flipflop(tmp_path)
    FF.run_flipflop(_TINY, out_dir=tmp_path, workers=1, show_progress=False)
    record_cache.record_path(tmp_path / FF.CHECK_DIR, "nope", 0).unlink()
    with pytest.raises(FileNotFoundError, match=r"check/runs/nope.seed0.json is missing .*make flipflop"):
        FF.load_flipflop(tmp_path, _TINY)


def test_the_committed_folder_holds_one_record_per_arm_and_seed_and_nothing_else():
    folder = FF.data_dir() / FF.FLIPFLOP_DIR
    cfg = FF.FlipFlopConfig()
    runs = [f"runs/{e}.seed{s}.json" for s in cfg.seeds for e in cfg.encodings]
    checks = [f"check/runs/{e}.seed0.json" for e in cfg.encodings]
    assert _files(folder) == sorted(runs + checks + [FF.LAST_COMMAND])
    for name in runs + checks:
        assert record_cache.read_record(folder / name, FF.RECORD_KEYS)["task"] == "flipflop"


def test_the_cache_has_every_arm_and_seed_of_the_default_config(cached):
    cfg = FF.FlipFlopConfig()
    assert cached["kind"] == "flipflop" and cached["paper"] == "arXiv 2306.00946"
    assert cached["encodings"] == list(cfg.encodings) and cached["seeds"] == list(cfg.seeds) == [0, 1, 2]
    assert set(cfg.encodings) == set(FF.FIXED_ARMS + FF.CONTENT_ARMS)
    assert cached["config"] == FF.run_settings(cfg)   # the defaults are what made the cache
    assert [(r["method"], r["seed"]) for r in cached["runs"]] == [(e, s) for s in cfg.seeds for e in cfg.encodings]
    names = [t[0] for t in cfg.tests]
    for run in cached["runs"]:
        assert run["config"] == FF.run_settings(cfg)
        assert list(run["error"]) == list(run["loss"]) == list(run["reads"]) == names
        assert all(0 <= v <= 1 for v in run["error"].values()) and all(v > 0 for v in run["reads"].values())
        assert run["train_curve"][-1][0] == cfg.steps and run["threads"] == 1
        prov = run["provenance"]
        for key in ("posenc_lib_version", "git_commit", "torch_version", "date_utc", "platform", "workers"):
            assert prov[key] is not None, key
        assert prov["threads_per_worker"] == 1
    assert cached["summary"] == FF.summarize_flipflop(cached["runs"])
    assert cached["loss_summary"] == FF.summarize_flipflop(cached["runs"], "loss")


def test_the_cache_says_what_the_command_took(cached):
    """`make flipflop` on 2 cores: its worker CPU seconds / 2 is the wall time on an idle machine (<= 15 min)."""
    last = cached["last_command"]
    made = cached["runs"] + cached["check_runs"]
    assert last["records_made"] + last["records_kept"] == len(cached["runs"])
    assert sum(r["cpu_seconds"] for r in made) / 2 < 15 * 60


def test_config_from_record_gives_the_config_back(cached):
    run = cached["runs"][0]
    assert FF.config_from_record(run) == FF.FlipFlopConfig()
    with pytest.raises(ValueError, match="record"):
        FF.config_from_record({"error": {}})
    with pytest.raises(ValueError, match="not in the cache"):
        FF.cached_record(cached, "alibi", 7)


@pytest.mark.parametrize("encoding", FF.FIXED_ARMS + FF.CONTENT_ARMS)
def test_a_rerun_of_a_small_config_reproduces_the_cached_check_record(cached, encoding):
    """The cache's check_runs: every arm, seed 0, 30 steps, made by the same command in worker processes; this
    process, one thread, makes the same numbers (same machine type and torch version)."""
    record = next(r for r in cached["check_runs"] if r["method"] == encoding)
    if record["provenance"]["torch_version"] != torch.__version__:
        pytest.skip(f"the cache was made with torch {record['provenance']['torch_version']}")
    cfg = FF.config_from_record(record)
    assert FF.run_settings(cfg) == FF.run_settings(FF.check_config(FF.FlipFlopConfig())) and cfg.steps == 30
    again = FF.retrain_arm(encoding, 0, cfg)
    for key in ("error", "loss", "reads", "train_curve", "parameters"):
        assert again[key] == record[key], key


def test_the_table_and_the_figure_show_the_summary(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from posenc_lib.plots.flipflop import render_flipflop

    res = FF.run_flipflop(replace(_TINY, encodings=("nope", "alibi"), seeds=(0, 1)), workers=1, show_progress=False)
    table = FF.flipflop_table(res).splitlines()
    assert table[0].split()[:4] == ["error", "%,", "2", "seeds"] and len(table) == 3
    row = res["summary"]["alibi"]["longer"]
    assert f"{100 * row['mean']:.2f} ± {100 * row['std']:.2f}" in table[2] and table[2].startswith("alibi")
    assert "nats" in FF.flipflop_table(res, "loss").splitlines()[0]
    fig, axes = plt.subplots(1, 2)
    shown = render_flipflop(axes, res, test="longer")
    assert shown["mean"][1][1] == pytest.approx(100 * row["mean"])
    assert shown["seeds"]["nope"] == [100 * r["error"]["longer"] for r in res["runs"] if r["method"] == "nope"]
    with pytest.raises(ValueError, match="test must be one of"):
        render_flipflop(axes, res, test="sparse")
    plt.close(fig)
    from posenc_lib.i18n import language
    with language("zh"):  # the notebook's size, Chinese labels (conftest checks that no text is cut or tiny)
        fig, axes = plt.subplots(1, 2, figsize=(9.5, 3.4), gridspec_kw={"width_ratios": [1.1, 1]})
        render_flipflop(axes, res)
        assert axes[0].get_yticklabels()[0].get_text().startswith("nope（")

"""posenc_lib.arena.notebook, what notebook 07's section 12 calls: a preset's cached table read and printed, its
description in both languages, two presets side by side (on a stand-in large table), one arm run again from a
cache and compared with its record (equal on the same torch and threads; a changed record shows)."""
import copy
import json
import math
import statistics

import pytest

from posenc_lib.arena import arena_table, cache, notebook as A, run
from posenc_lib.arena.presets import arena_config
from posenc_lib.arena.table import description
from posenc_lib.i18n import language

TINY = dict(steps=2, log_every=1, warmup_steps=1, eval_windows=2, probe_windows=2, batch_size=4,
            eval_multiples=(1, 2))


def _records(losses: dict, multiples=(1, 2), train_len=64, preset="quick") -> dict:
    """Made-up records from {(method, seed): [loss at each multiple...]} (inference when the name says so)."""
    protocol = {k: list(v) if isinstance(v, tuple) else v
                for k, v in vars(arena_config(preset, overrides=dict(TINY, train_len=train_len,
                                                                     eval_multiples=multiples)).protocol).items()}
    records = {}
    for (method, seed), values in losses.items():
        kind = "inference" if method.startswith("re") else "training"
        records[method, seed] = {
            "method": method, "kind": kind, "seed": seed, "paper": "p", "note": "", "protocol": protocol,
            "loss": {str(m): v for m, v in zip(multiples, values)}, "sliding_loss": values[0] - 0.01,
            "probe": [{"multiple": 1, "distance": 16, "gain": 0.01}, {"multiple": max(multiples), "distance": 96,
                                                                      "gain": 0.02 * seed}],
            "budget": ({"steps": 2, "batch_size": 4, "train_len": train_len} if kind == "training"
                       else {"steps": 0, "trained_model": "rope seed 0"}),
            "posenc_lib_version": "v", "torch_version": "t", "threads": 1, "world_size": 1, "device": "cpu"}
    return records


def _table(losses: dict, **kwargs) -> dict:
    """The arena table of _records(losses, **kwargs)."""
    methods = list(dict.fromkeys(m for m, _ in losses))
    return arena_table(_records(losses, **kwargs), methods, sorted({s for _, s in losses}))


LAPTOP_LIKE = {("rope", 0): [2.0, 2.4], ("rope", 1): [2.1, 2.6], ("alibi", 0): [2.2, 2.25],
               ("alibi", 1): [2.3, 2.3], ("learned", 0): [2.1, None], ("rerope", 0): [2.0, 2.05]}


# ------------------------------------------------------------------------------------------------ the table
def test_load_table_reads_the_saved_table_and_names_a_missing_one(tmp_path):
    table = _table(LAPTOP_LIKE)
    (tmp_path / "table.json").write_text(json.dumps(table), encoding="utf-8")
    assert A.load_table("laptop", tmp_path) == table
    with pytest.raises(FileNotFoundError, match=r"large.*table\.json is missing: run `make arena`"):
        A.load_table("laptop", tmp_path / "large")
    with pytest.raises(FileNotFoundError, match=r"--preset large"):
        A.load_table("large", tmp_path / "nothing")
    assert A.load_table("large", tmp_path / "nothing", missing_ok=True) is None
    assert A.arena_dir("laptop").parts[-2:] == ("arena", "laptop")
    (tmp_path / "table.json").write_text("{half", encoding="utf-8")
    with pytest.raises(ValueError, match=r"table\.json: not an arena table"):
        A.load_table("laptop", tmp_path)
    (tmp_path / "table.json").write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ValueError, match="no rows"):
        A.load_table("laptop", tmp_path)
    with pytest.raises(ValueError, match="preset must be one of"):
        A.load_table("huge", tmp_path)


def test_format_compact_prints_every_cell_as_mean_and_half_width():
    table = _table(LAPTOP_LIKE)
    lines = A.format_compact(table).splitlines()
    assert "1/2 seed(s)" in lines[0] and "L = 64" in lines[0]
    assert lines[1].split() == ["method", "L", "2L", "exactly", "L"]
    rope = next(line for line in lines if line.startswith("rope ")).split()
    t1 = 12.706204736174698   # t_{0.975, 1}
    half = t1 * statistics.stdev([2.0, 2.1]) / math.sqrt(2)
    assert rope[:2] == ["rope", f"{2.05:.3f}±{half:.3f}"]
    learned = next(line for line in lines if line.startswith("learned")).split()
    assert learned[1:3] == ["2.100", "n/a"]                   # one seed: the mean alone; past L: n/a
    probes = lines[lines.index("") + 1:]                        # the second block: kind and probe gains
    assert probes[1].split() == ["method", "kind", "probe", "L", "probe", "2L"]
    assert [line.split()[:2] for line in probes[2:]] == [["rope", "training"], ["alibi", "training"],
                                                          ["learned", "training"], ["rerope", "inference"]]
    assert next(line for line in probes if line.startswith("rerope")).split()[2] == "0.010"
    with language("zh"):
        zh = A.format_compact(table).splitlines()
    from posenc_lib.i18n import display_width
    assert "恰好 L" in zh[1] and "探针 L" in zh[zh.index("") + 2] and "推理" in zh[-1]
    # the columns line up by display width: every row of a block ends at the same column
    for text in (lines, zh):
        gap = text.index("")
        assert len({display_width(line) for line in text[1:gap]}) == 1
        assert len({display_width(line) for line in text[gap + 2:]}) == 1
    with pytest.raises(TypeError, match="arena_table's dict"):
        A.format_compact([1])


def test_describe_is_the_tables_description_in_either_language():
    table = _table(LAPTOP_LIKE)
    table["description"] = description(vars(arena_config("laptop").protocol))
    assert A.describe(table, "laptop", width=10_000) == table["description"]
    assert A.describe(table, "laptop").replace("\n", " ") == table["description"]
    assert max(map(len, A.describe(table, "laptop").splitlines())) <= 100
    assert "1000 steps of 32 x 64 characters" in table["description"]
    with language("zh"):
        zh = A.describe(table, "laptop")
    assert "1000 步" in zh and "128 个留出的" in zh and "64 个探针" in zh
    with pytest.raises(ValueError, match="not made with the 'large' preset's protocol"):
        A.describe(table, "large")


def test_load_records_reads_every_cached_run(tiny_cache, tmp_path):
    records = A.load_records("quick", tiny_cache)
    assert sorted(records) == [("rerope", 0), ("rope", 0)]
    assert records["rope", 0] == cache.read_record(cache.record_path(tiny_cache, "rope", 0))
    with pytest.raises(FileNotFoundError, match=r"runs holds no run record: run `make arena`"):
        A.load_records("laptop", tmp_path)


def test_format_claims_prints_each_verdict_with_its_interval():
    from posenc_lib.arena.claims import PaperClaim, paper_comparison
    claims = (PaperClaim("rerope", "rope", "loss_2L", "lower", claim="c", source="s", likely_cause="x"),
              PaperClaim("alibi", "rope", "loss_2L", "higher", claim="c", source="s", likely_cause="x"),
              PaperClaim("alibi", None, "loss_2L", "flat", tolerance=0.05, claim="c", source="s",
                         likely_cause="x"))
    # three seeds; ALiBi is 0.19 below RoPE at 2L and 0.01 above its own L on every seed: paired intervals of width 0
    losses = {("rope", 0): [2.0, 2.4], ("rope", 1): [2.1, 2.5], ("rope", 2): [2.05, 2.45], ("alibi", 0): [2.2, 2.21],
              ("alibi", 1): [2.3, 2.31], ("alibi", 2): [2.25, 2.26], ("rerope", 0): [2.0, 2.05]}
    rows = paper_comparison(_table(losses), _records(losses), claims)
    lines = A.format_claims(rows).splitlines()
    assert lines[1].split()[:3] == ["rerope", "rope", "loss_2L"] and lines[1].endswith("not resolved")  # 1 seed
    alibi = lines[2].split()
    d = rows[1]["difference"]
    assert alibi[3:9] == ["d", ">", "0", f"{d['mean']:+.3f}", f"[{d['low']:+.3f},", f"{d['high']:+.3f}]"]
    assert d["mean"] == pytest.approx(-0.19) and lines[2].endswith("disagrees")
    assert "itself at loss_1L" in lines[3] and lines[3].split()[-1] == "agrees"
    assert lines[-1] == "1 agrees, 1 disagrees, 1 not resolved"
    with language("zh"):
        zh = A.format_claims(rows).splitlines()
    assert zh[-1] == "1 一致, 1 相反, 1 未定" and "自身的 loss_1L" in zh[3]
    with pytest.raises(TypeError, match="paper_comparison's list"):
        A.format_claims({"rows": rows})


# ------------------------------------------------------------------------------------------------ two scales
def test_two_scales_side_by_side_say_where_they_agree():
    small = _table(LAPTOP_LIKE)
    # a stand-in large table: L = 128, windows to 4L; ALiBi now rises more than RoPE, ReRoPE still less
    large = _table({("rope", 0): [1.5, 1.7, 1.9], ("alibi", 0): [1.6, 1.8, 2.6], ("rerope", 0): [1.5, 1.5, 1.52],
                    ("learned", 0): [1.55, None, None], ("xpos", 0): [1.5, 1.6, 1.7]},
                   multiples=(1, 2, 4), train_len=128)
    rows = {r["method"]: r for r in A.scale_rows(small, large)}
    assert list(rows) == ["rope", "alibi", "learned", "rerope"]            # in both, in the first table's order
    assert rows["alibi"]["rise"] == pytest.approx([2.275 - 2.25, 1.0])
    assert rows["alibi"]["loss_top"] == pytest.approx([2.275, 2.6])       # each table's own longest window
    assert rows["alibi"]["vs_reference"] == "differ"                       # below RoPE's rise, then above
    assert rows["rerope"]["vs_reference"] == "agree"
    assert rows["rope"]["vs_reference"] is None and rows["learned"]["vs_reference"] is None
    text = A.format_scales(small, large)
    assert text.splitlines()[0] == "laptop: L = 64, cpu" and "large 4L" in text.splitlines()[2]
    assert text.splitlines()[-1].endswith("the same side at both scales for 1 of 2 methods; differs for: alibi")
    flipped = copy.deepcopy(large)
    next(r for r in flipped["rows"] if r["method"] == "alibi")["cells"]["loss_4L"]["mean"] = 1.7
    assert {r["method"]: r["vs_reference"] for r in A.scale_rows(small, flipped)}["alibi"] == "agree"
    with pytest.raises(ValueError, match="'nope' must be a method of both"):
        A.scale_rows(small, large, reference="nope")


def test_rises_are_each_methods_loss_at_a_window_minus_its_loss_at_L():
    table = _table({("rope", 0): [2.0, 2.4, 2.9], ("rope", 1): [2.2, 2.6, 3.1], ("learned", 0): [2.1, None, None]},
                   multiples=(1, 2, 4))
    assert A.rises(table) == {"rope": pytest.approx(0.9), "learned": None}
    assert A.rises(table, 2)["rope"] == pytest.approx(0.4)
    with pytest.raises(ValueError, match=r"multiple must be one of the table's \[1, 2, 4\], got 8"):
        A.rises(table, 8)


def test_without_a_large_table_one_line_says_so():
    line = A.format_scales(_table(LAPTOP_LIKE), None)
    assert "\n" not in line and line.startswith("No large-preset table exists yet")
    assert "data/arena/large/table.json" in line and len(line) <= 100
    with language("zh"):
        assert A.format_scales(_table(LAPTOP_LIKE), None).startswith("大预设的表还不存在")


# ------------------------------------------------------------------------------------------------ one arm again
@pytest.fixture(scope="module")
def tiny_cache(tmp_path_factory):
    """A quick-preset cache of RoPE (trained) and ReRoPE (on it), made by the arena's own command path."""
    out = tmp_path_factory.mktemp("arena")
    arena = arena_config("quick", methods=["rope", "rerope"], seeds=(0,), overrides=TINY)
    run.run_arena(arena, out, workers=1, show_progress=False)
    return out


@pytest.mark.parametrize("method", ["rerope", "rope"])
def test_rerun_arm_gives_the_cached_numbers_again(tiny_cache, method, tmp_path):
    again = A.rerun_arm(method, 0, "quick", tiny_cache, out_dir=tmp_path)
    assert again["cached"] == cache.read_record(cache.record_path(tiny_cache, method, 0))
    assert (tmp_path / "runs" / f"{method}.seed0.json").is_file()          # written where it was told
    rows = A.compared(again)
    assert [r[0] for r in rows][:3] == ["loss L", "loss 2L", "exactly L"]
    assert len(rows) == 3 + len(again["cached"]["probe"]) + (method == "rope")
    assert A.largest_difference(again) == 0.0
    text = A.format_rerun(again)
    assert text.splitlines()[0] == f"{method}, seed 0" and f"{again['cached']['loss']['1']:.5f}" in text
    # a record that differs shows: the comparison can fail
    changed = copy.deepcopy(again)
    changed["cached"]["sliding_loss"] += 0.002
    assert A.largest_difference(changed) == pytest.approx(0.002)


def test_rerun_arm_leaves_no_folder_and_names_what_is_missing(tiny_cache, tmp_path, monkeypatch):
    import tempfile
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    A.rerun_arm("rerope", 0, "quick", tiny_cache)
    assert list(scratch.iterdir()) == []                                    # the temporary folder is gone
    with pytest.raises(FileNotFoundError, match=r"rope\.seed1\.json is missing: run `python -m posenc_lib\.arena"):
        A.rerun_arm("rope", 1, "quick", tiny_cache)
    with pytest.raises(ValueError, match="method: unknown 'ropee'"):
        A.rerun_arm("ropee", 0, "quick", tiny_cache)
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "rerope.seed0.json").write_bytes(cache.record_path(tiny_cache, "rerope", 0).read_bytes())
    with pytest.raises(FileNotFoundError, match=r"states/rope\.seed0\.pt is missing: the trained rope model"):
        A.rerun_arm("rerope", 0, "quick", tmp_path)

"""Published config.json files, read by configs.from_hf_config and by transformers, layer by layer.

The files are in data/real_configs/, kept as their sources serve them; data/real_configs_provenance.json says for
each where it comes from (repository, path, commit, what kind of copy, the licence where the source states one,
what looks edited in the copy) and lists the candidates rejected, with why.

Each file is checked the way tests/test_configs_sweep.py checks transformers' default configs (its `check`):
transformers' own config class reads the file's dict (AutoConfig.for_model, no network), configs.measure builds a
tiny model of it (the layer count, layer pattern and head sizes kept, widths shrunk) and records the q and k each
layer hands to attention, with and without its rotation; the reader's layers are compared with that run: which
layers turn q and k, which dims, the layout, the direction, the frequencies and attention factor (through the
q.q and k.k scores at positions 0-3 and far), and (compare_attention) the sliding window and q.k scale each layer
hands to the attention function.

Outcomes, printed with their counts (pytest -s):
  matched       every layer as the code does it;
  no record     a model_type without a family record: its report says what it does not know, and what it states
                is checked (as in the sweep);
  refused       the reader refuses with a line naming the key; allowed only where transformers cannot load the
                file either;
  not loadable  transformers does not know the file's model_type (remote code): nothing to compare with here;
  not compared  transformers loads it, but the tiny model cannot be built or run here (the reason is printed).
  known contradiction  listed in KNOWN_CONTRADICTIONS (below), left out of this loop.
A contradiction fails the test, except for the files in KNOWN_CONTRADICTIONS: each is a reader fault found by this
test and left for the reader's owners, checked on its own as xfail(strict=True), so that the fix turns the xfail into
a failure that asks for the entry's removal."""
import collections
import json
from pathlib import Path

import pytest

transformers = pytest.importorskip("transformers")

from test_configs_sweep import check, one_thread, tiny_default  # noqa: E402,F401 (one_thread: a fixture)

from posenc_lib.configs import from_hf_config  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "data"
FILES = sorted((DATA / "real_configs").glob("*.json"))
PROVENANCE = json.loads((DATA / "real_configs_provenance.json").read_text(encoding="utf-8"))
pytestmark = pytest.mark.usefixtures("one_thread")  # torch on one thread while these tests build models
MAX_PARAMS = 40_000_000  # the deepest files (88 layers, MLA over 61 layers) at the shrunk widths
# file -> what the reader gets wrong (or refuses although transformers reads and runs the file), in one line
KNOWN_CONTRADICTIONS = {
}


def config_of(path: Path) -> dict:
    return json.loads(path.read_bytes())


def family_of(config: dict) -> str:
    """The text model's model_type as the file states it (a wrapper's text_config's), the unit the counts name."""
    text = config.get("text_config") or config
    return text.get("model_type") or config.get("model_type")


def transformers_loads(config: dict) -> str:
    """'' when transformers' config classes read the file, else why not (a model_type of remote code)."""
    fields = dict(config)
    model_type = fields.pop("model_type", None)
    try:
        transformers.AutoConfig.for_model(model_type, **fields)
    except ValueError as error:
        return str(error).splitlines()[0][:100]
    return ""


def test_provenance_names_every_file_once_with_a_pinned_commit():
    rows = PROVENANCE["files"]
    assert sorted(row["file"] for row in rows) == [p.name for p in FILES]
    for row in rows:
        assert len(row["commit"]) == 40 and int(row["commit"], 16) >= 0, row["file"]
        assert row["repository"].count("/") == 1 and row["path"].endswith(".json"), row["file"]
    assert all(entry["why"] for entry in PROVENANCE["rejected"])
    assert set(KNOWN_CONTRADICTIONS) <= {p.name for p in FILES}  # (the xfail below would hide a missing file)


def _read_as_transformers_reads_them(files: list, which: str, capsys) -> None:
    """Each file read by the reader and by transformers (see the module's docstring); prints the counts."""
    outcomes, details, wrong = collections.Counter(), collections.defaultdict(list), []
    families = set()
    for path in files:
        config = config_of(path)
        families.add(family_of(config))
        if path.name in KNOWN_CONTRADICTIONS:  # checked in test_known_contradictions_still_hold
            outcomes["known contradiction"] += 1
            details["known contradiction"].append(f"{path.name}: {KNOWN_CONTRADICTIONS[path.name][:110]}")
            continue
        refused_by_transformers = transformers_loads(config)
        if refused_by_transformers:
            try:
                read = from_hf_config(config)
                said = f"the reader: {read.family}"
            except (ValueError, TypeError) as error:
                said = f"the reader refuses: {str(error)[:80]}"
            outcomes["not loadable"] += 1
            details["not loadable"].append(f"{path.name}: {refused_by_transformers[:70]} ({said})")
            continue
        try:
            result = check(config, ("to_dict",), max_params=MAX_PARAMS, attention=True)["to_dict"]
        except AssertionError as error:
            wrong.append(f"{path.name}: {str(error).splitlines()[0][:200]}")
            continue
        outcome, detail = result
        if outcome == "refused":  # transformers reads this file: a refusal here would leave the learner without
            wrong.append(f"{path.name}: refused although transformers reads it: {detail}")
            continue
        outcome = {"skipped": "not compared"}.get(outcome, outcome)
        outcomes[outcome] += 1
        if detail or outcome != "matched":
            details[outcome].append(f"{path.name}: {detail}")
    with capsys.disabled():
        print(f"\nreal configs, {which}: {len(files)} files, {len(families)} text model_types "
              f"({', '.join(sorted(families))}): "
              + ", ".join(f"{outcome} {n}" for outcome, n in sorted(outcomes.items()))
              + f", contradicted {len(wrong)}")
        for outcome, lines in details.items():
            print(f"  {outcome}:\n    " + "\n    ".join(lines))
        if wrong:
            print("  contradicted:\n    " + "\n    ".join(wrong))
    assert not wrong



# Two halves, each a class: pytest-xdist's --dist loadscope (make test) gives each class to one worker, so the
# files are read on both cores at once.
class TestFilesInEvenPlaces:
    def test_published_configs_read_as_transformers_reads_them(self, capsys):
        _read_as_transformers_reads_them(FILES[0::2], "files 1, 3, 5, ...", capsys)


class TestFilesInOddPlaces:
    def test_published_configs_read_as_transformers_reads_them(self, capsys):
        _read_as_transformers_reads_them(FILES[1::2], "files 2, 4, 6, ...", capsys)


def test_the_real_configs_cover_at_least_60_files_of_25_text_model_types():
    """Issue 33's floor for this folder (the halves above print their own counts)."""
    families = {family_of(config_of(path)) for path in FILES}
    assert len(FILES) >= 60 and len(families) >= 25, (len(FILES), sorted(families))


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.xfail(reason=why, strict=True))
                                  for name, why in KNOWN_CONTRADICTIONS.items()])
def test_known_contradictions_still_hold(name):
    """Each file in KNOWN_CONTRADICTIONS, read as the main test reads it, must come out matched or no record (or
    refused where transformers cannot load it): it does not yet, so the test xfails; once the reader is fixed it
    passes, strict=True fails it, and the entry is to be removed (the file then joins the main test)."""
    config = config_of(DATA / "real_configs" / name)
    assert not transformers_loads(config), name
    outcome, detail = check(config, ("to_dict",), max_params=MAX_PARAMS, attention=True)["to_dict"]
    assert outcome in ("matched", "no record"), f"{name}: {outcome} {detail}"


@pytest.mark.parametrize("edition", ["notebooks/10_rope_in_production.ipynb",
                                     "notebooks/zh/10_rope_in_production.ipynb"])
def test_notebook_10_pastes_a_published_gemma_3_config(edition):
    """Notebook 10's paste cell holds google/gemma-3-270m-it's config.json as this folder keeps it, in both
    editions; the reader reads it as Gemma 3 (the file is checked against transformers above)."""
    notebook = json.loads((DATA.parent / edition).read_text(encoding="utf-8"))
    cell = next("".join(c["source"]) for c in notebook["cells"]
                if c["cell_type"] == "code" and "".join(c["source"]).startswith('pasted = """'))
    pasted = cell.split('"""')[1]
    published = (DATA / "real_configs" / "google__gemma-3-270m-it.hub-download.json").read_text(encoding="utf-8")
    assert pasted.strip() == published.strip()
    read = from_hf_config(json.loads(pasted))
    assert read.family == "gemma3_text" and read.num_layers == 18
    assert [layer.index for layer in read.layers if layer.attention == "full"] == [5, 11, 17]


@pytest.mark.parametrize("model_type", ["starcoder2", "mixtral", "ministral", "olmo3"])
def test_windows_read_as_each_layer_hands_them_to_attention(model_type):
    """Families whose window the default config leaves off (or whose default transformers cannot build: Ministral's
    head_dim None): with a window set, each layer's window, rotation and q.k scale are what the code hands over."""
    config = {**tiny_default(model_type), "sliding_window": 64}
    if model_type == "ministral":
        config["head_dim"] = 32
    outcome, detail = check(config, ("to_dict",), attention=True)["to_dict"]
    assert outcome == "matched", detail
    read = from_hf_config(config)
    assert any(layer.window == 64 for layer in read.layers)


@pytest.mark.parametrize("model_type, key, half", [("modernbert", "local_attention", True),
                                                   ("embedding_gemma2_text", "sliding_window", False)])
def test_bidirectional_windows_are_refused_by_name(model_type, key, half):
    """Encoders whose sliding layers see a radius each side: the layer hands radius + 1 to a bidirectional mask
    (ModernBERT's radius is local_attention // 2). The reader refuses them by model_type rather than state a causal
    window (read as generic or rotate_half they were stated as no window, or the radius, where the code hands
    radius + 1)."""
    from posenc_lib.configs.measure import capture
    config = tiny_default(model_type)
    with pytest.raises(ValueError, match=r"config\['model_type'\].*bidirectional"):
        from_hf_config(config)
    told = capture(config)[4]
    radius = config[key] // 2 if half else config[key]
    assert {t.get("sliding_window") for t in told.values()} - {None} == {radius + 1}

"""`make lab` works in the learner's copies (tools/learner_copies.py): answers never land in notebooks/."""
import importlib.util
import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("learner_copies", ROOT / "tools" / "learner_copies.py")
learner_copies = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(learner_copies)


NONE = {"en": {}, "zh": {}}                    # no published versions: the record alone decides


def _notebook(text: str) -> str:
    return json.dumps({"cells": [{"cell_type": "markdown", "metadata": {}, "source": [text]}],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


@pytest.fixture
def course(tmp_path):
    source = tmp_path / "notebooks"
    source.mkdir()
    (source / "01_a.ipynb").write_text(_notebook("a v1"))
    (source / "02_b.ipynb").write_text(_notebook("b v1"))
    (source / "README.md").write_text("not a notebook")
    return source, tmp_path / "my-notebooks" / "en"


def test_first_run_copies_every_course_notebook_and_nothing_else(course):
    source, dest = course
    assert learner_copies.sync(source, dest, published=NONE) == {"01_a.ipynb": "new", "02_b.ipynb": "new"}
    assert (dest / "01_a.ipynb").read_text() == (source / "01_a.ipynb").read_text()
    assert not (dest / "README.md").exists()
    assert learner_copies.sync(source, dest, published=NONE) == {"01_a.ipynb": "same", "02_b.ipynb": "same"}


def test_a_learners_answers_survive_a_course_update(course):
    source, dest = course
    learner_copies.sync(source, dest, published=NONE)
    (dest / "01_a.ipynb").write_text(_notebook("a v1 + my answer"))     # the learner typed an answer
    (source / "01_a.ipynb").write_text(_notebook("a v2"))                # git pull changed both notebooks
    (source / "02_b.ipynb").write_text(_notebook("b v2"))
    (source / "03_c.ipynb").write_text(_notebook("c v1"))                # ... and brought a new one
    actions = learner_copies.sync(source, dest, published=NONE)
    assert actions == {"01_a.ipynb": "offered", "02_b.ipynb": "updated", "03_c.ipynb": "new"}
    assert "my answer" in (dest / "01_a.ipynb").read_text()             # kept
    assert (dest / "01_a.updated.ipynb").read_text() == _notebook("a v2")  # the new version beside it
    assert (dest / "02_b.ipynb").read_text() == _notebook("b v2")        # untouched copy follows the course
    assert (dest / "03_c.ipynb").exists()
    # the offer is made once: a learner who deletes it is not offered the same version again ...
    (dest / "01_a.updated.ipynb").unlink()
    assert learner_copies.sync(source, dest, published=NONE)["01_a.ipynb"] == "same"
    assert not (dest / "01_a.updated.ipynb").exists()
    # ... and deleting their own copy starts the notebook afresh from the course's current version
    (dest / "01_a.ipynb").unlink()
    assert learner_copies.sync(source, dest, published=NONE)["01_a.ipynb"] == "new"
    assert (dest / "01_a.ipynb").read_text() == _notebook("a v2")


def test_course_notebooks_are_never_written(course):
    source, dest = course
    before = {p.name: p.read_bytes() for p in source.iterdir()}
    learner_copies.sync(source, dest, published=NONE)
    (dest / "01_a.ipynb").write_text(_notebook("edited"))
    learner_copies.sync(source, dest, published=NONE)
    assert {p.name: p.read_bytes() for p in source.iterdir()} == before


def test_a_missing_source_folder_is_a_clear_error(tmp_path):
    with pytest.raises(learner_copies.Refusal, match="nope is not a folder of course notebooks"):
        learner_copies.sync(tmp_path / "nope", tmp_path / "dest")
    assert not (tmp_path / "dest").exists()


def test_every_notebook_as_it_is_now_is_in_the_published_list():
    """A learner's copy of today's notebooks must count as untouched on a machine without git history
    (a ZIP download): a changed notebook needs its hash added, by the command this failure names."""
    published = learner_copies.load_published()
    missing = [f"{edition}/{nb.name}" for edition, folder in learner_copies.FOLDERS.items()
               for nb in sorted((ROOT / folder).glob(learner_copies.NOTEBOOK))
               if learner_copies._sha256(nb.read_bytes()) not in published[edition].get(nb.name, ())]
    assert not missing, (f"{missing} not in data/published_notebooks.json: run "
                         f"`{learner_copies.RECORD_COMMAND}` and commit the file")


def _git(root, *args):
    subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                   check=True, capture_output=True)


def test_recording_the_published_versions_only_adds(tmp_path):
    """Every version in git history and on disk is added; hashes already listed stay (learners hold
    copies of versions a squashed or shallow history no longer has)."""
    (tmp_path / "notebooks" / "zh").mkdir(parents=True)
    (tmp_path / "data").mkdir()
    versions = {"en": [_notebook(v).encode() for v in ("a v1", "a v2", "a v3, not committed")],
                "zh": [_notebook("a v1 中文").encode()]}
    _git(tmp_path, "init", "-q")
    (tmp_path / "notebooks" / "zh" / "01_a.ipynb").write_bytes(versions["zh"][0])
    for data in versions["en"]:
        (tmp_path / "notebooks" / "01_a.ipynb").write_bytes(data)
        (tmp_path / "notebooks" / "README.md").write_text(data.decode())     # not a notebook
        if "not committed" not in data.decode():
            _git(tmp_path, "add", "-A")
            _git(tmp_path, "commit", "-q", "-m", "a version")
    lost = "f" * 64                                                          # from before a squash
    path = tmp_path / "data" / "published_notebooks.json"
    path.write_text(json.dumps({"en": {"01_a.ipynb": [lost]}, "zh": {}}))
    assert learner_copies.record_published(tmp_path) == (4, 5)
    shas = {ed: {learner_copies._sha256(v) for v in vs} for ed, vs in versions.items()}
    assert learner_copies.load_published(path) == {"en": {"01_a.ipynb": shas["en"] | {lost}},
                                                   "zh": {"01_a.ipynb": shas["zh"]}}
    before = path.read_bytes()
    assert learner_copies.record_published(tmp_path) == (0, 5) and path.read_bytes() == before


@pytest.mark.parametrize("target, source, dest", [("lab", "notebooks", "my-notebooks/en"),
                                                  ("lab-zh", "notebooks/zh", "my-notebooks/zh")])
def test_make_lab_serves_the_learners_copies_with_a_workspace_per_edition(target, source, dest):
    """`make -n` prints the recipe: it copies first, then serves the copy, never notebooks/ itself."""
    recipe = subprocess.run(["make", "-n", "-o", ".venv/.posenc-installed", target], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout
    assert f"tools/learner_copies.py {source} {dest}" in recipe
    assert f"--ServerApp.root_dir={dest} " in recipe
    assert f"JUPYTERLAB_WORKSPACES_DIR={ROOT}/my-notebooks/.lab-workspaces/{dest.rsplit('/', 1)[1]}" in recipe
    assert "root_dir=notebooks" not in recipe
    assert "my-notebooks/" in (ROOT / ".gitignore").read_text().split()

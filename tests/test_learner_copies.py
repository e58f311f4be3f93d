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
    assert learner_copies.sync(source, dest) == {"01_a.ipynb": "new", "02_b.ipynb": "new"}
    assert (dest / "01_a.ipynb").read_text() == (source / "01_a.ipynb").read_text()
    assert not (dest / "README.md").exists()
    assert learner_copies.sync(source, dest) == {"01_a.ipynb": "same", "02_b.ipynb": "same"}


def test_a_learners_answers_survive_a_course_update(course):
    source, dest = course
    learner_copies.sync(source, dest)
    (dest / "01_a.ipynb").write_text(_notebook("a v1 + my answer"))     # the learner typed an answer
    (source / "01_a.ipynb").write_text(_notebook("a v2"))                # git pull changed both notebooks
    (source / "02_b.ipynb").write_text(_notebook("b v2"))
    (source / "03_c.ipynb").write_text(_notebook("c v1"))                # ... and brought a new one
    actions = learner_copies.sync(source, dest)
    assert actions == {"01_a.ipynb": "offered", "02_b.ipynb": "updated", "03_c.ipynb": "new"}
    assert "my answer" in (dest / "01_a.ipynb").read_text()             # kept
    assert (dest / "01_a.updated.ipynb").read_text() == _notebook("a v2")  # the new version beside it
    assert (dest / "02_b.ipynb").read_text() == _notebook("b v2")        # untouched copy follows the course
    assert (dest / "03_c.ipynb").exists()
    # the offer is made once: a learner who deletes it is not offered the same version again ...
    (dest / "01_a.updated.ipynb").unlink()
    assert learner_copies.sync(source, dest)["01_a.ipynb"] == "same"
    assert not (dest / "01_a.updated.ipynb").exists()
    # ... and deleting their own copy starts the notebook afresh from the course's current version
    (dest / "01_a.ipynb").unlink()
    assert learner_copies.sync(source, dest)["01_a.ipynb"] == "new"
    assert (dest / "01_a.ipynb").read_text() == _notebook("a v2")


def test_course_notebooks_are_never_written(course):
    source, dest = course
    before = {p.name: p.read_bytes() for p in source.iterdir()}
    learner_copies.sync(source, dest)
    (dest / "01_a.ipynb").write_text(_notebook("edited"))
    learner_copies.sync(source, dest)
    assert {p.name: p.read_bytes() for p in source.iterdir()} == before


def test_a_missing_source_folder_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="source"):
        learner_copies.sync(tmp_path / "nope", tmp_path / "dest")


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

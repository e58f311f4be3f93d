"""The package's layout: plots, widgets and exercises are split by topic with the same module names, every
public name of a topic module is also importable from its package, and imports point one way:

    core (encodings, attention, model, scaling) -> experiments -> plots -> widgets -> exercises -> arena

Import Linter holds the direction (pyproject.toml's [tool.importlinter] contracts, run by `make lint` and
here, so `make test` holds it too): a layer imports only from itself and the layers before it, the core
modules only those listed below them in README.md, exercises do not import plots or widgets, plots do not
import the experiments (they draw what they are given), and no package's modules import each other in a
cycle. Import Linter reads every import, including those inside functions, and follows indirect ones."""
import importlib
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "posenc_lib"
TOPICS = ("permutation", "sinusoidal", "learned", "relative", "rope", "extension", "review", "production",
          "multidim", "inference", "serving", "generators", "content", "frequencies", "arena", "flipflop")
FIGURE_PACKAGES = ("plots", "widgets", "exercises")
LAYERS = ("arena", "exercises", "widgets", "plots", "experiments")  # the packages, highest first, above the core


def _contracts() -> list:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]


def _layers() -> list:
    [contract] = [c for c in _contracts() if c["type"] == "layers"]
    return contract["layers"]


def lint_imports(cwd: Path) -> subprocess.CompletedProcess:
    """lint-imports (the venv's, beside this python) on the posenc_lib and pyproject.toml in `cwd`."""
    command = Path(sys.executable).with_name("lint-imports")
    env = {**os.environ, "COLUMNS": "200"}  # each contract's verdict on one line
    return subprocess.run([str(command), "--no-cache", "--no-logo"], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env=env)


def test_imports_point_one_way():
    done = lint_imports(ROOT)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert f"{len(_contracts())} kept, 0 broken" in done.stdout, done.stdout[-2000:]


def test_the_contracts_state_the_course_layers():
    layers = _layers()
    assert tuple(layers[:len(LAYERS)]) == LAYERS
    forbidden = {(c["source_modules"][0], m) for c in _contracts() if c["type"] == "forbidden"
                 for m in c["forbidden_modules"]}
    assert forbidden == {("posenc_lib.plots", "posenc_lib.experiments"), ("posenc_lib.exercises", "posenc_lib.plots"),
                         ("posenc_lib.exercises", "posenc_lib.widgets")}
    assert any(c["type"] == "acyclic_siblings" and c["ancestors"] == ["posenc_lib"] for c in _contracts())


@pytest.mark.parametrize("path, code, broken", [
    ("plots/rope.py", "\ndef _f():\n    from ..experiments import train\n", "forbidden"),    # plots -> experiments
    ("exercises/rope.py", "\nfrom ..widgets import rope as _w\n", "forbidden"),              # exercises -> widgets
    ("widgets/rope.py", "\ndef _f():\n    from ..exercises import rope\n", "layers"),       # a layer -> a later one
    ("rope.py", "\ndef _f():\n    from .model import TinyLM\n", "layers"),                  # core -> one above it
    ("new_module.py", "X = 1\n", "layers"),                                                 # a module with no place
    ("experiments/config.py", "\ndef _f():\n    from . import runner\n", "acyclic_siblings"),  # a cycle
], ids=["plots-experiments", "exercises-widgets", "widgets-exercises", "core-order", "unplaced", "cycle"])
def test_the_contracts_see_a_wrong_import(tmp_path, path, code, broken):
    """The check itself: a copy of the package with one wrong import (or a module with no layer) breaks the
    contract meant to catch it."""
    shutil.copytree(PACKAGE, tmp_path / "posenc_lib", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    with open(tmp_path / "posenc_lib" / path, "a", encoding="utf-8") as f:
        f.write(code)
    done = lint_imports(tmp_path)
    names = [c["name"] for c in _contracts() if c["type"] == broken]
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    assert any(f"{name} BROKEN" in done.stdout for name in names), done.stdout[-3000:]


def test_no_module_is_named_by_course_part():
    assert not sorted(PACKAGE.rglob("part*.py"))


@pytest.mark.parametrize("package", FIGURE_PACKAGES)
def test_topic_modules_share_one_set_of_names(package):
    modules = {p.stem for p in (PACKAGE / package).glob("*.py") if p.stem != "__init__" and not p.stem.startswith("_")}
    assert modules <= set(TOPICS), f"posenc_lib.{package} has modules outside the topics: {modules - set(TOPICS)}"
    assert len(modules) >= 5


@pytest.mark.parametrize("package", FIGURE_PACKAGES)
def test_every_public_name_is_importable_from_the_package(package):
    pkg = importlib.import_module(f"posenc_lib.{package}")
    for path in sorted((PACKAGE / package).glob("[!_]*.py")):
        topic = importlib.import_module(f"posenc_lib.{package}.{path.stem}")
        assert topic.__all__, topic.__name__
        for name in topic.__all__:
            assert getattr(pkg, name) is getattr(topic, name), f"posenc_lib.{package}.{name} is not {topic.__name__}'s"


def test_reference_solutions_stay_out_of_the_package_namespace():
    exercises = importlib.import_module("posenc_lib.exercises")
    assert not hasattr(exercises, "SOLUTIONS")
    assert not [name for name in dir(exercises) if name.startswith("_solution")]


def test_the_readme_lists_the_core_modules_in_their_import_order():
    """README's "a module imports only the modules below it in this list" is the layers contract's order of
    the core modules, which lint-imports holds (test_imports_point_one_way)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme[readme.index("posenc_lib/          the library"):readme.index("  experiments/")]
    listed = re.findall(r"^  (\w+)(?:\.py|/) ", block, re.M)
    assert listed == _layers()[len(LAYERS):]
    core = {p.stem for p in PACKAGE.glob("*.py") if p.name != "__init__.py"}
    core |= {p.parent.name for p in PACKAGE.glob("*/__init__.py")} - set(LAYERS)
    assert set(listed) == core, (sorted(core - set(listed)), sorted(set(listed) - core))

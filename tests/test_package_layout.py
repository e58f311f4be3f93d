"""The package's layout: plots, widgets and exercises are split by topic with the same module names, every
public name of a topic module is also importable from its package, and imports point one way:

    core (encodings, attention, model, scaling) -> experiments -> plots -> widgets -> exercises

read from the source (ast), including imports inside functions: a layer imports only from itself and the
layers before it, exercises do not import plots or widgets, and plots do not import the experiments
(they draw what they are given)."""
import ast
import importlib
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "posenc_lib"
TOPICS = ("permutation", "sinusoidal", "learned", "relative", "rope", "extension", "review", "production",
          "multidim", "inference", "serving")
FIGURE_PACKAGES = ("plots", "widgets", "exercises")
LAYERS = ("core", "experiments", "plots", "widgets", "exercises")
MAY_IMPORT = {
    "core": {"core"},
    "experiments": {"core", "experiments"},
    "plots": {"core", "plots"},
    "widgets": {"core", "experiments", "plots", "widgets"},
    "exercises": {"core", "experiments", "exercises"},
}


def layer_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else "core"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(dotted: str) -> bool:
    rel = Path(*dotted.split("."))
    return (PACKAGE.parent / rel).with_suffix(".py").exists() or (PACKAGE.parent / rel / "__init__.py").exists()


def imports(path: Path):
    """(imported module, name or None) for every posenc_lib import in the file, relative ones resolved."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((alias.name, None) for alias in node.names if alias.name.startswith("posenc_lib"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            if not target.startswith("posenc_lib"):
                continue
            for alias in node.names:  # `from . import _checks` imports a module, not a name
                submodule = f"{target}.{alias.name}"
                yield (submodule, None) if is_module(submodule) else (target, alias.name)


SOURCES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: module_name(p))
def test_imports_point_one_way(path):
    importer = layer_of(module_name(path))
    wrong = [f"{target}{'.' + name if name else ''}" for target, name in imports(path)
             if layer_of(target) not in MAY_IMPORT[importer]]
    assert not wrong, f"{module_name(path)} ({importer}) imports from a later layer: {wrong}"


def test_the_layer_check_sees_a_wrong_import(tmp_path, monkeypatch):
    """The check itself: a plots module importing the experiments' trainer, or exercises importing plots, fail."""
    fake = tmp_path / "posenc_lib" / "plots"
    fake.mkdir(parents=True)
    (fake / "bad.py").write_text("from ..experiments import train\n\ndef f():\n    from ..exercises import rope\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "posenc_lib")
    assert list(imports(fake / "bad.py")) == [("posenc_lib.experiments", "train"), ("posenc_lib.exercises", "rope")]
    assert {layer_of(t) for t, _ in imports(fake / "bad.py")} - MAY_IMPORT["plots"] == {"experiments", "exercises"}


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
    """README's "a module imports only the modules below it in this list" holds: read the list from the
    README, the imports from the source."""
    import re

    readme = (PACKAGE.parent / "README.md").read_text(encoding="utf-8")
    block = readme[readme.index("posenc_lib/          the library"):readme.index("  experiments/")]
    listed = re.findall(r"^  (\w+)\.py ", block, re.M)
    core = sorted(p.stem for p in PACKAGE.glob("*.py") if p.name != "__init__.py")
    assert sorted(listed) == core, (sorted(set(core) - set(listed)), sorted(set(listed) - set(core)))
    for position, name in enumerate(listed):
        imported = {module.split(".")[1] for module, _ in imports(PACKAGE / f"{name}.py")
                    if module.count(".") >= 1 and module.split(".")[1] in core}
        above = set(listed[:position + 1])
        assert not imported & above, f"{name}.py imports {sorted(imported & above)}, listed above it (or itself)"

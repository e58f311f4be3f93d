"""The course outside its clone: a wheel built from the repository carries the data the notebooks read
(data/ as the package data posenc_lib/data/), and a notebook run from a folder outside the clone, by an
environment that has the wheel and not the clone, prints exactly its stored outputs (strict nbval).

The fresh environment is a new venv with the wheel installed into it; the course's dependencies come from
the test's own environment through a path entry (not its site-packages' .pth files, so the clone's
editable install is not seen there)."""
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = "07_extrapolation.ipynb"  # reads the cached results (JSON) and the saved RoPE model (.pt)


def _run(*args, **kwargs) -> subprocess.CompletedProcess:
    """args run as a subprocess; without PYTHONPATH (a PYTHONPATH pointing at the clone would put the clone's
    posenc_lib before the installed wheel's, and the test would check the clone)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([str(a) for a in args], capture_output=True, text=True, env=env, **kwargs)
    assert done.returncode == 0, f"{args}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def test_the_wheel_lists_every_subpackage():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "posenc_lib").rglob("__init__.py")}
    assert listed == found | {"posenc_lib.data"}


@pytest.fixture(scope="module")
def fresh_env(tmp_path_factory):
    """(python of a new venv with only the wheel installed, the wheel's path)."""
    tmp = tmp_path_factory.mktemp("wheel")
    build = tmp / "src"
    shutil.copytree(ROOT, build, ignore=shutil.ignore_patterns(".git", ".venv*", "build", "*.egg-info", "__pycache__",
                                                              ".pytest_cache", ".hypothesis", "ui-screenshots"))
    _run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--no-index", build,
         "-w", tmp / "dist", timeout=300)
    wheel = next((tmp / "dist").glob("posenc-*.whl"))
    _run(sys.executable, "-m", "venv", "--without-pip", tmp / "env", timeout=120)
    python = tmp / "env" / "bin" / "python"
    site = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip())
    _run(sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--target", site, wheel,
         timeout=300)
    (site / "course_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python, site


def test_an_installed_wheel_finds_its_data_and_its_version_and_not_the_clone(fresh_env):
    python, site = fresh_env
    where = _run(python, "-c", "import posenc_lib, posenc_lib.experiments.paths as p; print(posenc_lib.__file__); "
                               "print(p.data_dir()); print(posenc_lib.__version__)", cwd=site.parent).stdout.split()
    assert Path(where[0]).is_relative_to(site) and Path(where[1]) == site / "posenc_lib" / "data"
    assert where[2] == tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]  # the metadata's
    shipped = {p.relative_to(site / "posenc_lib" / "data").as_posix() for p in (site / "posenc_lib" / "data").rglob("*")
               if p.is_file()}
    in_repo = {p.name for p in (ROOT / "data").iterdir() if p.is_file()}
    arena = {p.relative_to(ROOT / "data").as_posix() for p in (ROOT / "data" / "arena").rglob("*") if p.is_file()}
    assert shipped == in_repo | arena, ((in_repo | arena) - shipped, shipped - in_repo - arena)


def test_a_notebook_outside_the_clone_prints_its_stored_outputs(fresh_env, tmp_path):
    python, site = fresh_env
    outside = tmp_path / "my-course"
    outside.mkdir()
    shutil.copy(ROOT / "notebooks" / NOTEBOOK, outside)
    done = subprocess.run([str(python), "-m", "pytest", NOTEBOOK, "--nbval", "--nbval-current-env",
                           "--nbval-sanitize-with", str(ROOT / "tools" / "nbval_sanitize.cfg"), "-q",
                           "-p", "no:cacheprovider", "-p", "no:xdist", "--rootdir", str(outside)],
                          cwd=outside, capture_output=True, text=True, timeout=600,
                          env={"MPLBACKEND": "Agg", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]

"""Where data/ is: the cached results, the experiment's text and the public models' configs.

In a clone of the repository, data/ sits beside posenc_lib/ (next to pyproject.toml): the notebooks read
it and `make experiments` writes it. An installed wheel carries the same files as package data,
posenc_lib/data/, which the readers fall back on. Every reader goes through `data_file`, which names a
missing path and the command that makes it.
"""
from __future__ import annotations

from pathlib import Path

MAKE_EXPERIMENTS = "run `make experiments` (python -m posenc_lib.experiments) in a clone of the repository"
CLONE_DATA = Path(__file__).resolve().parents[2] / "data"        # a clone: <repo>/data beside posenc_lib/
PACKAGE_DATA = Path(__file__).resolve().parents[1] / "data"      # a wheel: site-packages/posenc_lib/data


def _is_clone() -> bool:
    return CLONE_DATA.is_dir() and (CLONE_DATA.parent / "pyproject.toml").is_file()


def data_dir(*, must_exist: bool = True) -> Path:
    """Where the cached results are: the clone's data/, else the installed package's posenc_lib/data/.
    must_exist=False: the path only (to write to; `make experiments` writes into the clone's data/)."""
    path = CLONE_DATA if _is_clone() or not PACKAGE_DATA.is_dir() else PACKAGE_DATA
    if must_exist and not path.is_dir():
        raise FileNotFoundError(f"{path} is missing: posenc_lib's cached results live in data/ of a clone of the "
                                f"repository and in an installed wheel's posenc_lib/data/; {MAKE_EXPERIMENTS} "
                                f"to make them")
    return path


def data_file(name: str, directory: Path | str | None = None, *, made_by: str = MAKE_EXPERIMENTS) -> Path:
    """<directory>/<name> (default directory: data_dir()), which must exist: FileNotFoundError naming the
    path and `made_by`, how to make it."""
    path = (data_dir() if directory is None else Path(directory)) / name
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: {made_by}")
    return path

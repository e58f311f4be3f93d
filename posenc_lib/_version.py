"""posenc_lib's version, with one source: pyproject.toml's [project] version, read from the installed
distribution's metadata (a wheel's, or the editable install `make` makes of a clone)."""
from importlib import metadata

DISTRIBUTION = "posenc"  # pyproject.toml's [project] name

try:
    __version__ = metadata.version(DISTRIBUTION)
except metadata.PackageNotFoundError:  # a source tree on sys.path that pip has not installed
    __version__ = "0+unknown"

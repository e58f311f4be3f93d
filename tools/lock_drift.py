"""What `make test-latest` installed that the lock does not say: one line per package whose version
differs from requirements/lock.txt (markers evaluated for this interpreter), so that a failure under
the newest releases can be traced to the upgrade behind it.

Usage: python tools/lock_drift.py requirements/lock.txt   (with the interpreter of the venv to compare)
"""
import sys
from importlib import metadata

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version


def locked(path: str) -> dict:
    """name -> version for this interpreter, from a uv/pip-compile requirements file."""
    pins = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith(("#", "-")):
                continue
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate():
                pins[canonicalize_name(req.name)] = str(req.specifier).removeprefix("==")
    return pins


def main(path: str) -> None:
    pins = locked(path)
    # the public version: torch's 2.13.0+cpu is the lock's 2.13.0 from PyTorch's CPU index
    installed = {canonicalize_name(d.metadata["Name"]): Version(d.version).public for d in metadata.distributions()}
    rows = [(name, pins.get(name, "-"), installed.get(name, "-")) for name in sorted(set(pins) | set(installed))
            if pins.get(name) != installed.get(name) and name not in ("posenc", "pip", "setuptools", "wheel")]
    print(f"{len(rows)} packages differ from {path}" + (":" if rows else ""))
    for name, lock, now in rows:
        print(f"  {name:40s} lock {lock:14s} now {now}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "requirements/lock.txt")

"""The learner's own copies of the notebooks, so that answers never land in the course's tracked files.

`make lab` and `make lab-zh` call this before JupyterLab starts:

    python tools/learner_copies.py notebooks    my-notebooks/en
    python tools/learner_copies.py notebooks/zh my-notebooks/zh

For each course notebook (SOURCE/NN_*.ipynb) it decides what the learner's folder (DEST, git-ignored)
gets, without ever writing over a learner's edits:

    not in DEST yet                              -> copied                     ("new")
    in DEST, the course's copy unchanged         -> left alone                 ("same")
    the course's copy changed, learner's untouched -> replaced by the new one  ("updated")
    the course's copy changed, learner edited it -> the new one is written beside it as
                                                    NN_x.updated.ipynb, the learner's stays ("offered";
                                                    once: delete the offer and it is not made again
                                                    until the course changes the notebook once more)

"Untouched" means byte-identical to what this tool last copied there; DEST/.course-copies.json keeps
the SHA-256 of that copy (and of the version last offered) per notebook. To start a notebook afresh,
delete your copy and run `make lab` again. The course's own copies in notebooks/ are what nbval and the
browser test run; nothing here writes to them.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from pathlib import Path

MANIFEST = ".course-copies.json"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def sync(source: Path, dest: Path) -> dict[str, str]:
    """Bring dest up to date with the notebooks in source; return {notebook name: what happened}."""
    if not source.is_dir():
        raise ValueError(f"source must be a folder of course notebooks, got {str(source)!r}")
    dest.mkdir(parents=True, exist_ok=True)
    manifest_path = dest / MANIFEST
    # {notebook name: {"copied": sha of what we last copied, "offered": sha of what we last offered}}
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    actions: dict[str, str] = {}
    for course_nb in sorted(source.glob("[0-9][0-9]_*.ipynb")):
        name, course_hash = course_nb.name, _sha256(course_nb)
        mine = dest / name
        offered = mine.with_suffix(".updated.ipynb")
        record = manifest.setdefault(name, {})
        if not mine.exists():
            shutil.copyfile(course_nb, mine)
            actions[name] = "new"
        elif record.get("copied") == course_hash:
            actions[name] = "same"
        elif _sha256(mine) == record.get("copied"):      # the learner never changed our last copy
            shutil.copyfile(course_nb, mine)
            actions[name] = "updated"
        else:                                            # the learner's edits stay where they are
            if record.get("offered") != course_hash:     # offered once per course version
                shutil.copyfile(course_nb, offered)
                record["offered"] = course_hash
                actions[name] = "offered"
            else:
                actions[name] = "same"
            continue                                     # "copied" keeps the version they started from
        record.pop("offered", None)
        record["copied"] = course_hash
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return actions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path, help="the course's notebooks (notebooks or notebooks/zh)")
    parser.add_argument("dest", type=Path, help="the learner's folder (my-notebooks/en or my-notebooks/zh)")
    args = parser.parse_args(argv)
    actions = sync(args.source, args.dest)
    counts = {kind: sorted(n for n, a in actions.items() if a == kind) for kind in ("new", "updated", "offered")}
    print(f"your notebooks: {args.dest}/ (answers you type are saved there, never in {args.source}/)")
    if counts["new"]:
        print(f"  copied {len(counts['new'])} notebook(s) from the course")
    for name in counts["updated"]:
        print(f"  {name}: the course changed it and you had not: replaced by the new version")
    for name in counts["offered"]:
        print(f"  {name}: the course changed it and you edited your copy: yours is untouched, the new "
              f"version is beside it as {Path(name).with_suffix('.updated.ipynb').name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

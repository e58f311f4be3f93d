"""The experiment's text: the Python standard library's own .py sources, one character = one token.

CORPUS_FILES is a FIXED list of modules present as single files in every CPython >= 3.10. Their text
differs a little between Python versions, so the repository ships the text every cached result was made
from (Python 3.11.7's) in data/corpus_stdlib.json.gz, and `load_corpus()` reads that copy: the same
characters on every Python, so the notebooks print the same numbers everywhere. `load_corpus(stdlib_dir())`
reads this Python's own files instead (a missing one is a clear error); `python -m
posenc_lib.experiments --write-corpus` writes them into a new archive. Either way `load_corpus` records the file
list's hash, the text's hash and its character counts. VALID_FILES are held out for validation (about 10%
of the characters).

Vocabulary: ASCII code points 0..127 are ids 0..127; every other character is the one unknown id
UNK_ID = 128, so VOCAB_SIZE = 129.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import platform
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import torch

from .. import _checks
from .paths import data_file

#: stdlib modules (paths relative to sysconfig.get_paths()['stdlib']) that exist as single files in
#: every CPython 3.10 .. 3.14 (none of them became a package or was removed), sorted.
CORPUS_FILES = (
    "argparse.py", "ast.py", "base64.py", "bisect.py", "calendar.py", "colorsys.py", "configparser.py",
    "contextlib.py", "copy.py", "csv.py", "dataclasses.py", "datetime.py", "difflib.py", "enum.py",
    "fnmatch.py", "fractions.py", "ftplib.py", "functools.py", "getopt.py", "gettext.py", "glob.py",
    "gzip.py", "heapq.py", "hmac.py", "inspect.py", "ipaddress.py", "keyword.py", "linecache.py",
    "locale.py", "mailbox.py", "numbers.py", "operator.py", "optparse.py", "pickle.py", "pprint.py",
    "queue.py", "quopri.py", "random.py", "reprlib.py", "sched.py", "secrets.py", "selectors.py",
    "shlex.py", "shutil.py", "smtplib.py", "socket.py", "statistics.py", "string.py", "subprocess.py",
    "tarfile.py", "tempfile.py", "textwrap.py", "threading.py", "timeit.py", "token.py", "tokenize.py",
    "trace.py", "traceback.py", "types.py", "typing.py", "uuid.py", "warnings.py", "weakref.py",
)
#: held out for validation (about 10% of the characters); the rest is training text
VALID_FILES = ("calendar.py", "csv.py", "fractions.py", "gzip.py", "heapq.py", "pprint.py", "queue.py",
               "shlex.py", "string.py", "textwrap.py")
UNK_ID = 128
VOCAB_SIZE = UNK_ID + 1
#: data/'s copy of CORPUS_FILES' text: {"python": version, "source": ..., "files": {name: text}}, gzip'd JSON
CORPUS_ARCHIVE = "corpus_stdlib.json.gz"


def encode(text: str) -> torch.Tensor:
    """Characters -> (len(text),) int64 ids: ord(c) for ASCII, UNK_ID (128) for anything else."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if not text:  # torch.frombuffer refuses an empty buffer
        return torch.zeros(0, dtype=torch.int64, device="cpu")
    raw = torch.frombuffer(bytearray(text.encode("utf-32-le")), dtype=torch.int32).to(torch.int64)
    return torch.where(raw < 128, raw, torch.full_like(raw, UNK_ID))


def decode(ids) -> str:
    """int ids (a tensor or a list) -> text; the unknown id (and anything outside 0..127) becomes '?'."""
    return "".join(chr(i) if 0 <= i < 128 else "?" for i in torch.as_tensor(ids).tolist())


def stdlib_dir() -> Path:
    """Where this Python's standard library lives (sysconfig.get_paths()['stdlib'])."""
    return Path(sysconfig.get_paths()["stdlib"])


def corpus_paths(root: Path | str | None = None) -> list[Path]:
    """The absolute paths of CORPUS_FILES under `root` (default: stdlib_dir()); FileNotFoundError
    listing every missing file."""
    root = stdlib_dir() if root is None else Path(root)
    paths = [root / name for name in CORPUS_FILES]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"the experiment's corpus needs these Python standard-library files, missing under "
                                f"{root}: {missing} (is this a full CPython >= 3.10 install?)")
    return paths


@dataclass
class Corpus:
    train: torch.Tensor  # (n_train,) int64 ids
    valid: torch.Tensor  # (n_valid,) int64 ids
    info: dict           # provenance: files, hashes, character counts, python version


def stdlib_texts(root: Path | str | None = None) -> dict:
    """{name: text} of CORPUS_FILES under `root` (default: this Python's stdlib_dir())."""
    return {p.name: p.read_text(encoding="utf-8") for p in corpus_paths(root)}


def shipped_texts() -> tuple[dict, str]:
    """({name: text}, the Python version they come from) of data/corpus_stdlib.json.gz."""
    path = data_file(CORPUS_ARCHIVE, made_by="it is part of the repository (python -m posenc_lib.experiments "
                                             "--write-corpus wrote it from a Python 3.11.7 standard library); "
                                             "restore it from git")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        archive = json.load(f)
    if sorted(archive["files"]) != sorted(CORPUS_FILES):
        raise ValueError(f"{path} holds other files than CORPUS_FILES")
    return archive["files"], archive["python"]


def write_corpus_archive(path: Path | str, root: Path | str | None = None) -> Path:
    """Write CORPUS_FILES' text under `root` (default: this Python's stdlib) as the archive load_corpus reads;
    the same bytes for the same text (no timestamp in the gzip header)."""
    archive = {"python": platform.python_version(), "source": "Python standard library .py files "
               "(sysconfig.get_paths()['stdlib']), Python Software Foundation License", "files": stdlib_texts(root)}
    path = Path(path)
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as f:
        f.write(json.dumps(archive, ensure_ascii=False, indent=0).encode("utf-8"))
    return path


def load_corpus(root: Path | str | None = None) -> Corpus:
    """CORPUS_FILES (files joined by a newline, in list order), VALID_FILES split off. root=None: the shipped
    text (data/corpus_stdlib.json.gz, Python 3.11.7's); else the files under `root` (stdlib_dir(): this
    Python's own)."""
    if root is None:
        texts, python = shipped_texts()
        source = f"data/{CORPUS_ARCHIVE}: the Python {python} standard library's .py files"
    else:
        texts, python = stdlib_texts(root), platform.python_version()
        source = f"Python standard library .py files under {root}"
    train_text = "\n".join(texts[n] for n in CORPUS_FILES if n not in VALID_FILES)
    valid_text = "\n".join(texts[n] for n in CORPUS_FILES if n in VALID_FILES)
    whole = "\n".join(texts[n] for n in CORPUS_FILES)
    info = {
        "source": source,
        "python": python,
        "files": list(CORPUS_FILES),
        "valid_files": list(VALID_FILES),
        "file_list_sha256": hashlib.sha256("\n".join(CORPUS_FILES).encode()).hexdigest(),
        "text_sha256": hashlib.sha256(whole.encode("utf-8")).hexdigest(),
        "chars": len(whole),
        "train_chars": len(train_text),
        "valid_chars": len(valid_text),
        "non_ascii_chars": sum(ord(c) >= 128 for c in whole),
        "vocab": "ASCII 0..127 -> ids 0..127, other characters -> 128",
    }
    return Corpus(encode(train_text), encode(valid_text), info)



def load_text_folder(folder: Path | str, *, valid_share: float = 0.1) -> Corpus:
    """Your own corpus (the arena's `--corpus DIR`): every file of `folder` (recursively, sorted by path) read as
    UTF-8 text and joined by a newline, encoded as above; the last `valid_share` of the characters is held out."""
    folder = Path(folder)
    if not 0 < _checks.positive_float("valid_share", valid_share) < 1:
        raise ValueError(f"valid_share must lie in (0, 1), got {valid_share}")
    if not folder.is_dir():
        raise FileNotFoundError(f"folder {folder} is not a directory (expected a folder of text files)")
    paths = sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith("."))
    if not paths:
        raise ValueError(f"folder {folder} holds no files (expected text files)")
    try:
        whole = "\n".join(p.read_text(encoding="utf-8") for p in paths)
    except UnicodeDecodeError as err:
        raise ValueError(f"folder {folder}: every file must be UTF-8 text ({err})") from None
    cut = len(whole) - int(len(whole) * valid_share)
    info = {"source": f"the text files under {folder}", "files": [str(p.relative_to(folder)) for p in paths],
            "text_sha256": hashlib.sha256(whole.encode("utf-8")).hexdigest(), "chars": len(whole),
            "train_chars": cut, "valid_chars": len(whole) - cut, "valid": f"the last {valid_share:.0%} of the text",
            "non_ascii_chars": sum(ord(c) >= 128 for c in whole),
            "vocab": "ASCII 0..127 -> ids 0..127, other characters -> 128"}
    return Corpus(encode(whole[:cut]), encode(whole[cut:]), info)

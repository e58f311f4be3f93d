"""posenc_lib.experiments.corpus: the fixed standard-library text, its vocabulary and its provenance."""
from __future__ import annotations

import hashlib
import shutil

import pytest
import torch

from posenc_lib.experiments import corpus as C


@pytest.fixture(scope="module")
def corpus():
    return C.load_corpus()


def test_file_list_is_fixed_sorted_and_validation_is_a_subset():
    assert list(C.CORPUS_FILES) == sorted(set(C.CORPUS_FILES))
    assert 30 <= len(C.CORPUS_FILES) <= 80
    assert set(C.VALID_FILES) < set(C.CORPUS_FILES)


def test_missing_stdlib_file_is_a_clear_error(tmp_path):
    root = C.stdlib_dir()
    for name in C.CORPUS_FILES[1:]:
        shutil.copy(root / name, tmp_path / name)
    with pytest.raises(FileNotFoundError, match=C.CORPUS_FILES[0].replace(".", r"\.")):
        C.corpus_paths(tmp_path)


@pytest.mark.parametrize("text, ids", [("a\n~", [97, 10, 126]), ("é北", [C.UNK_ID, C.UNK_ID]), ("", [])])
def test_encode_maps_ascii_to_code_points_and_the_rest_to_unknown(text, ids):
    got = C.encode(text)
    assert got.tolist() == ids and got.dtype == torch.int64
    assert C.VOCAB_SIZE == C.UNK_ID + 1 == 129


def test_decode_inverts_encode_on_ascii_and_marks_the_unknown():
    source = "def f(x):\n    return x  # ok"
    assert C.decode(C.encode(source)) == source
    assert C.decode(C.encode("x=é")) == "x=?"
    assert C.decode([104, 105]) == "hi"


def test_encode_refuses_bytes():
    with pytest.raises(TypeError, match="text"):
        C.encode(b"bytes")


def _shipped_whole() -> str:
    """data/corpus_stdlib.json.gz read here with gzip and json, independently of the library."""
    import gzip
    import json
    with gzip.open(_archive(), "rt") as f:
        archive = json.load(f)
    return "\n".join(archive["files"][n] for n in C.CORPUS_FILES), archive


def _archive():
    from posenc_lib.experiments.paths import data_dir
    return data_dir() / C.CORPUS_ARCHIVE


def test_corpus_provenance_recomputed_independently(corpus):
    info = corpus.info
    whole, archive = _shipped_whole()
    assert info["text_sha256"] == hashlib.sha256(whole.encode("utf-8")).hexdigest()
    assert info["file_list_sha256"] == hashlib.sha256("\n".join(C.CORPUS_FILES).encode()).hexdigest()
    assert info["chars"] == len(whole) > 1_000_000
    assert info["non_ascii_chars"] == sum(ord(c) >= 128 for c in whole)
    assert info["python"] == archive["python"] == "3.11.7" and C.CORPUS_ARCHIVE in info["source"]
    assert corpus.train.numel() == info["train_chars"] and corpus.valid.numel() == info["valid_chars"]
    assert 0.05 < info["valid_chars"] / info["chars"] < 0.2
    assert int(corpus.train.max()) < C.VOCAB_SIZE and int(corpus.valid.min()) >= 0


def test_the_shipped_text_is_the_one_the_cached_results_were_made_from(corpus):
    """The same characters on every Python: the notebooks' numbers do not depend on the learner's Python."""
    from posenc_lib.experiments import load_results
    for name in ("extrapolation", "context_extension"):
        cached = load_results(name)["corpus"]
        assert corpus.info["text_sha256"] == cached["text_sha256"] and cached["python"] == "3.11.7", name


def test_this_pythons_own_stdlib_reads_the_same_way():
    own = C.load_corpus(C.stdlib_dir())
    texts = [(C.stdlib_dir() / n).read_text(encoding="utf-8") for n in C.CORPUS_FILES]
    assert own.info["text_sha256"] == hashlib.sha256("\n".join(texts).encode("utf-8")).hexdigest()
    shipped = C.load_corpus()
    import platform
    if platform.python_version() == "3.11.7":  # the Python the shipped copy was written from
        assert own.info["text_sha256"] == shipped.info["text_sha256"] and torch.equal(own.valid, shipped.valid)


def test_the_archive_is_written_the_same_byte_for_byte(tmp_path):
    root = tmp_path / "lib"
    root.mkdir()
    for i, name in enumerate(C.CORPUS_FILES):
        (root / name).write_text(f"# {name}\nx = {i}\n", encoding="utf-8")
    a, b = C.write_corpus_archive(tmp_path / "a.json.gz", root), C.write_corpus_archive(tmp_path / "b.json.gz", root)
    assert a.read_bytes() == b.read_bytes()  # no timestamp: regenerating it changes nothing in git


def test_validation_text_is_the_held_out_files_in_list_order(corpus):
    whole, archive = _shipped_whole()
    valid = "\n".join(archive["files"][n] for n in C.CORPUS_FILES if n in C.VALID_FILES)
    assert torch.equal(corpus.valid, C.encode(valid))

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


def test_corpus_provenance_recomputed_independently(corpus):
    info = corpus.info
    texts = [(C.stdlib_dir() / n).read_text(encoding="utf-8") for n in C.CORPUS_FILES]
    whole = "\n".join(texts)
    assert info["text_sha256"] == hashlib.sha256(whole.encode("utf-8")).hexdigest()
    assert info["file_list_sha256"] == hashlib.sha256("\n".join(C.CORPUS_FILES).encode()).hexdigest()
    assert info["chars"] == len(whole) > 1_000_000
    assert info["non_ascii_chars"] == sum(ord(c) >= 128 for c in whole)
    assert corpus.train.numel() == info["train_chars"] and corpus.valid.numel() == info["valid_chars"]
    assert 0.05 < info["valid_chars"] / info["chars"] < 0.2
    assert int(corpus.train.max()) < C.VOCAB_SIZE and int(corpus.valid.min()) >= 0


def test_validation_text_is_the_held_out_files_in_list_order(corpus):
    valid = "\n".join((C.stdlib_dir() / n).read_text(encoding="utf-8") for n in C.CORPUS_FILES if n in C.VALID_FILES)
    assert torch.equal(corpus.valid, C.encode(valid))

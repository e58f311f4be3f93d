"""The interview sheet at the top of notebook 09 (both editions): one heading per classic question, each
with an answer, the usual wrong answer and a link to the section that proves it; every number it states is
the one `sheet_numbers()` computes from the library and data/ (so the sheet cannot drift from the course);
and its table of the seed notes' wrong claims quotes them word for word."""
import re

import pytest
from notebook_sync import ROOT, read_cells, source

from posenc_lib.exercises.review import sheet_numbers
from posenc_lib.i18n import language

SEEDS = ROOT.parent / "shared" / "seeds"
EDITIONS = {"en": (ROOT / "notebooks" / "09_review.ipynb", "## The interview sheet", "**The usual wrong answer.**",
                   "**Proof:**"),
            "zh": (ROOT / "notebooks" / "zh" / "09_review.ipynb", "## 速答卡", "**常见的错误答案。**", "**证明：**")}
QUESTIONS = 18   # positions, sin/cos, 10000, linearity, +k/-k, absolute/relative, learned/sinusoidal, sqrt(d),
                 # add/concatenate, q k not v, complex, decay, why RoPE won, extrapolation, the scalings,
                 # rope_scaling keys, KV cache, left padding


def sheet(edition: str) -> list[str]:
    """The markdown cells from the sheet's heading up to the next numbered section."""
    path, heading, _, _ = EDITIONS[edition]
    cells = [source(c) for c in read_cells(path) if c["cell_type"] == "markdown"]
    start = next(i for i, text in enumerate(cells) if text.startswith(heading))
    end = next(i for i in range(start + 1, len(cells)) if re.match(r"## \d+\. ", cells[i]))
    return cells[start:end]


@pytest.mark.parametrize("edition", EDITIONS)
def test_each_question_has_an_answer_a_wrong_answer_and_a_link(edition):
    _, _, wrong, proof = EDITIONS[edition]
    questions = [text for text in sheet(edition) if text.startswith("### ") and proof in text]
    assert len(questions) == QUESTIONS
    for text in questions:
        assert wrong in text, text.splitlines()[0]
        assert re.search(r"\]\([^)]*#[^)]+\)", text.split(proof)[1]), f"{text.splitlines()[0]}: no section linked"


@pytest.mark.parametrize("edition", EDITIONS)
def test_every_number_of_the_sheet_is_the_computed_one(edition):
    with language(edition):
        numbers = sheet_numbers()
    text = "\n".join(sheet(edition))
    missing = {name: value for name, value in numbers.items() if value not in text}
    assert not missing, f"the sheet does not state these computed values: {missing}"


def test_the_numbers_are_computed_not_stored():
    """Against independent computations: the longest wavelength at d = 512, dynamic NTK's slowdown, the
    quiz's left-padding answer."""
    import math
    numbers = sheet_numbers()
    assert numbers["longest_wavelength_d512"] == f"{2 * math.pi * 10000 ** (510 / 512):,.0f}"
    theta_last = 10000 ** (-126 / 128)
    base = 10000 * (4 * 4 * 4096 / 4096 - 3) ** (128 / 126)   # transformers' dynamic NTK at L = 4 L0
    assert numbers["dynamic_slowdown"] == f"{theta_last / base ** (-126 / 128):.0f}"
    assert numbers["left_pad"] == "[0, 0, 0, 1, 2]" and numbers["pi_last"] == "0.25"


@pytest.mark.parametrize("edition", EDITIONS)
def test_the_seed_claims_are_quoted_word_for_word(edition):
    files = sorted(SEEDS.glob("*.txt")) if SEEDS.is_dir() else []
    if not files:
        pytest.skip("the seed notes (../shared/seeds) are not next to this clone")
    seeds = "\n".join(f.read_text(encoding="utf-8") for f in files)
    table = next(text for text in sheet(edition) if "| --- |" in text.replace("|---|", "| --- |")
                 and ("(000)" in text or "（000）" in text))
    quoted = [q for row in table.splitlines() if row.startswith("| ") and "---" not in row
              for q in re.findall(r"“([^”]+)”|`([^`]+)`", row.split("|")[1]) for q in q if q]
    assert len(quoted) >= 15
    assert [q for q in quoted if q not in seeds] == []

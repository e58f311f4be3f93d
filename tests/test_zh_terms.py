"""One term per concept in the Chinese edition: no variant listed in tests/zh_terms.py appears in a Chinese
notebook's markdown, in its printed outputs, or in README.zh.md, outside the exemptions that table lists."""
import json
import re
from pathlib import Path

import pytest
from notebook_sync import CHINESE_DIR, NOT_PROSE, ROOT, read_cells, shown_path, source
from zh_terms import EXEMPT, TERMS

SEEDS = ROOT.parent / "shared" / "seeds"
QUOTED = re.compile(r"“([^”]+)”|\"([^\"]{1,300})\"|「([^」]+)」")   # a quoted title may break a line
GLOSSARY_ALIAS = "别名"


def _seed_text() -> str | None:
    files = sorted(SEEDS.glob("*.txt")) if SEEDS.is_dir() else []
    return "\n".join(f.read_text(encoding="utf-8") for f in files) or None


SEED_TEXT = _seed_text()


def _without_seed_quotes(text: str) -> str:
    """Quoted spans that are the seed notes' own words, or English quoted whole (a title), are blanked; with
    no seeds here, every quoted span holding Chinese is (tests/test_interview_sheet.py and test_seeds.py hold
    quotations to the seeds where present)."""
    def blank(match):
        quoted = next(g for g in match.groups() if g is not None)
        if not re.search(r"[\u4e00-\u9fff]", quoted):             # an English title or message, quoted whole
            return " "
        if SEED_TEXT is not None:
            return " " if quoted in SEED_TEXT else match.group(0)
        return " " if re.search(r"[\u4e00-\u9fff]", quoted) else match.group(0)
    return QUOTED.sub(blank, text)


def _without_alias_column(text: str) -> str:
    """In a markdown table with a column headed 别名 (the glossary), that column and the English one are blanked."""
    out, exempt = [], None
    for line in text.splitlines():
        cells = line.split("|")
        if not line.lstrip().startswith("|"):
            exempt = None
        elif exempt is None and any(GLOSSARY_ALIAS in c for c in cells):
            exempt = [i for i, c in enumerate(cells) if GLOSSARY_ALIAS in c or c.strip() == "English"]
        for i in exempt or ():
            if i < len(cells):
                cells[i] = " "
        out.append("|".join(cells))
    return "\n".join(out)


def _outputs(cell: dict) -> str:
    texts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            texts.append("".join(out["text"]))
        for kind in ("text/markdown", "text/plain"):
            data = out.get("data", {}).get(kind)
            if data is not None and not (kind == "text/plain" and "image/png" in out.get("data", {})):
                texts.append("".join(data) if isinstance(data, list) else data)
    return "\n".join(texts)


def readable_text(path: Path) -> list[tuple[str, str]]:
    """(where, text) for every piece of a Chinese notebook (or README.zh.md) that a reader reads as prose."""
    if path.suffix == ".md":
        return [("text", NOT_PROSE.sub(" ", _without_seed_quotes(path.read_text(encoding="utf-8"))))]
    pieces = []
    for index, cell in enumerate(read_cells(path)):
        if cell["cell_type"] == "markdown":
            text = _without_alias_column(_without_seed_quotes(source(cell)))
            pieces.append((f"cell {index} (markdown)", NOT_PROSE.sub(" ", text)))
        elif cell["cell_type"] == "code":
            pieces.append((f"cell {index} (printed output)", _without_seed_quotes(_outputs(cell))))
    return pieces


def variants_in(path: Path) -> list[str]:
    found = []
    for where, text in readable_text(path):
        for term in TERMS:
            checked = re.sub(term.gloss, " ", text) if term.gloss else text
            for pattern in term.refused:
                for match in re.finditer(pattern, checked):
                    context = checked[max(0, match.start() - 12):match.end() + 12].replace("\n", " ")
                    found.append(f"{shown_path(path)} {where}: {match.group(0)!r} for "
                                 f"{term.concept}; the course says {term.term!r} (…{context}…)")
    return found


CHINESE_TEXTS = sorted(CHINESE_DIR.glob("*.ipynb")) + [ROOT / "README.zh.md"]


@pytest.mark.parametrize("path", CHINESE_TEXTS, ids=[p.name for p in CHINESE_TEXTS])
def test_one_term_per_concept(path):
    found = variants_in(path)
    assert not found, "\n".join(found) + "\n(exempt: " + "; ".join(EXEMPT) + ")"


def test_the_table_has_one_record_per_concept_and_term():
    assert len({t.concept for t in TERMS}) == len(TERMS) and len({t.term for t in TERMS}) == len(TERMS)
    for term in TERMS:
        for pattern in term.refused:
            assert not re.search(pattern, term.term), f"{term.term!r} refuses itself ({pattern})"
        if term.gloss:
            assert term.gloss.startswith(term.term), f"{term.term!r}: a gloss stands right after the term"


def _notebook(tmp_path, markdown, printed="", name="99_x.ipynb"):
    cells = [{"cell_type": "markdown", "metadata": {}, "source": markdown},
             {"cell_type": "code", "metadata": {}, "source": "print()", "execution_count": 1,
              "outputs": [{"output_type": "stream", "name": "stdout", "text": printed}]}]
    tmp = tmp_path / name
    tmp.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5},
                              ensure_ascii=False), encoding="utf-8")
    return tmp


@pytest.mark.parametrize("markdown, printed, refused", [
    ("见笔记本 07。", "", "笔记本"),
    ("**要看什么。** 图里", "", "看什么"),
    ("传入 mask 即可", "", "mask"),
    ("", "head  mask  score", "mask"),
    ("StreamingLLM 的 sink 留在缓存里", "", "sink"),
    ("注意力汇聚点保留", "注意力汇聚", "汇聚"),
    ("它的隐状态", "", "隐状态"),
])
def test_a_variant_is_found_in_markdown_and_printed_output(tmp_path, markdown, printed, refused):
    tmp = _notebook(tmp_path, markdown, printed)
    found = variants_in(tmp)
    assert found and refused in found[0], found


@pytest.mark.parametrize("markdown, printed", [
    ("见 notebook 07，在笔记本电脑上几秒跑完。", ""),
    ("`attention_mask` 给出掩码（attention mask）", "attention_mask = [0, 1]"),
    ("注意力汇聚点（attention sink）", "num_sinks 4"),
    ("**注意力汇聚点**（attention sink；Xiao 等人）见 \"Efficient Streaming Language Models with\n"
     "Attention Sinks\"", ""),
    ("| English | 中文 | 别名 |\n|---|---|---|\n| sinusoidal | 正弦位置编码 | 三角函数式位置编码 |", ""),
    ("```python\nmask = x\n```", ""),
])
def test_code_glosses_and_the_alias_column_are_exempt(tmp_path, markdown, printed):
    tmp = _notebook(tmp_path, markdown, printed)
    assert variants_in(tmp) == []

"""Does a Chinese notebook (notebooks/zh/NN_x.ipynb) still do what its English source (notebooks/NN_x.ipynb) does?

The English notebooks are the source; the Chinese edition translates their prose, comments and the text
inside string literals, and nothing else. `differences(english, chinese)` lists every way the pair
has drifted apart, each naming the cell:

  * the cells: the same number, in the same order, of the same types (markdown, code, raw);
  * each code cell: the same tokens once comments and the text inside string literals are set aside
    (line breaks inside brackets may move; an f-string keeps its {expressions}, conversions and
    format specs; adjacent literals count as one, so a translation may split or join them);
  * the same NBVAL_* markers in each code cell, and the same cell tags;
  * each markdown cell: one heading per heading, of the same level;
  * each markdown cell with English prose in the source holds Chinese in the translation.

Run it directly to check pairs by hand: python tests/notebook_sync.py [notebooks/zh/NN_x.ipynb ...]
"""
from __future__ import annotations

import ast
import io
import json
import re
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENGLISH_DIR = ROOT / "notebooks"
CHINESE_DIR = ROOT / "notebooks" / "zh"

NBVAL_MARKER = re.compile(r"\bNBVAL_[A-Z_]+\b")
HEADING = re.compile(r"^(#{1,6})\s")
FENCE = re.compile(r"^\s*(```|~~~)")
CJK = re.compile(r"[\u4e00-\u9fff]")
# prose: what is left of a markdown cell without code, math, links' targets and HTML tags
NOT_PROSE = re.compile(r"```.*?```|`[^`]*`|\$\$.*?\$\$|\$[^$]*\$|\]\([^)]*\)|<[^>]+>|https?://\S+", re.S)
ENGLISH_WORD = re.compile(r"\b[A-Za-z]{3,}\b")
SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}


def shown_path(path: Path) -> str:
    """A path as a message shows it: relative to the repository when inside it, else its name."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name


def read_cells(path: Path) -> list[dict]:
    return json.loads(Path(path).read_text(encoding="utf-8"))["cells"]


def source(cell: dict) -> str:
    text = cell.get("source", "")
    return "".join(text) if isinstance(text, list) else text


def _string_fields(literal: str) -> str:
    """A string literal with its text set aside: "bytes" or "str", and for an f-string its replacement
    fields ({expression!conversion:format_spec}), which are code."""
    prefix = re.match(r"[A-Za-z]*", literal).group(0).lower()
    kind = "bytes" if "b" in prefix else "str"
    if "f" not in prefix:
        return kind
    try:
        node = ast.parse(literal, mode="eval").body
    except SyntaxError:
        return f"{kind} (unparsable f-string)"
    fields = [f"{{{ast.unparse(part.value)}!{part.conversion}"
              f":{ast.unparse(part.format_spec) if part.format_spec is not None else ''}}}"
              for part in ast.walk(node) if isinstance(part, ast.FormattedValue)]
    return kind + "".join(fields)


def _whole_fstrings(stream: list, source: str) -> list:
    """Python 3.12+ tokenizes an f-string into parts (FSTRING_START, FSTRING_MIDDLE, the fields' own tokens,
    FSTRING_END; PEP 701); put each back together as one STRING token, as Python 3.11 gives it, so both
    read the same."""
    start_type = getattr(tokenize, "FSTRING_START", None)
    if start_type is None:
        return stream
    lines = source.splitlines(keepends=True)
    out, depth, first = [], 0, None
    for tok in stream:
        if tok.type == start_type:
            depth, first = depth + 1, first if depth else tok
            continue
        if depth and tok.type == tokenize.FSTRING_END:
            depth -= 1
            if depth == 0:
                (r0, c0), (r1, c1) = first.start, tok.end
                text = lines[r0 - 1][c0:] + "".join(lines[r0:r1 - 1]) + lines[r1 - 1][:c1] if r1 > r0 \
                    else lines[r0 - 1][c0:c1]
                out.append(tokenize.TokenInfo(tokenize.STRING, text, first.start, tok.end, first.line))
            continue
        if not depth:
            out.append(tok)
    return out


def code_tokens(code: str) -> list[tuple[str, int]]:
    """(token, line) for the code that runs: no comments, the text of string literals set aside
    (adjacent literals merged into one), IPython magic and shell lines kept whole."""
    lines = code.splitlines()
    magic = {i for i, line in enumerate(lines) if line.lstrip().startswith(("%", "!"))}
    python = "\n".join("" if i in magic else line for i, line in enumerate(lines)) + "\n"
    tokens: list[tuple[str, int]] = []
    try:
        stream = _whole_fstrings(list(tokenize.generate_tokens(io.StringIO(python).readline)), python)
    except (tokenize.TokenError, IndentationError, SyntaxError) as error:
        stream, tokens = [], [(f"untokenizable: {error}", 0)]
    for tok in stream:
        if tok.type in SKIPPED:
            continue
        if tok.type == tokenize.STRING:
            fields = _string_fields(tok.string)
            if tokens and tokens[-1][0].startswith("<string "):  # "a" "b" is one literal
                previous, line = tokens.pop()
                more = fields.partition("{")[2]  # the second literal's fields, if any
                fields = previous[len("<string "):-1] + ("{" + more if more else "")
                tokens.append((f"<string {fields}>", line))
            else:
                tokens.append((f"<string {fields}>", tok.start[0]))
            continue
        tokens.append(("<newline>" if tok.type == tokenize.NEWLINE else tok.string, tok.start[0]))
    tokens += [(f"magic: {lines[i].strip()}", i + 1) for i in magic]
    return sorted(tokens, key=lambda t: t[1])


def markers(code: str) -> list[str]:
    return NBVAL_MARKER.findall(code)


def headings(markdown: str) -> list[str]:
    levels, in_fence = [], False
    for line in markdown.splitlines():
        if FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and (m := HEADING.match(line)):
            levels.append(m.group(1))
    return levels


def has_english_prose(markdown: str) -> bool:
    return len(ENGLISH_WORD.findall(NOT_PROSE.sub(" ", markdown))) >= 4


def _first_difference(english: list, chinese: list) -> str:
    for e, c in zip(english, chinese):
        if e[0] != c[0]:
            return f"English line {e[1]} has `{e[0]}` where the Chinese line {c[1]} has `{c[0]}`"
    shorter, longer, which = ((english, chinese, "Chinese") if len(english) < len(chinese)
                              else (chinese, english, "English"))
    extra = longer[len(shorter)]
    return f"the {which} cell goes on with `{extra[0]}` (line {extra[1]}) where the other one ends"


def differences(english_path: Path, chinese_path: Path) -> list[str]:
    """Every difference between an English notebook and its Chinese twin, one message per cell (see
    the module docstring); an empty list when they are in sync."""
    english, chinese = read_cells(english_path), read_cells(chinese_path)
    name = Path(chinese_path).name
    problems = []
    if [c["cell_type"] for c in english] != [c["cell_type"] for c in chinese]:
        problems.append(f"{name}: the cells differ: English has {len(english)} "
                        f"({', '.join(c['cell_type'][0] for c in english)}), Chinese has {len(chinese)} "
                        f"({', '.join(c['cell_type'][0] for c in chinese)}) (m = markdown, c = code, r = raw); "
                        "every English cell needs exactly one Chinese cell, in the same order")
        return problems
    for index, (en, zh) in enumerate(zip(english, chinese)):
        where = f"{name} cell {index} ({en['cell_type']}, starting {source(en).strip()[:50]!r})"
        if en.get("metadata", {}).get("tags", []) != zh.get("metadata", {}).get("tags", []):
            problems.append(f"{where}: cell tags {en.get('metadata', {}).get('tags', [])} in English, "
                            f"{zh.get('metadata', {}).get('tags', [])} in Chinese")
        if en["cell_type"] == "code":
            en_code, zh_code = source(en), source(zh)
            if markers(en_code) != markers(zh_code):
                problems.append(f"{where}: NBVAL markers {markers(en_code)} in English, {markers(zh_code)} in Chinese")
            en_tokens, zh_tokens = code_tokens(en_code), code_tokens(zh_code)
            if [t for t, _ in en_tokens] != [t for t, _ in zh_tokens]:
                problems.append(f"{where}: the code differs (comments and string text aside): "
                                f"{_first_difference(en_tokens, zh_tokens)}")
        elif en["cell_type"] == "markdown":
            en_md, zh_md = source(en), source(zh)
            if headings(en_md) != headings(zh_md):
                problems.append(f"{where}: headings {headings(en_md)} in English, {headings(zh_md)} in Chinese "
                                "(one heading per heading, of the same level)")
            if has_english_prose(en_md) and not CJK.search(zh_md):
                problems.append(f"{where}: not translated (the Chinese cell has no Chinese)")
    return problems


def pairs() -> list[tuple[Path, Path]]:
    """(English, Chinese) for every numbered English notebook; the Chinese path may not exist."""
    return [(path, CHINESE_DIR / path.name) for path in sorted(ENGLISH_DIR.glob("[0-9][0-9]_*.ipynb"))]


if __name__ == "__main__":
    chosen = [Path(p).name for p in sys.argv[1:]]
    failed = False
    for en_path, zh_path in pairs():
        if chosen and en_path.name not in chosen:
            continue
        found = differences(en_path, zh_path) if zh_path.exists() else [f"{zh_path.name}: missing"]
        print(f"{'OK  ' if not found else 'DIFF'} {zh_path.name}")
        for problem in found:
            print("   ", problem)
        failed |= bool(found)
    sys.exit(1 if failed else 0)

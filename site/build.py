"""Build the web edition: both editions of the course as one static site, from the notebooks as stored.

Each edition's notebooks (notebooks/NN_*.ipynb, notebooks/zh/NN_*.ipynb) are copied into a source folder
with a generated home page, and Sphinx with MyST-NB renders them (site/conf.py) into OUT/en and OUT/zh;
OUT/index.html lets the reader choose. Nothing is executed: the stored outputs are nbval's fixtures. A
slider cell's stored output is one line of text (its widget view is not stored); here it becomes a note
that the sliders run in JupyterLab, under the static figure that the notebook keeps above every slider.

Usage: python site/build.py [--out build/site] [--repo-url https://github.com/OWNER/posenc]
"""
import argparse
import base64
import html
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # anchors, beside this file (also when loaded by a test)
from anchors import HEADING, jupyterlab_anchor  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "site"
EDITIONS = {"en": ROOT / "notebooks", "zh": ROOT / "notebooks" / "zh"}
SPHINX_LANGUAGE = {"en": "en", "zh": "zh_CN"}
HOME = {
    "en": ("posenc: positional encodings you can run",
           "How Transformers encode position, from the permutation problem to RoPE in production: "
           "every formula beside code that runs, every figure with its \"what to see\". This is the web "
           "edition, to read: the sliders, exercises and checkers run in JupyterLab (each page says how)."),
    "zh": ("posenc：可以运行的位置编码课程",
           "Transformer 如何编码位置：从置换问题讲到生产环境中的 RoPE，每个公式旁边都有可运行的代码，每张图都有"
           "“看图要点”。这是用来阅读的网页版：滑块、练习和检查器要在 JupyterLab 中运行（每页都写了怎么做）。"),
}
SLIDER_NOTE = {
    "en": "<b>Sliders.</b> In JupyterLab this cell shows the figure above with sliders to move; on the web "
          "you see its static copy (above) and what to see in it.",
    "zh": "<b>滑块。</b>在 JupyterLab 中，这个单元格显示上面那张图并配上可以拖动的滑块；"
          "网页版只有上面的静态图和看图要点。",
}
# posenc_lib.widgets stores, as a live figure's only output, one bracketed line that sends the reader to
# JupyterLab ("[live figure with sliders: run this cell in JupyterLab; ...]", "[带滑块的交互图：...]").
LIVE_FIGURE = re.compile(r"\[[^\n]*JupyterLab[^\n]*\]")


def is_live_figure(output: dict) -> bool:
    data = output.get("data", {})
    return set(data) == {"text/plain"} and LIVE_FIGURE.fullmatch("".join(data["text/plain"]).strip()) is not None


FENCED = re.compile(r"```.*?```", re.S)


def with_jupyterlab_anchors(markdown: str) -> str:
    """Each heading preceded by an empty element with the id JupyterLab gives it, so that the notebooks'
    links to headings (`06_rope.ipynb#7.-Common-mistakes`) land on the page too (Sphinx makes its own ids).
    The blank line ends the HTML block before the heading; headings inside fenced code are left alone."""
    fenced = [m.span() for m in FENCED.finditer(markdown)]

    def anchored(match):
        if any(start <= match.start() < end for start, end in fenced):
            return match.group(0)
        return f'<a id="{html.escape(jupyterlab_anchor(match.group(2)))}"></a>\n\n{match.group(0)}'
    return HEADING.sub(anchored, markdown)


def save_attachments(cell: dict, folder: Path, stem: str) -> str:
    """A markdown cell's attachments (`![...](attachment:name.png)`) written beside the copied notebook as
    files, and its source pointing at them (MyST-NB does not read attachments)."""
    text = "".join(cell["source"])
    for name, data in cell.pop("attachments", {}).items():
        mime, encoded = next(iter(data.items()))
        if not mime.startswith("image/"):
            continue
        file_name = f"{stem}-{name}"
        (folder / file_name).write_bytes(base64.b64decode(encoded))
        text = text.replace(f"attachment:{name}", file_name)
    return text


def copy_notebook(source: Path, dest: Path, lang: str) -> int:
    """Copy one notebook, each live figure's output replaced by the slider note, each heading given its
    JupyterLab anchor and each attachment saved as a file; returns how many slider notes."""
    nb = json.loads(source.read_text(encoding="utf-8"))
    notes = 0
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            cell["source"] = with_jupyterlab_anchors(save_attachments(cell, dest.parent, source.stem))
        if cell["cell_type"] == "code" and cell.get("outputs") and all(map(is_live_figure, cell["outputs"])):
            note = f'<div class="posenc-sliders">{SLIDER_NOTE[lang]}</div>'
            cell["outputs"] = [{"output_type": "display_data", "metadata": {}, "data": {"text/html": note}}]
            notes += 1
    dest.write_text(json.dumps(nb, ensure_ascii=False), encoding="utf-8")
    return notes


def prepare(lang: str, src: Path) -> list[str]:
    """The source folder of one edition: its notebooks and a home page listing them."""
    src.mkdir(parents=True)
    notebooks = sorted(EDITIONS[lang].glob("[0-9][0-9]_*.ipynb"))
    if not notebooks:
        sys.exit(f"site: no notebooks NN_*.ipynb in {EDITIONS[lang]}; run this from a clone of the course")
    for path in notebooks:
        copy_notebook(path, src / path.name, lang)
    title, intro = HOME[lang]
    toctree = "\n".join(path.stem for path in notebooks)
    (src / "index.md").write_text(f"# {title}\n\n{intro}\n\n```{{toctree}}\n:maxdepth: 1\n\n{toctree}\n```\n",
                                  encoding="utf-8")
    return [path.stem for path in notebooks]


def sphinx(lang: str, work: Path, repo_url: str) -> subprocess.Popen:
    """Sphinx on work/src into work/html (MyST-NB writes the outputs' files beside it, in work/jupyter_execute)."""
    command = [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-c", str(SITE), "-d", str(work / "doctrees"),
               "-D", f"language={SPHINX_LANGUAGE[lang]}", "-D", f"posenc_repo_url={repo_url}",
               str(work / "src"), str(work / "html")]
    return subprocess.Popen(command)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "site", help="the site's folder")
    parser.add_argument("--repo-url", default="", help="the repository, named in the pages (clone, %%pip, links)")
    args = parser.parse_args()
    start = time.perf_counter()
    out = args.out.resolve()
    work = out.parent / (out.name + "-work")
    shutil.rmtree(work, ignore_errors=True)
    # the two editions build side by side, one Sphinx process each (a 2-core machine: one core each)
    builds = {}
    for lang in EDITIONS:
        prepare(lang, work / lang / "src")
        builds[lang] = sphinx(lang, work / lang, args.repo_url)
    failed = [lang for lang, build in builds.items() if build.wait() != 0]
    if failed:
        print(f"site: Sphinx failed for the {' and '.join(failed)} edition (its messages are above)", file=sys.stderr)
        return 1
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for lang, notebooks in EDITIONS.items():
        (work / lang / "html").rename(out / lang)
        for path in notebooks.glob("[0-9][0-9]_*.ipynb"):  # the download is the notebook as stored, not our copy
            shutil.copy2(path, out / lang / "_sources" / path.name)
        for source_map in (out / lang / "_static").rglob("*.map"):  # the theme's debugging aids, 3.4 MB an edition
            source_map.unlink()
    shutil.copy2(SITE / "index.html", out / "index.html")
    (out / ".nojekyll").touch()  # GitHub Pages would otherwise leave out _static/, _images/ and _sources/
    size = sum(path.stat().st_size for path in out.rglob("*") if path.is_file())
    print(f"site: both editions in {out} ({size / 2**20:.1f} MiB) in {time.perf_counter() - start:.0f} s; "
          f"open {out / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The course's Sphinx extension for the web edition: the page box's values, MathJax copied into the site,
and the Chinese edition's search-query splitter."""
import logging
import shutil
from pathlib import Path

import jieba
import mathjax  # django-static-mathjax: MathJax 3's released files (es5/) and its licence, from PyPI
from sphinx.search.zh import SearchChinese

jieba.setLogLevel(logging.WARNING)  # not its "Building prefix dict ..." lines in every build's output

MATHJAX = Path(mathjax.__file__).parent / "static" / "mathjax"
# what tex-chtml.js loads: the TeX extensions it autoloads (\boldsymbol, ...), the CHTML fonts and the menu.
# Not the speech rule engine (sre/, 4 MB), which only the menu's accessibility options would load.
MATHJAX_PARTS = ["es5/tex-chtml.js", "es5/input/tex/extensions", "es5/output/chtml/fonts/woff-v2", "es5/ui"]


def edition(app) -> str:
    return "zh" if app.config.language.startswith("zh") else "en"


def page_context(app, pagename, templatename, context, doctree):
    lang = edition(app)
    other = "en" if lang == "zh" else "zh"
    source = context.get("sourcename", "")
    notebook = source if source.endswith(".ipynb") else ""
    repo = app.config.posenc_repo_url.rstrip("/")
    folder = "notebooks/zh" if lang == "zh" else "notebooks"
    context.update(
        posenc_lang=lang,
        # the two editions lie side by side (site/en, site/zh) with the same page names
        posenc_other_href=f"../{other}/{pagename}.html" if "/" not in pagename else f"../../{other}/{pagename}.html",
        posenc_notebook=notebook,
        posenc_notebook_href=context["pathto"]("_sources/" + source, 1) if notebook else "",
        posenc_repo_notebook=f"{repo}/blob/main/{folder}/{notebook}" if repo and notebook else "",
        posenc_clone=repo or ("<本仓库的地址>" if lang == "zh" else "<this repository's URL>"),
    )


def copy_mathjax(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    target = Path(app.outdir) / "_static" / "mathjax"
    shutil.rmtree(target, ignore_errors=True)
    for part in MATHJAX_PARTS:
        source, dest = MATHJAX / part, target / Path(part).relative_to("es5")
        if source.is_dir():
            shutil.copytree(source, dest)
        else:
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest)
    shutil.copy2(MATHJAX / "LICENSE", target / "LICENSE")  # Apache 2.0: the licence travels with the files


class ChineseSearch(SearchChinese):
    """Sphinx's Chinese search (jieba) as it is, but for the name of its stemmer. It stems Latin words with
    the English stemmer, whose script defines EnglishStemmer, while Sphinx 9.0 names the stemmer after the
    language ("window.Stemmer = ChineseStemmer"), so every search stops on a ReferenceError (sphinx-doc/sphinx
    issue 14229; fixed in later releases, which need Python 3.12)."""

    language_name = "English"


def add_search_splitter(app, config):
    if edition(app) == "zh":
        app.add_js_file("posenc-zh-search.js")


def setup(app):
    app.add_config_value("posenc_repo_url", "", "html", types=[str])
    app.add_search_language(ChineseSearch)
    app.connect("config-inited", add_search_splitter)
    app.connect("html-page-context", page_context)
    app.connect("build-finished", copy_mathjax)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""The web edition as a reader meets it: every page of both editions, opened from disk in headless Chromium
with every network request blocked (the site must work offline, from a folder or any static host).

`make test-ui` builds the site (`make site`) and runs this file. Per page it checks: no console error, no
page error, no failed or outside request; every image loads with a non-zero size; every internal link
resolves (the file exists and so does its #fragment); the language link opens the same page in the other
edition, and on a notebook's page the same notebook (same file, same headings); mathematics is rendered
(every math element typeset by MathJax, no MathJax error, no raw $...$ or \\( left in the text); the
notebook to download is the notebook as stored, and the commands to run it name an address and the
notebook. Then search: each term below must bring its notebook first. It keeps
screenshots (two notebook pages and a search per edition) in ui-screenshots/site/.

Usage: python tools/site_check.py [build/site] [--chromium PATH] [--screenshots DIR] [-v]
"""
from __future__ import annotations

import argparse
import html
import re
import sys
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

sys.path.insert(0, str(Path(__file__).parent))
from ui_check import ROOT, UICheckError, launch_browser  # noqa: E402  (the same Chromium, with the same flags)

try:
    from playwright.sync_api import Error as PlaywrightError, TimeoutError as PlaywrightTimeout, sync_playwright
except ImportError:
    sync_playwright = None

EDITIONS = ("en", "zh")
# each term's notebook must be the first result (terms from the notebooks' titles, so that churn in the
# text does not move them); the Chinese ones are found only if the query is split into words
SEARCHES = {
    "en": {"rotary": "06_rope", "extrapolate": "07_extrapolation", "sinusoidal": "02_sinusoidal",
           "YaRN": "08_context_extension"},
    "zh": {"旋转位置编码": "06_rope", "外推": "07_extrapolation", "正弦位置编码": "02_sinusoidal",
           "术语表": "09_review"},
}
# a notebook's box: the clone, `make lab` naming the notebook, and the hosted service's %pip, each with an address
ADDRESS = r"(?:<[^<>\n]+>|[^\s<>\"]+)"  # a URL, or the placeholder <this repository's URL> when REPO_URL is unset
RUN_COMMANDS = re.compile(rf"git clone {ADDRESS} posenc.*\n.*make lab\S* .*\d\d_\w+\.ipynb.*\n"
                          rf"%pip install .*git\+{ADDRESS}\"")
TOTALS = ("pages", "images", "links", "formulas", "slider notes")
SHOTS = ("02_sinusoidal", "06_rope")  # per edition: 02 at its first slider note, 06 at its top

PAGE_PROBE = """async () => {
  if (window.MathJax && MathJax.startup) await MathJax.startup.promise;
  await document.fonts.ready;
  const images = [...document.images];
  await Promise.all(images.map((img) => { img.loading = "eager"; return img.decode().catch(() => null); }));
  const article = document.querySelector("article.bd-article") || document.body;
  const prose = document.body.cloneNode(true);
  prose.querySelectorAll("pre, code, mjx-container, script, style").forEach((e) => e.remove());
  const pick = (selector) => document.querySelector(selector);
  return {
    badImages: images.filter((i) => !(i.complete && i.naturalWidth > 0 && i.naturalHeight > 0))
                     .map((i) => i.getAttribute("src")),
    images: images.length,
    links: [...document.querySelectorAll("a[href]")].map((a) => a.href),
    language: pick("a.posenc-language") && pick("a.posenc-language").href,
    notebook: pick("a.posenc-notebook") && pick("a.posenc-notebook code").textContent,
    notebookHref: pick("a.posenc-notebook") && pick("a.posenc-notebook").href,
    headings: article.querySelectorAll("h1, h2, h3").length,
    math: document.querySelectorAll(".math").length,
    untypeset: [...document.querySelectorAll(".math")].filter((e) => !e.querySelector("mjx-container"))
                   .map((e) => e.textContent.slice(0, 60)),
    mathErrors: [...document.querySelectorAll("mjx-merror")].map((e) => e.textContent.slice(0, 60)),
    rawMath: [...prose.textContent.matchAll(/\\$[^$\\n]{1,80}\\$|\\\\\\(|\\\\\\[/g)].map((m) => m[0]),
    sliderNotes: document.querySelectorAll(".posenc-sliders").length,
    runCommands: [...document.querySelectorAll(".posenc-run pre")].map((e) => e.textContent).join("\\n"),
  };
}"""


class Ids:
    """The ids in each HTML file of the site, for checking links' #fragments."""

    def __init__(self):
        self.cache: dict[Path, set[str]] = {}

    def __call__(self, path: Path) -> set[str]:
        if path not in self.cache:
            text = path.read_text(encoding="utf-8")  # an id as the browser reads it: entities (&#x27;) decoded
            self.cache[path] = {html.unescape(i) for i in re.findall(r'\bid="([^"]+)"', text)}
        return self.cache[path]


def link_problem(href: str, ids: Ids) -> str | None:
    """Why an internal link (file://) does not resolve, or None; other schemes are not the site's."""
    parts = urlsplit(href)
    if parts.scheme != "file":
        return None
    path = Path(unquote(parts.path))
    if path.is_dir():
        path = path / "index.html"
    if not path.is_file():
        return f"no file {path}"
    if parts.fragment and path.suffix == ".html" and unquote(parts.fragment) not in ids(path):
        return f"no #{parts.fragment} in {path.name}"
    return None


class Browser:
    """One page in headless Chromium that sees only files: any other request is aborted and reported."""

    def __init__(self, browser):
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.outside: list[str] = []
        self.context.route(re.compile(r"^(?!file:|data:).*"), self._block)
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(f"console: {m.text}"))
        self.page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        self.page.on("requestfailed", lambda r: self.errors.append(f"request failed: {r.url} ({r.failure})"))
        self.page.on("request", lambda r: r.url.startswith(("file:", "data:")) or self.outside.append(r.url))

    def _block(self, route):
        self.outside.append(route.request.url)
        route.abort()

    def open(self, url: str):
        self.errors.clear()
        self.outside.clear()
        self.page.goto(url, wait_until="load")

    def problems(self) -> list[str]:
        """What went wrong since the page was opened: errors, requests outside the site."""
        return self.errors + [f"request outside the site: {u}" for u in dict.fromkeys(self.outside)]


def check_page(browser: Browser, path: Path, site: Path, ids: Ids) -> tuple[list[str], dict]:
    browser.open(path.as_uri())
    found = browser.page.evaluate(PAGE_PROBE)  # waits for MathJax, the fonts and every image
    browser.page.wait_for_load_state("networkidle")  # so that no late request is blamed on the next page
    problems = browser.problems()
    problems += [f"image did not load: {src}" for src in found["badImages"]]
    problems += [f"link {href}: {why}" for href in dict.fromkeys(found["links"])
                 if (why := link_problem(href, ids))]
    problems += [f"math not typeset: {t!r}" for t in found["untypeset"]]
    problems += [f"MathJax error: {t!r}" for t in found["mathErrors"]]
    problems += [f"raw mathematics in the text: {t!r}" for t in found["rawMath"]]
    if path.parent.name in EDITIONS:
        problems += box_problems(path, site, found)
    return problems, found


def box_problems(path: Path, site: Path, found: dict) -> list[str]:
    """The page box: the language link, and on a notebook's page the notebook to download and how to run it."""
    edition = path.parent.name
    other = site / EDITIONS[1 - EDITIONS.index(edition)] / path.name
    problems = [] if found["language"] == other.as_uri() else [
        f"language link goes to {found['language']}, not {other.as_uri()}"]
    if not path.stem[:2].isdigit():
        return problems
    stored = ROOT / "notebooks" / ("zh" if edition == "zh" else "") / f"{path.stem}.ipynb"
    download = Path(unquote(urlsplit(found["notebookHref"] or "").path))
    if found["notebook"] != stored.name or not download.is_file():
        problems.append(f"notebook link names {found['notebook']!r} ({found['notebookHref']}), not {stored.name}")
    elif stored.is_file() and download.read_bytes() != stored.read_bytes():
        problems.append(f"the notebook to download is not {stored.relative_to(ROOT)} as stored")
    if not RUN_COMMANDS.search(found["runCommands"]):
        problems.append(f"the commands to run it lack the repository or the notebook: {found['runCommands']!r}")
    return problems


def check_search(browser: Browser, edition_dir: Path, term: str, expected: str) -> tuple[list[str], list[str]]:
    browser.open(f"{(edition_dir / 'search.html').as_uri()}?q={quote(term)}")
    try:
        browser.page.wait_for_function(
            "() => (document.querySelector('#search-results .search-summary') || {}).textContent", timeout=15_000)
    except PlaywrightTimeout:
        return browser.problems() + [f"search {term!r}: no answer in 15 s"], []
    results = browser.page.eval_on_selector_all("#search-results ul.search li > a",
                                                "links => links.map(a => a.getAttribute('href'))")
    pages = [Path(urlsplit(href).path).stem for href in results]
    problems = browser.problems()
    if not pages or pages[0] != expected:
        problems.append(f"search {term!r}: first result {pages[:1] or 'none'}, expected {expected}")
    return problems, pages


def screenshots(browser: Browser, edition_dir: Path, shots: Path, term: str) -> list[Path]:
    shots.mkdir(parents=True, exist_ok=True)
    taken = []
    for name in SHOTS:
        browser.open((edition_dir / f"{name}.html").as_uri())
        browser.page.evaluate("async () => { if (window.MathJax) await MathJax.startup.promise; }")
        note = browser.page.query_selector(".posenc-sliders") if name == SHOTS[0] else None
        if note is not None:  # the note at the bottom of the window, its static figure above it
            browser.page.evaluate("(e) => window.scrollBy(0, e.getBoundingClientRect().bottom - 860)", note)
        taken.append(shots / f"{name}.png")
        browser.page.screenshot(path=str(taken[-1]))
    browser.open(f"{(edition_dir / 'search.html').as_uri()}?q={quote(term)}")
    browser.page.wait_for_selector("#search-results ul.search li", timeout=15_000)
    taken.append(shots / "search.png")
    browser.page.screenshot(path=str(taken[-1]))
    return taken


def check_pages(browser: Browser, site: Path, verbose: bool) -> tuple[int, dict]:
    """Every page of the site; returns how many failed, and the totals of what was checked."""
    failures, totals, ids, headings = 0, dict.fromkeys(TOTALS, 0), Ids(), {}
    pages = [site / "index.html"] + [page for e in EDITIONS for page in sorted((site / e).glob("*.html"))]
    for page in pages:
        problems, found = check_page(browser, page, site, ids)
        headings[page.parent.name, page.name] = found["headings"]
        counts = dict(pages=1, images=found["images"], links=len(found["links"]), formulas=found["math"],
                      **{"slider notes": found["sliderNotes"]})
        totals = {k: totals[k] + counts[k] for k in TOTALS}
        failures += bool(problems)
        if problems or verbose:
            print(f"   {'FAIL' if problems else 'ok  '} {page.relative_to(site)}: "
                  + ", ".join(f"{counts[k]} {k}" for k in TOTALS[1:]))
        for problem in problems[:20]:
            print(f"        {problem}")
    for name in sorted(n for e, n in headings if e == "en" and n[:2].isdigit()):  # the same notebook, both sides
        if headings["en", name] != headings.get(("zh", name)):
            failures += 1
            print(f"   FAIL {name}: {headings['en', name]} headings in English, {headings.get(('zh', name))} "
                  "in Chinese: the language link does not open the same notebook")
    return failures, totals


def check_searches(browser: Browser, site: Path, shots: Path, verbose: bool) -> int:
    """Each edition's search terms; returns how many failed. Takes each edition's screenshots too."""
    failures = 0
    for edition in EDITIONS:
        for term, expected in SEARCHES[edition].items():
            problems, found = check_search(browser, site / edition, term, expected)
            failures += bool(problems)
            if problems or verbose:
                print(f"   {'FAIL' if problems else 'ok  '} {edition} search {term!r}: {found[:3]}")
            for problem in problems:
                print(f"        {problem}")
        taken = screenshots(browser, site / edition, shots / edition, next(iter(SEARCHES[edition])))
        print(f"   screenshots: {', '.join(map(str, taken))}")
    return failures


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("site", nargs="?", type=Path, default=ROOT / "build" / "site", help="the built site (make site)")
    ap.add_argument("--chromium", help="Chromium binary (default: $CHROMIUM or /usr/bin/chromium)")
    ap.add_argument("--screenshots", type=Path, default=ROOT / "ui-screenshots" / "site")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args(argv)
    site = a.site.resolve()
    if not all((site / e / "index.html").is_file() for e in EDITIONS):
        print(f"SITE FAILED: no site in {site} (its en/ and zh/); build it with `make site`")
        return 1
    if sync_playwright is None:
        print("SITE FAILED: Playwright is missing; `make test-ui` installs it (the ui extra)")
        return 1
    print(f"== the web edition, from disk: {site} (every request outside it blocked)")
    with sync_playwright() as p:
        try:
            chromium, _ = launch_browser(p, a.chromium)
        except UICheckError as e:
            print(f"SITE FAILED: {e}")
            return 1
        try:
            browser = Browser(chromium)
            failures, totals = check_pages(browser, site, a.verbose)
            failures += check_searches(browser, site, a.screenshots, a.verbose)
        except PlaywrightError as e:
            print(f"SITE FAILED: the browser stopped: {str(e).splitlines()[0]}")
            return 1
        finally:
            chromium.close()
    checked = ", ".join(f"{v} {k}" for k, v in totals.items()) + f", {sum(map(len, SEARCHES.values()))} searches"
    if failures:
        print(f"SITE FAILED: {failures} pages or searches with problems (above); checked {checked}")
        return 1
    print(f"SITE PASSED: {checked}, no request outside the site")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The course as a learner uses it: every notebook in a real JupyterLab in headless Chromium.

`make test-ui` runs this file (a developer tool: not part of the installed package, not collected by
pytest); the in-page probes it runs are in ui_check.js beside it.

1. Static reading (no execution): each STORED notebook is exported to HTML with nbconvert, as a
   reader on GitHub or nbviewer sees it. A notebook with plotting code must contain its figures as
   `<img src="data:image/png...">`; every cell that calls `plt.show()` at top level must have a stored
   PNG; no stored error output.
2. Live run: JupyterLab from this venv on 127.0.0.1 (a port the system picks, random token), serving a
   throwaway copy of notebooks/ (the repo's files are never saved to). One headless Chromium
   (Debian's /usr/bin/chromium, driven by Playwright) opens each notebook in a fresh workspace,
   accepts the kernel dialog if one appears, clicks Run > Run All Cells and waits until the kernel is
   idle and every code cell has run. Per notebook it asserts: no error output (checked on the
   notebook model JupyterLab holds, so warnings on stderr are not errors), no "Error displaying
   widget", the ipywidgets views rendered, the kernel is the venv's python; and for every interactive
   figure (a widget box holding an ipywidgets Image) it moves the FIRST control with the mouse (drags a
   slider's handle, picks another dropdown option, clicks another toggle button...) and asserts the
   image's bytes change, timing the move -> new image. Readability, in the notebook column a learner
   reads (file browser folded away, ~1200 px in the 1280-px window): the smallest text of every figure
   the kernel draws (measured in the kernel as it makes each PNG) must be at least the library's
   MIN_TEXT_PX (posenc_lib.plots._style) on screen, no figure may be shown shrunk to fit, and no printed
   table row may wrap. It fails when a notebook shows an error, a control does not redraw, a notebook's
   median redraw exceeds --max-median-ms (300 ms), or a readability check fails.
Both editions are checked, each with its own server: notebooks/ with the interface in English and
notebooks/zh/ with it in Chinese (JupyterLab's zh_CN language pack, as `make lab-zh` serves it; the
Run menu is clicked by its Chinese name, so an English interface fails), after checking that the
system has a font with Chinese characters for Chromium.
Screenshots (one per notebook plus one per interactive figure) go to ui-screenshots/ and
ui-screenshots/zh/ (git-ignored).

What maintained tools do here: Playwright drives the browser, waits (wait_for_function, expect) and
makes the REST calls; jupyter_server picks the port and says when it listens (its server-info file).
The server stays our own subprocess: pytest-jupyter's `jp_serverapp` does serve JupyterLab in Chinese,
but inside the test process, on a loop that turns only while an async test awaits (with sync Playwright,
which pytest-playwright's fixtures are, the page never loads), one server per test, and its message relay
sharing the interpreter with the driver whose redraws we time. pytest-playwright would only hand us the
browser (one call here); Galata is a TypeScript/npm toolchain whose notebook helpers run in Node.

Needs: `pip install -e ".[ui]"` (Playwright) and a Chromium: /usr/bin/chromium (Debian/Ubuntu:
`apt-get install chromium`), or --chromium PATH, or Playwright's own (`playwright install chromium`).
Usage: python tools/ui_check.py [notebooks/NN_x.ipynb | notebooks/zh/NN_x.ipynb ...] [--help for options]
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import re
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

try:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout, expect, sync_playwright
except ImportError:  # the static reading works without it; the live run says what to install
    sync_playwright = None

from posenc_lib.plots._style import MIN_TEXT_PX  # the library's readability floor, which the tests hold too

ROOT = Path(__file__).resolve().parent.parent
PROBES_JS = Path(__file__).with_name("ui_check.js")
VENV_BIN = Path(sys.executable).parent  # `make test-ui` runs .venv/bin/python
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
                 "--disable-dev-shm-usage"]
# JupyterLab user settings for the throwaway server: never write back to the copies, no news toast.
LAB_SETTINGS = {
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false", "checkForUpdates": False},
}
# The two editions: where their notebooks are, the interface language (the Chinese edition is checked
# with JupyterLab in Chinese, as `make lab-zh` serves it: the zh_CN language pack, the "zh" extra) and
# the Run menu's name in it, which the check clicks.
LOCALE_SETTING = "@jupyterlab/translation-extension/plugin.jupyterlab-settings"
EDITIONS = {
    "en": {"folder": ROOT / "notebooks", "settings": LAB_SETTINGS, "run_menu": "Run", "shots": ""},
    "zh": {"folder": ROOT / "notebooks" / "zh", "settings": {**LAB_SETTINGS, LOCALE_SETTING: {"locale": "zh_CN"}},
           "run_menu": "运行", "shots": "zh"},
}
PLOT_CODE = re.compile(r"\bplt\.(show|subplots|figure|imshow|plot)\(|\.savefig\(|\brender_\w+\(")
TOP_LEVEL_SHOW = re.compile(r"^plt\.show\(", re.M)


class UICheckError(Exception):
    """A failure with a message meant for the person reading the CI log."""


OPEN_FAILED = "did not open: "


class OpenError(UICheckError):
    """The notebook did not open with an idle kernel: run_notebook tries once more on a new page, and reports
    the first failure (with the server's log around it) as a note either way."""


# ----------------------------------------------------------------------------------------------
# 1. static reading
# ----------------------------------------------------------------------------------------------
@dataclass
class StaticResult:
    name: str
    html_pngs: int = 0
    plot_cells: int = 0
    problems: list = field(default_factory=list)


def check_static(path: Path) -> StaticResult:
    import nbformat
    from nbconvert import HTMLExporter

    res = StaticResult(path.name)
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    if code and not any(c.get("execution_count") or c.get("outputs") for c in code):
        res.problems.append("stored notebook was never executed (no outputs): run `make refresh`")
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        outputs = cell.get("outputs", [])
        pngs = sum("image/png" in o.get("data", {}) for o in outputs)
        if PLOT_CODE.search(cell.source):
            res.plot_cells += 1
        if TOP_LEVEL_SHOW.search(cell.source) and not pngs:
            res.problems.append(f"cell {i} calls plt.show() but has no stored PNG output")
        for o in outputs:
            if o.get("output_type") == "error":
                res.problems.append(f"cell {i} has a stored error output: {o.get('ename')}: "
                                    f"{o.get('evalue', '')[:120]}")
    body, _ = HTMLExporter().from_notebook_node(nb)
    res.html_pngs = len(re.findall(r"<img[^>]*\bsrc=\"data:image/png;base64,", body))
    if res.plot_cells and not res.html_pngs:
        res.problems.append(f"{res.plot_cells} cell(s) with plotting code but the exported HTML "
                            "holds no <img src=\"data:image/png...\">: the static figures are missing")
    return res


# ----------------------------------------------------------------------------------------------
# 2. the server
# ----------------------------------------------------------------------------------------------
class LabServer:
    """JupyterLab from this venv, serving a throwaway copy of the notebooks, in its own process group."""

    def __init__(self, notebooks_dir: Path, workdir: Path, settings: dict):
        self.token = secrets.token_hex(24)
        self.log_path = workdir / "jupyter.log"
        # The served tree mirrors the repo: notebooks/ copied, every other top-level entry linked, so
        # paths such as ../data resolve exactly as in the checkout.
        tree = workdir / "repo"
        tree.mkdir()
        for entry in ROOT.iterdir():
            if entry.name not in {".git", ".venv", "notebooks", "ui-screenshots"}:
                (tree / entry.name).symlink_to(entry)
        shutil.copytree(ROOT / "notebooks", tree / "notebooks",
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
        root_dir = tree / notebooks_dir.resolve().relative_to(ROOT)  # notebooks/ or notebooks/zh/
        for rel, values in settings.items():
            p = workdir / "lab-settings" / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(json.dumps(values))
        self.runtime = workdir / "jupyter-runtime"
        env = dict(os.environ)
        env.pop("MPLBACKEND", None)  # a learner's kernel picks its backend itself (%matplotlib inline)
        env.update(JUPYTERLAB_SETTINGS_DIR=str(workdir / "lab-settings"),
                   JUPYTERLAB_WORKSPACES_DIR=str(workdir / "lab-workspaces"),
                   JUPYTER_CONFIG_DIR=str(workdir / "jupyter-config"),  # no user config (passwords...)
                   JUPYTER_DATA_DIR=str(workdir / "jupyter-data"),      # no user kernelspecs
                   JUPYTER_RUNTIME_DIR=str(self.runtime),
                   PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}")
        jupyter = VENV_BIN / "jupyter"
        if not jupyter.exists():
            raise UICheckError(f"{jupyter} not found: run this with the project's venv python "
                               "(`make test-ui` does)")
        cmd = [str(jupyter), "lab", "--no-browser", "--ip=127.0.0.1", "--port=0", "--ServerApp.port_retries=0",
               f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={root_dir}",
               "--LabApp.expose_app_in_browser=True"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-root")  # CI runs as root
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=env,
                                     cwd=root_dir, start_new_session=True)

    def wait_until_listening(self, startup_timeout: float) -> None:
        """jupyter_server writes its server-info file (url, port) once it listens."""
        from jupyter_server.serverapp import list_running_servers

        deadline = time.monotonic() + startup_timeout
        while not (info := next(list_running_servers(str(self.runtime)), None)):
            if self.proc.poll() is not None:
                raise UICheckError(f"JupyterLab exited with code {self.proc.returncode} while starting")
            if time.monotonic() > deadline:
                raise UICheckError(f"JupyterLab did not start within {startup_timeout:.0f} s")
            time.sleep(0.25)
        self.base = info["url"].rstrip("/")
        self.auth = {"Authorization": f"token {self.token}"}

    def log_tail(self, lines: int = 60) -> str:
        self.log.flush()
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self):
        for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):  # the server and the kernels it started
            try:
                os.killpg(self.proc.pid, sig)
                self.proc.wait(timeout=wait)
            except (subprocess.TimeoutExpired, ProcessLookupError, PermissionError):
                pass
        self.log.close()


# ----------------------------------------------------------------------------------------------
# 3. the browser side
# ----------------------------------------------------------------------------------------------
CONTROL_SELECTOR = (".widget-slider, .widget-dropdown, .widget-toggle-buttons, .widget-toggle-button, "
                    ".widget-checkbox, .widget-radio, .widget-select, .widget-select-multiple, "
                    ".widget-text, .widget-play, .widget-button, .widget-colorpicker, .widget-datepicker")

# Python expressions evaluated in the kernel (uic.kernelExpr: read-only user expressions).
# redraw_count and last_redraw_seconds of every InteractiveFigure, to tell how much of a redraw seen in
# the browser is spent in the kernel:
FIGURE_TIMES_EXPR = ("__import__('json').dumps({k: [v.redraw_count, v.last_redraw_seconds] for k, v in "
                     "__import__('ipywidgets').widgets.widget._instances.items() if isinstance(v, "
                     "__import__('posenc_lib.widgets._base', fromlist=['_']).InteractiveFigure)})")
# Installed before Run All: every figure the kernel turns into a PNG (inline output and widget images alike
# go through FigureCanvasBase.print_figure) is measured once for its smallest text, in pixels at the
# figure's dpi (posenc_lib.plots._style.smallest_text).
TEXT_AUDIT_CODE = """
import weakref, matplotlib.backend_bases as _uic_b
from posenc_lib.plots._style import smallest_text as _uic_smallest
__uic_text_audit, _uic_seen = [], weakref.WeakSet()
_uic_print = _uic_b.FigureCanvasBase.print_figure
def _uic_audited(self, *args, **kwargs):
    fig = self.figure
    if fig not in _uic_seen and fig.axes:
        _uic_seen.add(fig)
        px, text = _uic_smallest(fig)
        __uic_text_audit.append([round(px, 1), text[:40], round(fig.get_figwidth() * fig.dpi)])
    return _uic_print(self, *args, **kwargs)
_uic_b.FigureCanvasBase.print_figure = _uic_audited
"""
TEXT_AUDIT_INSTALL = f"exec({TEXT_AUDIT_CODE!r}) or 'installed'"
TEXT_AUDIT_EXPR = "__import__('json').dumps(__uic_text_audit)"
KERNEL_PYTHON_EXPR = "__import__('sys').executable"


@dataclass
class Redraw:
    fig: int
    cell: int | None
    kind: str
    method: str
    before: str
    after: str
    ms: float | None
    ok: bool
    problem: str = ""
    kernel_ms: float | None = None


def percentile(values, q: float) -> float:
    """The q-th percentile by the nearest rank (no interpolation: one of the measured times)."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, -(-len(ordered) * q // 100) - 1))]


@dataclass
class LiveResult:
    name: str
    load_s: float = float("nan")
    run_s: float = float("nan")
    figures: int = 0
    controls: int = 0
    redraws: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    problems: list = field(default_factory=list)
    kernel: str = ""
    notes: list = field(default_factory=list)
    min_text_px: float | None = None   # the smallest figure text on screen, in px

    @property
    def ok_redraws(self):
        return [r for r in self.redraws if r.ok]

    def _ms(self, attr):
        return [getattr(r, attr) for r in self.ok_redraws if getattr(r, attr) is not None]

    @property
    def median_ms(self):
        return statistics.median(self._ms("ms")) if self._ms("ms") else None

    @property
    def median_kernel_ms(self):
        return statistics.median(self._ms("kernel_ms")) if self._ms("kernel_ms") else None

    @property
    def max_ms(self):
        return max(self._ms("ms"), default=None)

    def per_figure(self) -> dict:
        """fig -> (redraws counted, median ms, 95th percentile ms, median kernel ms), each figure's first
        redraw left out (it pays for one-time work: fonts, caches)."""
        out = {}
        for fig in sorted({r.fig for r in self.ok_redraws}):
            later = [r for r in self.ok_redraws if r.fig == fig][1:]
            ms = [r.ms for r in later if r.ms is not None]
            kernel = [r.kernel_ms for r in later if r.kernel_ms is not None]
            if ms:
                out[fig] = (len(ms), statistics.median(ms), percentile(ms, 95),
                            statistics.median(kernel) if kernel else None)
        return out

    def slow(self, max_median_ms: float) -> bool:
        return self.median_ms is not None and self.median_ms > max_median_ms

    @property
    def bad(self) -> bool:
        return bool(self.errors or self.problems or not all(x.ok for x in self.redraws))


class Runner:
    def __init__(self, server: LabServer, browser, args, shots: Path, run_menu: str):
        self.server, self.args, self.shots, self.run_menu = server, args, shots, run_menu
        # One context for all notebooks so JupyterLab's static files come from the HTTP cache;
        # each notebook gets its own page and its own fresh workspace. Every page has the probes.
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.context.set_default_timeout(30_000)
        self.context.add_init_script(path=PROBES_JS)

    def run_notebook(self, path: Path) -> LiveResult:
        res = self._run_once(path)
        first_open = [p for p in res.problems if p.startswith(OPEN_FAILED)]
        if not first_open:
            return res
        log = self.server.log_tail(15).replace("\n", "\n         | ")
        print(f"      {path.name}: {first_open[0]}; JupyterLab's log:\n         | {log}", flush=True)
        again = self._run_once(path)
        second_open = [p for p in again.problems if p.startswith(OPEN_FAILED)]
        again.notes.insert(
            0, f"{'did not open on the second try either' if second_open else 'opened on the second try'}"
               f"; the first try: {first_open[0]}")
        return again

    def _run_once(self, path: Path) -> LiveResult:
        res = LiveResult(path.name)
        page = self.context.new_page()
        console_errors = []
        page.on("pageerror", lambda e: console_errors.append(f"page error: {e}"))
        page.on("console", lambda m: console_errors.append(f"console.{m.type}: {m.text[:200]}")
                if m.type == "error" else None)
        try:
            self._run(page, path, res)
        except OpenError as e:
            res.problems.append(f"{OPEN_FAILED}{e}")
        except UICheckError as e:
            res.problems.append(str(e))
        except Exception as e:  # playwright timeouts and the like: report, keep going
            res.problems.append(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
            if self.args.verbose:
                traceback.print_exc()
        finally:
            try:
                page.screenshot(path=str(self.shots / f"{path.stem}.png"))
            except Exception:
                pass
            if (res.problems or res.errors) and console_errors:
                res.problems.append("browser console: " + " | ".join(console_errors[:5]))
            page.close()
            try:  # free the CPU and memory before the next notebook
                api = self.context.request
                for s in api.get(f"{self.server.base}/api/sessions", headers=self.server.auth).json():
                    api.delete(f"{self.server.base}/api/sessions/{s['id']}", headers=self.server.auth)
            except Exception as e:
                res.problems.append(f"could not shut the kernel down: {e}")
        return res

    # -- steps -------------------------------------------------------------------------------
    def _kernel(self, page, expr: str):
        """The value of a Python expression in the notebook's kernel (its repr, evaluated back here)."""
        text = page.evaluate("([name, expr]) => uic.kernelExpr(name, expr)", [self.name, expr])
        return ast.literal_eval(text) if text else None

    def _wait(self, page, predicate: str, timeout_s: float, polling=250) -> bool:
        """Playwright polls `uic.<predicate>(name)` in the page until it is true: False on timeout."""
        try:
            page.wait_for_function(f"(name) => uic.{predicate}(name)", arg=self.name,
                                   timeout=max(timeout_s, 0.1) * 1000, polling=polling)
            return True
        except PlaywrightTimeout:
            return False

    def _accept_dialogs(self, page, res) -> None:
        for dialog in page.locator(".jp-Dialog").all():
            text = dialog.inner_text()[:200].replace("\n", " ")
            accept = dialog.locator(".jp-mod-accept")
            if not accept.count():
                raise UICheckError(f"unexpected dialog without an accept button: {text}")
            accept.first.click()
            res.notes.append(f"accepted dialog: {text}")

    def _run(self, page, path: Path, res: LiveResult):
        a, name = self.args, path.name
        self.name = name
        dialog = page.locator(".jp-Dialog")
        t0 = time.monotonic()
        try:
            page.goto(f"{self.server.base}/lab/workspaces/uicheck-{secrets.token_hex(4)}/tree/{name}?reset"
                      f"&token={self.server.token}", wait_until="domcontentloaded", timeout=a.load_timeout * 1000)
        except PlaywrightTimeout as e:
            raise OpenError(f"JupyterLab's page did not load within {a.load_timeout} s") from e
        # JupyterLab loaded, notebook open, kernel idle (accepting a kernel dialog if one shows up).
        while self._wait(page, "opened", t0 + a.load_timeout - time.monotonic()) and dialog.count():
            self._accept_dialogs(page, res)
        st = page.evaluate("(name) => uic.state(name)", name)
        if not (st.get("ready") and st["status"] == "idle"):
            raise OpenError(f"notebook did not open with an idle kernel within {a.load_timeout} s "
                               f"(last state: {st.get('why') or st.get('status')})")
        res.load_s = time.monotonic() - t0
        if st["kernelName"] != "python3":
            res.problems.append(f"kernel is {st['kernelName']!r}, expected the venv's default 'python3'")
        if not page.evaluate("(name) => uic.watch(name)", name):
            raise UICheckError("could not attach to the notebook's kernel")
        # The notebook column a learner reads in: the file browser folded away (Ctrl+B), so the
        # notebook gets the window's width (~1200 px in the 1280-px window).
        page.evaluate("() => { const s = window.jupyterapp.shell; if (!s.leftCollapsed) s.collapseLeft(); }")
        if self._kernel(page, TEXT_AUDIT_INSTALL) != "installed":
            res.problems.append("could not install the figure text audit in the kernel")

        # Run > Run All Cells, with the mouse, as a learner would.
        # (the menu is found by its name in the edition's interface language: "运行" in Chinese)
        menu = page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{re.escape(self.run_menu)}$"))
        if not menu.count():
            labels = page.locator(".lm-MenuBar-itemLabel").all_inner_texts()
            raise UICheckError(f"no {self.run_menu!r} menu in the menu bar {labels}: is the interface in the "
                               "edition's language (the zh_CN language pack for notebooks/zh)?")
        menu.click()
        page.locator('.lm-Menu-item[data-command="runmenu:run-all"]').click()
        t_run = time.monotonic()
        finished = self._wait(page, "runSettled", a.run_timeout)
        res.run_s = time.monotonic() - t_run
        if dialog.count():
            text = dialog.first.inner_text()[:200].replace("\n", " ")
            raise UICheckError(f"dialog during the run (kernel died?): {text}")
        st = page.evaluate("(name) => uic.state(name)", name)
        cells = st["cells"]
        errors = [c for c in cells if c["errors"]]
        running = [c for c in cells if c["running"]]
        pending = [c for c in cells if not c["empty"] and c["count"] is None]
        if st["status"] in ("dead", "restarting", "autorestarting", "unknown", "no kernel"):
            raise UICheckError(f"kernel is {st['status']} during the run (did it crash or run out of memory?)")
        if not finished:
            stuck = (running or pending or [{"i": "?", "first": ""}])[0]
            raise UICheckError(f"run did not finish within {a.run_timeout} s (kernel {st['status']}; "
                               f"{len(running)} cell(s) running, {len(pending)} not run; first: cell "
                               f"{stuck['i']} `{stuck['first']}`)")
        for c in errors:
            res.errors.append(f"cell {c['i']} `{c['first']}`: " + "; ".join(e[:160] for e in c["errors"]))
        if pending and not errors:
            res.problems.append(f"{len(pending)} code cell(s) never ran, first: cell {pending[0]['i']}")
        res.kernel = self._kernel(page, KERNEL_PYTHON_EXPR) or "?"
        if Path(res.kernel).parent != VENV_BIN:
            res.problems.append(f"kernel runs {res.kernel}, not the venv's python in {VENV_BIN}")

        self._check_widgets(page, res, expected_views=sum(c["views"] for c in cells))
        self._check_readability(page, res)
        self._move_figures(page, path, res)
        for e in page.evaluate("() => uic.callbackErrors"):
            res.errors.append(f"error raised in a widget callback (shown in the log console): {e[:200]}")

    def _check_widgets(self, page, res: LiveResult, expected_views: int):
        """Every widget view the kernel displayed is rendered (the ipywidgets JupyterLab extension works:
        without it JupyterLab falls back to the text repr), and every widget image loaded."""
        outputs = page.locator(".jp-OutputArea-output")
        views = page.locator(".jp-OutputArea-output:has(> .jupyter-widgets)")
        loading = outputs.filter(has_text=re.compile(r"Loading widget\.\.\."))
        images = ".jp-OutputArea-output img.widget-image"
        not_loaded = "imgs => imgs.filter(i => !(i.getAttribute('src') && i.complete && i.naturalWidth > 0)).length"
        timeout = self.args.widget_timeout * 1000
        try:
            if expected_views:
                expect(views.nth(expected_views - 1)).to_be_attached(timeout=timeout)
            expect(loading).to_have_count(0, timeout=timeout)
            page.wait_for_function(f"() => ({not_loaded})([...document.querySelectorAll('{images}')]) === 0",
                                   timeout=timeout)
        except (AssertionError, PlaywrightTimeout):
            pass  # what is missing is reported below
        for b in outputs.filter(has_text=re.compile("Error displaying widget|Error creating widget")).all_inner_texts():
            res.errors.append(f"widget not displayed: {b[:200]}")
        if loading.count():
            res.problems.append(f"{loading.count()} widget(s) still 'Loading widget...' after "
                                f"{self.args.widget_timeout} s: is the ipywidgets JupyterLab extension installed?")
        if views.count() < expected_views:
            res.problems.append(f"the kernel displayed {expected_views} widget(s) but {views.count()} "
                                "rendered: is the ipywidgets JupyterLab extension (jupyterlab_widgets) "
                                "installed in the venv?")
        if n := page.locator(images).evaluate_all(not_loaded):
            res.problems.append(f"{n} widget image(s) empty or not loaded")

    def _check_readability(self, page, res: LiveResult):
        """The smallest text of every figure the kernel drew (>= MIN_TEXT_PX), each figure shown at its own
        size (not shrunk to the column), and no printed table row wrapped."""
        audit = json.loads(self._kernel(page, TEXT_AUDIT_EXPR) or "[]")
        layout = page.evaluate("() => uic.layout()")
        shrink = min((i["shown"] / i["natural"] for i in layout["images"]), default=1.0)
        if audit:
            px, words, _ = min(audit)
            res.min_text_px = px * min(shrink, 1.0)  # on screen: a shrunk PNG shrinks its text too
            if res.min_text_px < MIN_TEXT_PX:
                res.problems.append(f"figure text {words!r} is {res.min_text_px:.1f} px high on screen "
                                    f"(< {MIN_TEXT_PX} px)")
        for i in layout["images"]:
            if i["shown"] < 0.98 * i["natural"]:
                res.problems.append(f"a {i['natural']}-px-wide figure is shown shrunk to {i['shown']} px in a "
                                    f"{layout['column']}-px notebook column: its text shrinks with it")
        for w in layout["wraps"][:5]:
            res.problems.append(f"a printed table row needs {w['width']} px but has {w['room']} px, so it wraps: "
                                f"{w['line']!r}")
        if len(layout["wraps"]) > 5:
            res.problems.append(f"... and {len(layout['wraps']) - 5} more wrapped table rows")

    def _move_figures(self, page, path: Path, res: LiveResult):
        """Every interactive figure: move its first movable control --moves times, each must redraw."""
        figs = page.evaluate("(sel) => uic.figures(sel)", CONTROL_SELECTOR)
        res.figures = len(figs)
        res.controls = sum(len(f["kinds"]) for f in figs)
        page.mouse.move(2, 2)
        for f in figs:
            where = f"figure {f['k']} (cell {f['cell']})"
            if not f["kinds"]:
                res.problems.append(f"interactive {where} has no control")
                continue
            if f["shown"][0] > 1.05 * f["natural"][0]:
                res.notes.append(f"{where}: its {f['natural'][0]}x{f['natural'][1]} PNG is shown stretched to "
                                 f"{f['shown'][0]}x{f['shown'][1]} px (blurry)")
            # The first control; when it has nothing to move to (e.g. a device dropdown whose only
            # option is "cpu"), the first one that has, as a learner would do.
            j = next((j for j, m in enumerate(f["movable"]) if m), None)
            if j is None:
                res.problems.append(f"interactive {where}: none of its {len(f['kinds'])} control(s) can be "
                                    "moved (single options, disabled)")
                continue
            if j:
                res.notes.append(f"{where}: its first control ({f['kinds'][0]}) has nothing to move to here; "
                                 f"moved control {j + 1} ({f['kinds'][j]})")
            for move in range(self.args.moves):
                r = self._move_and_time(page, f, j, move)
                res.redraws.append(r)
                if not r.ok:
                    res.problems.append(f"figure {f['k']} `{f['title'] or f['label']}` (cell {f['cell']}), "
                                        f"control {j + 1} ({r.kind}): {r.problem}")
                    break
            try:
                page.locator(f'[data-uic-fig="{f["k"]}"]').screenshot(
                    path=str(self.shots / f"{path.stem}.fig{f['k']}.png"))
            except Exception:
                pass
        # The notebook screenshot: the first interactive figure (or the top) in view.
        if figs:
            page.locator('[data-uic-fig="0"]').scroll_into_view_if_needed()
        page.mouse.move(2, 2)
        page.wait_for_timeout(200)

    def _centre(self, page, ctrl) -> None:
        """Scroll the control to the middle of the notebook area (not half under the toolbar). The
        notebook lays out off-screen cells lazily (content-visibility), so the page shifts while it
        scrolls: repeat until the control stays put inside the viewport."""
        last = None
        for _ in range(20):
            ctrl.evaluate("e => e.scrollIntoView({block: 'center', inline: 'nearest'})")
            page.wait_for_timeout(150)
            box = ctrl.bounding_box()
            pos = box and (round(box["x"]), round(box["y"]))
            if box and pos == last and 0 <= box["y"] and box["y"] + box["height"] <= page.viewport_size["height"]:
                return
            last = pos
        raise UICheckError(f"could not scroll the control into a steady place in view (last box {box})")

    def _figure_times(self, page) -> dict:
        try:
            return json.loads(self._kernel(page, FIGURE_TIMES_EXPR) or "{}")
        except Exception:
            return {}

    def _move_and_time(self, page, f, j: int, move: int) -> Redraw:
        k = f["k"]
        times0 = self._figure_times(page)
        kind = f["kinds"][j]
        ctrl = page.locator(f'[data-uic-ctrl="{k}-{j}"]')
        self._centre(page, ctrl)
        value = "e => uic.value(e)"
        before = ctrl.evaluate(value)
        arm = lambda: page.evaluate("(k) => uic.arm(k)", k)  # noqa: E731
        digest0 = page.evaluate("(src) => uic.digest(src)", arm())
        arm()  # re-arm: the fetch above must not count as the action
        r = Redraw(k, f["cell"], kind, "", before, "", None, False)
        try:
            r.method = method = self._move(page, ctrl, kind, move, rearm=arm)
        except UICheckError as e:
            r.problem = str(e)
            return r
        # Playwright polls the page every 10 ms; the times themselves come from the page's clock.
        try:
            page.wait_for_function("() => uic.rec.load !== null", timeout=self.args.redraw_timeout * 1000,
                                   polling=10)
        except PlaywrightTimeout:
            pass
        rec = page.evaluate("() => { const {action, change, load, src1} = uic.rec; "
                            "return {action, change, load, src1}; }")
        r.after = ctrl.evaluate(value)
        if rec["change"] is None:
            r.problem = (f"moved it ({method}; value {before} -> {r.after}) but the image did not change "
                         f"within {self.args.redraw_timeout} s"
                         if r.after != before else f"{method} did not change its value ({before})")
            return r
        if rec["action"] is None:
            r.problem = "the image changed but no user event was seen (internal error of the check)"
            return r
        end = rec["load"] if rec["load"] is not None else rec["change"]
        r.ms = end - rec["action"]
        if r.ms < 0:
            r.problem = "the image changed before the move was committed (continuous_update on?)"
            return r
        if page.evaluate("(src) => uic.digest(src)", rec["src1"]) == digest0:
            r.problem = f"value {before} -> {r.after}: a new image arrived but its bytes are identical"
            return r
        r.ok = True
        changed = [v for key, v in self._figure_times(page).items()
                   if key in times0 and v[0] != times0[key][0]]
        if len(changed) == 1:
            r.kernel_ms = changed[0][1] * 1000
        return r


    def _move(self, page, ctrl, kind: str, move: int, rearm) -> str:
        """Move the control once, as a person would; the last input event is what uic.arm times."""
        if kind == "slider":
            handle = ctrl.locator(".noUi-handle").first
            try:  # Playwright's hit-target check: the handle itself gets the mouse, nothing covers it
                handle.hover(timeout=5000)
            except PlaywrightTimeout as e:
                why = [line.strip() for line in str(e).splitlines() if "intercepts pointer events" in line]
                raise UICheckError("the slider handle does not get the mouse (covered or off screen)"
                                   + (f": {why[-1]}" if why else "")) from None
            track = ctrl.locator(".noUi-base").first.bounding_box()
            hb = handle.bounding_box()
            x0, y0 = hb["x"] + hb["width"] / 2, hb["y"] + hb["height"] / 2
            frac = (x0 - track["x"]) / max(track["width"], 1)
            dx = track["width"] * 0.35 * (-1 if frac > 0.5 else 1)
            before = handle.get_attribute("aria-valuenow")
            page.mouse.down()
            page.mouse.move(x0 + dx, y0, steps=8)
            page.mouse.up()
            if handle.get_attribute("aria-valuenow") != before:
                return f"dragged the handle {dx:+.0f} px"
            # The drag did not take: click on the track away from the handle instead.
            rearm()
            page.mouse.click(x0 + dx, y0)
            return f"dragged the handle {dx:+.0f} px (no change), then clicked the track there"
        if kind in ("dropdown", "select"):
            sel = ctrl.locator("select").first
            n = sel.locator("option").count()
            cur = sel.evaluate("s => s.selectedIndex")
            target = (cur + 1) % n if n > 1 else 0
            sel.select_option(index=target)
            return f"selected option {target}"
        if kind == "togglebuttons":
            buttons = ctrl.locator("button")
            n = buttons.count()
            active = [i for i in range(n) if "mod-active" in (buttons.nth(i).get_attribute("class") or "")]
            target = next((i for i in range(n) if i not in active), 0)
            buttons.nth(target).click()
            return f"clicked button {target}"
        if kind in ("togglebutton", "button"):
            ctrl.click()
            return "clicked it"
        if kind == "checkbox":
            ctrl.locator("input").first.click()
            return "clicked the checkbox"
        if kind == "radio":
            radios = ctrl.locator("input[type=radio]")
            n = radios.count()
            target = next((i for i in range(n) if not radios.nth(i).is_checked()), 0)
            radios.nth(target).click()
            return f"clicked radio {target}"
        if kind == "text":
            box = ctrl.locator("input").first
            value = box.input_value()
            try:
                new = str(int(value) + (1 if move % 2 == 0 else -1))
            except ValueError:
                try:
                    new = repr(float(value) * (1.5 if move % 2 == 0 else 1 / 1.5) or 1.0)
                except ValueError:
                    new = value + "x"
            box.click(click_count=3)
            page.keyboard.type(new)
            page.keyboard.press("Enter")
            return f"typed {new} + Enter"
        raise UICheckError(f"do not know how to move a control of kind {kind}")


# ----------------------------------------------------------------------------------------------
# 4. main
# ----------------------------------------------------------------------------------------------
def launch_browser(p, chromium: str | None):
    path = chromium or os.environ.get("CHROMIUM") or "/usr/bin/chromium"
    kwargs = dict(headless=True, args=CHROMIUM_ARGS)
    if Path(path).exists():
        return p.chromium.launch(executable_path=path, **kwargs), path
    try:  # no system Chromium: Playwright's own, if `playwright install chromium` was run
        return p.chromium.launch(**kwargs), p.chromium.executable_path
    except Exception as e:
        raise UICheckError(f"no Chromium at {path} and no Playwright browser ({str(e).splitlines()[0]}); "
                           "Debian/Ubuntu: `apt-get install chromium`, or pass --chromium PATH") from None


def chinese_font_for_browser() -> bool:
    """Whether fontconfig, where Chromium on Linux finds its fonts, has a font with Chinese characters
    (elsewhere, without fc-list, assume the system has one)."""
    try:
        listed = subprocess.run(["fc-list", ":lang=zh", "family"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return True
    return bool(listed.stdout.strip())


def fmt(x, spec=".1f", none="-"):
    return none if x is None or x != x else format(x, spec)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("notebooks", nargs="*", type=Path,
                    help="notebooks to check (default: both editions, notebooks/ and notebooks/zh/)")
    ap.add_argument("--chromium", help="Chromium binary (default: $CHROMIUM or /usr/bin/chromium)")
    ap.add_argument("--goal-figure-ms", type=float, default=150.0,
                    help="each slider figure's median redraw (first left out) above this is marked in the report "
                         "(a goal, on 2 cores; the failing limit is --max-median-ms)")
    ap.add_argument("--max-median-ms", type=float, default=300.0,
                    help="fail when a notebook's median move->new image time exceeds this (default 300)")
    ap.add_argument("--moves", type=int, default=2,
                    help="moves of each figure's first control (default 2: there and back)")
    ap.add_argument("--startup-timeout", type=float, default=120)
    ap.add_argument("--load-timeout", type=float, default=120, help="s to open a notebook with an idle kernel")
    ap.add_argument("--run-timeout", type=float, default=300, help="s for Run All per notebook")
    ap.add_argument("--widget-timeout", type=float, default=30, help="s for widgets to render after the run")
    ap.add_argument("--redraw-timeout", type=float, default=15, help="s to wait for a new image after a move")
    ap.add_argument("--screenshots", type=Path, default=ROOT / "ui-screenshots")
    ap.add_argument("--static-only", action="store_true", help="only the nbconvert HTML check")
    ap.add_argument("--live-only", action="store_true", help="skip the nbconvert HTML check")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args(argv)

    paths = [p.resolve() for p in a.notebooks] or [
        p for edition in EDITIONS.values() for p in sorted(edition["folder"].glob("[0-9][0-9]_*.ipynb"))]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        print(f"UI FAILED: no such notebook: {', '.join(missing)}")
        return 2
    if not paths:
        print("UI FAILED: no notebooks found (notebooks/[0-9][0-9]_*.ipynb)")
        return 2
    strangers = sorted({str(p.parent) for p in paths if p.parent not in {e["folder"] for e in EDITIONS.values()}})
    if strangers:
        print(f"UI FAILED: notebooks must be in notebooks/ or notebooks/zh/, not {', '.join(strangers)}")
        return 2
    t_start = time.monotonic()
    failed, n_live, n_bad, n_bad_static, n_redraws = False, 0, 0, 0, 0
    why_failed = []  # (edition, notebook, first reason): repeated after the summary line, where CI's tail shows it
    for name, edition in EDITIONS.items():
        chosen = [p for p in paths if p.parent == edition["folder"]]
        if not chosen:
            continue
        print(f"==== the {'English' if name == 'en' else 'Chinese'} edition: {len(chosen)} notebook(s) in "
              f"{edition['folder'].relative_to(ROOT)}/")
        result = check_edition(chosen, edition, a)
        if isinstance(result, int):  # could not run at all
            return result
        ed_failed, live, static = result
        failed |= ed_failed
        n_live += len(live)
        n_bad += sum(1 for r in live if r.bad or r.slow(a.max_median_ms))
        n_bad_static += sum(1 for s in static.values() if s.problems)
        n_redraws += sum(len(r.ok_redraws) for r in live)
        for r in live:
            reasons = r.errors + r.problems + [f"redraw: {x.problem}" for x in r.redraws if not x.ok]
            if r.slow(a.max_median_ms):
                reasons.append(f"median redraw {r.median_ms:.0f} ms > {a.max_median_ms:.0f} ms")
            if reasons:
                why_failed.append((name, r.name, reasons[0]))
        why_failed += [(name, n, s.problems[0]) for n, s in static.items() if s.problems]
    what = "static only" if a.static_only else f"{n_bad} failed live"
    print(f"UI {'FAILED' if failed else 'PASSED'}: {len(paths)} notebook(s), {what}, "
          f"{n_bad_static} failed static, {n_redraws} redraw(s), {time.monotonic() - t_start:.0f} s")
    for edition, notebook, reason in why_failed:
        print(f"   failed: {edition} {notebook}: {reason[:300]}")
    return 1 if failed else 0


def check_static_all(paths: list) -> dict:
    print(f"== static reading: {len(paths)} notebook(s) exported to HTML with nbconvert (stored outputs)")
    static = {}
    for p in paths:
        try:
            s = check_static(p)
        except Exception as e:
            s = StaticResult(p.name, problems=[f"nbconvert failed: {type(e).__name__}: {e}"])
        static[p.name] = s
        print(f"   {p.name:<32} {s.html_pngs:3d} PNG figure(s) in HTML, {s.plot_cells:3d} cell(s) with "
              f"plotting code  {'ok' if not s.problems else 'FAIL'}")
        for msg in s.problems:
            print(f"      - {msg}")
    return static


def print_live(r: LiveResult, a) -> None:
    print(f"   {r.name:<32} run {fmt(r.run_s)} s, {r.figures} figure(s), {r.controls} control(s), "
          f"{len(r.ok_redraws)} redraw(s), median {fmt(r.median_ms, '.0f')} ms (kernel "
          f"{fmt(r.median_kernel_ms, '.0f')} ms)  {'FAIL' if r.bad or r.slow(a.max_median_ms) else 'ok'}", flush=True)
    for e in r.errors:
        print(f"      - error output: {e}")
    for msg in r.problems:
        print(f"      - {msg}")
    for msg in r.notes:
        print(f"      note: {msg}")
    if r.slow(a.max_median_ms):
        where = (f" ({r.median_kernel_ms:.0f} ms of it in the kernel's redraw)"
                 if r.median_kernel_ms is not None else "")
        print(f"      - median redraw {r.median_ms:.0f} ms > {a.max_median_ms:.0f} ms{where}")
    for fig, (count, median, p95, kernel) in r.per_figure().items():
        over = f"  over the {a.goal_figure_ms:.0f} ms goal" if median > a.goal_figure_ms else ""
        print(f"      fig {fig}: {count} redraw(s) after the first, median {median:.0f} ms, 95th percentile "
              f"{p95:.0f} ms (kernel median {fmt(kernel, '.0f')} ms){over}")
    if a.verbose:
        for x in r.redraws:
            print(f"      fig {x.fig} cell {x.cell} {x.kind}: {x.method}, {x.before} -> {x.after}, "
                  f"{fmt(x.ms, '.0f')} ms (kernel {fmt(x.kernel_ms, '.0f')} ms) {'ok' if x.ok else x.problem}")


def check_edition(paths: list, edition: dict, a):
    """The static and live checks of one edition's notebooks: (failed, live results, static results),
    or an exit code when the check cannot run."""
    static = {} if a.live_only else check_static_all(paths)
    failed = any(s.problems for s in static.values())
    if a.static_only:
        return failed, [], static
    if sync_playwright is None:
        print("UI FAILED: Playwright is not installed in this venv: `.venv/bin/pip install -e '.[ui]'` "
              "(`make test-ui` does it)")
        return 2

    if edition["shots"] == "zh" and not chinese_font_for_browser():
        print("   FAIL: no font with Chinese characters (fc-list :lang=zh is empty): Chromium would draw the "
              "Chinese edition as boxes. Install one: apt-get install fonts-wqy-microhei (or fonts-noto-cjk)")
        failed = True
    shots = a.screenshots / edition["shots"]
    shots.mkdir(parents=True, exist_ok=True)
    for old in shots.glob("*.png"):
        old.unlink()
    live: list[LiveResult] = []
    server = None
    workdir = Path(tempfile.mkdtemp(prefix="posenc-ui-"))
    show_log = False
    try:
        load = (f", load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
                if hasattr(os, "getloadavg") else "")
        print(f"== live run: JupyterLab ({VENV_BIN / 'jupyter'}) + headless Chromium{load}")
        server = LabServer(paths[0].parent, workdir, edition["settings"])
        server.wait_until_listening(a.startup_timeout)
        print(f"   server on {server.base} (port picked by the system, random token), serving a copy of "
              f"{paths[0].parent}")
        with sync_playwright() as p:
            browser, chromium = launch_browser(p, a.chromium)
            try:
                print(f"   browser: {chromium} (Chromium {browser.version})")
                runner = Runner(server, browser, a, shots, edition["run_menu"])
                for path in paths:
                    r = runner.run_notebook(path)
                    live.append(r)
                    print_live(r, a)
                    failed |= r.bad or r.slow(a.max_median_ms)
                    show_log |= r.bad
            finally:
                browser.close()
    except UICheckError as e:
        print(f"== FAILED: {e}")
        failed = show_log = True
    except KeyboardInterrupt:
        print("== FAILED: interrupted")
        failed = show_log = True
    except Exception:
        traceback.print_exc()
        failed = show_log = True
    finally:
        if server is not None:
            if show_log:
                print("== JupyterLab log (tail):")
                print(server.log_tail())
            server.stop()
            shutil.copy(server.log_path, shots / "jupyter.log")
        shutil.rmtree(workdir, ignore_errors=True)

    if live:
        print(f"\n   kernel python: {', '.join(sorted({r.kernel for r in live if r.kernel})) or '?'}")
        print(f"   {'notebook':<30} {'load s':>6} {'run s':>6} {'figs':>4} {'ctrls':>5} {'redraws':>7} "
              f"{'median ms':>9} {'kernel ms':>9} {'max ms':>6} {'text px':>7} {'HTML PNGs':>9}  result")
        for r in live:
            s = static.get(r.name)
            bad = r.bad or r.slow(a.max_median_ms) or (s and s.problems)
            print(f"   {r.name:<30} {fmt(r.load_s):>6} {fmt(r.run_s):>6} {r.figures:>4} {r.controls:>5} "
                  f"{len(r.ok_redraws):>7} {fmt(r.median_ms, '.0f'):>9} {fmt(r.median_kernel_ms, '.0f'):>9} "
                  f"{fmt(r.max_ms, '.0f'):>6} {fmt(r.min_text_px):>7} "
                  f"{(s.html_pngs if s else '-'):>9}  {'FAIL' if bad else 'ok'}")
        print(f"   screenshots: {shots}")
    return failed, live, static


if __name__ == "__main__":
    sys.exit(main())

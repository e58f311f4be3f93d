"""The project skeleton: the two install routes name the same packages, torch is pinned where the
README says, the README's two commands exist, the make targets run what they should (read from `make -n`,
or run with stand-ins for the tools), CI runs the tests, the browser test and the linters, and the stored
notebooks are executed and clean."""
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
CONDA_TO_PIP = {"pytorch": "torch"}  # conda-forge's name -> the PyPI name
NOT_PACKAGES = {"python", "pip"}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _pyproject_requirements() -> dict:
    project = _pyproject()["project"]
    reqs = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        reqs += extra
    out = {}
    for line in reqs:
        req = Requirement(line)
        out[_norm(req.name)] = str(req.specifier)
    return out


def _conda_requirements() -> dict:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert "conda-forge" in env["channels"]
    out = {}
    for entry in env["dependencies"]:
        if isinstance(entry, dict):  # the pip: section
            for line in entry["pip"]:
                if line.strip() in ("-e .", "-e ./", "."):
                    continue  # the project itself, editable
                req = Requirement(line)
                out[_norm(req.name)] = str(req.specifier)
            continue
        match = re.match(r"^([A-Za-z0-9_.\-]+)\s*(.*)$", entry)
        name, spec = match.group(1), match.group(2).replace(" ", "")
        if name in NOT_PACKAGES:
            continue
        out[_norm(CONDA_TO_PIP.get(name, name))] = str(SpecifierSet(spec))  # ">=a,<b" in any order
    return out


def test_environment_yml_and_pyproject_name_the_same_packages():
    pip, conda = _pyproject_requirements(), _conda_requirements()
    assert set(pip) == set(conda), (f"only in pyproject.toml: {sorted(set(pip) - set(conda))}; "
                                    f"only in environment.yml: {sorted(set(conda) - set(pip))}")
    drift = {name: (pip[name], conda[name]) for name in pip if pip[name] != conda[name]}
    assert not drift, f"version ranges differ (pyproject, environment.yml): {drift}"


def test_environment_yml_installs_the_project_itself():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_sections = [e["pip"] for e in env["dependencies"] if isinstance(e, dict)]
    assert pip_sections and "-e ." in pip_sections[0]


LOCK, UI_LOCK = ROOT / "requirements" / "lock.txt", ROOT / "requirements" / "lock-ui.txt"
SITE_LOCK = ROOT / "requirements" / "lock-site.txt"


def _locked(path: Path) -> list:
    """The lock's requirements: every line a name==version, perhaps with an environment marker."""
    lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    return [Requirement(line) for line in lines if line and not line.startswith(("#", "-"))]


def _torch_pin() -> str:
    """The torch version the lock holds, which the Makefile's torch step installs (TORCH := the lock's line)."""
    pins = [str(r.specifier) for r in _locked(LOCK) if r.name == "torch"]
    assert len(pins) == 1 and pins[0].startswith("=="), pins
    return pins[0][2:]


def test_the_lock_pins_every_package_exactly_for_every_platform_and_python():
    extras = _pyproject()["project"]["optional-dependencies"]
    only_in = {_norm(Requirement(r).name): lock for extra, lock in (("ui", UI_LOCK), ("site", SITE_LOCK))
               for r in extras[extra]}  # an extra of its own, in its own lock
    for path in (LOCK, UI_LOCK, SITE_LOCK):
        reqs = _locked(path)
        assert reqs and all(len(r.specifier) == 1 and next(iter(r.specifier)).operator == "==" for r in reqs), path
        names = {_norm(r.name) for r in reqs}
        # universal: platform-only packages stay in, under markers (uv's --universal)
        assert any(r.marker and "darwin" in str(r.marker) for r in reqs), "no macOS-only line: not universal"
        # the CPU build: none of the CUDA-only packages PyPI's Linux torch asks for
        cuda_only = {_norm(line) for line in (ROOT / "requirements" / "cuda-only.txt").read_text().splitlines()
                     if line.strip() and not line.startswith("#")}
        assert not names & cuda_only and not any(n.startswith("nvidia-") for n in names), path
        # every direct dependency of pyproject.toml is in it, at a version its range admits
        for name, spec in _pyproject_requirements().items():
            if only_in.get(name, path) != path:
                continue
            versions = [Version(str(r.specifier)[2:]) for r in reqs if _norm(r.name) == name]
            assert versions and all(v in SpecifierSet(spec) for v in versions), (path.name, name, spec, versions)
    python = SpecifierSet(_pyproject()["project"]["requires-python"])
    assert "3.11" in python and "3.10" not in python  # the lock resolves from 3.11 on (make lock: --python-version)
    both = {_norm(r.name): str(r.specifier) for r in _locked(LOCK) if not r.marker}
    ui = {_norm(r.name): str(r.specifier) for r in _locked(UI_LOCK) if not r.marker}
    assert all(ui.get(name) == spec for name, spec in both.items())  # the ui lock adds, it changes nothing
    site = {_norm(r.name): str(r.specifier) for r in _locked(SITE_LOCK) if not r.marker}
    assert all(site[name] == ui[name] for name in site.keys() & ui.keys())  # nor does the site's, to either


def _pip_installs(dry: subprocess.CompletedProcess) -> list:
    return [line for line in dry.stdout.splitlines() if re.search(r"-m pip\b.*\binstall\b", line)]


def test_make_installs_only_what_the_locks_list_and_torch_at_the_locks_version(tmp_path):
    installs = _pip_installs(_make_dry_run("test-ui"))  # the dev install, then the ui and site locks on top
    assert installs and all("--no-deps" in line for line in installs)  # nothing but what the lock lists
    for lock in (LOCK, UI_LOCK, SITE_LOCK):
        assert any(f"-r {lock.relative_to(ROOT)}" in line for line in installs), lock.name
    assert any(f'"torch=={_torch_pin()}"' in line for line in installs)
    other = tmp_path / "lock.txt"  # the torch step reads its version from whichever lock it is given
    other.write_text("numpy==2.4.0\ntorch==9.8.7 ; sys_platform == 'linux'\ntorch==1.0.0\n")
    assert any('"torch==9.8.7"' in line for line in _pip_installs(_make_dry_run("install", f"LOCK={other}")))
    torch_range = Requirement([r for r in _pyproject()["project"]["dependencies"] if r.startswith("torch")][0])
    assert Version(_torch_pin()) in torch_range.specifier  # the pin satisfies the declared range
    pins = (ROOT / "requirements" / "pins.txt").read_text()
    assert f"torch=={_torch_pin()}" in pins.splitlines()  # held there on purpose, with the reason beside it


def test_first_install_says_what_it_does_before_it_starts():
    """The first `make lab` is minutes of quiet pip: make says so first, and where pip's log goes."""
    dry = _make_dry_run("install")
    lines, installs = dry.stdout.splitlines(), _pip_installs(dry)
    said = next(i for i, line in enumerate(lines) if line.startswith("echo "))
    assert said < lines.index(installs[0])
    assert "installing torch and the course's packages into .venv" in lines[said] and "a few minutes" in lines[said]
    log = re.search(r"\(log: (\S+)\)", lines[said]).group(1)
    assert all(f"--log {log}" in line for line in installs)


def test_declared_floors_are_the_tested_versions():
    """Each direct dependency's lower bound is the locked version's major.minor: what the tests ran on."""
    locked = {_norm(r.name): Version(str(r.specifier)[2:]) for r in _locked(UI_LOCK) + _locked(SITE_LOCK)
              if not r.marker or r.marker.evaluate({"python_full_version": "3.11.0", "python_version": "3.11"})}
    for name, spec in _pyproject_requirements().items():
        floors = [Version(s.version) for s in SpecifierSet(spec) if s.operator == ">="]
        assert floors, f"{name} has no floor"
        assert floors[0].release[:2] == locked[name].release[:2] or name in ("pyyaml", "nbval"), (
            name, spec, locked[name])


def _make_dry_run(*args) -> subprocess.CompletedProcess:
    """`make -n` (print, do not run) as if pyproject.toml had changed, so the install recipe shows too."""
    try:
        dry = subprocess.run(["make", "-n", "-W", "pyproject.toml", *args], cwd=ROOT, capture_output=True, text=True,
                             timeout=60)
    except FileNotFoundError:
        pytest.skip("make is not installed")
    assert dry.returncode == 0, dry.stderr
    return dry


def test_make_test_installs_from_the_lock_then_runs_units_and_notebooks_strictly():
    dry = _make_dry_run("test")
    assert re.search(r"pytest tests notebooks --nbval --nbval-current-env --nbval-sanitize-with "
                     r"tools/nbval_sanitize.cfg -n auto --dist loadscope", dry.stdout)
    assert "MPLBACKEND=Agg" in dry.stdout
    assert f'"torch=={_torch_pin()}"' in dry.stdout  # the torch step carries the lock's version ...
    # ... and takes the CPU build (PyPI's Linux torch is the multi-GB CUDA one)
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in dry.stdout
    assert "install --quiet --no-deps -r requirements/lock.txt" in dry.stdout
    assert "pip --disable-pip-version-check check" in dry.stdout


def test_make_lab_serves_the_notebooks_and_starts_as_root_too():
    dry = _make_dry_run("lab", "PORT=8123")
    command = next(line for line in dry.stdout.splitlines() if "jupyter lab" in line)
    assert "--no-browser" in command and "--port=8123" in command and "root_dir=my-notebooks/en " in command
    # JupyterLab exits at once as root (containers, CI) without --allow-root; a normal user does not need it
    assert ("--allow-root" in command) == (os.geteuid() == 0)


def test_make_lab_zh_serves_the_chinese_edition_with_a_chinese_interface():
    dry = _make_dry_run("lab-zh", "PORT=8124")
    command = next(line for line in dry.stdout.splitlines() if "jupyter lab" in line)
    assert "--port=8124" in command and "root_dir=my-notebooks/zh " in command
    settings = re.search(r"JUPYTERLAB_SETTINGS_DIR=(\S+)", command).group(1)
    locale_file = f"{settings}/@jupyterlab/translation-extension/plugin.jupyterlab-settings"
    # the locale setting is written where JupyterLab reads it (or is there already from an earlier run)
    assert locale_file in dry.stdout or (ROOT / locale_file).is_file()
    if (ROOT / locale_file).is_file():
        import json
        assert json.loads((ROOT / locale_file).read_text())["locale"] == "zh_CN"
    assert _norm("jupyterlab-language-pack-zh-CN") in _pyproject_requirements()  # the pack the locale needs


def test_make_writes_the_chinese_locale_where_jupyterlab_reads_it(tmp_path):
    """The settings file lab-zh makes, made here in a folder of the test's own (ZH_SETTINGS)."""
    locale_file = tmp_path / "@jupyterlab" / "translation-extension" / "plugin.jupyterlab-settings"
    done = subprocess.run(["make", str(locale_file), f"ZH_SETTINGS={tmp_path}"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    import json
    assert json.loads(locale_file.read_text()) == {"locale": "zh_CN"}


def test_make_installs_the_chinese_font_and_language_pack():
    dry = _make_dry_run("install")
    assert "-r requirements/lock.txt" in dry.stdout, dry.stdout
    zh = [_norm(Requirement(r).name) for r in _pyproject()["project"]["optional-dependencies"]["zh"]]
    assert "mplfonts" in zh and _norm("jupyterlab-language-pack-zh-CN") in zh
    locked = {_norm(r.name) for r in _locked(LOCK)}  # the lock is resolved with the zh extra
    assert "mplfonts" in locked and _norm("jupyterlab-language-pack-zh-CN") in locked


def test_refresh_and_nbval_cover_both_editions():
    dry = _make_dry_run("refresh")
    refresh = next(line for line in dry.stdout.splitlines() if "nbconvert" in line)
    assert "notebooks/[0-9][0-9]_*.ipynb" in refresh and "notebooks/zh/[0-9][0-9]_*.ipynb" in refresh
    # `pytest ... notebooks` collects notebooks/zh/ too: nothing there tells it not to
    assert not (ROOT / "notebooks" / "zh" / "conftest.py").exists()
    assert "norecursedirs" not in _pyproject()["tool"]["pytest"]["ini_options"]


def test_developer_targets_call_the_tools_in_tools():
    dry = _make_dry_run("test-ui", "refresh", "bench")
    for tool in ("ui_check.py", "site_check.py", "strip_widget_views.py", "bench.py"):
        assert f"python tools/{tool}" in dry.stdout, tool
        assert (ROOT / "tools" / tool).is_file(), tool
    refresh = dry.stdout[dry.stdout.index("nbconvert"):]
    assert "--config tools/nbconvert_refresh.py" in refresh and "--execute --inplace" in refresh


def test_refresh_settings_keep_widget_state_and_timestamps_out():
    """The nbconvert settings `make refresh` loads: no widget state, no timestamps, stale ones cleared."""
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbconvert_refresh.py", path=str(ROOT / "tools")).load_config()
    assert config.ExecutePreprocessor.store_widget_state is False
    assert config.ExecutePreprocessor.record_timing is False
    assert config.ClearMetadataPreprocessor.enabled is True
    assert "widgets" not in config.ClearMetadataPreprocessor.preserve_nb_metadata_mask
    assert "execution" not in config.ClearMetadataPreprocessor.preserve_cell_metadata_mask


def test_strip_widget_views_drops_only_the_views_and_keeps_their_text(tmp_path):
    import importlib.util
    import json

    spec = importlib.util.spec_from_file_location("strip_widget_views", ROOT / "tools" / "strip_widget_views.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    view = {"output_type": "display_data", "metadata": {},
            "data": {tool.WIDGET_VIEW: {"model_id": "abc"}, "text/plain": ["IntSlider(value=3)"]}}
    figure = {"output_type": "display_data", "metadata": {}, "data": {"image/png": "iVBOR", "text/plain": ["<Figure>"]}}
    text = {"output_type": "stream", "name": "stdout", "text": ["我 爱 北京\n"]}
    bare_view = {"output_type": "display_data", "metadata": {}, "data": {tool.WIDGET_VIEW: {"model_id": "def"}}}
    nb = {"cells": [{"cell_type": "code", "metadata": {}, "source": [], "execution_count": 1,
                     "outputs": [figure, view, text, bare_view]},
                    {"cell_type": "markdown", "metadata": {}, "source": ["# 标题"]}],
          "metadata": {"kernelspec": {"name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    assert tool.strip(str(path)) is True
    stripped = path.read_text(encoding="utf-8")
    view_text = {"output_type": "display_data", "metadata": {}, "data": {"text/plain": ["IntSlider(value=3)"]}}
    expected = dict(nb, cells=[dict(nb["cells"][0], outputs=[figure, view_text, text]), nb["cells"][1]])
    assert stripped == json.dumps(expected, indent=1, ensure_ascii=False) + "\n"  # nbformat's layout, UTF-8
    assert tool.strip(str(path)) is False and path.read_text(encoding="utf-8") == stripped  # nothing left to do


def test_readme_starts_with_the_two_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "make lab" in readme and "make test" in readme
    first_block = re.search(r"```(?:bash|sh)?\n(.*?)```", readme, re.S).group(1)
    assert "make lab" in first_block and "make test" in first_block


def test_chinese_readme_starts_with_the_two_commands_and_the_readmes_link_each_other():
    readme, readme_zh = ((ROOT / name).read_text(encoding="utf-8") for name in ("README.md", "README.zh.md"))
    first_block = re.search(r"```(?:bash|sh)?\n(.*?)```", readme_zh, re.S).group(1)
    assert "make lab-zh" in first_block and "make test" in first_block
    assert "](README.zh.md)" in readme and "](README.md)" in readme_zh
    prose = re.sub(r"```.*?```|`[^`]*`|\(http[^)]*\)|\([\w./-]+\)", "", readme_zh, flags=re.S)
    chinese = len(re.findall(r"[\u4e00-\u9fff]", prose))
    assert chinese > 0.5 * len(re.findall(r"[A-Za-z]", prose)), "README.zh.md should be written in Chinese"


FAKE_MAKE = """#!/bin/sh
echo "$*" >> "$CALLS"
case " $FAIL " in *" $1 "*) rc=2 ;; *) rc=0 ;; esac
case "$1" in
  test) [ $rc -eq 0 ] && echo "3 passed in 1.00s" || echo "1 failed, 2 passed in 1.00s" ;;
  test-ui) [ $rc -eq 0 ] && echo "UI PASSED" || echo "UI FAILED"; echo "SITE PASSED" ;;
esac
exit $rc
"""


def _ci_run(tmp_path: Path, fail: str = "") -> tuple:
    """.ci/run, copied into an empty folder, with a `make` that records its calls and fails the targets named
    in `fail` (and a Chromium and a Chinese font present, so nothing is installed): (exit status, output,
    the make calls)."""
    repo, fakes = tmp_path / "repo", tmp_path / "bin"
    (repo / ".ci").mkdir(parents=True)
    fakes.mkdir()
    shutil.copy(ROOT / ".ci" / "run", repo / ".ci" / "run")
    for name, text in (("make", FAKE_MAKE), ("chromium", "#!/bin/sh\n"), ("fc-list", "#!/bin/sh\necho 'WQY: zh'\n")):
        (fakes / name).write_text(text)
        (fakes / name).chmod(0o755)
    calls = tmp_path / "calls"
    done = subprocess.run(["bash", str(repo / ".ci" / "run")], capture_output=True, text=True, timeout=60,
                          env={"PATH": f"{fakes}:/usr/bin:/bin", "CALLS": str(calls), "FAIL": fail})
    return done.returncode, done.stdout + done.stderr, calls.read_text().splitlines()


def test_ci_runs_the_readme_test_command_the_browser_test_and_the_linters(tmp_path):
    readme_block = re.search(r"```(?:bash|sh)?\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)
    assert "make test" in readme_block.group(1)
    status, output, calls = _ci_run(tmp_path)
    assert status == 0, output
    assert calls == ["test PYTEST_FLAGS=-q", "test-ui", "lint"]
    assert "== test summary: 3 passed in 1.00s" in output and "== lint summary: passed" in output


@pytest.mark.parametrize("fail", ["lint", "test", "test-ui"])
def test_ci_fails_when_one_step_fails_and_still_runs_and_reports_the_others(tmp_path, fail):
    status, output, calls = _ci_run(tmp_path, fail)
    assert status != 0, output
    assert calls == ["test PYTEST_FLAGS=-q", "test-ui", "lint"]
    tests = "1 failed, 2 passed in 1.00s" if fail == "test" else "3 passed in 1.00s"
    assert f"== test summary: {tests}" in output  # every step's result is reported, whichever failed
    assert f"== ui summary: UI {'FAILED' if fail == 'test-ui' else 'PASSED'}" in output
    assert ("== lint summary: FAILED" in output) == (fail == "lint"), output


def test_make_lint_runs_ruff_and_the_import_contracts_and_fails_if_either_does(tmp_path):
    """`make lint` with stand-ins for the venv's ruff and lint-imports (BIN) and its install taken as done
    (STAMP): each stand-in failing in turn."""
    stamp = tmp_path / "installed"
    stamp.touch()
    calls = tmp_path / "calls"
    for failing in ("ruff", "lint-imports", None):
        calls.write_text("")
        for tool in ("ruff", "lint-imports"):
            (tmp_path / tool).write_text(f"#!/bin/sh\necho {tool} \"$@\" >> {calls}\nexit {int(tool == failing)}\n")
            (tmp_path / tool).chmod(0o755)
        done = subprocess.run(["make", "lint", f"BIN={tmp_path}", f"STAMP={stamp}"], cwd=ROOT, capture_output=True,
                              text=True, timeout=60)
        assert (done.returncode == 0) == (failing is None), (failing, done.stdout, done.stderr)
        assert calls.read_text().splitlines() == ["ruff check .", "lint-imports --no-cache --no-logo"], failing


def _ruff_flags(path: str, line: str) -> list:
    """The rules ruff's configuration for `path` (where the file would sit in the repository) finds in `line`."""
    ruff = Path(sys.executable).with_name("ruff")
    done = subprocess.run([str(ruff), "check", "--no-cache", "--output-format", "json", "--stdin-filename", path, "-"],
                          input=line + "\n", cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode in (0, 1), done.stderr
    import json
    return sorted(v["code"] for v in json.loads(done.stdout))


def test_ruff_holds_py_files_to_120_columns_and_notebook_code_to_100():
    for length, py, notebook in ((100, [], []), (101, [], ["E501"]), (120, [], ["E501"]), (121, ["E501"], ["E501"])):
        line = "x = " + repr("a" * (length - 6))
        assert len(line) == length
        assert _ruff_flags("posenc_lib/probe.py", line) == py, length
        assert _ruff_flags("notebooks/probe.py", line) == notebook, length
        # the Chinese edition: no E501 from ruff (it counts a Chinese character as two columns);
        # tests/test_notebook_layout.py holds its code lines to 100 characters
        assert _ruff_flags("notebooks/zh/probe.py", line) == [], length
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": ["import os\n"]}
    import json
    notebook = json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    assert _ruff_flags("notebooks/00_probe.ipynb", notebook) == ["F401"]  # ruff reads the notebooks too
    assert _ruff_flags("notebooks/zh/00_probe.ipynb", notebook) == ["F401"]  # both editions


def test_the_package_version_is_pyprojects():
    import posenc_lib
    assert posenc_lib.__version__ == _pyproject()["project"]["version"]


NOTEBOOKS = (sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
             + sorted((ROOT / "notebooks" / "zh").glob("[0-9][0-9]_*.ipynb")))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT / "notebooks")))
def test_stored_notebook_is_executed_and_clean(path):
    """What GitHub and a fresh JupyterLab show: every code cell run in order, no tracebacks, static
    figures present, and nothing that would break or churn (widget state, execution timestamps)."""
    import json

    nb = json.loads(path.read_text(encoding="utf-8"))
    assert "widgets" not in nb.get("metadata", {}), "saved widget state: run `make refresh`"
    code = [cell for cell in nb["cells"] if cell["cell_type"] == "code"]
    counts = [cell.get("execution_count") for cell in code]
    assert None not in counts and counts == sorted(counts), f"not executed top to bottom: {counts}"
    images = 0
    for cell in code:
        assert "execution" not in cell.get("metadata", {}), "execution timestamps: run `make refresh`"
        for output in cell.get("outputs", []):
            assert output["output_type"] != "error", f"stored traceback: {output.get('ename')}"
            data = output.get("data", {})
            assert "application/vnd.jupyter.widget-view+json" not in data, "stored widget view: run `make refresh`"
            images += "image/png" in data
    assert images >= 1, "no static figure stored"


def test_the_browser_test_holds_figures_to_the_librarys_text_size(monkeypatch):
    """tools/ui_check.py's readability check, given a figure whose smallest text is just under and just at
    the library's MIN_TEXT_PX on screen (a page and a kernel that answer what the check asks)."""
    import importlib.util
    import json
    from types import SimpleNamespace

    from posenc_lib.plots._style import FIGURE_DPI, MIN_TEXT_PT, MIN_TEXT_PX
    spec = importlib.util.spec_from_file_location("ui_check", ROOT / "tools" / "ui_check.py")
    ui_check = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "ui_check", ui_check)  # its dataclasses look their module up there
    spec.loader.exec_module(ui_check)
    page = SimpleNamespace(evaluate=lambda script: {"images": [], "wraps": [], "column": 1200})
    for px, flagged in ((MIN_TEXT_PX - 0.1, True), (MIN_TEXT_PX, False)):
        runner = SimpleNamespace(_kernel=lambda page, expr, px=px: json.dumps([[px, "tick label", 0]]))
        result = ui_check.LiveResult("nb")
        ui_check.Runner._check_readability(runner, page, result)
        assert bool(result.problems) == flagged, (px, result.problems)
    assert MIN_TEXT_PT * FIGURE_DPI / 72 >= MIN_TEXT_PX


def test_notebook_figures_are_drawn_at_the_course_dpi_and_fit_the_column():
    """Static figures in the notebooks: no dpi below FIGURE_DPI (text would shrink below MIN_TEXT_PX)
    and no wider than FIGURE_MAX_WIDTH_IN (it would be shown shrunk in a 1200-px column)."""
    import json

    from posenc_lib.plots._style import FIGURE_DPI, FIGURE_MAX_WIDTH_IN
    problems = []
    for path in sorted((ROOT / "notebooks").glob("**/[0-9][0-9]_*.ipynb")):
        for i, cell in enumerate(json.loads(path.read_text())["cells"]):
            code = "".join(cell["source"]) if cell["cell_type"] == "code" else ""
            problems += [f"{path.name} cell {i}: dpi={d}" for d in re.findall(r"\bdpi=([0-9.]+)", code)
                         if float(d) < FIGURE_DPI]
            problems += [f"{path.name} cell {i}: figsize width {w}" for w in re.findall(r"\bfigsize=\(([0-9.]+)", code)
                         if float(w) > FIGURE_MAX_WIDTH_IN]
    assert not problems, problems

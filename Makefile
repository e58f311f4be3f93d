# posenc: two commands for a newcomer (`make lab`, `make test`); everything else is optional.
# The first target that needs the environment creates .venv and installs into it exactly what
# requirements/lock.txt lists (every package, direct and indirect, at one version); later runs skip the
# install until pyproject.toml or the lock changes (the stamp file below).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip --disable-pip-version-check
STAMP  := $(VENV)/.posenc-installed
PORT   ?= 8888
LOCK    := requirements/lock.txt
UI_LOCK := requirements/lock-ui.txt
SITE_LOCK := requirements/lock-site.txt
# torch at the lock's version, taken from PyTorch's CPU wheel index: on Linux, PyPI's torch is the CUDA
# build with gigabytes of NVIDIA libraries (the lock leaves those out: requirements/cuda-only.txt). pip
# prefers the index's 2.13.0+cpu; on macOS PyPI's wheel is the CPU one already. TORCH_INDEX= (empty) uses
# PyPI's build; point it at a mirror of the CPU wheels where download.pytorch.org is slow or blocked.
TORCH  ?= $(shell grep -m1 -o '^torch==[^ ;]*' $(LOCK))
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
PYTEST_FLAGS ?=
# JupyterLab refuses to start as root (containers, CI) unless told that it is meant.
ALLOW_ROOT := $(if $(filter 0,$(shell id -u 2>/dev/null)),--allow-root,)

.PHONY: help install lab lab-zh test test-unit test-notebooks test-ui lint site test-latest lock bench refresh experiments arena flipflop clean

help:
	@echo "make lab         open the course in JupyterLab, your copies in my-notebooks/en (installs what is missing)"
	@echo "make lab-zh      the Chinese edition (copies in my-notebooks/zh) with JupyterLab's interface in Chinese"
	@echo "make test        unit tests + every notebook under nbval (installs what is missing)"
	@echo "make test-ui     every notebook in a real JupyterLab in headless Chromium"
	@echo "make lint        ruff (style, likely bugs, import order; notebooks too) and lint-imports (the layers)"
	@echo "make site        the web edition, both languages, from the stored notebooks into build/site (open build/site/index.html)"
	@echo "make test-latest the tests on the newest releases pyproject.toml admits (upstream drift), in .venv-latest"
	@echo "make lock        re-resolve requirements/lock.txt (and lock-ui.txt, lock-site.txt) after changing dependencies"
	@echo "make bench       speed ratios (RoPE vs transformers at four sizes, compiled RoPE vs a copy; slider redraws)"
	@echo "make refresh     re-execute the notebooks in place (stored outputs)"
	@echo "make experiments regenerate the cached results in data/ (about 11-15 minutes on 2 cores)"
	@echo "make arena       every method x seeds under 07's protocol, one table (data/arena/laptop/; ARENA_FLAGS=--help)"
	@echo "make flipflop    notebook 14's flip-flop cache (937 CPU s: about 8 minutes on 2 idle cores)"
	@echo "make clean       remove the venv and caches"

install: $(STAMP)

# torch first (the CPU build, without its CUDA dependencies), then every other package at the lock's
# version and the course itself, each with --no-deps: nothing outside the lock comes in. pip check then
# fails if the lock misses something a package needs.
# The first run says what it does before the minutes of quiet; pip's own messages go to $(INSTALL_LOG).
INSTALL_LOG := $(VENV)/install.log
$(STAMP): pyproject.toml $(LOCK)
	@echo "installing torch and the course's packages into $(VENV): a few minutes (log: $(INSTALL_LOG))"
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --no-deps "$(TORCH)" $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX)) --log $(INSTALL_LOG)
	$(PIP) install --quiet --no-deps -r $(LOCK) --log $(INSTALL_LOG)
	$(PIP) install --quiet --no-deps -e . --log $(INSTALL_LOG)
	$(PIP) check
	touch $(STAMP)

# The learner works in copies (my-notebooks/en, my-notebooks/zh; git-ignored): answers JupyterLab
# autosaves never touch the tracked notebooks, so `git pull` and `make refresh` never meet them.
# tools/learner_copies.py copies new notebooks and offers changed ones without overwriting edits.
# Each edition keeps its own JupyterLab workspace (open tabs, layout).
MY     := my-notebooks
lab: $(STAMP)
	$(BIN)/python tools/learner_copies.py notebooks $(MY)/en
	@echo "Starting JupyterLab on port $(PORT): open the http://127.0.0.1:$(PORT)/lab?token=... address it prints below (Ctrl-C to stop; PORT=... to change)"
	JUPYTERLAB_WORKSPACES_DIR=$(CURDIR)/$(MY)/.lab-workspaces/en $(BIN)/jupyter lab --no-browser --ip=127.0.0.1 --port=$(PORT) --ServerApp.root_dir=$(MY)/en $(ALLOW_ROOT)

# The Chinese edition: JupyterLab's zh_CN language pack (the "zh" extra) chosen in a settings folder of
# its own, so `make lab` keeps your usual settings and language.
ZH_SETTINGS := $(VENV)/lab-zh-settings
ZH_LOCALE   := $(ZH_SETTINGS)/@jupyterlab/translation-extension/plugin.jupyterlab-settings

$(ZH_LOCALE):
	mkdir -p $(dir $@)
	echo '{"locale": "zh_CN"}' > $@

lab-zh: $(STAMP) $(ZH_LOCALE)
	$(BIN)/python tools/learner_copies.py notebooks/zh $(MY)/zh
	@echo "正在端口 $(PORT) 上启动 JupyterLab（中文版）：在浏览器中打开下面打印的 http://127.0.0.1:$(PORT)/lab?token=... 地址（Ctrl-C 停止）"
	JUPYTERLAB_SETTINGS_DIR=$(ZH_SETTINGS) JUPYTERLAB_WORKSPACES_DIR=$(CURDIR)/$(MY)/.lab-workspaces/zh $(BIN)/jupyter lab --no-browser --ip=127.0.0.1 --port=$(PORT) --ServerApp.root_dir=$(MY)/zh $(ALLOW_ROOT)

# Strict nbval: every stored output of every code cell is compared (tools/nbval_sanitize.cfg rewrites
# what legitimately varies). Both cores: pytest-xdist, one notebook's cells on one worker (loadscope).
WORKERS ?= auto
NBVAL  := --nbval --nbval-current-env --nbval-sanitize-with tools/nbval_sanitize.cfg
XDIST  := -n $(WORKERS) --dist loadscope
test: $(STAMP)
	MPLBACKEND=Agg $(BIN)/python -m pytest tests notebooks $(NBVAL) $(XDIST) $(PYTEST_FLAGS)

test-unit: $(STAMP)
	MPLBACKEND=Agg $(BIN)/python -m pytest tests $(XDIST) $(PYTEST_FLAGS)

test-notebooks: $(STAMP)
	MPLBACKEND=Agg $(BIN)/python -m pytest notebooks $(NBVAL) $(XDIST) $(PYTEST_FLAGS)

# The style (ruff: pyproject.toml's [tool.ruff], notebooks/ruff.toml for the notebooks) and the direction of
# the imports (lint-imports: pyproject.toml's [tool.importlinter] contracts): both run, and either failing fails it.
lint: $(STAMP)
	ruff=0; $(BIN)/ruff check . || ruff=$$?; \
	layers=0; $(BIN)/lint-imports --no-cache --no-logo || layers=$$?; \
	test $$ruff -eq 0 && test $$layers -eq 0

# The browser test needs the "ui" extra (Playwright) on top of the dev install, and a Chromium
# (/usr/bin/chromium: `apt-get install chromium`; or UI_FLAGS="--chromium PATH").
UI_STAMP := $(VENV)/.posenc-ui-installed
UI_FLAGS ?=

$(UI_STAMP): $(STAMP) $(UI_LOCK)
	$(PIP) install --quiet --no-deps -r $(UI_LOCK)
	$(PIP) check
	touch $(UI_STAMP)

# The web edition: both editions' notebooks as stored (nothing re-executed) rendered by Sphinx + MyST-NB
# (site/build.py) into $(SITE), a folder that opens from disk or any static host. Its tools are the "site"
# extra, locked in requirements/lock-site.txt (on top of the dev install, like the browser test's).
# REPO_URL=https://... names the repository in the pages (the notebook's link, the hosted service's %pip).
SITE       := build/site
SITE_STAMP := $(VENV)/.posenc-site-installed
REPO_URL   ?=
SITE_FLAGS ?=
BUILD_SITE  = $(BIN)/python site/build.py --out $(SITE) $(if $(REPO_URL),--repo-url $(REPO_URL))

$(SITE_STAMP): $(STAMP) $(SITE_LOCK)
	$(PIP) install --quiet --no-deps -r $(SITE_LOCK)
	$(PIP) check
	touch $(SITE_STAMP)

site: $(SITE_STAMP)
	$(BUILD_SITE)

# The notebooks in JupyterLab (tools/ui_check.py), then the web edition built and read in the same
# Chromium (tools/site_check.py; SITE_FLAGS=-v lists every page): both run, and either failing fails it.
test-ui: $(UI_STAMP) $(SITE_STAMP)
	ui=0; $(BIN)/python tools/ui_check.py $(UI_FLAGS) || ui=$$?; \
	site=0; { $(BUILD_SITE) && $(BIN)/python tools/site_check.py $(SITE) $(SITE_FLAGS); } || site=$$?; \
	test $$ui -eq 0 && test $$site -eq 0

# The lock: uv's universal resolution (one file for Linux, macOS and Windows/WSL, every Python from
# requires-python on), of pyproject.toml's dependencies and extras, with requirements/pins.txt held and
# the CUDA-only packages left out. uv runs from a venv of its own, so .venv stays what the lock says.
UV_VERSION := 0.13.9
LOCK_VENV  := .venv-lock
UV_COMPILE  = $(LOCK_VENV)/bin/uv pip compile pyproject.toml --universal --python-version 3.11 \
              --excludes requirements/cuda-only.txt --constraints requirements/pins.txt \
              --custom-compile-command "make lock" --quiet
lock:
	test -x $(LOCK_VENV)/bin/uv || ($(PYTHON) -m venv $(LOCK_VENV) && \
	  $(LOCK_VENV)/bin/python -m pip install --quiet --disable-pip-version-check "uv==$(UV_VERSION)")
	$(UV_COMPILE) --extra dev --extra zh -o $(LOCK) $(LOCK_FLAGS)
	$(UV_COMPILE) --extra dev --extra zh --extra ui --constraints $(LOCK) -o $(UI_LOCK) $(LOCK_FLAGS)
	$(UV_COMPILE) --extra dev --extra zh --extra site --constraints $(UI_LOCK) -o $(SITE_LOCK) $(LOCK_FLAGS)

# Upstream drift: the newest releases pyproject.toml admits (torch too: LATEST_TORCH=$(TORCH) holds it),
# in a venv of their own, under the same tests. Failures here are what a learner would meet next.
LATEST_VENV  := .venv-latest
LATEST_TORCH ?= torch
LATEST_PIP   := $(LATEST_VENV)/bin/python -m pip --disable-pip-version-check
test-latest:
	rm -rf $(LATEST_VENV) && $(PYTHON) -m venv $(LATEST_VENV)
	$(LATEST_PIP) install --quiet --upgrade "$(LATEST_TORCH)" $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX))
	$(LATEST_VENV)/bin/python -c "import torch; print('torch==' + torch.__version__)" > $(LATEST_VENV)/torch.txt
	$(LATEST_PIP) install --quiet --upgrade --upgrade-strategy eager -c $(LATEST_VENV)/torch.txt -e ".[dev,zh]"
	$(LATEST_VENV)/bin/python tools/lock_drift.py $(LOCK)
	MPLBACKEND=Agg $(LATEST_VENV)/bin/python -m pytest tests notebooks $(NBVAL) $(XDIST) $(PYTEST_FLAGS)

bench: $(STAMP)
	$(BIN)/python tools/bench.py

# Both editions. tools/nbconvert_refresh.py: nbconvert's settings (no widget state, no timestamps, stale ones cleared);
# tools/strip_widget_views.py then drops the stored widget views, for which nbconvert has no option.
NOTEBOOKS := notebooks/[0-9][0-9]_*.ipynb notebooks/zh/[0-9][0-9]_*.ipynb
refresh: $(STAMP)
	$(BIN)/jupyter nbconvert --config tools/nbconvert_refresh.py --to notebook --execute --inplace $(NOTEBOOKS)
	$(BIN)/python tools/strip_widget_views.py $(NOTEBOOKS)

experiments: $(STAMP)
	$(BIN)/python -m posenc_lib.experiments

# notebook 14, section 3: data/arena/flipflop/ (the arena cache format; only the missing (arm, seed) records; --fresh: all)
flipflop: $(STAMP)
	$(BIN)/python -m posenc_lib.experiments.flipflop

# The arena (posenc_lib/arena/, issue 40): its own target, not part of `make test` or `make experiments`.
# A rerun only fills the runs its cache (data/arena/<preset>/runs/) lacks. ARENA_FLAGS="--preset quick",
# "--methods rope alibi", "--preset large --corpus DIR"; under torchrun: see README ("The arena").
ARENA_FLAGS ?=
arena: $(STAMP)
	$(BIN)/python -m posenc_lib.arena $(ARENA_FLAGS)

clean:
	rm -rf $(VENV) $(LOCK_VENV) $(LATEST_VENV) .pytest_cache .hypothesis .ruff_cache build *.egg-info posenc_lib/__pycache__ tests/__pycache__ ui-screenshots

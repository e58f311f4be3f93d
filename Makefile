# posenc: two commands for a newcomer (`make lab`, `make test`); everything else is optional.
# The first target that needs the environment creates .venv and installs the project into it;
# later runs skip the install until pyproject.toml changes (the stamp file below).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.posenc-installed
PORT   ?= 8888
# torch is pinned on this path, and taken from PyTorch's CPU wheel index: on Linux, PyPI's torch is
# the CUDA build with gigabytes of NVIDIA libraries. TORCH_INDEX= (empty) uses PyPI's build;
# a CUDA index (e.g. .../whl/cu126) gives a CUDA build. pip prefers the index's 2.13.0+cpu. Only torch
# itself comes from there (--no-deps); its dependencies come with the next line, from PyPI.
TORCH  ?= torch==2.13.0
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
PYTEST_FLAGS ?=
# JupyterLab refuses to start as root (containers, CI) unless told that it is meant.
ALLOW_ROOT := $(if $(filter 0,$(shell id -u 2>/dev/null)),--allow-root,)

.PHONY: help install lab lab-zh test test-unit test-notebooks test-ui bench refresh experiments clean

help:
	@echo "make lab         open the course in JupyterLab (installs what is missing)"
	@echo "make lab-zh      open the Chinese edition (notebooks/zh/) in JupyterLab with its interface in Chinese"
	@echo "make test        unit tests + every notebook under nbval (installs what is missing)"
	@echo "make test-ui     every notebook in a real JupyterLab in headless Chromium"
	@echo "make bench       speed ratios (apply_rope vs eager rotate-half and vs a copy; slider redraws)"
	@echo "make refresh     re-execute the notebooks in place (stored outputs)"
	@echo "make experiments regenerate the cached results in data/ (about 11-15 minutes on 2 cores)"
	@echo "make clean       remove the venv and caches"

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps "$(TORCH)" $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX))
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[dev,zh]" "$(TORCH)"
	touch $(STAMP)

lab: $(STAMP)
	@echo "Starting JupyterLab on port $(PORT): open the http://127.0.0.1:$(PORT)/lab?token=... address it prints below (Ctrl-C to stop; PORT=... to change)"
	$(BIN)/jupyter lab --no-browser --ip=127.0.0.1 --port=$(PORT) --ServerApp.root_dir=notebooks $(ALLOW_ROOT)

# The Chinese edition: JupyterLab's zh_CN language pack (the "zh" extra) chosen in a settings folder of
# its own, so `make lab` keeps your usual settings and language.
ZH_SETTINGS := $(VENV)/lab-zh-settings
ZH_LOCALE   := $(ZH_SETTINGS)/@jupyterlab/translation-extension/plugin.jupyterlab-settings

$(ZH_LOCALE):
	mkdir -p $(dir $@)
	echo '{"locale": "zh_CN"}' > $@

lab-zh: $(STAMP) $(ZH_LOCALE)
	@echo "正在端口 $(PORT) 上启动 JupyterLab（中文版）：在浏览器中打开下面打印的 http://127.0.0.1:$(PORT)/lab?token=... 地址（Ctrl-C 停止）"
	JUPYTERLAB_SETTINGS_DIR=$(ZH_SETTINGS) $(BIN)/jupyter lab --no-browser --ip=127.0.0.1 --port=$(PORT) --ServerApp.root_dir=notebooks/zh $(ALLOW_ROOT)

test: $(STAMP)
	MPLBACKEND=Agg $(BIN)/python -m pytest tests notebooks --nbval-lax --nbval-current-env $(PYTEST_FLAGS)

test-unit: $(STAMP)
	MPLBACKEND=Agg $(BIN)/python -m pytest tests $(PYTEST_FLAGS)

test-notebooks: $(STAMP)
	MPLBACKEND=Agg $(BIN)/python -m pytest notebooks --nbval-lax --nbval-current-env $(PYTEST_FLAGS)

# The browser test needs the "ui" extra (Playwright) on top of the dev install, and a Chromium
# (/usr/bin/chromium: `apt-get install chromium`; or UI_FLAGS="--chromium PATH").
UI_STAMP := $(VENV)/.posenc-ui-installed
UI_FLAGS ?=

$(UI_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[dev,ui]" "$(TORCH)"
	touch $(UI_STAMP)

test-ui: $(UI_STAMP)
	$(BIN)/python tools/ui_check.py $(UI_FLAGS)

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

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info posenc_lib/__pycache__ tests/__pycache__ ui-screenshots

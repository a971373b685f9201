# mixlab: `make figures` regenerates the papers' figures, `make test` runs the tests.
# Both install what they need into .venv on first use.
SCALE ?= quick
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
MIXLAB := $(BIN)/mixlab
STAMP := $(VENV)/.installed-stamp
BENCH_STAMP := $(VENV)/.bench-stamp
BENCH ?= quick
# worker processes for the independent streams of each figure's run (mixlab run -j): MIXLAB_JOBS
# if set, else every core
JOBS ?= $(or $(MIXLAB_JOBS),$(shell nproc 2>/dev/null || echo 1))
# The local data mirror: MIXLAB_DATA_MIRROR if set, else ../shared/data beside the clone if it exists
# (machines without internet access keep one there); otherwise data comes from canonical URLs.
ifeq ($(strip $(MIXLAB_DATA_MIRROR)),)
ifneq ($(wildcard ../shared/data),)
export MIXLAB_DATA_MIRROR := $(abspath ../shared/data)
endif
endif

.PHONY: install test figures all-figures data data-full bench clean lint help league
help:
	@echo "make install | test | figures [SCALE=quick|paper] [JOBS=N] | fig-<paper>-<n> | league | data | bench | clean"
	@echo "figure targets: $(FIGURES)"

# The venv's packages are installed without compiling every module to bytecode (some 40 s for
# scipy, pandas, dask and the rest); Python compiles and caches a module the first time it is imported, so only
# what mixlab uses is compiled, once. Hence Python must be allowed to write its bytecode cache
# even where the environment sets PYTHONDONTWRITEBYTECODE: the suite alone starts some 250
# Python processes, and each would otherwise compile every module it imports anew.
unexport PYTHONDONTWRITEBYTECODE

# The installer is uv (from PyPI, into the venv): it installs mixlab's sixty-odd dependencies in
# some 6 s where pip takes some 40 s. Where uv cannot be installed or cannot reach an index, pip
# does the same install.
install: $(STAMP)
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(call venv_install,.[dev])
	touch $(STAMP)
# the benchmarks' peer libraries (scikit-learn), only for make bench
$(BENCH_STAMP): $(STAMP)
	$(call venv_install,$(BENCH_REQUIREMENT))
	touch $(BENCH_STAMP)
BENCH_REQUIREMENT := .[dev,bench]
# $(call venv_install,REQUIREMENT): install REQUIREMENT (editable) into the venv, with uv if it can
define venv_install
	if { test -x $(BIN)/uv || $(BIN)/python -m pip install -q uv; } && \
	   $(BIN)/uv pip install -q --python $(BIN)/python -e '$(1)'; then :; else \
	   echo "uv could not install $(1); installing with pip"; \
	   $(BIN)/python -m pip install -q --no-compile -e '$(1)'; fi
endef

# one pytest worker per core (pytest-xdist); tests sharing a group's fixtures stay on one worker.
# The report pages' browser tests (tests/report) drive Debian's headless chromium: installed
# here where it is missing and apt-get can (as root); elsewhere those tests skip, saying why.
test: $(STAMP) browser
	$(BIN)/python -m pytest -n auto --dist loadgroup

.PHONY: browser
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
		&& { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; } ; } \
		|| echo "chromium is not installed: the report pages' browser tests will be skipped"

# The sampler leagues (docs/league.md): every registered sampler of each family on its standard
# targets, at equal time and equal work; tables in runs/$(SCALE)/league-<family>/league.md, the
# page in league.html.
LEAGUES ?= spinglass mrf rbm logistic
JOBS ?= 2
league: $(STAMP)
	for f in $(LEAGUES); do $(MIXLAB) league $$f --scale $(SCALE) -j $(JOBS) --quiet \
		--out runs/$(SCALE)/league-$$f || exit 1; done

lint: $(STAMP)
	$(BIN)/ruff check mixlab tests benchmarks

# The data sets the figures use (from MIXLAB_DATA_MIRROR, or downloaded from their canonical
# URLs): usps and fashion-mnist (rates-FPCD, austerity), mnist-5k (offline MNIST subset), kdd99
# (austerity). The figure targets fetch them once (the stamp); loading never downloads by itself.
# `make data-full` adds the full MNIST training set (not in the local mirror: downloaded).
DATA_STAMP := $(VENV)/.data-stamp
data: $(STAMP)
	$(MIXLAB) data fetch usps
	$(MIXLAB) data fetch mnist-5k
	$(MIXLAB) data fetch kdd99
	$(MIXLAB) data fetch fashion-mnist
	touch $(DATA_STAMP)
$(DATA_STAMP): $(STAMP)
	$(MAKE) data
data-full: data
	$(MIXLAB) data fetch mnist

# $(call figure_rule,TARGET,SPEC): run SPEC at $(SCALE) into runs/$(SCALE)/TARGET (a no-op when
# that run is complete; resumed when interrupted; an edited spec's old run is moved to
# TARGET.previous), then draw every figure of that run into figures/$(SCALE)/TARGET*.png.
FIGURES :=
define figure_rule
FIGURES += $(1)
.PHONY: $(1)
$(1): $(STAMP) $(DATA_STAMP)
	$(MIXLAB) run $(2) --scale $(SCALE) --out runs/$(SCALE)/$(1) --replace --quiet -j $(JOBS) --no-figures
	$(MIXLAB) plot runs/$(SCALE)/$(1) -o figures/$(SCALE)/$(1).png
endef
include $(sort $(wildcard experiments/*/figures.mk))

# every figure, then the total wall time
figures:
	@start=$$(date +%s); $(MAKE) --no-print-directory all-figures || exit $$?; \
	echo "make figures: $$(( $$(date +%s) - start )) s of wall time at -j $(JOBS)"
all-figures: $(FIGURES)
	$(MIXLAB) report --figures figures/$(SCALE) runs/$(SCALE) --claims claims
	@echo "figures written to figures/$(SCALE)/ (index: figures/$(SCALE)/index.html)"

# Runs benchmarks/bench_*.py, writes benchmarks/results.json, adds the run to
# benchmarks/history.json and regenerates docs/benchmarks.md (`python -m benchmarks --render`
# regenerates the page alone).
bench: $(BENCH_STAMP)
	$(BIN)/python -m benchmarks --mode $(BENCH)

clean:
	rm -rf runs figures .pytest_cache .hypothesis build *.egg-info

# The two commands README.md gives are `make demo` and `make test`; both set up .venv themselves.
PYTHON ?= python3
# Debian's Chromium, driven by Playwright in the browser tests (its own browser download fails here).
CHROMIUM := /usr/bin/chromium
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed-test
BENCH_INSTALLED := $(VENV)/.installed-bench
WARMED := $(VENV)/.warmed
# The files of compiled functions: Numba's cache of a file is stale once it changes (ARCHITECTURE §9).
COMPILED_SOURCES := $(shell grep -rl --include='*.py' '@njit' games bots)

.PHONY: demo test bench lint clean

# One single-threaded BLAS per process (ARCHITECTURE §8); no ONNX Runtime telemetry files.
export OPENBLAS_NUM_THREADS := 1
export ORT_DISABLE_TELEMETRY := 1

$(INSTALLED): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -e ".[test,train]"
	touch $@

# Compiles the kernels into Numba's cache once, here, rather than in the first games or tests
# (`arena warm`: about a minute of CPU on a fresh clone, seconds when little changed).
$(WARMED): $(INSTALLED) $(COMPILED_SOURCES)
	$(BIN)/arena warm
	touch $@

$(BENCH_INSTALLED): $(INSTALLED)
	$(BIN)/pip install --quiet --disable-pip-version-check -e ".[test,train,bench]"
	touch $@

$(CHROMIUM):
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium

demo: $(WARMED)
	$(BIN)/arena demo

test: $(WARMED) $(CHROMIUM) lint
	$(BIN)/pytest

lint: $(INSTALLED)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# The full runs; tests/bench runs each script with --quick (seconds), so none of them can rot.
bench: $(BENCH_INSTALLED) $(WARMED)
	$(BIN)/python bench/engines.py
	$(BIN)/python bench/compiled_core.py
	$(BIN)/python bench/csb.py
	$(BIN)/python bench/smash.py
	$(BIN)/python bench/actor_critic.py
	$(BIN)/python bench/host.py
	$(BIN)/python bench/search.py
	$(BIN)/python bench/selfplay.py
	$(BIN)/python bench/worker.py
	$(BIN)/python bench/dqn_worker.py
	$(BIN)/python bench/ratings.py
	$(BIN)/python bench/warm_start.py
	$(BIN)/python bench/live.py
	$(BIN)/python bench/platform_load.py  # needs PostgreSQL and Redis, as CI has
	$(BIN)/python bench/first_hour.py
	$(BIN)/python bench/final.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache

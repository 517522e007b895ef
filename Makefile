# The two commands README.md gives are `make demo` and `make test`; both set up .venv themselves.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed-test
BENCH_INSTALLED := $(VENV)/.installed-bench

.PHONY: demo test bench lint clean

$(INSTALLED): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -e ".[test,train]"
	touch $@

$(BENCH_INSTALLED): $(INSTALLED)
	$(BIN)/pip install --quiet --disable-pip-version-check -e ".[test,train,bench]"
	touch $@

demo: $(INSTALLED)
	$(BIN)/arena demo

test: $(INSTALLED) lint
	$(BIN)/pytest

lint: $(INSTALLED)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: $(BENCH_INSTALLED)
	$(BIN)/python bench/engines.py
	$(BIN)/python bench/host.py
	$(BIN)/python bench/search.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache

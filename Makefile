# Every target builds what it needs from nothing: a fresh clone needs only Python 3.11+ and make.
#   make docs   build the documentation site and serve it at http://127.0.0.1:8000
#   make test   ruff, mypy --strict, typos and the whole pytest suite

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: docs docs-build test lint venv bench clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,docs,postgres,redis,encryption]'
	@rm -f $(VENV)/.installed-*
	@touch $(STAMP)

docs: venv
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --dev-addr 127.0.0.1:8000

docs-build: venv
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy --strict src
	$(BIN)/typos

test: lint
	$(BIN)/python -m pytest

bench: venv
	$(BIN)/python bench/bench_sqlite.py
	$(BIN)/python bench/bench_translate.py
	$(BIN)/python bench/bench_extensions.py

clean:
	rm -rf $(VENV) site .pytest_cache .mypy_cache .ruff_cache

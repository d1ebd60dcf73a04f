# Every target builds what it needs from nothing: a fresh clone needs only Python 3.11+ and make.
#   make docs   build the documentation site and serve it at http://127.0.0.1:8000 (PORT=8001 ...)
#   make test   ruff, mypy --strict, typos and the whole pytest suite, in parallel (xdist)
#   make test-fast  the edit-run loop: no browser, service or slow tests, on every core (xdist)
#   make test-floors  every runtime dependency at its declared floor, in a fresh venv: the import,
#               the README example on the fake server, the backend smoke tests (.ci/floors.py)
#   make bench  every benchmark in bench/, each table printed; FAIL lines for missed targets

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PORT   ?= 8000
HASH   := $(shell cat pyproject.toml | cksum | cut -d' ' -f1)
# Everything (tests, linters, database drivers, docs); `make docs` alone needs only the docs group.
STAMP      := $(VENV)/.installed-$(HASH)
DOCS_STAMP := $(VENV)/.installed-docs-$(HASH)

.PHONY: docs docs-build docs-venv test test-fast test-floors lint venv bench clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[postgres,redis,encryption]' --group dev --group docs
	@rm -f $(VENV)/.installed-*
	@touch $(STAMP) $(DOCS_STAMP)

docs-venv: $(DOCS_STAMP)

# Only the site's packages (MkDocs, Material, i18n, mkdocstrings, jieba): no Playwright, no
# database drivers, no linters. A full `make venv` satisfies it too.
$(DOCS_STAMP): pyproject.toml
	@if [ ! -f $(STAMP) ]; then \
	  test -x $(BIN)/python || $(PYTHON) -m venv $(VENV); \
	  echo "installing the docs group into $(VENV)"; \
	  $(BIN)/python -m pip install --quiet --upgrade pip && \
	  $(BIN)/python -m pip install --quiet -e . --group docs; \
	fi
	@rm -f $(VENV)/.installed-docs-*
	@touch $(DOCS_STAMP)

# `make docs` checks its port before anything is installed or built: a port that is not a number,
# or one in use, stops make with one line, not a traceback after the build.
ifneq ($(filter docs,$(MAKECMDGOALS)),)
PORT_OK := $(shell $(PYTHON) -c 'import sys; p = sys.argv[1]; print("yes" if p.isascii() and p.isdigit() and 0 < int(p) < 65536 else "no")' '$(PORT)')
ifneq ($(PORT_OK),yes)
$(error PORT=$(PORT) is not a port number: give a whole number from 1 to 65535, e.g. make docs PORT=8001)
endif
PORT_BUSY := $(shell $(PYTHON) -c 'import socket, sys; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", int(sys.argv[1])))' '$(PORT)' 2>/dev/null || echo busy)
ifneq ($(PORT_BUSY),)
$(error port $(PORT) on 127.0.0.1 is in use: stop what serves there, or choose another port, e.g. make docs PORT=$(shell expr $(PORT) + 1))
endif
endif

docs: docs-venv
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --dev-addr 127.0.0.1:$(PORT)

docs-build: docs-venv
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

LINT = $(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/mypy --strict src && $(BIN)/typos

lint: venv
	$(LINT)

# pytest-xdist workers: one per core, and at least 4, since many tests wait on a child process,
# a service or a timeout rather than compute (on 2 cores, 4 workers finish sooner than 2).
# `make test PYTEST_WORKERS=0` runs the suite in one process.
PYTEST_WORKERS ?= $(shell $(PYTHON) -c 'import os; print(max(4, os.cpu_count() or 1))')

# Bytecode for the tests and their child processes is written and kept (`__pycache__/`, ignored
# by git), even where PYTHONDONTWRITEBYTECODE is set, as some shells and images do: the suite
# starts hundreds of Python processes and rewrites every test module's asserts in each worker,
# and with it set each of them compiled all of it again. (Not PYTHONPYCACHEPREFIX: that would
# also recompile every installed package, whose bytecode pip wrote beside it.)
PYTEST_ENV = env -u PYTHONDONTWRITEBYTECODE

# The linters run beside the tests (their output is printed when both are done); `make test`
# fails if either fails.
test: venv
	@lint_log="$$(mktemp)"; \
	( $(LINT) ) >"$$lint_log" 2>&1 & lint_pid=$$!; \
	trap 'kill $$lint_pid 2>/dev/null; rm -f "$$lint_log"; exit 130' INT TERM; \
	$(PYTEST_ENV) $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist worksteal; tests=$$?; \
	wait $$lint_pid; lint=$$?; \
	printf '\n==> lint (ruff, ruff format, mypy --strict, typos)\n'; cat "$$lint_log"; rm -f "$$lint_log"; \
	if [ $$lint -ne 0 ]; then echo "make test: lint failed"; fi; \
	[ $$tests -eq 0 ] && [ $$lint -eq 0 ]

test-fast: venv
	$(PYTEST_ENV) $(BIN)/python -m pytest -n auto -m "not browser and not services and not slow" -q

# Its own venv (a temporary one); the services are those `make test` uses (.ci/services starts them).
test-floors:
	$(PYTHON) .ci/floors.py

# Every benchmark runs even when an earlier one missed its target; the status says if any did.
BENCHES ?= $(sort $(wildcard bench/bench_*.py))
bench: venv
	@failed=""; \
	for bench in $(BENCHES); do \
	  printf '\n==> %s\n' "$$bench"; \
	  PYTHONPATH=scripts $(BIN)/python "$$bench" || failed="$$failed $$bench"; \
	done; \
	if [ -n "$$failed" ]; then printf '\nFAIL: a target was missed in:%s\n' "$$failed"; exit 1; fi; \
	printf '\nevery benchmark met its target\n'

clean:
	rm -rf $(VENV) site .pytest_cache .mypy_cache .ruff_cache

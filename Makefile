# The two commands of the README: `make check` sets up and runs lockdocs on this repository's own
# declarations; `make test` runs the whole test suite. .ci/run calls `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
export NO_MKDOCS_2_WARNING := 1

.PHONY: setup check test system-deps fuzz bench

# Debian packages the tests and the site need: graphviz (dot), chromium (browser test) and
# postgresql (the server that replay and the ground-truth tests run on; its binaries are found
# through pg_config --bindir or /usr/lib/postgresql/*/bin, as lockdocs.postgres.server does).
system-deps:
	@missing=""; \
	command -v dot >/dev/null 2>&1 || missing="$$missing graphviz"; \
	[ -x /usr/bin/chromium ] || missing="$$missing chromium"; \
	{ [ -x "$$(pg_config --bindir 2>/dev/null)/initdb" ] || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; } \
	  || missing="$$missing postgresql"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "please install:$$missing (Debian: sudo apt-get install$$missing)"; exit 1; fi; \
	fi

$(BIN)/lockdocs: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	@touch $@

setup: system-deps $(BIN)/lockdocs

check: setup
	$(BIN)/lockdocs check

test: setup
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy
	$(BIN)/python -m pytest -q

fuzz: setup
	LOCKDOCS_ORACLE_SEED=$${LOCKDOCS_ORACLE_SEED:-20261129} $(BIN)/python -m pytest -q -m fuzz

bench: setup
	$(BIN)/python bench/run.py

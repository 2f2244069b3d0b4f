# The commands of the README. A fresh machine needs only Python 3.11+ (and apt for the system packages).
.PHONY: run setup test lint typecheck compose-secrets compose-check

EXTRAS ?= all,dev

PORT ?= 8765

run: setup                 ## set up, then serve the gateway on http://127.0.0.1:$(PORT)/mcp over this directory
	.venv/bin/mcp-sections gateway --root "$(CURDIR)" --transport http --port $(PORT)

setup:                     ## system packages, .venv with CPU torch and every extra
	scripts/setup.sh "$(EXTRAS)"

test: setup lint typecheck ## set up, lint, type-check and run the whole test suite (what .ci/run calls)
	.venv/bin/pytest -n auto --dist loadfile

lint:
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .

typecheck:
	.venv/bin/mypy

compose-secrets:           ## random secrets for compose.yaml in docker/secrets/ (kept if present)
	scripts/compose-secrets.sh

compose-check: compose-secrets
	.venv/bin/docker-compose -f compose.yaml config -q

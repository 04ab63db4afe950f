# Faultline: `make run` starts the platform, `make test` runs every check.
# Both are safe to re-run: each step is skipped when its inputs have not changed.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
MANAGE := $(PY) manage.py
RUNTIME_STAMP := $(VENV)/.runtime-$(shell cksum < requirements.txt | cut -d' ' -f1)
DEV_STAMP := $(VENV)/.dev-$(shell cat requirements.txt requirements-dev.txt | cksum | cut -d' ' -f1)
NODE_STAMP := node_modules/.faultline-$(shell cksum < package-lock.json | cut -d' ' -f1)

.PHONY: run test setup lint check-tools system-test-deps services-env clean

run: setup
	@$(MANAGE) loaddemo
	@$(MANAGE) runplatform

setup: check-tools $(RUNTIME_STAMP) $(NODE_STAMP)
	@$(MANAGE) vendorstatic
	@$(MANAGE) compiletranslations
	@$(MANAGE) preflight
	@$(MANAGE) migrate --noinput -v 0
	@$(MANAGE) loadbank
	@$(MANAGE) collectstatic --noinput -v 0

check-tools:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11 or newer is needed (found " + sys.version.split()[0] + ")")'
	@command -v node >/dev/null || { echo "Node.js 18+ is needed for the front-end packages (apt-get install nodejs npm)"; exit 1; }
	@node -e 'process.exit(+process.versions.node.split(".")[0] >= 18 ? 0 : (console.error("Node.js 18+ is needed, found " + process.version), 1))'

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

$(RUNTIME_STAMP): requirements.txt | $(VENV)/bin/python
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	@rm -f $(VENV)/.runtime-*; touch $@

$(DEV_STAMP): requirements.txt requirements-dev.txt | $(VENV)/bin/python
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	@rm -f $(VENV)/.dev-*; touch $@

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@rm -f node_modules/.faultline-*; touch $@

# Debian packages the browser and catalog tests need (Chromium, CJK fonts, gettext).
system-test-deps:
	@sh scripts/ensure-system-packages.sh chromium fonts-noto-cjk gettext

lint: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

test: check-tools $(DEV_STAMP) $(NODE_STAMP) system-test-deps
	@$(MANAGE) vendorstatic
	@$(MANAGE) compiletranslations
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/pytest
	@if [ -n "$$FAULTLINE_TEST_DATABASE_URL" ] && [ -n "$$FAULTLINE_TEST_REDIS_URL" ]; then \
		echo "== second pass: PostgreSQL + Redis broker + real Celery worker =="; \
		DATABASE_URL="$$FAULTLINE_TEST_DATABASE_URL" CELERY_BROKER_URL="$$FAULTLINE_TEST_REDIS_URL" \
			$(BIN)/pytest -m "not browser" -p no:cacheprovider; \
	else \
		echo "== second pass skipped: set FAULTLINE_TEST_DATABASE_URL and FAULTLINE_TEST_REDIS_URL (as .ci/run does) to run the suite on PostgreSQL + Redis =="; \
	fi

clean:
	rm -rf $(VENV) node_modules static/vendor var/static

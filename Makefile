# Faultline: `make run` starts the platform, `make test` runs every check.
# Both are safe to re-run: each step is skipped when its inputs have not changed.

PYTHON ?= python3
# Seeds `make test` validates every lab on (each cover-up must score 0 % on all of them), and how many
# validation processes take labs in turn. On two cores the 30 labs take about 53-59 minutes on two seeds with
# two processes, and the two test passes about 25: a third seed would not fit in CI's 90 minutes.
# `make validate VALIDATE_SEEDS=3 VALIDATE_PROCESSES=3` is the full proof.
VALIDATE_SEEDS ?= 2
VALIDATE_PROCESSES ?= 2
# Tests that need no Docker engine, browser or broker run in TEST_PROCESSES pytest-xdist processes: they
# wait on the lab programs they start about half the time (on two cores, one process: 10.0 minutes at
# 54 % CPU, two: 5.9, three: 4.0-4.9). Each process has its own test database. The others share one
# engine, one broker and timing budgets, so they run in a single process.
TEST_PROCESSES ?= 3
PARALLEL_TESTS := not docker and not browser and not worker and not services
VENV := .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
MANAGE := $(PY) manage.py
RUNTIME_STAMP := $(VENV)/.runtime-$(shell cksum < requirements.txt | cut -d' ' -f1)
DEV_STAMP := $(VENV)/.dev-$(shell cat requirements.txt requirements-dev.txt | cksum | cut -d' ' -f1)
NODE_STAMP := node_modules/.faultline-$(shell cksum < package-lock.json | cut -d' ' -f1)

.PHONY: run test validate fresh-platform-proof setup lab-image lint check-tools system-test-deps services-env clean

# The local platform serves like a deployment (no debug pages, hashed static files) over plain
# HTTP on loopback: its key lives in var/, and cookies are not limited to HTTPS. Any of these can
# be overridden from the environment.
run: export DEBUG ?= false
run: export SECRET_KEY_FILE ?= $(CURDIR)/var/secret_key
run: export SECURE_COOKIES ?= false
run: setup lab-image
	@$(MANAGE) loaddemo
	@$(MANAGE) runplatform

setup: check-tools $(RUNTIME_STAMP) $(NODE_STAMP)
	@$(MANAGE) vendorstatic
	@$(MANAGE) compiletranslations
	@$(MANAGE) preflight
	@$(MANAGE) migrate --noinput -v 0
	@$(MANAGE) loadbank
	@$(MANAGE) loadlabs
	@$(MANAGE) collectstatic --noinput -v 0

# The lab runner image for the Docker sandbox backend. Its tag is a hash of the
# Dockerfile, the pinned packages and the harness, and buildimages returns at once
# when the engine has that tag, so re-runs stay fast. Without an engine, labs fall
# back to local processes, except in CI (FAULTLINE_REQUIRE_SERVICES=1).
lab-image: $(RUNTIME_STAMP)
	@if [ "$${SANDBOX_BACKEND:-auto}" = process ]; then \
		echo "SANDBOX_BACKEND=process: no lab image needed"; \
	elif docker info >/dev/null 2>&1; then \
		$(MANAGE) buildimages --kind cpu; \
	elif [ "$${FAULTLINE_REQUIRE_SERVICES:-}" = 1 ]; then \
		echo "no Docker engine answers, and FAULTLINE_REQUIRE_SERVICES=1 needs one for the lab image"; exit 1; \
	else \
		echo "no Docker engine answers: lab runs will use the local process backend (not isolated)"; \
	fi

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
	$(BIN)/lint-imports --no-cache

test: check-tools $(DEV_STAMP) $(NODE_STAMP) system-test-deps
	@$(MANAGE) vendorstatic
	@$(MANAGE) compiletranslations
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache
	$(BIN)/pytest -m "$(PARALLEL_TESTS)" -n $(TEST_PROCESSES)
	$(BIN)/pytest -m "not ($(PARALLEL_TESTS))"
	@if [ -n "$$FAULTLINE_TEST_DATABASE_URL" ] && [ -n "$$FAULTLINE_TEST_REDIS_URL" ]; then \
		echo "== second pass: PostgreSQL + Redis broker + real Celery worker (tests of the container alone ran in the first pass) =="; \
		export DATABASE_URL="$$FAULTLINE_TEST_DATABASE_URL" CELERY_BROKER_URL="$$FAULTLINE_TEST_REDIS_URL"; \
		$(BIN)/pytest -m "$(PARALLEL_TESTS)" -n $(TEST_PROCESSES) -p no:cacheprovider \
			&& $(BIN)/pytest -m "not browser and (worker or services)" -p no:cacheprovider; \
	else \
		echo "== second pass skipped: set FAULTLINE_TEST_DATABASE_URL and FAULTLINE_TEST_REDIS_URL (as .ci/run does) to run the suite on PostgreSQL + Redis =="; \
	fi
	@$(MAKE) --no-print-directory validate

# Every lab on VALIDATE_SEEDS seeds through the real sandbox and grader: the faulty program fails, the
# solution passes, every cover-up scores 0 %. Each process has its own database; they share the claims.
validate: $(RUNTIME_STAMP)
	@echo "== every lab, $(VALIDATE_SEEDS) seeds, $(VALIDATE_PROCESSES) processes side by side taking labs in turn: faulty program fails, solution passes, every cover-up scores 0 % =="
	@rm -rf var/validate-* var/validate-claims
	@for k in $$(seq 1 $(VALIDATE_PROCESSES)); do \
		( FAULTLINE_VAR_DIR=$(CURDIR)/var/validate-$$k sh -c '$(MANAGE) migrate --noinput -v 0 && $(MANAGE) loadbank >/dev/null \
			&& $(MANAGE) loadlabs >/dev/null && $(MANAGE) validatelab --all --seeds $(VALIDATE_SEEDS) \
			--claims $(CURDIR)/var/validate-claims --rows-out $(CURDIR)/var/validate-'$$k'/rows.jsonl'; \
		  echo $$? > var/validate-$$k.rc ) 2>&1 | sed -u "s/^/[shard $$k] /" & \
	done; wait; \
	echo "== the catalog's validation table, every process (the README's table is copied from here)"; \
	$(MANAGE) validationsummary var/validate-*/rows.jsonl; \
	for k in $$(seq 1 $(VALIDATE_PROCESSES)); do [ "$$(cat var/validate-$$k.rc 2>/dev/null)" = 0 ] || { echo "validation shard $$k failed"; exit 1; }; done

# The README's first command on a fresh clone, driven in Chromium as a new candidate (minutes to the first
# lab, pause at a NaN, the chart, a graded fix within 5 s, a question's link in Chinese). 10-20 minutes, so
# `make test` leaves it out; it prints its figures on lines starting with "fresh-platform:".
fresh-platform-proof: $(DEV_STAMP) system-test-deps
	FAULTLINE_FRESH_PLATFORM=1 $(BIN)/pytest -s -p no:cacheprovider tests/e2e/test_fresh_platform.py

clean:
	rm -rf $(VENV) node_modules static/vendor var/static

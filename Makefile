# The two commands of the README:
#   make demo   bring up the local Neo4j + the service with demo data, and show a real pack
#   make test   run the whole test suite (starts and stops the Neo4j it needs, and the Docker engine
#               of the container-backed and compose tests: tests/run_suite.sh)
# Everything is installed by these targets: a Python venv (.venv) and the Neo4j jars
# (fetched from Maven Central into ~/.cache/graphsvc on first use).

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PORT ?= 8080
# Worker processes of `make up` (uvicorn's supervisor): auto = one per CPU, at most 8; GRAPHSVC_WORKERS=1 make up
GRAPHSVC_WORKERS ?= auto
RUN_DIR := .run

.PHONY: demo test up down venv bench chromium clients docker-up docker-down docker-images test-docker docs docs-serve

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

# Debian's Chromium for the Neo4j Browser e2e test (tests/e2e, driven by Playwright; Playwright's
# own browser download is never used). Installed only when missing; CI runs as root. If it cannot
# be installed, the browser test skips and says why.
chromium:
	@if [ ! -x /usr/bin/chromium ]; then \
		echo "installing chromium (apt-get) for the Neo4j Browser e2e test"; \
		(apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium) >/dev/null \
			|| echo "WARNING: chromium could not be installed; tests/e2e/test_browser.py will skip"; \
	fi

# MCP clients written elsewhere that the suite drives (tests/integration/test_mcp_clients.py): the
# official TypeScript SDK and the Inspector CLI, at the versions pinned in tests/clients/package-lock.json.
# Node and npm come from Debian's packages when missing.
CLIENTS_STAMP := tests/clients/node_modules/.installed
$(CLIENTS_STAMP): tests/clients/package.json tests/clients/package-lock.json
	@if ! command -v npm >/dev/null; then \
		echo "installing nodejs and npm (apt-get) for the MCP client tests"; \
		(apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q nodejs npm) >/dev/null; \
	fi
	npm ci --prefix tests/clients --no-audit --no-fund --loglevel=error
	touch $(CLIENTS_STAMP)

clients: $(CLIENTS_STAMP)

test: $(STAMP) chromium $(CLIENTS_STAMP)
	tests/run_suite.sh

# The docs site (mkdocs.yml, docs/): a strict build fails on a broken link or anchor, and on a page
# missing from the nav. `make test` runs the same build (tests/run_suite.sh).
docs: $(STAMP)
	$(BIN)/mkdocs build --strict

docs-serve: $(STAMP)
	$(BIN)/mkdocs serve

# The project's own Docker engine (own socket /run/graphsvc-docker/docker.sock, own data root
# ~/.cache/graphsvc/docker; installs docker.io, debootstrap and docker-compose when missing) and the
# images built here. Use it from a shell with: eval "$$(docker/engine.sh env)"
docker-up:
	@docker/engine.sh up >/dev/null

# Only the Docker steps of `make test` (engine, images, container-backed tests, compose test).
test-docker: $(STAMP)
	GRAPHSVC_SUITE_STEPS="2 3" tests/run_suite.sh

docker-down:
	docker/engine.sh down

docker-images: $(STAMP)
	@eval "$$(docker/engine.sh env)" && docker/images.sh all

up: $(STAMP)
	$(BIN)/graphsvc neo4j start
	@mkdir -p $(RUN_DIR)
	@if [ -f $(RUN_DIR)/serve.pid ] && kill -0 $$(cat $(RUN_DIR)/serve.pid) 2>/dev/null; then \
		echo "graphsvc already serving on http://127.0.0.1:$(PORT)"; \
	else \
		GRAPHSVC_PORT=$(PORT) GRAPHSVC_WORKERS=$(GRAPHSVC_WORKERS) nohup $(BIN)/graphsvc serve > $(RUN_DIR)/serve.log 2>&1 & echo $$! > $(RUN_DIR)/serve.pid; \
		set --; if [ -n "$$GRAPHSVC_API_TOKEN" ]; then set -- -H "Authorization: Bearer $$GRAPHSVC_API_TOKEN"; fi; \
		ready=no; for i in $$(seq 1 60); do \
			if curl -sf "$$@" http://127.0.0.1:$(PORT)/readyz >/dev/null; then ready=yes; break; fi; sleep 0.5; \
		done; \
		if [ $$ready = no ]; then \
			echo "graphsvc did not become ready on http://127.0.0.1:$(PORT) within 30 s; last lines of $(RUN_DIR)/serve.log:" >&2; \
			tail -n 20 $(RUN_DIR)/serve.log >&2; \
			kill $$(cat $(RUN_DIR)/serve.pid) 2>/dev/null; rm -f $(RUN_DIR)/serve.pid; \
			exit 1; \
		fi; \
		echo "graphsvc serving on http://127.0.0.1:$(PORT) with GRAPHSVC_WORKERS=$(GRAPHSVC_WORKERS) (log: $(RUN_DIR)/serve.log)"; \
	fi

demo: up
	$(BIN)/graphsvc demo --url http://127.0.0.1:$(PORT)

down:
	-@[ -f $(RUN_DIR)/serve.pid ] && kill $$(cat $(RUN_DIR)/serve.pid) 2>/dev/null; rm -f $(RUN_DIR)/serve.pid
	$(BIN)/graphsvc neo4j stop

# Benchmarks wipe their database: they use the local `bench` instance (Bolt 7689) unless NEO4J_URI is set.
bench: $(STAMP)
	$(BIN)/pip install -q -e '.[bench]'
	$(BIN)/python -m bench.ingest --n 100000 --wipe
	$(BIN)/python -m bench.bootstrap_latency

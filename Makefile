# The two commands: `make run` and `make test` (see README.md).
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
PORT   ?= 8000
# The sandbox's fake Instagram / TikTok / HubSpot (`python -m sandbox` starts them).
# The sandbox's fake Backlog is on loopback: only a listed host gets a tenant's API key.
SANDBOX_BACKLOG := BACKLOG_ALLOWED_HOSTS=127.0.0.1,localhost
SANDBOX_PLATFORMS := INSTAGRAM_GRAPH_BASE_URL=http://127.0.0.1:8083 TIKTOK_API_BASE_URL=http://127.0.0.1:8084 HUBSPOT_API_BASE_URL=http://127.0.0.1:8085 TIKTOK_CLIENT_KEY=sandbox-client-key TIKTOK_CLIENT_SECRET=sandbox-client-secret

.PHONY: venv test run migrate seed lint format bench-webhook bench-scan bench-delivery bench-approval bench-linepush bench-http bench-retention chaos clean

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,dev]'
	touch $(STAMP)

venv: $(STAMP)

# The browser tests drive Debian's Chromium through Playwright (never a browser Playwright
# downloads itself): installed here once, with a Japanese font for legible screenshots.
CHROMIUM := /usr/bin/chromium
SUDO     := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)

$(CHROMIUM):
	$(SUDO) apt-get update
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium fonts-ipafont-gothic

# Every test: SQLite by default; PostgreSQL when DATABASE_URL points at it.
# pytest's exit 5 ("no tests collected") means the suite did not run: a failure.
test: venv $(CHROMIUM)
	@$(VENV)/bin/pytest $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing" >&2; exit 1; fi; exit $$rc

run: venv
	rm -rf .run/prometheus && mkdir -p .run/prometheus
	DEBUG=1 $(PY) manage.py migrate --noinput
	DEBUG=1 $(SANDBOX_BACKLOG) $(PY) manage.py seed_demo --base-url http://127.0.0.1:$(PORT)
	DEBUG=1 $(SANDBOX_BACKLOG) PORT=$(PORT) PUBLIC_BASE_URL=http://127.0.0.1:$(PORT) LINE_API_BASE_URL=http://127.0.0.1:8082 $(SANDBOX_PLATFORMS) PROMETHEUS_MULTIPROC_DIR=$(CURDIR)/.run/prometheus PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/honcho start -f Procfile

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

format: venv
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

bench-webhook: venv
	$(PY) bench/webhook.py

bench-scan: venv
	$(PY) bench/scan.py

bench-delivery: venv
	$(PY) bench/delivery.py

bench-approval: venv
	$(PY) bench/approval.py

bench-linepush: venv
	$(PY) bench/linepush.py

bench-http: venv
	$(PY) bench/http_client.py

bench-retention: venv
	$(PY) bench/retention.py $(BENCH_ARGS)

# The chaos campaigns (docs/OPERATIONS.md "Chaos campaigns"): real processes, the fakes on loopback,
# kill -9, Backlog outages, LINE failing and hanging; needs PostgreSQL and Redis on
# 127.0.0.1. Not part of `make test`. CHAOS_ARGS="--campaign kill-sqlite --seed 7".
chaos: venv
	$(PY) -m bench.chaos $(CHAOS_ARGS)

clean:
	rm -rf $(VENV) db.sqlite3 .pytest_cache

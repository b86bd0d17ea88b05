# Two commands for a fresh clone: `make run` (set up and serve the app), `make test` (set up, lint,
# type-check and run every test). `make bench` prints the speed figures.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8501

.PHONY: run test lint typecheck pytest bench validate chromium clean

$(VENV)/.run-installed: requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.dev-installed: $(VENV)/.run-installed requirements-dev.txt
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

run: $(VENV)/.run-installed
	$(PY) -m streamlit run app.py --server.address $(HOST) --server.port $(PORT) \
		--server.headless true --browser.gatherUsageStats false

# Browser tests drive Debian's Chromium (never `playwright install`).
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ]; then \
			apt-get update -q && apt-get install -y -q --no-install-recommends chromium; \
		else echo "chromium missing: install Debian's chromium package (sudo apt-get install chromium)"; exit 1; fi; }

lint: $(VENV)/.dev-installed
	$(VENV)/bin/ruff check .

typecheck: $(VENV)/.dev-installed
	$(VENV)/bin/mypy explorer app.py

# The scenario store's PostgreSQL tests get a private server on 127.0.0.1 (scripts/ci_postgres.sh
# installs and starts it); without one they skip locally and fail in CI.
pytest: $(VENV)/.dev-installed chromium
	EXPLORER_TEST_DATABASE_URL="$$(bash scripts/ci_postgres.sh)" $(PY) -m pytest; \
		rc=$$?; if [ "$$CI" = true ]; then bash scripts/ci_postgres.sh stop; fi; exit $$rc

test: lint typecheck pytest

bench: $(VENV)/.dev-installed
	PYTHONPATH=. $(PY) benchmarks/bench_model.py
	@for f in benchmarks/bench_*.py; do [ "$$f" = benchmarks/bench_model.py ] || PYTHONPATH=. $(PY) $$f; done

# The model's error against every published number it can map (../shared/reference).
validate: $(VENV)/.run-installed
	PYTHONPATH=. $(PY) scripts/validate.py

clean:
	rm -rf $(VENV) tests/artifacts .mypy_cache .ruff_cache

# zerochess — the two commands a fresh machine needs: `make selfplay` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# JAX's persistent compilation cache lives in ~/.cache/zerochess/jax (or $JAX_COMPILATION_CACHE_DIR):
# a compile is loaded from it on the next run, in any checkout.
export ZEROCHESS_DATA ?= $(abspath $(CURDIR)/../shared/data)
STOCKFISH_BIN ?= /usr/games/stockfish

.PHONY: venv selfplay test test-fast lint stockfish bench clean data

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test]"
	touch $(STAMP)

# Stockfish comes from Debian's package (binary at /usr/games/stockfish, not on PATH).
stockfish:
	@if [ -x $(STOCKFISH_BIN) ] || command -v stockfish >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing Stockfish (Debian package 'stockfish')"; \
	  (apt-get install -y -qq stockfish >/dev/null 2>&1 || (apt-get update -qq >/dev/null && apt-get install -y -qq stockfish >/dev/null)); \
	else \
	  echo "Stockfish is missing: run 'sudo apt-get install -y stockfish' (or set STOCKFISH_BIN)" >&2; exit 1; \
	fi

# A short self-play run with the embedded default config (configs/chess_cpu.yaml) on local Ray,
# into runs/$(RUN)/ (a new name each time; continue one with: make selfplay RUN=<name> ARGS=--resume,
# and beyond its 6 minutes with ARGS="--resume --set max_minutes=12").
RUN ?= chess_cpu-$(shell date +%Y%m%d-%H%M%S)
selfplay: $(STAMP)
	$(PY) selfplay.py --config configs/chess_cpu.yaml --set name=$(RUN) $(ARGS)

# --durations: the 15 slowest tests close the log, so a suite creeping toward CI's 15 minutes shows where.
# Two pytest-xdist workers on CI's 2 cores (tests/conftest.py starts the longest units first, in the order
# of the last run's durations, and sends every compile to the persistent JAX cache); measured times:
# docs/experiments/2026-11-27-suite-time.md. TEST_WORKERS=0: one process.
TEST_WORKERS ?= 2
test: $(STAMP) stockfish lint
	$(PY) -m pytest -q -n $(TEST_WORKERS) --durations=15 $(ARGS)

lint: $(STAMP)
	$(PY) -m ruff check .

test-fast: $(STAMP)
	$(PY) -m pytest -q -n $(TEST_WORKERS) -m "not slow" $(ARGS)

bench: $(STAMP)
	for b in bench/*.py; do $(PY) $$b; done

clean:
	rm -rf $(VENV) .pytest_cache

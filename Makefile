# The README's two commands: `make run` and `make test`. Both create .venv on a fresh machine.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test bench lint clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ".[test,experiments,bench]"
	touch $(STAMP)

# The default convergence study (Leduc; CFR, CFR+, DCFR, outcome sampling; 16 seeds): a few
# minutes on 2 cores; resumes if interrupted; prints where the plots and the report are.
run: $(STAMP)
	$(BIN)/python -m experiments convergence --config experiments/studies/default.toml --out results/default

# The default suite (not `slow`) spread over up to 4 worker processes (pytest-xdist; one per
# core): most of its time is single-threaded XLA compilation. `-n 0` runs it in one process.
test: $(STAMP)
	$(BIN)/python -m pytest -q -n auto --maxprocesses=4

bench: $(STAMP)
	$(BIN)/python -m experiments.benchmarks compile

lint: $(STAMP)
	$(BIN)/pip install -q ruff
	$(BIN)/ruff format --check games_tensor jaxcfr experiments tests
	$(BIN)/ruff check games_tensor jaxcfr experiments tests

clean:
	rm -rf $(VENV)

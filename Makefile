# BitGrid. `make demo` and `make test` do all the set-up on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.bitgrid-installed
# Parallel test workers (pytest-xdist); the machines we target have 2 cores.
JOBS   ?= 2

.PHONY: all setup demo test test-slow test-all bench clean clean-cache distclean

all: demo

$(STAMP): pyproject.toml tools/system-deps.sh
	sh tools/system-deps.sh
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@# numba compiles the emulator kernel once into its cache here, so no test or run pays it.
	$(BIN)/python -c 'import bitgrid.kernel as k; print(f"emulator kernel compiled in {k.warm_up():.1f} s")'
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/bitgrid demo --output out/demo

test: $(STAMP)
	$(BIN)/python -m pytest -n $(JOBS) -m "not slow" --durations=10

test-slow: $(STAMP)
	$(BIN)/python -m pytest -n $(JOBS) -m slow --durations=10

test-all: $(STAMP)
	$(BIN)/python -m pytest -n $(JOBS) --durations=10

# The whole benchmark suite (11 minutes on an idle 2-core machine, 6 of them the mesh link part; not
# part of `make test`; the boards part reads earlier build reports): prints the
# tables, writes out/bench/bench.json and out/bench/scaling.png. matplotlib (the `bench` extra)
# is installed here only, for the plot. `python -m bitgrid.bench --quick` is a shorter run.
bench: $(STAMP)
	$(BIN)/python -c "import matplotlib" 2>/dev/null || \
	  $(BIN)/python -m pip install --quiet -e '.[test,bench]'
	$(BIN)/python -m bitgrid.bench

clean:
	rm -rf out build sim_build .pytest_cache
	find . -name __pycache__ -prune -exec rm -rf {} +

# Simulator builds are cached by content in $BITGRID_CACHE (default ~/.cache/bitgrid).
clean-cache:
	rm -rf "$${BITGRID_CACHE:-$$HOME/.cache/bitgrid}"

distclean: clean
	rm -rf $(VENV) *.egg-info

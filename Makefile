# fixedqmc: every target does its own set-up (a local .venv) on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.installed

.PHONY: run test test-heavy test-slow bench study clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

## run: the project's main job on its built-in default: a reduced bit-width study of He3
run: $(STAMP)
	$(PY) studies/helium_bitwidth/study.py --reduced

## test: the test suite without the heavy and slow tests, two worker processes
test: $(STAMP)
	$(PY) -m pytest -m "not slow and not heavy" -q -n 2 --dist loadgroup --durations=20

## test-heavy: the tests that compile large kernel families of their own (CI runs these too)
test-heavy: $(STAMP)
	$(PY) -m pytest -m "heavy and not slow" -q -n 2 --dist loadgroup --durations=20

## test-slow: only the long tests
test-slow: $(STAMP)
	$(PY) -m pytest -m slow -q -n 2 --dist loadgroup

bench: $(STAMP)
	$(VENV)/bin/fixedqmc bench numerics
	$(VENV)/bin/fixedqmc bench floats
	$(VENV)/bin/fixedqmc bench tables
	$(VENV)/bin/fixedqmc bench lutexp
	$(VENV)/bin/fixedqmc bench helium
	$(VENV)/bin/fixedqmc bench h2

## study: the full helium bit-width study (about half an hour on 2 cores)
study: $(STAMP)
	$(PY) studies/helium_bitwidth/study.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info

# fixedqmc: every target does its own set-up (a local .venv) on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.installed

.PHONY: run test test-slow bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

## run: the project's main job on its built-in default
run: $(STAMP)
	$(VENV)/bin/fixedqmc info
	$(VENV)/bin/fixedqmc bench numerics

## test: the test suite (slow tests excluded)
test: $(STAMP)
	$(PY) -m pytest -m "not slow" -q

## test-slow: only the long tests
test-slow: $(STAMP)
	$(PY) -m pytest -m slow -q

bench: $(STAMP)
	$(VENV)/bin/fixedqmc bench numerics

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info

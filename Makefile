# The README's two commands are `make demo` and `make test`; both set up .venv first.
VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=

.PHONY: setup demo test lint

setup: $(VENV)/.installed

# torch first, from the CPU wheel: nothing later may resolve a CUDA build.
$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e ".[probes,dev]"
	touch $@

demo: setup
	$(VENV)/bin/probewatch db upgrade
	$(VENV)/bin/probewatch demo

test: setup
	$(PY) -m pytest -n 2 -q $(PYTEST_ARGS)

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy probewatch bot pr_miner probe_builder runners task_registry gh_actions bench \
		--exclude 'task_registry/migrations'


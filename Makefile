# `make repro`: install everything, then run the pipeline on params.yaml.
# `make test`:  install everything, then run the test suite.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
export DVC_NO_ANALYTICS := 1

.PHONY: install repro test bench
install: $(BIN)/lttw
$(BIN)/lttw: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q "torch==2.13.0" -e ".[test]"
	touch $@

repro: install
	. $(BIN)/activate && dvc repro

test: install
	. $(BIN)/activate && HF_HUB_OFFLINE=1 python -m pytest -q

# `make install`: the virtual environment with the package and the extras the test suite
#                 exercises (train, test, bench, tune, cluster, ray; each one's purpose:
#                 docs/how-to/install.md, "Extras").
# `make repro`:   the pipeline on params.yaml (`dvc repro`).
# `make test`:    lint, types, the docs site, then the test suite (its numeric tests twice: the
#                 CPU's own kernels, then another family); `make lint`: ruff (lint +
#                 format check) and mypy, the rules in pyproject.toml; `make docs`: the docs
#                 site (mkdocs build --strict).
# `make exp NAME=paper`: one experiment grid of experiments/ (`lttw exp list` names them).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
TORCH  ?= torch==2.13.0

export DVC_NO_ANALYTICS := 1

.PHONY: install repro test lint docs exp
install: $(BIN)/lttw
$(BIN)/lttw: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q $(TORCH) -e ".[train,test,bench,tune,cluster,ray]"
	touch $@

repro: install
	. $(BIN)/activate && dvc repro

# the README's test command (CI runs it): lint, types and the docs site first, then pytest,
# then the tests that compare floats again under another CPU kernel family (tools/other_kernels.py),
# a clone of this commit with nothing beside it (tools/standalone_check.sh), and the slim
# serving install in a fresh venv without torch, as deploy/Dockerfile makes it (deploy/serve_check.py)
test: install
	. $(BIN)/activate && ruff check . && ruff format --check . && mypy \
	 && NO_MKDOCS_2_WARNING=1 mkdocs build --strict \
	 && HF_HUB_OFFLINE=1 python -m pytest -q -n 2 --dist loadgroup \
	 && HF_HUB_OFFLINE=1 python tools/other_kernels.py \
	 && bash tools/standalone_check.sh && python deploy/serve_check.py

lint: install
	. $(BIN)/activate && ruff check . && ruff format --check . && mypy

docs: install
	. $(BIN)/activate && mkdocs build --strict

# A grid's cells not collected yet as queued DVC experiments, run, then collected into
# evidence/runs/<cell>/ (`lttw report` renders them). EXP: more `lttw exp run` options, e.g.
# EXP="--queue", EXP="--only lttw -S model.encoder=bert-base-cased", EXP="--runner direct --jobs 2".
NAME ?=
EXP  ?=
exp: install
	@test -n "$(NAME)" || { echo 'make exp NAME=<grid>; the grids:'; . $(BIN)/activate && lttw exp list; exit 2; }
	. $(BIN)/activate && lttw exp run $(NAME) $(EXP) && lttw report

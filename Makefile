# `make repro`: install everything, then run the pipeline on params.yaml.
# `make test`:  install everything, then run the test suite.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
TORCH  ?= torch==2.13.0

export DVC_NO_ANALYTICS := 1

.PHONY: install repro test bench
install: $(BIN)/lttw
$(BIN)/lttw: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q $(TORCH) -e ".[test,bench]"
	touch $@

repro: install
	. $(BIN)/activate && dvc repro

test: install
	. $(BIN)/activate && HF_HUB_OFFLINE=1 python -m pytest -q -n 2 --dist loadgroup

# `make lint`: ruff (lint + format check) and mypy on src/, the rules in pyproject.toml
.PHONY: lint
lint: install
	. $(BIN)/activate && ruff check . && ruff format --check . && mypy

# The paper's configuration (SPEC: 10 folds, batch 128, lr 2e-5, rank 5, k 10, s 10, depth 1,
# K 32) as one DVC experiment, on the largest balanced AG News sample the local copy holds.
# Add ENCODER=bert-base-cased where the Hugging Face hub is reachable.
ENCODER ?= sentence-transformers/all-MiniLM-L6-v2
PAPER := -S data.train_size=52000 -S data.test_size=4000 -S data.predict_size=3600 \
	-S 'folds.run=[0,1,2,3,4,5,6,7,8,9]' -S model.encoder=$(ENCODER) -S model.max_len=128 \
	-S train.batch_size=128 -S train.lr=2e-5 -S train.head_lr=2e-5 -S train.epochs=3 \
	-S nmf.rank=5 -S model.k=10 -S model.s=10 -S model.depth=1 -S model.linformer_k=32
.PHONY: paper ablations baselines
paper: install
	. $(BIN)/activate && dvc exp run -n paper $(PAPER)

# Queued experiments run in a temporary copy of the repository (.dvc/tmp/exps), where the
# relative ../shared/datasets does not exist: they get the datasets folder as an absolute path.
DATA_ROOT ?= $(abspath ../shared/datasets)
QUEUE := dvc exp run --queue -S data.root=$(DATA_ROOT)

# The four ablations of Table 5 as queued experiments, run one after another, then compared.
ablations: install
	. $(BIN)/activate && $(QUEUE) -n lttw -S model.fusion=concat -S model.attention=linformer \
	 && $(QUEUE) -n lttw-m -S model.fusion=none -S model.attention=linformer \
	 && $(QUEUE) -n lttw-l -S model.fusion=concat -S model.attention=none \
	 && $(QUEUE) -n lttw-att -S model.fusion=concat -S model.attention=mha \
	 && dvc queue start && dvc queue logs --follow lttw-att; dvc exp show --only-changed

# Every comparator on the same samples and folds.
baselines: install
	. $(BIN)/activate && for v in $$(python -c 'from lttw.settings import BASELINES; print(*BASELINES)'); do \
	  $(QUEUE) -n $$v -S model.variant=$$v || exit 1; done \
	 && dvc queue start && dvc exp show --only-changed

# The paper's sweeps (section 4.3, Tables 6-8) as DVC experiment grids: one queued experiment
# per setting on this commit's samples and folds, then `lttw report` renders each table.
# SWEEP: more `lttw sweep` options, e.g. SWEEP="--frozen -S folds.run=[0,1,2,3,4]".
SWEEP ?=
.PHONY: table6 table7 table8
table6 table7: install
	. $(BIN)/activate && lttw sweep $@ $(SWEEP) && lttw report
table8: install
	. $(BIN)/activate && for s in $$(python -c 'from lttw.reporting.sweeps import TABLE8; print(*TABLE8)'); do \
	  lttw sweep $$s $(SWEEP) || exit 1; done && lttw report

# The paired study (issue 27, evidence/study.yaml: datasets x variants x folds and a learning
# curve): queue every cell not collected yet and run the queue in the background, one at a
# time; later `python tools/evidence.py collect && lttw report` (results accumulate; commit
# evidence/runs). EVIDENCE: more options, e.g. EVIDENCE="--only ag_news".
EVIDENCE ?=
.PHONY: evidence
evidence: install
	. $(BIN)/activate && python tools/evidence.py queue $(EVIDENCE) && dvc queue start -j 1

# Chinese text (issues 12, 26): THUCNews news titles at a CPU profile (8,000 train titles, one
# fold, max_len 48; words.splitter auto -> jieba from the manifest), every variant at its
# defaults, LTTW-M, LTTW and the encoder without model.extend_vocab, LTTW at the paper's k = s = 10
# (the default model.k / model.s auto gives 5 + 5 here), LTTW and TF-IDF at the defaults before
# issue 26 (rank 5, k = s = 10 and the planned
# epochs only; jieba words and logistic regression), TF-IDF at 3,000 titles, and the BiLSTM on
# characters initialised from the manifest's Tencent character vectors.
ZH := -S data.dataset=thucnews -S data.train_size=8000 -S data.test_size=2000 \
	-S data.predict_size=2000 -S model.max_len=48
.PHONY: chinese
chinese: install
	. $(BIN)/activate && for v in tfidf_linear lttw encoder transformer bilstm_attention; do \
	  $(QUEUE) -n zh-$$v $(ZH) -S model.variant=$$v || exit 1; done \
	 && $(QUEUE) -n zh-lttw-m $(ZH) -S model.fusion=none \
	 && $(QUEUE) -n zh-lttw-no-extend $(ZH) -S model.extend_vocab=false \
	 && $(QUEUE) -n zh-encoder-no-extend $(ZH) -S model.variant=encoder -S model.extend_vocab=false \
	 && $(QUEUE) -n zh-lttw-k10 $(ZH) -S model.k=10 -S model.s=10 \
	 && $(QUEUE) -n zh-lttw-rank5 $(ZH) -S nmf.rank=5 -S train.min_gain=1 -S model.k=10 -S model.s=10 \
	 && $(QUEUE) -n zh-tfidf-jieba-logistic $(ZH) -S model.variant=tfidf_linear \
	    -S words.splitter=jieba -S model.linear_model=logistic \
	 && $(QUEUE) -n zh3k-tfidf_linear $(ZH) -S data.train_size=3000 -S model.variant=tfidf_linear \
	 && $(QUEUE) -n zh-bilstm-charvec $(ZH) -S model.variant=bilstm_attention -S model.vocab=words \
	    -S words.splitter=char \
	 && dvc queue start && dvc queue logs --follow zh-bilstm-charvec; dvc exp show --only-changed

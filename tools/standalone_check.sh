#!/usr/bin/env bash
# That a clone of this commit stands alone: cloned into an empty temporary folder (no dataset
# folder or anything else beside it, LTTW_DATA_ROOT unset), it runs the dataset-facing tests
# and the `sample` stage of the default profile on the embedded AG News sample (~30 s).
# `make test` runs it (with the .venv's tools first on PATH).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
alone="$(mktemp -d)"
trap 'rm -rf "$alone"' EXIT
git clone -q "$repo" "$alone/lttw"
cd "$alone/lttw"
unset LTTW_DATA_ROOT
export PYTHONPATH="$PWD/src" HF_HUB_OFFLINE=1
python -m pytest -q -p no:cacheprovider tests/project/test_no_outside_paths.py \
  tests/data/test_embedded_dataset.py tests/data/test_fetch.py tests/data/test_data.py \
  tests/e2e/test_words_wiring.py
python stages/sample.py
python -c "import json; print(json.load(open('data/sample/labels.json'))['sizes'])"

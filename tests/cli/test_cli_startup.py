"""Start-up of the command line (issue 13.7), guarded without timing: `lttw --help` imports
none of torch / transformers / pandas, and `lttw predict TEXT` imports neither pandas nor
scikit-learn's model selection nor the pipeline's data side, nor transformers (a BERT folder
loads as ``PlainBert`` + ``WordPieceFile``), nor ``torch._dynamo`` (1 s to import). The
timing itself is `bench/startup.py cli`."""

from __future__ import annotations

import json
import subprocess
import sys

from support.model_folders import build_model_folder

HEAVY = ["torch", "transformers", "pandas", "sklearn", "scipy", "pyarrow"]

RUN_AND_LIST = """
import json, sys
from lttw.cli import app
try:
    app(sys.argv[1:])
except SystemExit as stop:
    assert not stop.code, stop.code
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def imported_by(*args: str) -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-c", RUN_AND_LIST, *args], capture_output=True, text=True, check=True
    )
    return set(json.loads(proc.stderr.strip().splitlines()[-1]))


def test_help_imports_no_heavy_library():
    modules = imported_by("--help")
    assert not {m for m in HEAVY if m in modules}
    assert not {m for m in modules if m.startswith("lttw.") and not m.startswith("lttw.cli")} - {
        "lttw.layout",
        "lttw.errors",
        "lttw.console",
        "lttw.choices",
    }  # console: rich only when called


def test_predict_text_imports_no_tables_or_data_side(tmp_path, tiny_encoder_dir):
    folder = build_model_folder(tmp_path / "model", tiny_encoder_dir)
    modules = imported_by("predict", "a good movie", "--model", str(folder))
    assert "torch" in modules  # it did predict
    unwanted = [
        "transformers",
        "torch._dynamo",
        "pandas",
        "pyarrow",
        "sklearn.model_selection",
        "lttw.data.fold_inputs",
        "lttw.data.folds",
        "lttw.training.loop",
        "lttw.inference.batch_predict",
        "lttw.inference.text_sources",
    ]
    assert not [m for m in unwanted if m in modules]

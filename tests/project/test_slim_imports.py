"""The answering path imports none of what the slim install (``pip install lttw``) leaves
out: in a process where torch, transformers, dvc, matplotlib, jieba, scikit-learn, scipy,
onnx and pyarrow cannot be imported (``support.torch_free``), the modules that ``lttw
predict`` and ``lttw serve`` run on an ONNX model folder import, and the CLI starts. The
end-to-end run (predict, serve, ``load_model`` on a real export) is
tests/serving/test_slim_runtime.py; a real environment without them, deploy/serve_check.py."""

from __future__ import annotations

from support.torch_free import CLI, LEFT_OUT, run_without

#: what answering with an ONNX folder imports, first to last
ANSWERING = [
    "lttw",
    "lttw.cli",
    "lttw.models.bundle",
    "lttw.models.folder_files",
    "lttw.models.calibration",
    "lttw.models.trained",
    "lttw.text.words",
    "lttw.encoder.tokenizer",
    "lttw.encoder.tokens",
    "lttw.factors.features",
    "lttw.inference.predict",
    "lttw.inference.batch_predict",
    "lttw.inference.text_sources",
    "lttw.inference.answers",
    "lttw.inference.loading",
    "lttw.models.onnx_classifier",
    "lttw.models.model_folder",
    "lttw.serving.server",
    "lttw.serving.info",
]


def test_answering_modules_import_without_the_left_out_packages():
    """... and the CLI's help for the answering commands shows (typer's test runner)."""
    code = (
        "import importlib, json, sys\n"
        f"for name in {ANSWERING!r}:\n"
        "    importlib.import_module(name)\n"
        "from typer.testing import CliRunner\n"
        "from lttw.cli import app\n"
        "for args in ([], ['predict', '--help'], ['serve', '--help']):\n"
        "    result = CliRunner().invoke(app, args)\n"
        "    assert 'Usage' in result.output, (args, result.output)\n"
        f"print(json.dumps(sorted({{m.partition('.')[0] for m in sys.modules}} & {set(LEFT_OUT)!r})))\n"
    )
    done = run_without(code)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_the_guard_blocks():
    """The check is live: a module that needs torch fails under the guard."""
    done = run_without("import lttw.models.registry")
    assert done.returncode != 0 and "No module named 'torch'" in done.stderr


def test_a_command_of_the_train_extra_says_what_to_install(tmp_path):
    """``lttw init`` sets up a training project: one line naming the extra, exit code 2,
    nothing written."""
    data = tmp_path / "texts.csv"
    data.write_text("text,label\na b,x\nc d,y\n", encoding="utf-8")
    done = run_without(CLI, "init", "project", "--data", str(data), cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-3000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'lttw[train]'" in lines[0], lines
    assert not (tmp_path / "project").exists()

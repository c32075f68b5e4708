"""The model card (issue 64 item 2, issue 66 defect 12): README.md made by
``huggingface_hub`` that ``ModelCard.load`` reads back whole (licence, language, datasets,
metrics, base model, the model-index holding the estimate and its interval), every label
escaped, only the trained variant's settings, and `lttw verify` holding the model-index to
metrics.json (through the real command on the tiny model folder)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from huggingface_hub import ModelCard
from support.serving_models import shared_lttw_folder
from typer.testing import CliRunner

from lttw import cli
from lttw.models.card import card_metrics, write_card
from lttw.models.card_text import VARIANT_NAMES, card_source, render_card, trained_params
from lttw.settings.variants import MODEL_PARAMS, VARIANTS

HOSTILE = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(2)>',
    "a | b",
    "two\nlines\n---\ntitle: pwned",
    "[x](javascript:alert(3))",
]
ESTIMATE = {
    "f1_macro": 0.9012345678901234,
    "f1_macro_low": 0.85,
    "f1_macro_high": 0.94,
    "n": 400,
    "level": 0.95,
    "accuracy": 0.91,
    "ece": 0.031,
}
ABOUT = {
    "model": "models/final",
    "rows": "every labelled row the user gave",
    "calibration": "the first fold's temperature",
    "estimate_source": "the folds' out-of-fold predictions",
}
PARAMS = {
    "seed": 1,
    "model": {"variant": "lttw", "k": 3, "leam_r": 2, "cnn_channels": 8, "linear_model": "svm"},
    "nmf": {"rank": 3},
}
MANIFEST = {"hub_dataset": "org/reviews", "language": "en", "license": "CC-BY-4.0"}


def card(labels: list[str], manifest: dict | None = MANIFEST, license=None) -> tuple[dict, str]:
    info = {"dataset": "reviews", "classes": labels}
    about = {**ABOUT, "label_counts": list(range(100, 100 + len(labels)))}
    record = {"trained_on": 2000, "classes": len(labels), "estimate": ESTIMATE}
    doc = card_metrics(record, about, info, {"lttw": "0.1.0", "code_sha256": "ab"})
    meta = {"variant": "lttw", "encoder": "org/encoder", "max_len": 64}
    source = card_source(manifest, license)
    return doc, render_card(doc, about, meta, info, PARAMS, source)


def test_the_hub_library_reads_the_card_back_whole(tmp_path):
    _, text = card(["bad", "good"])
    (tmp_path / "README.md").write_text(text)
    loaded = ModelCard.load(tmp_path / "README.md")
    data = loaded.data
    assert (data.license, data.language, data.datasets) == ("cc-by-4.0", "en", ["org/reviews"])
    assert (data.base_model, data.library_name) == ("org/encoder", "lttw")
    assert data.pipeline_tag == "text-classification" and data.metrics == ["f1", "accuracy"]
    assert data.model_name == "LTTW text classifier for reviews"  # a name, not a path
    values = {r.metric_name: r.metric_value for r in data.eval_results}
    assert values == {
        "macro F1": ESTIMATE["f1_macro"],
        "macro F1, 95% interval low": 0.85,
        "macro F1, 95% interval high": 0.94,
        "accuracy": 0.91,
    }
    assert {r.dataset_type for r in data.eval_results} == {"org/reviews"}
    body = loaded.text
    assert body.lstrip().startswith("# LTTW text classifier for reviews")
    for heading in ("Intended use", "How to use", "Training data", "Evaluation", "Limitations"):
        assert f"\n## {heading}\n" in body
    assert "lttw.load_model" in body and "lttw predict" in body
    # only the trained variant's settings: no leam / encoder_cnn / tfidf_linear ones
    assert '"k": 3' in body and "leam_r" not in body and "cnn_channels" not in body
    assert "linear_model" not in body and '"nmf"' in body
    assert set(VARIANT_NAMES) == set(MODEL_PARAMS) == set(VARIANTS)  # every variant named
    tfidf = trained_params({"model": {"variant": "tfidf_linear", "k": 3}, "nmf": {}, "counts": {}})
    assert tfidf == {"model": {"variant": "tfidf_linear"}, "counts": {}}


def test_the_licence_comes_from_the_parameter_the_manifest_or_is_unknown():
    assert card_source(None, None)["license"] == "unknown"
    assert card_source({"license": "MIT"}, "apache-2.0")["license"] == "apache-2.0"
    free = card_source({"licence": "research use only\n---"}, None)
    assert free["license"] == "other" and free["license_text"] == "research use only ---"
    _, text = card(["bad", "good"], {"licence": "research <b>use</b> only"})
    assert "license: other" in text and "research &#60;b&#62;use" in text


def test_hostile_labels_stay_text_in_one_table_under_the_same_front_matter(tmp_path):
    from markdown_it import MarkdownIt

    (tmp_path / "plain.md").write_text(card(["bad", "good"])[1])
    _, text = card(HOSTILE)
    (tmp_path / "README.md").write_text(text)
    loaded = ModelCard.load(tmp_path / "README.md")
    front = loaded.data.to_dict()
    assert front.keys() == ModelCard.load(tmp_path / "plain.md").data.to_dict().keys()
    assert "title" not in front and text.count("\n---\n") == 1  # front matter's own lines
    assert not re.search(r"<\s*(script|img|a)\b", text, re.IGNORECASE)  # no raw HTML tag
    html = MarkdownIt("commonmark").enable("table").render(loaded.text)
    assert not re.search(r"<\s*(script|img|a)\b", html, re.IGNORECASE)  # nor once rendered
    table = html[html.index("<table>") : html.index("</table>")]
    rows = re.findall(r"<tr>(.*?)</tr>", table, re.DOTALL)
    assert len(rows) == 1 + len(HOSTILE)  # the header, then one row per label
    assert all(row.count("<td>") == 2 for row in rows[1:])  # no label adds a cell
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in rows[1]  # shown as written
    assert "a | b" in rows[3] and "two lines --- title: pwned" in rows[4]


@pytest.fixture(scope="module")
def carded(tmp_path_factory, tiny_encoder_dir) -> Path:
    """The tiny model folder with a card and the checksums of all its files."""
    from lttw.models.folder_files import record_checksums

    folder = tmp_path_factory.mktemp("carded") / "model"
    shutil.copytree(shared_lttw_folder(tmp_path_factory, tiny_encoder_dir), folder)
    write_card(folder, *card(["world", "sports", "business"]))
    record_checksums(folder)
    return folder


def test_verify_holds_the_cards_model_index_to_metrics_json(carded, tmp_path):
    from lttw.models.folder_files import record_checksums

    passed = CliRunner().invoke(cli.app, ["verify", str(carded)])
    assert passed.exit_code == 0, passed.output
    assert "model card: 2,000 training texts" in passed.stdout
    folder = tmp_path / "model"
    shutil.copytree(carded, folder)
    readme = folder / "README.md"
    readme.write_text(readme.read_text().replace("value: 0.94", "value: 0.99"))
    record_checksums(folder)  # the checksums agree: only the card's number is wrong
    failed = CliRunner().invoke(cli.app, ["verify", str(folder)])
    assert failed.exit_code == 3, failed.output
    assert "Traceback" not in failed.output
    errors = failed.stderr.strip().splitlines()
    assert len(errors) == 1 and errors[0].startswith("error: ")
    assert "'macro F1, 95% interval high' is 0.99, metrics.json says 0.94" in errors[0]


def test_verify_refuses_a_card_whose_front_matter_is_no_model_cards(carded, tmp_path):
    from lttw.models.folder_files import record_checksums

    folder = tmp_path / "model"
    shutil.copytree(carded, folder)
    (folder / "README.md").write_text("---\nlicense: &a [mit]\ntags: *a\n---\n# card\n")
    record_checksums(folder)
    failed = CliRunner().invoke(cli.app, ["verify", str(folder)])
    assert failed.exit_code == 3 and "Traceback" not in failed.output
    errors = failed.stderr.strip().splitlines()
    assert len(errors) == 1 and "README.md: its front matter is not a model card's" in errors[0]


def test_the_dataset_manifest_a_card_reads_is_bounded(tmp_path):
    from lttw.errors import UserError
    from lttw.training.final_card import MANIFEST_MAX_BYTES, dataset_manifest

    folder = tmp_path / "datasets" / "reviews"
    folder.mkdir(parents=True)
    assert dataset_manifest("datasets", "reviews", tmp_path) == {}  # none: nothing to say
    (folder / "manifest.json").write_text('{"license": "mit"}')
    assert dataset_manifest("datasets", "reviews", tmp_path) == {"license": "mit"}
    (folder / "manifest.json").write_text('{"notes": "' + "x" * MANIFEST_MAX_BYTES + '"}')
    with pytest.raises(UserError, match="a manifest is read up to 1,048,576"):
        dataset_manifest("datasets", "reviews", tmp_path)

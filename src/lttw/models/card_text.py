"""A model folder's ``README.md``: a Hugging Face model card made by ``huggingface_hub``
(``ModelCardData`` writes the front matter: licence, language, datasets, metrics, base model,
tags and the model-index holding the estimate and its interval; ``ModelCard`` joins it to the
text) for the card ``lttw.models.card.card_metrics`` makes. Every name and text that comes
from the data (labels, the dataset's name, its licence) is escaped (``md_text``): the card
shows it as written and no label can add markup, HTML, table cells or front matter.
"""

from __future__ import annotations

import json
import re
import unicodedata

from lttw.models.card import card_results, headline, percent

#: characters that Markdown or HTML would read as markup, written as numeric character
#: references in the card's text (``md_text``)
_MARKUP = frozenset("\\`*_[]<>&|#~$")
#: a human name per variant, for the card's title
VARIANT_NAMES = {
    "lttw": "LTTW",
    "encoder": "fine-tuned encoder",
    "encoder_cnn": "encoder + CNN",
    "transformer": "Transformer",
    "bilstm_attention": "BiLSTM with attention",
    "leam": "LEAM",
    "tfidf_linear": "TF-IDF linear",
    "lttw_tfidf": "LTTW + TF-IDF ensemble",
}
_LICENSE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+-]{0,63}")


def md_text(value) -> str:
    """``value`` as one line of Markdown that shows it as written: line breaks and other
    control or format characters become spaces, every character Markdown or HTML reads as
    markup (``<``, ``|``, ``*``, ``[``, ``&``, ...) a numeric character reference."""
    out = []
    for char in str(value):
        if char in _MARKUP:
            out.append(f"&#{ord(char)};")
        elif unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp"):
            out.append(" ")
        else:
            out.append(char)
    return "".join(out)


def _one_line(value) -> str:
    """``value`` with line breaks and control characters as spaces (front matter strings)."""
    return " ".join(
        "".join(c if unicodedata.category(c)[0] != "C" else " " for c in str(value)).split()
    )


def hub_name(encoder) -> bool:
    """Whether ``encoder`` names a hub model (``org/name``), not a local folder."""
    text = str(encoder or "")
    return text.count("/") == 1 and not text.startswith((".", "/", "~"))


def card_license(license: str | None, manifest: dict) -> tuple[str, str | None]:
    """The card's ``license`` and the licence text where it is free text: the parameter
    ``license`` (``final.license``) where given, else the manifest's ``license`` (or
    ``licence``); a licence id as it is (lower case), free text ``other``, none ``unknown``."""
    stated = license or manifest.get("license", manifest.get("licence"))
    if not isinstance(stated, str) or not stated.strip():
        return "unknown", None
    if _LICENSE_ID.fullmatch(stated.strip()):
        return stated.strip().lower(), None
    return "other", _one_line(stated)


def trained_params(params: dict) -> dict:
    """The groups of ``params`` (``{group: {name: value}}`` and single values) a card lists:
    ``model`` cut to what its variant reads (``settings.variants.MODEL_PARAMS``), ``nmf``
    where latent factors are fused, ``counts`` and ``words`` where they or a TF-IDF model
    are, or the model embeds the counts' words."""
    from lttw.settings.variants import (
        ENSEMBLE_VARIANTS,
        FACTOR_VARIANTS,
        MODEL_PARAMS,
        NON_NEURAL_VARIANTS,
        WORD_VOCAB_VARIANTS,
    )

    model = params.get("model")
    if not isinstance(model, dict):
        return params
    variant = model.get("variant", "lttw")
    keep = MODEL_PARAMS.get(variant, tuple(model))
    factors = variant in FACTOR_VARIANTS and model.get("fusion") != "none"
    tfidf = variant in NON_NEURAL_VARIANTS | ENSEMBLE_VARIANTS
    words = variant in WORD_VOCAB_VARIANTS and model.get("vocab") == "words"
    drop = {
        "nmf": not factors,
        "counts": not (factors or tfidf),
        "words": not (factors or tfidf or words),
    }
    shown = {k: v for k, v in params.items() if not drop.get(k, False)}
    return {**shown, "model": {k: v for k, v in model.items() if k in keep}}


def card_data(doc: dict, meta: dict, labels_info: dict, source: dict):
    """The card's front matter (``huggingface_hub.ModelCardData``). ``source``: the dataset's
    manifest fields and the licence (``card_source``)."""
    from huggingface_hub import ModelCardData

    variant, encoder = meta.get("variant", "?"), meta.get("encoder")
    name = _one_line(labels_info.get("dataset", "dataset")) or "dataset"
    hub = source.get("hub_dataset")
    dataset = _one_line(hub) if isinstance(hub, str) and hub else name
    language = labels_info.get("language") or source.get("language")
    results = card_results(doc, dataset, name)
    return ModelCardData(
        model_name=card_title(variant, name),
        license=source.get("license", "unknown"),
        language=_one_line(language) if isinstance(language, str) else None,
        datasets=[dataset],
        metrics=list(dict.fromkeys(r.metric_type for r in results)) or None,
        base_model=encoder if hub_name(encoder) else None,
        library_name="lttw",
        pipeline_tag="text-classification",
        tags=list(dict.fromkeys(["lttw", "text-classification", _one_line(variant)])),
        eval_results=results or None,
    )


def card_title(variant: str, dataset: str) -> str:
    """The model's human name: its kind of classifier and the dataset it learnt."""
    kind = VARIANT_NAMES.get(variant, _one_line(variant))
    return f"{kind} text classifier for {_one_line(dataset)}"


def card_source(manifest: dict | None, license: str | None) -> dict:
    """What the card says of its data beyond ``labels.json``: the manifest's hub dataset and
    language, and the licence (``card_license``)."""
    manifest = manifest if isinstance(manifest, dict) else {}
    chosen, text = card_license(license, manifest)
    facts = {
        k: manifest[k] for k in ("hub_dataset", "language") if isinstance(manifest.get(k), str)
    }
    return {**facts, "license": chosen, **({"license_text": text} if text else {})}


def render_card(
    doc: dict,
    about: dict,
    meta: dict,
    labels_info: dict,
    params: dict,
    source: dict | None = None,
) -> str:
    """``README.md`` of the card ``doc`` (``card_metrics``): front matter by
    ``huggingface_hub.ModelCardData``, then intended use, how to use, training data,
    evaluation, limitations, parameters and code version; every name and text from the data
    escaped (``md_text``). ``source``: ``card_source``'s dict."""
    from huggingface_hub import ModelCard

    source = source or card_source(None, None)
    data = card_data(doc, meta, labels_info, source)
    dataset = md_text(labels_info.get("dataset", "?"))
    multi = bool(meta.get("multi_label"))
    lines = [
        f"# {md_text(data.model_name)}",
        "",
        f"A text classifier made with lttw (variant {md_text(meta.get('variant', '?'))}): "
        f"{md_text(headline(doc))}.",
        "",
        "## Intended use",
        "",
        "Sorting texts like its training data into the "
        f"{doc.get('classes', 0)} classes below"
        + (" (several labels per text: multi-label)." if multi else " (one label per text)."),
        "Decisions that matter need a person to check its answers: the figures below are "
        "averages over texts like the training data.",
        "",
        "## How to use",
        "",
        "```bash",
        'lttw predict --model DIR "a text to classify"',
        "lttw serve --model DIR",
        "```",
        "",
        "```python",
        "import lttw",
        "",
        'model = lttw.load_model("DIR")',
        'model.predict(["a text to classify"])  # labels; predict_proba: probabilities',
        "```",
        "",
        "## Training data",
        "",
        f"- dataset: {dataset}"
        + (
            f" ({md_text(source['hub_dataset'])} on the Hugging Face hub)"
            if "hub_dataset" in source
            else ""
        ),
        f"- licence: {md_text(source.get('license_text') or data.license)}",
        f"- trained on {doc.get('rows') or 0:,} labelled texts: {md_text(about.get('rows', '?'))}",
        "",
        "| label | training texts |",
        "| --- | --- |",
        *(f"| {md_text(label)} | {int(n):,} |" for label, n in doc.get("label_counts", {}).items()),
        "",
        *_evaluation(doc),
        "## Limitations",
        "",
        *(
            [
                f"- texts are cut at {meta.get('max_len', '?')} tokens (`model.max_len`): words beyond do not count"
            ]
            if meta.get("variant") != "tfidf_linear"
            else []
        ),
        "- it only knows the labels above; every text gets one of them (multi-label: a set)",
        "- the estimate holds for texts like the training data; other sources, languages or "
        "periods can score lower",
        "",
        "## Parameters",
        "",
        "```json",
        json.dumps(trained_params(params), indent=1, sort_keys=True, default=str),
        "```",
        "",
        "## Code version",
        "",
        f"lttw {md_text(doc.get('code', {}).get('lttw', '?'))}, code sha256 "
        f"{md_text(doc.get('code', {}).get('code_sha256', '?'))}.",
        "",
    ]
    return ModelCard(f"---\n{data.to_yaml()}\n---\n\n" + "\n".join(lines)).content


def _evaluation(doc: dict) -> list[str]:
    """The card's evaluation section: the estimate, the test figure, the calibration."""
    lines = [
        "## Evaluation",
        "",
        f"- estimate: {md_text(headline(doc).split(', from ')[0])}; it comes from "
        f"{md_text(doc.get('estimate_source', '?'))}",
    ]
    test = doc.get("test")
    if test and "f1_macro" in test:
        lines.append(
            f"- held-out test sample ({test.get('n', 0):,} texts): macro P / R / F1 "
            f"{percent(test.get('precision_macro'))} / {percent(test.get('recall_macro'))} / "
            f"{percent(test.get('f1_macro'))}%"
        )
    calibration = doc.get("calibration", {})
    ece = calibration.get("ece")
    return lines + [
        f"- calibration: {md_text(calibration.get('how') or 'none recorded')}",
        "- expected calibration error on the estimate's texts: "
        + (f"{ece:.4f}" if isinstance(ece, float) else "n/a (multi-label, or not measured)"),
        "",
    ]

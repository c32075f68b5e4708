"""A model folder's card: ``README.md`` for people and the Hugging Face hub (a model card
made by ``huggingface_hub``: ``lttw.models.card_text``) and ``metrics.json`` for programs
(``GET /info``'s ``metrics``, ``lttw verify``). The README's model-index holds the estimate of
``metrics.json`` (``card_results``); ``lttw verify`` checks that they agree (``card_problems``).

The final stage writes both into ``models/final`` (``training.final_card``); ``lttw
export`` carries them, or writes them for a fold's folder that has none (``reporting.fold_card``).
"""

from __future__ import annotations

from pathlib import Path

from lttw.io import atomic_path, load_yaml, read_json, write_json
from lttw.models.files import CARD, METRICS

#: the version of ``metrics.json``'s layout
CARD_VERSION = 1


def percent(value) -> str:
    """``value`` (a share) as a percentage with one decimal; ``n/a`` where it is no number."""
    return f"{100 * value:.1f}" if isinstance(value, (int, float)) else "n/a"


def _interval(block: dict) -> str:
    low, high = block.get("f1_macro_low"), block.get("f1_macro_high")
    if not isinstance(low, (int, float)) or not isinstance(high, (int, float)):
        return ""
    level = int(round(100 * block.get("level", 0.95)))
    return f" ({level}% interval {percent(low)} to {percent(high)})"


def headline(doc: dict) -> str:
    """One line: the deployed model's macro F1 with its interval and source, from a card's
    ``metrics.json`` (``lttw verify``, ``lttw report``)."""
    estimate = doc.get("estimate") or {}
    if "f1_macro" not in estimate:
        return "no quality estimate recorded"
    return (
        f"macro F1 {percent(estimate['f1_macro'])}%{_interval(estimate)} on "
        f"{estimate.get('n', 0):,} texts, from {doc.get('estimate_source', '?')}"
    )


#: the estimate's numbers in the card's model-index: (metrics.json key, metric type, name)
_INDEX = (
    ("f1_macro", "f1", "macro F1"),
    ("f1_macro_low", "f1", "macro F1, {level}% interval low"),
    ("f1_macro_high", "f1", "macro F1, {level}% interval high"),
    ("accuracy", "accuracy", "accuracy"),
)


def card_results(doc: dict, dataset: str, dataset_name: str) -> list:
    """The model-index entries (``huggingface_hub.EvalResult``) of the card ``doc``'s
    estimate: macro F1, its interval's bounds and accuracy, where recorded."""
    from huggingface_hub import EvalResult

    estimate = doc.get("estimate") or {}
    level = int(round(100 * estimate.get("level", 0.95)))
    return [
        EvalResult(
            task_type="text-classification",
            dataset_type=dataset,
            dataset_name=dataset_name,
            dataset_split="test" if doc.get("estimate_source") == "test" else None,
            metric_type=kind,
            metric_name=name.format(level=level),
            metric_value=float(estimate[key]),
            metric_config="macro" if kind == "f1" else None,
        )
        for key, kind, name in _INDEX
        if isinstance(estimate.get(key), (int, float))
    ]


def card_metrics(record: dict, about: dict, labels_info: dict, code: dict) -> dict:
    """``metrics.json``: the model's rows, classes and label counts, its estimate (with its
    interval; ``about["estimate_source"]``: where it comes from, in words), calibration and
    own held-out figures."""
    classes = labels_info.get("classes", [])
    per_class = about.get("label_counts") or (labels_info.get("per_class") or {}).get("train")
    estimate = record.get("estimate", {})
    return {
        "card_version": CARD_VERSION,
        "rows": record.get("trained_on"),
        "rows_from": about.get("rows"),
        "classes": len(classes),
        "label_counts": {str(c): int(n) for c, n in zip(classes, per_class or [], strict=False)},
        "estimate": estimate,
        "estimate_source": about.get("estimate_source", "unknown"),
        "calibration": {"ece": estimate.get("ece"), "how": about.get("calibration")},
        **({"test": record["test"]} if "test" in record else {}),
        "training": {
            k: record[k] for k in ("epochs", "fold_best_epochs", "time_per_epoch_s") if k in record
        },
        "code": code,
    }


def write_card(folder: Path, doc: dict, readme: str) -> None:
    """Write ``metrics.json`` and ``README.md`` into ``folder``."""
    write_json(folder / METRICS, doc)
    with atomic_path(folder / CARD) as tmp:
        tmp.write_text(readme, encoding="utf-8")


def read_card(folder: str | Path) -> dict | None:
    """A folder's ``metrics.json`` when it is a card's (has ``card_version``); else None."""
    path = Path(folder) / METRICS
    if not path.is_file():
        return None
    doc = read_json(path)
    return doc if isinstance(doc, dict) and "card_version" in doc else None


def card_problems(folder: str | Path, doc: dict) -> list[str]:
    """Where the model-index of ``folder``'s README.md (its front matter, read by
    ``huggingface_hub.ModelCardData``) differs from the card ``doc`` (its metrics.json):
    one line per number missing, extra or different; a front matter that cannot be read is
    one line too."""
    import yaml
    from huggingface_hub import ModelCardData
    from huggingface_hub.repocard import REGEX_YAML_BLOCK

    path = Path(folder) / CARD
    try:
        match = REGEX_YAML_BLOCK.search(path.read_text(encoding="utf-8"))
        front = load_yaml(match.group(2)) if match else None
        if not isinstance(front, dict):
            return [f"{path}: no front matter (a YAML mapping between --- lines)"]
        found = ModelCardData(**front).eval_results or []
    except (UnicodeDecodeError, yaml.YAMLError, ValueError, TypeError) as err:
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        return [f"{path}: its front matter is not a model card's ({reason})"]
    card = {r.metric_name: r.metric_value for r in found}
    wanted = {r.metric_name: r.metric_value for r in card_results(doc, "", "")}
    problems = []
    for name in dict.fromkeys([*wanted, *card]):
        value = card.get(name)
        if name not in wanted:
            problems.append(f"{path}: model-index {name!r} is {value!r}; {METRICS} has none")
        elif name not in card:
            problems.append(f"{path}: model-index has no {name!r} ({METRICS}: {wanted[name]})")
        elif (
            isinstance(value, bool) or not isinstance(value, (int, float)) or value != wanted[name]
        ):
            problems.append(
                f"{path}: model-index {name!r} is {value!r}, {METRICS} says {wanted[name]}"
            )
    return problems

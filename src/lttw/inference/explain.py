"""``lttw explain``: why a trained model predicts what it predicts for one text.

* the top-k / bottom-s words the latent-factor features were built from (``top_bottom_words``
  with the model's k, s and ranking), each word's latent-factor row W[w] and its per-class
  affinity W[w] @ H, where H (rank x classes) is the NMF's factor-label matrix, so W[w] @ H is
  the factorisation's reconstruction of the word's label distribution V[w] = n(w, c) / n(w);
* the predicted class probabilities (a multi-label model: each class's sigmoid
  probability and threshold, and the labels chosen);
* the attention that position 0 ([CLS], the position the classifier reads) pays in the last
  attention block, as the model returns it (``output_attentions=True``):
  ``mha``: softmax weights over positions, averaged over heads;
  ``linformer``: softmax weights over the K projected slots, averaged over heads, and a token
  relevance ``weights @ F`` through the value projection F (K x n).

The result is a JSON-able dict (``explain``); ``render`` draws it as rich tables.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from lttw.factors.features import top_bottom_words
from lttw.factors.nmf import FACTORS_FILE
from lttw.factors.slots import slot_fill
from lttw.inference.answers import explained_prediction
from lttw.io import read_arrays
from lttw.models.files import FACTORS

if TYPE_CHECKING:
    import torch

NOTES = {
    "mha": "mha: softmax attention of position 0 ([CLS]) over positions, mean over {heads} "
    "heads, block {block} of {depth}; weights over real positions sum to 1",
    "linformer": "linformer: attention over K={K} projected slots (softmax, mean over {heads} "
    "heads, block {block} of {depth}); token relevance = weights @ value "
    "projection F[:, :n]: the exact coefficient of each token's value vector in "
    "[CLS]'s attention output, but signed and not normalised, so approximate "
    "as an attention map",
    "none": "attention: none (LTTW-L): no attention block, the fused [CLS] features go "
    "straight to the classifier",
    "unavailable": "variant {variant!r} has no LTTW attention block to inspect",
    "onnx": "attention: not shown for an ONNX model (it is read from the torch weights: "
    "explain the folder it was exported from)",
}


def cls_weights(
    attn, weights: torch.Tensor, mask: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Position 0's row of the weights an attention module returned (B, h, n_q, n or K).

    mha: (weights (B, h, n), None). linformer: (slot weights (B, h, K), token relevance
    (B, h, n), the module's ``token_relevance``: slot weights @ F[:, :n], zero at padding).
    """
    import torch

    first = weights[:, :, :1].float()
    if not hasattr(attn, "token_relevance"):  # multi-head
        return first[:, :, 0], None
    with torch.no_grad():
        return first[:, :, 0], attn.token_relevance(first, mask)[:, :, 0]


def _is_lttw(model) -> bool:
    """Only the LTTW classifier's blocks are ``AttentionBlock``s with an ``attn`` module."""
    return getattr(model, "variant", None) == "lttw"


def _slot_words(factors: dict | None, slots: int) -> list[str | None]:
    words: list[str | None] = [None] * slots
    if factors:
        for entry in factors["top"] + factors["bottom"]:
            words[entry["slot"]] = entry["word"]
    return words


def attention_section(predictor, text: str, factors: dict | None) -> dict:
    """The ``attention`` part of an explanation: the last block's weights of position 0."""
    model = predictor.model
    if type(model).__name__ == "OnnxClassifier":  # no torch weights to read attention from
        return {"kind": "unavailable", "note": NOTES["onnx"], "positions": [], "slots": None}
    if not _is_lttw(model):
        variant = predictor.meta["variant"]
        return {
            "kind": "unavailable",
            "note": NOTES["unavailable"].format(variant=variant),
            "positions": [],
            "slots": None,
        }
    cfg = model.config
    if cfg.attention == "none" or not model.blocks:
        return {"kind": "none", "note": NOTES["none"], "positions": [], "slots": None}
    kind = cfg.attention
    mask, attentions, tokens = _attentions(predictor, text)
    attn = model.blocks[-1].attn
    weights, relevance = cls_weights(attn, attentions[-1], mask)
    per_position = (weights if relevance is None else relevance).mean(dim=1)[0]  # (n,)
    labels = model.fusion.position_labels(tokens, _slot_words(factors, cfg.factor_slots))
    real = mask[0].bool().tolist()
    facts = {
        "heads": attn.heads,
        "block": len(model.blocks),
        "depth": len(model.blocks),
        "K": weights.shape[-1],
    }
    note = "; ".join(filter(None, [NOTES[kind].format(**facts), model.fusion.note]))
    return {
        "kind": kind,
        "fusion": cfg.fusion,
        "block": len(model.blocks) - 1,
        "heads": attn.heads,
        "note": note,
        "positions": [
            {"position": i, "token": labels[i], "weight": float(per_position[i])}
            for i in range(len(labels))
            if real[i]
        ],
        "slots": None if relevance is None else weights.mean(dim=1)[0].tolist(),
    }


def factor_section(predictor, text: str) -> dict | None:
    """The selected words, their factor rows and class affinities (None: no factors)."""
    lookup, meta = predictor.lookup, predictor.meta
    if lookup is None:
        return None
    factor_label = read_arrays(predictor.folder / FACTORS / FACTORS_FILE)["factor_label"]
    index = {w: i for i, w in enumerate(lookup.vocabulary)}
    tokens = lookup.splitter(text)  # the model's recorded words.splitter rule
    top, bottom = top_bottom_words(
        tokens, meta["k"], meta["s"], index, lookup.corpus_counts, meta["ranking"]
    )
    in_text = Counter(t for t in tokens if t in index)

    def entry(word: str, kind: str, slot: int) -> dict:
        row = lookup.word_factors[index[word]]
        affinity = row @ factor_label
        return {
            "word": word,
            "kind": kind,
            "slot": slot,
            "count_in_text": in_text[word],
            "corpus_count": int(lookup.corpus_counts[index[word]]),
            "factor": row.tolist(),
            "class_affinity": dict(zip(predictor.classes, affinity.tolist())),
        }

    fill = slot_fill(
        lookup.transform([text], meta["k"], meta["s"], meta["ranking"]), meta["k"], meta["s"]
    )
    return {
        "k": meta["k"],
        "s": meta["s"],
        "ranking": meta["ranking"],
        "rank": lookup.rank,
        "splitter": lookup.splitter.rule,
        "words": tokens,
        "words_in_text": len(tokens),
        "in_vocabulary": len(in_text),
        "slots_filled": {"top": int(fill.top), "bottom": int(fill.bottom)},
        "factor_label": factor_label.tolist(),
        "top": [entry(w, "top", i) for i, w in enumerate(top)],
        "bottom": [entry(w, "bottom", meta["k"] + i) for i, w in enumerate(bottom)],
    }


def _attentions(predictor, text: str) -> tuple[torch.Tensor, tuple, list[str]]:
    """The attention mask of the blocks' input (B=1, n), every block's weights, and the
    tokens of one text (an LTTW model with attention blocks)."""
    import torch

    from lttw.encoder.tokens import encode_texts

    ids, mask = encode_texts(predictor.tokenizer, [text], predictor.meta["max_len"])
    f = predictor.factors([text])
    device, model = predictor.runtime.device, predictor.model
    model.eval()
    ids_t = torch.from_numpy(ids).long().to(device)
    mask_t = torch.from_numpy(mask).long().to(device)
    with torch.no_grad():
        _, attentions = model(
            input_ids=ids_t,
            attention_mask=mask_t,
            output_attentions=True,
            factors=None if f is None else torch.from_numpy(f).to(device),
        )
    tokens = predictor.tokenizer.convert_ids_to_tokens(ids[0].tolist())
    return model.fusion.mask(mask_t), attentions, tokens


def explain(predictor, text: str) -> dict:
    """Everything ``lttw explain`` shows, as a JSON-able dict."""
    factors = factor_section(predictor, text)
    probs = predictor.predict_proba([text])[0]
    attention = attention_section(predictor, text, factors)
    return {
        "text": text,
        "model": str(predictor.folder),
        "variant": predictor.meta["variant"],
        "classes": list(predictor.classes),
        "prediction": explained_prediction(predictor.calibration, predictor.classes, probs),
        "factors": factors,
        "attention": attention,
    }


# ---------------------------------------------------------------- rendering


def _numbers(values, digits: int = 3) -> str:
    return " ".join(f"{v:.{digits}f}" for v in values)


#: below this many columns the words table leaves out the factor rows and puts the class
#: affinities into one cell, so that no word or class name is cut
WIDE = 120


def _affinity(entry: dict, classes: list[str], columns: bool = True) -> list[str]:
    """Per-class affinity columns (or, for many classes or a narrow terminal, the three
    strongest in one cell)."""
    aff = entry["class_affinity"]
    if columns and len(classes) <= 5:
        return [f"{aff[c]:.3f}" for c in classes]
    best = sorted(aff, key=aff.get, reverse=True)[:3]
    return [", ".join(f"{c} {aff[c]:.2f}" for c in best)]


def render(doc: dict, console) -> None:
    """Draw an explanation as rich tables (user text is escaped, never read as markup)."""
    from rich.markup import escape
    from rich.table import Table

    classes = doc["classes"]
    prediction = doc["prediction"]
    thresholds = prediction.get("thresholds")  # a multi-label model's
    chosen = (
        {item["label"] for item in prediction["labels"]}
        if thresholds is not None
        else {prediction["label"]}
    )
    pred = Table(title=escape(f"Prediction ({doc['variant']}, {doc['model']})"))
    pred.add_column("class")
    pred.add_column("probability", justify="right")
    if thresholds is not None:
        pred.add_column("threshold", justify="right")
    for c, p in sorted(prediction["probabilities"].items(), key=lambda kv: -kv[1]):
        style = "bold green" if c in chosen else None
        extra = [] if thresholds is None else [f"{thresholds[c]:.4f}"]
        pred.add_row(escape(c), f"{p:.4f}", *extra, style=style)
    console.print(pred)
    if thresholds is not None:
        labels = ", ".join(item["label"] for item in prediction["labels"]) or "(none)"
        console.print(escape(f"labels (sigmoid probability >= its threshold): {labels}"))
    f = doc["factors"]
    if f is None:
        console.print("latent factors: none (the model fuses no latent-factor features)")
    else:
        matrix = Table(
            title=f"Factor-label matrix H ({f['rank']} factors x {len(classes)} classes)"
        )
        if console.width >= WIDE:  # a factor a row, a class a column
            matrix.add_column("factor")
            for c in classes:
                matrix.add_column(escape(c), justify="right")
            for i, row in enumerate(f["factor_label"]):
                matrix.add_row(str(i), *(f"{v:.3f}" for v in row))
        else:  # narrow: a class a row, so that no class name is cut
            matrix.add_column("class")
            for i in range(len(f["factor_label"])):
                matrix.add_column(f"factor {i}", justify="right")
            for j, c in enumerate(classes):
                matrix.add_row(escape(c), *(f"{row[j]:.3f}" for row in f["factor_label"]))
        console.print(matrix)
        if "words" in f:
            console.print(
                escape(f"words (words.splitter={f['splitter']}): " + " ".join(f["words"]))
            )
        words = Table(
            title=f"Selected words: top k={f['k']}, bottom s={f['s']} "
            f"(ranking {f['ranking']}; {f['in_vocabulary']} distinct words in "
            "the factor vocabulary)",
            caption=escape("affinity = W[w] @ H"),
        )
        wide = console.width >= WIDE  # else: no factor rows, the affinities in one cell
        names = ["slot", "kind", "word", "count", "n(w)"] + ["factor row W[w]"] * wide
        for name in names:
            words.add_column(escape(name), no_wrap=name == "word")
        for c in classes if wide and len(classes) <= 5 else ["affinity (top 3)"]:
            words.add_column(escape(c), justify="right", no_wrap=wide)
        for e in f["top"] + f["bottom"]:
            words.add_row(
                str(e["slot"]),
                e["kind"],
                escape(e["word"]),
                str(e["count_in_text"]),
                str(e["corpus_count"]),
                *[_numbers(e["factor"])] * wide,
                *map(escape, _affinity(e, classes, wide)),
            )
        console.print(words)
        filled = f["slots_filled"]
        console.print(
            f"slots filled: {filled['top']} of k={f['k']} top, {filled['bottom']} of "
            f"s={f['s']} bottom (empty slots are zero vectors)"
        )
    att = doc["attention"]
    console.print(att["note"], markup=False)
    if att["positions"]:
        table = Table(title="Attention of [CLS] (last block)")
        for name in ("position", "token", "relevance" if att["slots"] else "weight"):
            table.add_column(name, justify="right" if name != "token" else "left")
        for p in att["positions"]:
            table.add_row(str(p["position"]), escape(p["token"]), f"{p['weight']:.4f}")
        console.print(table)
    if att["slots"]:
        console.print(f"slot weights (K={len(att['slots'])}): {_numbers(att['slots'])}")

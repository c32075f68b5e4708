"""``model.variant: tfidf_linear`` -- TF-IDF features + a linear classifier (no torch).

``linear_model: logistic`` is multinomial logistic regression, whose probabilities are the
softmax of its decision scores. ``linear_model: svm`` is a linear SVM (``LinearSVC``, one vs
rest); it has no probabilities, so ``predict_proba`` returns the softmax of its decision
scores -- monotone in the SVM's margins (same argmax), but not calibrated.

Multi-label (an ``(n, C)`` indicator matrix of labels): one vs rest, scikit-learn's
``OneVsRestClassifier`` over the same estimator, one binary model per class; probabilities
are the sigmoid of each class's decision score (for logistic regression exactly its
``predict_proba``; for the SVM monotone in its margins, not calibrated). A class with no
positive (or no negative) train row gets a constant score. ``class_weight="balanced"``
(``train.class_weight: balanced``) is scikit-learn's, per binary model in one vs rest.

A model folder holds ``config.json`` (variant, vectoriser settings, classes, ...),
``vocabulary.json`` (terms in column order) and ``model.safetensors`` (idf, coef, intercept):
no pickle. Fitted and loaded models compute probabilities through the same code from those
arrays, so a round trip gives identical probabilities.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

import numpy as np

from lttw.errors import UserError
from lttw.io import read_arrays, read_json, write_arrays, write_json
from lttw.models.files import CONFIG_NAME, WEIGHTS_NAME
from lttw.models.files import TFIDF_VOCABULARY as VOCAB_NAME
from lttw.models.tfidf_vectorizer import VectorizerSettings
from lttw.text.words import WordSplitter

VARIANT = "tfidf_linear"
#: the score of a label absent from the training data (its softmax probability is 0)
ABSENT = -1e4
#: the constant score of a multi-label class that is always (+) or never (-) present in fit
CONSTANT_SCORE = 30.0


class TfidfLinear:
    """A fitted TF-IDF + linear model, held as plain arrays. It reads raw texts
    (``trained.reads``): the same interface as the torch classifiers otherwise."""

    reads = "texts"

    def __init__(
        self,
        n_labels: int,
        linear_model: str,
        settings: VectorizerSettings,
        vocabulary: list[str],
        idf: np.ndarray,
        coef: np.ndarray,
        intercept: np.ndarray,
        classes: np.ndarray,
        random_state: int = 0,
        multi_label: bool = False,
    ):
        self.n_labels, self.linear_model, self.settings = n_labels, linear_model, settings
        self.random_state, self.multi_label = random_state, multi_label
        self.vocabulary = list(vocabulary)
        self.idf = np.asarray(idf, dtype=np.float64)  # (n_terms,)
        self.coef = np.asarray(coef, dtype=np.float64)  # (n_classes or 1, n_terms)
        self.intercept = np.asarray(intercept, dtype=np.float64)  # (n_classes or 1,)
        self.classes = np.asarray(classes, dtype=np.int64)  # (n_classes,) labels seen in fit
        self._vec = settings.vectorizer(self.vocabulary)
        self._vec.idf_ = self.idf

    def decision_function(self, texts: Sequence[str]) -> np.ndarray:
        """(n, n_classes) linear scores; binary models get a zero column for the first class
        (multi-label: (n, n_labels), one binary model's score per class)."""
        scores = np.asarray(self._vec.transform(list(texts)) @ self.coef.T) + self.intercept
        if self.coef.shape[0] == 1 and not self.multi_label:
            scores = np.hstack([np.zeros_like(scores), scores])
        return scores

    def logits(self, texts: Sequence[str]) -> np.ndarray:
        """(n, n_labels) scores whose softmax (single-label) or sigmoid (multi-label) is
        ``predict_proba``; a label absent from the training data scores ``ABSENT``."""
        s = self.decision_function(texts)
        if self.multi_label:
            return s
        out = np.full((len(s), self.n_labels), ABSENT, dtype=np.float64)
        out[:, self.classes] = s
        return out

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        """(n, n_labels) probabilities: softmax of the decision scores; labels absent from the
        training data get probability 0 (multi-label: the sigmoid of each class's score)."""
        s = self.decision_function(texts)
        if self.multi_label:
            return 1.0 / (1.0 + np.exp(-s))
        e = np.exp(s - s.max(axis=1, keepdims=True))
        out = np.zeros((len(s), self.n_labels), dtype=np.float64)
        out[:, self.classes] = e / e.sum(axis=1, keepdims=True)
        return out

    def predict(self, texts: Sequence[str]) -> np.ndarray:
        """The most probable class of each text (single-label)."""
        return self.predict_proba(texts).argmax(axis=1)

    # ------------------------------------------------------------------ persistence
    def save(self, folder: str | Path) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        write_arrays(
            folder / WEIGHTS_NAME,
            idf=self.idf,
            coef=self.coef,
            intercept=self.intercept,
            classes=self.classes,
        )
        write_json(folder / VOCAB_NAME, self.vocabulary)
        write_json(
            folder / CONFIG_NAME,
            {
                "variant": VARIANT,
                "config": {
                    "n_labels": self.n_labels,
                    "linear_model": self.linear_model,
                    "random_state": self.random_state,
                    "vectorizer": asdict(self.settings),
                    "n_terms": len(self.vocabulary),
                    **({"multi_label": True} if self.multi_label else {}),
                },
            },
        )

    @classmethod
    def load(cls, folder: str | Path, config: dict | None = None) -> TfidfLinear:
        """The model saved in ``folder``; ``config``: config.json's ``config`` where the
        caller read the file already."""
        folder = Path(folder)
        if config is None:
            raw = read_json(folder / CONFIG_NAME)
            if raw.get("variant") != VARIANT:
                raise UserError(
                    f"{folder}: not a {VARIANT} model folder (variant {raw.get('variant')!r})"
                )
            config = raw["config"]
        return cls.from_content(
            config, read_arrays(folder / WEIGHTS_NAME), read_json(folder / VOCAB_NAME)
        )

    @classmethod
    def from_content(cls, cfg: dict, arrays: dict, vocabulary: list) -> TfidfLinear:
        """The model of config.json's ``config``, its weights' arrays and its vocabulary
        (``ModelFolder``'s files, read once)."""
        return cls(
            cfg["n_labels"],
            cfg["linear_model"],
            VectorizerSettings(**cfg["vectorizer"]),
            vocabulary,
            arrays["idf"],
            arrays["coef"],
            arrays["intercept"],
            arrays["classes"],
            cfg["random_state"],
            bool(cfg.get("multi_label", False)),
        )


def fit_tfidf_linear(
    texts: Sequence[str],
    labels: Sequence[int],
    n_labels: int,
    linear_model: str = "logistic",
    random_state: int = 0,
    settings: VectorizerSettings | None = None,
    words: WordSplitter | None = None,
    auto: bool = False,
    class_weight: str | None = None,
) -> TfidfLinear:
    """Fit the vectoriser and the linear model on the training texts (ints in 0..n_labels-1,
    or multi-label an (n, n_labels) indicator matrix: one vs rest), texts split by ``words``
    (the pipeline's recorded rule; ``auto``: chosen by ``words.splitter: auto``, see
    ``VectorizerSettings.for_words``) unless ``settings`` says how; ``class_weight``:
    scikit-learn's (``"balanced"``, or None)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import LinearSVC

    settings = settings or (
        VectorizerSettings.for_words(words, auto) if words is not None else VectorizerSettings()
    )
    if linear_model == "logistic":
        clf = LogisticRegression(
            max_iter=1000, random_state=random_state, class_weight=class_weight
        )
    elif linear_model == "svm":
        clf = LinearSVC(random_state=random_state, class_weight=class_weight)
    else:
        raise UserError(f"model.linear_model must be logistic or svm (got {linear_model!r})")
    if np.ndim(labels) == 2:
        return _fit_one_vs_rest(
            texts, np.asarray(labels), n_labels, clf, settings, linear_model, random_state
        )
    y = np.asarray(labels, dtype=np.int64)
    classes = np.unique(y)
    if len(classes) < 2:
        raise UserError(
            f"tfidf_linear needs at least two labels in the training data (got {classes.tolist()})"
        )
    if classes.min() < 0 or classes.max() >= n_labels:
        raise UserError(f"labels must be in 0..{n_labels - 1} (got {classes.tolist()})")
    vec, x = _vectorize(settings, texts)
    clf.fit(x, y)
    return TfidfLinear(
        n_labels,
        linear_model,
        settings,
        _vocabulary(vec),
        vec.idf_,
        clf.coef_,
        clf.intercept_,
        clf.classes_,
        random_state,
    )


def _vectorize(settings: VectorizerSettings, texts: Sequence[str]):
    vec = settings.vectorizer()
    try:
        return vec, vec.fit_transform(list(texts))
    except ValueError as err:  # e.g. an empty vocabulary
        raise UserError(f"tfidf_linear: {err}") from None


def _vocabulary(vec) -> list[str]:
    return [t for t, _ in sorted(vec.vocabulary_.items(), key=lambda kv: kv[1])]


def _fit_one_vs_rest(
    texts, y: np.ndarray, n_labels: int, clf, settings, linear_model: str, random_state: int
) -> TfidfLinear:
    """Multi-label: one binary ``clf`` per class (``OneVsRestClassifier``), held as the same
    arrays, ``coef`` (n_labels, n_terms); a constant class (scikit-learn's
    ``_ConstantPredictor``) scores ``+-CONSTANT_SCORE``."""
    import warnings

    from sklearn.multiclass import OneVsRestClassifier

    if y.shape[1] != n_labels or not np.isin(y, (0, 1)).all():
        raise UserError(
            f"tfidf_linear: multi-label targets must be an (n, {n_labels}) 0/1 matrix "
            f"(got shape {y.shape})"
        )
    vec, x = _vectorize(settings, texts)
    with warnings.catch_warnings():  # "Label k is present in all training examples"
        warnings.simplefilter("ignore", UserWarning)
        ovr = OneVsRestClassifier(clf).fit(x, y.astype(np.int64))
    coef = np.zeros((n_labels, x.shape[1]), np.float64)
    intercept = np.zeros(n_labels, np.float64)
    for c, est in enumerate(ovr.estimators_):
        if hasattr(est, "coef_"):
            coef[c], intercept[c] = est.coef_[0], est.intercept_[0]
        else:  # always or never present in the train part
            intercept[c] = CONSTANT_SCORE if float(np.ravel(est.y_)[0]) > 0 else -CONSTANT_SCORE
    return TfidfLinear(
        n_labels,
        linear_model,
        settings,
        _vocabulary(vec),
        vec.idf_,
        coef,
        intercept,
        np.arange(n_labels),
        random_state,
        multi_label=True,
    )

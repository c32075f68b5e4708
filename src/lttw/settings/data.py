"""The data-side parameter groups: ``data``, ``folds``, ``words``, ``counts``, ``nmf``."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from lttw.choices import Sampling
from lttw.settings.group import Group

#: counts.token_pattern's default: runs of unicode word characters (within jieba's words /
#: around CJK characters); lttw.text.words and tfidf_linear take it from here
DEFAULT_TOKEN_PATTERN = r"(?u)\b\w+\b"


class DataSettings(Group):
    """``data``: which dataset and columns, and how the train / test / predict samples are
    drawn (the ``sample`` stage)."""

    dataset: str = Field(
        default="ag_news",
        description="The dataset: a folder under `data.root` (`ag_news`, `sst2`, "
        "`yahoo_answers`, `thucnews`; its `manifest.json` names splits and columns), or a "
        "parquet / CSV file (or a folder of them) there. A known name whose folder is missing "
        "is read from its Hugging Face copy where the hub is reachable.",
    )
    root: str = Field(
        default="datasets",
        description="The folder that holds the datasets, relative to the project. The "
        "repository's `datasets/` holds an embedded, class-balanced AG News sample that the "
        "default profile draws from; `lttw data fetch NAME --to DIR` writes the full datasets "
        "to another folder, then `data.root: DIR` (an absolute path: queued experiments run in "
        "a copy of the repository).",
    )
    text_column: str | None = Field(
        default=None, description="The column of texts; null: the manifest's, else `text`."
    )
    label_column: str | None = Field(
        default=None,
        description="The column of labels (strings, integers or integral floats); null: the "
        "manifest's, else `label`.",
    )
    label_delimiter: str | None = Field(
        default=None,
        description="The separator of several labels in one text-valued label cell (a CSV's "
        "`joy|love`): each cell is split on it and the data is multi-label; null: a cell is "
        "one label. Parquet / JSON Lines list columns need none.",
    )
    multi_label: Literal["auto"] | bool = Field(
        default="auto",
        description="Whether a text has a set of labels: `auto`: where the label column holds "
        "lists, `data.label_delimiter` is set or the manifest says `multi_label`; `true` / "
        "`false` decide. Multi-label data takes `data.sampling` `all` or `stratified` "
        "(iterative stratification, `lttw.data.label_lists`).",
    )
    train_size: int = Field(
        default=2500,
        ge=1,
        description="Rows of the train sample, which the folds split (see `data.sampling`); "
        "the paper's 60,000.",
    )
    test_size: int = Field(
        default=1000,
        ge=0,
        description="Rows of the held-out test sample, whose F1 compares with the paper's "
        "Table 4; the paper's 4,000.",
    )
    predict_size: int = Field(
        default=500,
        ge=0,
        description="Rows of the held-out prediction sample; the paper's 4,000. 0: no predict "
        "sample; with `data.sampling: all` the test sample is then the whole test split, so "
        "the held-out figure compares with published ones.",
    )
    use_splits: bool = Field(
        default=True,
        description="Draw the test and predict samples from the dataset's test split when it "
        "has one.",
    )
    train_splits: list[str] = Field(
        default_factory=lambda: ["train"],
        min_length=1,
        description="With `data.use_splits`: the dataset's splits the train sample is drawn "
        "from, e.g. `[train, dev]` to train on a dev split too (the folds make their own "
        "validation parts, so a dev split is otherwise left unused); never `test`.",
    )
    sampling: Sampling = Field(
        default="balanced",
        description="`balanced` (the paper): `size // p` rows of each of the p classes; "
        "`stratified`: the given sizes in the class proportions of the split they come from; "
        "`all`: every row, the sizes used only for their ratio (`lttw.data.sample_sizes`).",
    )

    @field_validator("label_delimiter")
    @classmethod
    def _delimiter_not_empty(cls, value: str | None) -> str | None:
        if value == "":
            raise ValueError("an empty string splits nothing; use null for one label per cell")
        return value


class FoldSettings(Group):
    """``folds``: the stratified fold assignment (the ``folds`` stage) and the folds that the
    per-fold stages run."""

    n_folds: int = Field(
        default=10,
        ge=3,
        le=100,
        description="Stratified folds; fold i tests on fold i, validates on fold i+1 and "
        "trains on the rest (8:1:1 at the paper's ten).",
    )
    run: list[int] = Field(
        default_factory=lambda: [0],
        min_length=1,
        description="The folds the per-fold stages run, each in 0 .. n_folds - 1; `[0]` keeps "
        "`dvc repro` quick, the paper's profile runs all ten.",
    )

    @model_validator(mode="after")
    def _folds_in_range(self) -> FoldSettings:
        bad = [f for f in self.run if not 0 <= f < self.n_folds]
        if bad:
            raise ValueError(f"folds.run has {bad}: each fold must be in 0..{self.n_folds - 1}")
        if len(set(self.run)) != len(self.run):
            raise ValueError(f"folds.run {self.run} repeats a fold")
        return self


class WordSettings(Group):
    """``words``: how texts are split into words, one rule for every consumer of words."""

    splitter: Literal["auto", "regex", "jieba", "char"] = Field(
        default="auto",
        description="How counts, features, `tfidf_linear`, `lttw explain` and prediction split "
        "texts into words (`lttw.text.words`): `regex` (runs of word characters: "
        "space-separated languages), `jieba` (Chinese words), `char` (every CJK character a "
        "word), or `auto`: from the manifest's `language` (zh: jieba, ja: char, else regex), "
        "without one from the texts' share of CJK letters; resolved once, by the counts stage.",
    )


class CountSettings(Group):
    """``counts``: the word-label count matrix n(w, c) of a fold's train part (Algorithm 1)."""

    token_pattern: str = Field(
        default=DEFAULT_TOKEN_PATTERN,
        description="The regex of a word in every splitting rule (at most one group): runs of "
        "unicode word characters, within jieba's words or around CJK characters.",
    )
    lowercase: bool = Field(default=True, description="Lowercase the texts before splitting them.")
    min_count: int = Field(
        default=1,
        ge=1,
        description="Drop words seen fewer times than this in the fold's train part.",
    )


class NMFSettings(Group):
    """``nmf``: the factorisation V ~ W H of the row-normalised count matrix (eqs 1-3)."""

    rank: Annotated[int, Field(ge=1, le=1000)] | Literal["auto"] = Field(
        default="auto",
        description="The rank z, latent factors per word: a number, or `auto`: the number of "
        "classes where that is above the paper's 5, else 5, and at most 32 (the log warns "
        "where it caps: `lttw.factors.nmf.resolve_rank`). Below the number of classes some "
        "class has no factor of its own (the log warns).",
    )
    max_iter: int = Field(default=400, ge=1, description="Most iterations of scikit-learn's NMF.")
    init: Literal["nndsvd", "nndsvda", "nndsvdar", "random"] = Field(
        default="nndsvda", description="The initialisation of scikit-learn's NMF."
    )
    tol: float = Field(
        default=1e-4, gt=0, description="The stopping tolerance of scikit-learn's NMF."
    )

"""Where ``lttw data fetch`` gets each dataset the docs use, by its short name: its public
source (a Hugging Face hub dataset at a pinned revision, or a published file location), the
files of each split, and how their rows become this project's dataset format
(``lttw.data.fetch`` downloads and writes). Any other hub dataset id is read as
``lttw.data.hub_fetch`` finds it; ``FetchSpec`` describes both.

The output of every dataset is a folder ``NAME/`` with one parquet file per split (columns
``text`` and ``label``; GoEmotions: ``labels``, a list of class names), ``manifest.json``
(columns, classes, splits, rows, source, revision, licence and the sha256 of every file) and
nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass

from lttw.data.dataset_sources import KNOWN_DATASETS

#: the hub's datasets are read from here unless HF_ENDPOINT names another (a mirror)
HUB_ENDPOINT = "https://huggingface.co"


@dataclass(frozen=True)
class FetchSpec:
    """One dataset's public source and how its rows are read."""

    name: str
    description: str
    classes: tuple[str, ...]
    #: split -> files of that split (paths in the hub repository, or full URLs for ``url``)
    files: dict[str, tuple[str, ...]]
    licence: str
    #: the manual alternative, named when the source cannot be reached
    manual: str
    hub: str | None = None  # owner/name on the Hugging Face hub
    revision: str | None = None  # the pinned commit (a branch where none could be pinned)
    reader: str = "parquet"  # parquet | tsv (text<TAB>label lines)
    text_columns: tuple[str, ...] = ("text",)  # joined with one space when several
    label_column: str = "label"
    multi_label: bool = False  # labels: a list of class ids per row
    language: str | None = None
    notes: str = ""

    def source(self) -> str:
        return f"hf://datasets/{self.hub}@{self.revision}" if self.hub else self.files_url()

    def files_url(self) -> str:
        first = next(iter(self.files.values()))[0]
        return first.rsplit("/", 1)[0]


# the class names the dataset reader knows for its hub copy (one list of each)
AG_NEWS_CLASSES = KNOWN_DATASETS["ag_news"].classes or ()
YAHOO_CLASSES = KNOWN_DATASETS["yahoo_answers"].classes or ()
GOEMOTIONS_CLASSES = (
    "admiration amusement anger annoyance approval caring confusion curiosity desire "
    "disappointment disapproval disgust embarrassment excitement fear gratitude grief joy love "
    "nervousness optimism pride realization relief remorse sadness surprise neutral"
).split()
THUCNEWS_CLASSES = (
    "finance realty stocks education science society politics sports game entertainment"
).split()
THUCNEWS_COMMIT = "6cb26819af7b646275aff8a4693676f2849e67f6"
THUCNEWS_BASE = (
    "https://raw.githubusercontent.com/649453932/Chinese-Text-Classification-Pytorch/"
    f"{THUCNEWS_COMMIT}/THUCNews/data"
)


def hub_manual(hub: str, revision: str | None, files: dict[str, tuple[str, ...]]) -> str:
    names = ", ".join(f for paths in files.values() for f in paths)
    at = f"/tree/{revision}" if revision else ""
    return (
        f"on a machine with internet, download {names} from {HUB_ENDPOINT}/datasets/{hub}{at} "
        "into one folder and run `lttw data fetch NAME --from-files FOLDER`"
    )


def _hub(name: str, hub: str, revision: str, files: dict[str, tuple[str, ...]], **kw) -> FetchSpec:
    return FetchSpec(
        name=name,
        hub=hub,
        revision=revision,
        files=files,
        manual=hub_manual(hub, revision, files).replace("NAME", name),
        **kw,
    )


SOURCES: dict[str, FetchSpec] = {
    "ag_news": _hub(
        "ag_news",
        "fancyzhx/ag_news",
        "eb185aade064a813bc0b7f42de02595523103ca4",
        {
            "train": ("data/train-00000-of-00001.parquet",),
            "test": ("data/test-00000-of-00001.parquet",),
        },
        description="AG News topic classification (Zhang, Zhao & LeCun 2015), full splits",
        classes=AG_NEWS_CLASSES,
        licence="No licence stated (hub card: unknown); the AG corpus is provided for research "
        "and other non-commercial use (http://groups.di.unipi.it/~gulli/AG_corpus_of_news_articles.html)",
    ),
    "sst2": _hub(
        "sst2",
        "stanfordnlp/sst2",
        "8d51e7e4887a4caaa95b3fbebbf53c0490b58bbb",
        {
            "train": ("data/train-00000-of-00001.parquet",),
            # GLUE hides the test labels (-1): the labelled validation split is the test split
            "test": ("data/validation-00000-of-00001.parquet",),
        },
        description="Stanford Sentiment Treebank, binary (GLUE SST-2); test = GLUE validation",
        classes=("negative", "positive"),
        text_columns=("sentence",),
        licence="No licence stated on the hub card (unknown); cite Socher et al. (2013) and "
        "GLUE (Wang et al. 2018)",
    ),
    "yahoo_answers": _hub(
        "yahoo_answers",
        "community-datasets/yahoo_answers_topics",
        "main",  # no commit pinned yet: the manifest records the commit served
        {
            "train": (
                "yahoo_answers_topics/train-00000-of-00002.parquet",
                "yahoo_answers_topics/train-00001-of-00002.parquet",
            ),
            "test": ("yahoo_answers_topics/test-00000-of-00001.parquet",),
        },
        description="Yahoo! Answers topic classification (Zhang, Zhao & LeCun 2015)",
        classes=YAHOO_CLASSES,
        text_columns=("question_title", "question_content", "best_answer"),
        label_column="topic",
        licence="No licence stated on the hub card (unknown); built from Yahoo! Answers "
        "Comprehensive Questions and Answers 1.0 (Yahoo! Webscope), whose terms apply",
    ),
    "goemotions": _hub(
        "goemotions",
        "google-research-datasets/go_emotions",
        "add492243ff905527e67aeb8b80c082af02207c3",
        {
            "train": ("simplified/train-00000-of-00001.parquet",),
            "dev": ("simplified/validation-00000-of-00001.parquet",),
            "test": ("simplified/test-00000-of-00001.parquet",),
        },
        description="GoEmotions: Reddit comments, 27 emotions + neutral, multi-label "
        "(the simplified release)",
        classes=tuple(GOEMOTIONS_CLASSES),
        label_column="labels",
        multi_label=True,
        language="en",
        licence="Apache-2.0",
    ),
    "thucnews": FetchSpec(
        name="thucnews",
        description="THUCNews news-title subset (Chinese, 10 balanced topics, 200,000 titles)",
        classes=tuple(THUCNEWS_CLASSES),
        files={split: (f"{THUCNEWS_BASE}/{split}.txt",) for split in ("train", "dev", "test")},
        reader="tsv",
        language="zh",
        licence="THUCTC / THUCNews (Tsinghua University): research use; this 200,000-title "
        "subset as published in 649453932/Chinese-Text-Classification-Pytorch",
        manual=(
            "on a machine with internet, download train.txt, dev.txt and test.txt from "
            f"{THUCNEWS_BASE} into one folder and run "
            "`lttw data fetch thucnews --from-files FOLDER`"
        ),
        notes="Pretrained character vectors (model.word_vectors) are not fetched: put a "
        "word2vec text file (.vec / .vec.gz) in the folder and name it in the manifest's "
        "word_vectors (docs/how-to/datasets.md).",
    ),
}


def names() -> list[str]:
    return list(SOURCES)

"""A tiny Chinese news-title dataset (jieba dictionary words per class) written as a dataset folder."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pandas as pd

TOPICS = {  # class -> dictionary words of jieba's that belong to it
    "sports": ["比赛", "球队", "冠军", "进球", "教练", "联赛", "球员", "赛季"],
    "finance": ["股票", "银行", "市场", "投资", "基金", "利率", "经济", "上涨"],
    "tech": ["手机", "电脑", "软件", "芯片", "网络", "数据", "系统", "发布"],
    "culture": ["电影", "明星", "音乐", "导演", "演员", "歌手", "演唱会", "票房"],
}


COMMON = ["今天", "我们", "中国", "新闻", "记者", "表示"]


def chinese_titles(n_per_class: int, seed: int) -> pd.DataFrame:
    """Titles of 4-6 words run together (no spaces), mostly of their class's words."""
    rng = random.Random(seed)
    rows = []
    for label, words in enumerate(TOPICS.values()):
        for _ in range(n_per_class):
            picked = rng.sample(words, 4) + rng.sample(COMMON, rng.randint(0, 2))
            rng.shuffle(picked)
            rows.append({"text": "".join(picked) + rng.choice(["", "！", "？"]), "label": label})
    return pd.DataFrame(rows)


def write_dataset(root: Path) -> None:
    folder = root / "tiny_zh"
    folder.mkdir(parents=True)
    chinese_titles(50, 0).to_parquet(folder / "train.parquet", index=False)
    chinese_titles(25, 1).to_parquet(folder / "test.parquet", index=False)
    (folder / "manifest.json").write_text(
        json.dumps(
            {
                "name": "tiny_zh",
                "language": "zh",
                "text_column": "text",
                "label_column": "label",
                "classes": list(TOPICS),
                "splits": {"train": "train.parquet", "test": "test.parquet"},
            },
            ensure_ascii=False,
        )
    )

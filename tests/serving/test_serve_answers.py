"""`lttw serve`'s /predict with ``min_prob`` and a multi-label model folder: "no label" below
the floor, label lists with their probabilities, 422 for a bad ``min_prob``, and /info's
``multi_label``. In-process (the ASGI app under httpx), sharing the tiny LTTW folder."""

from __future__ import annotations

import numpy as np
import pytest
from fastapi.testclient import TestClient
from support.calibrated_models import calibrated_copy
from support.serving_models import CLASSES, shared_lttw_folder

from lttw.inference.predict import Predictor
from lttw.serving.server import Limits, create_app

TEXTS = ["stock market price oil", "team game match", "computer internet science"]
THRESHOLDS = (0.5, 0.45, 0.55, 0.5)


@pytest.fixture(scope="module")
def plain(tmp_path_factory, tiny_encoder_dir):
    return Predictor.load(shared_lttw_folder(tmp_path_factory, tiny_encoder_dir))


@pytest.fixture(scope="module")
def multi(plain, tmp_path_factory):
    dest = tmp_path_factory.mktemp("ml") / "model"
    return Predictor.load(
        calibrated_copy(plain.folder, dest, multi_label=True, thresholds=THRESHOLDS)
    )


def post(predictor, *bodies: dict) -> list:
    with TestClient(create_app(predictor, Limits(max_texts=8))) as client:
        return [client.post("/predict", json=body) for body in bodies]


def test_min_prob_single_label(plain):
    probs = plain.predict_proba(TEXTS)
    cut = float(np.sort(probs.max(axis=1))[1])
    plain_answer, floored, bad, worse = post(
        plain,
        {"texts": TEXTS},
        {"texts": TEXTS, "min_prob": cut, "top_k": 2},
        {"texts": TEXTS, "min_prob": 1.5},
        {"texts": TEXTS, "min_prob": "high"},
    )
    for item, row in zip(plain_answer.json()["predictions"], probs):
        assert item == {"label": CLASSES[row.argmax()], "prob": pytest.approx(float(row.max()))}
    for item, row in zip(floored.json()["predictions"], probs):  # one batch, as probs': exact
        assert (item["label"] is None) == (row.max() < np.float32(cut))
        assert item["prob"] == pytest.approx(float(row.max())) and len(item["top"]) == 2
    for response in (bad, worse):
        assert response.status_code == 422 and "'min_prob'" in response.json()["error"]


def test_multi_label_answers_and_info(multi):
    probs = multi.predict_proba(TEXTS)
    answer, floored = post(multi, {"texts": TEXTS, "top_k": 4}, {"texts": TEXTS, "min_prob": 0.9})
    for item, row in zip(answer.json()["predictions"], probs):
        assert set(item) == {"labels", "top"} and len(item["top"]) == 4
        chosen = {t["label"] for t in item["labels"]}
        want = {c for c, p, t in zip(CLASSES, row, THRESHOLDS) if p >= t}
        assert chosen == (want or {CLASSES[row.argmax()]})
        for t in item["labels"]:
            assert t["prob"] == pytest.approx(float(row[CLASSES.index(t["label"])]))
    assert all(t["prob"] >= 0.9 for i in floored.json()["predictions"] for t in i["labels"])
    with TestClient(create_app(multi)) as client:
        info = client.get("/info").json()
    assert info["multi_label"] is True
    assert info["calibration"]["thresholds"] == pytest.approx(list(THRESHOLDS))

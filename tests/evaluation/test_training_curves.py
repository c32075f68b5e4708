"""The training curves picture the evaluate stage draws from a fold's dvclive folder (the
pipeline's run: tests/evaluation/test_held_out_plots.py)."""

from __future__ import annotations

import json

from support.screenshots import _pixels, share_near

from lttw.evaluation.training_curves import epoch_curve, step_curves, training_png

#: matplotlib's first line colour (the curves)
LINE_BLUE = (31, 119, 180)


def _live(folder):
    metrics = folder / "plots" / "metrics" / "train"
    metrics.mkdir(parents=True)
    (metrics / "loss.tsv").write_text("step\tloss\n2\t0.9\n4\t0.6\n6\t0.4\n")
    (metrics / "lr.tsv").write_text("step\tlr\n2\t0.001\n4\t0.0008\n6\t0.0005\n")
    epochs = [{"epoch": e, "val_f1_macro": f, "step": 3 * (e + 1)} for e, f in ((0, 0.5), (1, 0.7))]
    (folder / "plots" / "custom").mkdir(parents=True)
    (folder / "plots" / "custom" / "epochs.json").write_text(json.dumps(epochs))
    return folder


def test_curves_read_from_dvclive_files(tmp_path):
    live = _live(tmp_path / "live")
    assert step_curves(live) == {
        "train/loss": ([2.0, 4.0, 6.0], [0.9, 0.6, 0.4]),
        "train/lr": ([2.0, 4.0, 6.0], [0.001, 0.0008, 0.0005]),
    }
    assert epoch_curve(live) == ([0.0, 1.0], [0.5, 0.7])


def test_one_picture_of_every_curve(tmp_path):
    picture = tmp_path / "curves.png"
    training_png(picture, _live(tmp_path / "live"), "Fold 0: training")
    pixels = _pixels(picture)
    assert pixels.shape[1] == 1500  # three panels, 5 inches at 100 dpi each
    assert share_near(pixels, LINE_BLUE, tolerance=30) > 0.002


def test_no_curves_logged_is_said(tmp_path):
    picture = tmp_path / "curves.png"
    training_png(picture, tmp_path / "absent", "Fold 0: training")
    assert _pixels(picture).shape[:2] == (200, 600)  # the note's picture

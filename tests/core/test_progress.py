"""Progress bars (issue 13.9): in a log, a line per 10% instead of carriage-return redraws;
on a terminal, tqdm as usual."""

from __future__ import annotations

import io

import numpy as np

from lttw import progress as progress_module
from lttw.progress import progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_log_gets_a_line_per_ten_percent():
    log = io.StringIO()
    for _ in progress(range(5000), desc="train", unit="step", file=log):
        pass
    text = log.getvalue()
    lines = text.splitlines()
    assert "\r" not in text
    assert len(lines) == 11  # 0%, 10%, ..., 100%: no repeat at close
    assert lines[-1].startswith("train: 100%") and "5000/5000" in lines[-1]
    assert [line.split("%")[0].split()[-1] for line in lines] == [str(p) for p in range(0, 101, 10)]


def test_a_redraw_of_the_same_count_is_one_line_whatever_its_rate():
    """At close tqdm redraws the last count; a rate of another length changes the bar's
    width, not the state: still one line (a loaded machine made this a second one)."""
    log = io.StringIO()
    lines = progress_module._Lines(log)
    lines.write("\rtrain: 100%|#####################| 5000/5000 [00:00<00:00, 353651.67step/s]")
    lines.write("\rtrain: 100%|##########################| 5000/5000 [00:00<00:00, 9.1step/s]")
    lines.write("\rpredict: 37text [00:01, 30.1text/s]")
    lines.write("\rpredict: 37text [00:02, 18.5text/s]")
    assert log.getvalue().count("\n") == 2


def test_log_with_manual_updates_and_no_total():
    log = io.StringIO()
    with progress(total=37, desc="predict", unit="text", file=log) as bar:
        for _ in range(37):
            bar.update(1)
    assert 10 <= len(log.getvalue().splitlines()) <= 15
    settings = progress_module.log_settings(None)
    assert settings["mininterval"] == progress_module.LOG_INTERVAL_S


def test_terminal_keeps_tqdm_redraws():
    term = Terminal()
    for _ in progress(range(3), desc="x", file=term, mininterval=0):
        pass
    assert "\r" in term.getvalue()


def test_tokenisation_progress_goes_through_the_helper(capsys):
    """`encode_texts(progress=True)` in a log: lines, not redraws."""
    from lttw.encoder.tokens import encode_texts

    class Tokenizer:
        pad_token_id = 0

        def __call__(self, chunk, max_length, **kwargs):
            return {
                "input_ids": [[1] * max_length for _ in chunk],
                "attention_mask": [[1] * max_length for _ in chunk],
            }

    ids, _ = encode_texts(Tokenizer(), ["a"] * 100, 4, batch_size=5, progress=True)
    assert ids.shape == (100, 4) and np.all(ids == 1)
    err = capsys.readouterr().err
    assert "\r" not in err and 10 <= len(err.splitlines()) <= 12


def test_every_progress_bar_goes_through_the_helper():
    """No library module builds a tqdm bar of its own (it would flood logs again)."""
    from pathlib import Path

    lib = Path(__file__).resolve().parents[2] / "src" / "lttw"
    offenders = [
        str(p.relative_to(lib))
        for p in lib.rglob("*.py")
        if p.name != "progress.py" and "tqdm" in p.read_text(encoding="utf-8")
    ]
    assert not offenders

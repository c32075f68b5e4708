"""What few labelled texts give: lttw at its defaults on 8 or 64 texts a class beside a frozen
encoder + logistic regression and SetFit, and how far the embedded AG News sample's figures
lie from the full data's.

    python bench/small_data.py few-shot --datasets ag_news --per-class 8 --seeds 1 --test-rows 50
    python bench/small_data.py few-shot --data-root DIR       # SST-2 and AG News, N = 8 and 64, 5 seeds
    python bench/small_data.py embedded-sample --full DIR/ag_news

``few-shot`` (``steps/few_shot.py``): accuracy and macro F1 on the test rows, per dataset, N
and seed, with the SetFit paper's figures as a yardstick; ``bench/results/few_shot.json``.
``embedded-sample`` (``steps/embedded_sample.py``): the default profile's samples drawn from
``datasets/ag_news`` and from the full data, a TF-IDF + linear SVM's held-out F1 on each, the
seeds' spread as the yardstick (``--json FILE``). ``MODE --help`` lists a mode's options.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import run_mode  # noqa: E402


def main(argv=None) -> dict:
    from steps import embedded_sample, few_shot

    modes = {"few-shot": few_shot.main, "embedded-sample": embedded_sample.main}
    return run_mode(__doc__, modes, argv)


if __name__ == "__main__":
    main()

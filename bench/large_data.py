"""What a large dataset costs: the data-side stages at the paper profile's sizes (time), and
reading a large input file (memory), each measured on this machine.

    python bench/large_data.py factors [--quick]      # counts, NMF, features for one fold
    python bench/large_data.py tokens [--quick]       # the tokens stage's work
    python bench/large_data.py init --mb 20           # `lttw init` on a generated 20 MB CSV
    python bench/large_data.py predict-csv --mb 32    # `lttw predict --file`'s CSV reading

``factors`` and ``tokens`` (``steps/data_stages.py``): wall and CPU time of the stages'
work on 60,000 / 59,600 AG News texts; ``bench/results/stages_cpu.json`` and
``tokens_cpu.json``. ``init`` and ``predict-csv`` (``steps/input_memory.py``): peak resident
memory and wall time of reading a large file, each in a fresh process;
``bench/results/input_memory_<mode>.json``. Run with ``PYTHONPATH=OTHER/src`` for another
version's figures. ``MODE --help`` lists a mode's options.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import run_mode  # noqa: E402


def main(argv=None) -> dict:
    from steps import data_stages, input_memory

    modes = {
        "factors": data_stages.factor_stages,
        "tokens": data_stages.tokens,
        "init": input_memory.init,
        "predict-csv": input_memory.predict_csv,
    }
    return run_mode(__doc__, modes, argv)


if __name__ == "__main__":
    main()

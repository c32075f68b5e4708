"""dvc.yaml's stage `counts`: runs `lttw.stages.counts` (the stage's code; `--help` describes it)."""

from lttw.stages.counts import run

if __name__ == "__main__":
    run()

"""dvc.yaml's stage `evaluate`: runs `lttw.stages.evaluate` (the stage's code; `--help` describes it)."""

from lttw.stages.evaluate import run

if __name__ == "__main__":
    run()

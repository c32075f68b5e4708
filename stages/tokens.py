"""dvc.yaml's stage `tokens`: runs `lttw.stages.tokens` (the stage's code; `--help` describes it)."""

from lttw.stages.tokens import run

if __name__ == "__main__":
    run()

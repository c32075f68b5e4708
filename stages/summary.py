"""dvc.yaml's stage `summary`: runs `lttw.stages.summary` (the stage's code; `--help` describes it)."""

from lttw.stages.summary import run

if __name__ == "__main__":
    run()

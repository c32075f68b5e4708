"""dvc.yaml's stage `encode`: runs `lttw.stages.encode` (the stage's code; `--help` describes it)."""

from lttw.stages.encode import run

if __name__ == "__main__":
    run()

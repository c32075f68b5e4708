"""dvc.yaml's stage `nmf`: runs `lttw.stages.nmf` (the stage's code; `--help` describes it)."""

from lttw.stages.nmf import run

if __name__ == "__main__":
    run()

"""A DVC project of lttw's pipeline: its files (``files``: dvc.yaml, params.yaml, the stage
scripts and their code stamp), making one (``create``: ``lttw init``) and running one of
its stages from the installed package (``run_stage``: ``python -m lttw.project.run_stage``)."""

"""A DVC project of lttw's pipeline: its files (``files``: dvc.yaml, params.yaml and the search
spaces, from the package's ``pipeline/`` folder), its code stamp (``stamp``:
``lttw-version.json``) and making one (``create``: ``lttw init``). Its stages run from the
installed package (``python -m lttw.stages.NAME``)."""

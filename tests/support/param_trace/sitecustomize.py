"""Test-only start-up hook: records which parameters a pipeline stage reads.

Python imports this module at start-up when this folder is on PYTHONPATH. When
LTTW_PARAM_TRACE names a folder and the program is a stage script (``stages/*.py``; a
``python -m lttw.stages.NAME`` run is not recognised: ``-m`` puts the module's path in
``sys.argv`` only after start-up), every read of a settings field inside the stage's ``main``
(``settings_reads.recording``) is recorded, and the sorted dotted names are written to
``<LTTW_PARAM_TRACE>/<stage>[@fold].json``. ``tests/project/test_stage_params.py`` compares
them with each stage's ``params:`` in dvc.yaml.
"""

import json
import os
import sys
from pathlib import Path

_OUT = os.environ.get("LTTW_PARAM_TRACE")
_SCRIPT = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None

if _OUT and _SCRIPT is not None and _SCRIPT.parent.name == "stages":
    from settings_reads import recording

    import lttw.stages as _stage

    _original_run_stage = _stage.run_stage

    def run_stage(main, description, per_fold=False, argv=None):
        def traced_main(settings, *fold):
            reads: set[str] = set()
            try:
                with recording(settings, reads):
                    main(settings, *fold)
            finally:
                name = _SCRIPT.stem + "".join(f"@{f}" for f in fold)
                Path(_OUT).mkdir(parents=True, exist_ok=True)
                (Path(_OUT) / f"{name}.json").write_text(json.dumps(sorted(reads)))

        return _original_run_stage(traced_main, description, per_fold, argv)

    _stage.run_stage = run_stage

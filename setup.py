"""Build step of the wheel (the metadata is in pyproject.toml): the package ships this
repository's own pipeline — ``dvc.yaml``, ``params.yaml``, ``stages/*.py`` and the search spaces
``experiments/search-*.yaml`` — as
``lttw/_pipeline/``, copied from the repository root at build time, so there is one source of
truth and no copy to keep in step (``lttw init`` reads them; ``lttw.project.files``)."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
PIPELINE = ["dvc.yaml", "params.yaml", "stages"]  # the same list as lttw.project.files
SEARCH_SPACES = "experiments/search-*.yaml"  # lttw.project.files.SEARCH_SPACES


class BuildPyWithPipeline(build_py):
    """``build_py`` that also copies the pipeline definition into ``lttw/_pipeline/``."""

    def run(self):
        super().run()
        target = Path(self.build_lib) / "lttw" / "_pipeline"
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        for name in PIPELINE:
            source = ROOT / name
            if source.is_dir():
                target.joinpath(name).mkdir()
                for script in sorted(source.glob("*.py")):
                    shutil.copyfile(script, target / name / script.name)
            else:
                shutil.copyfile(source, target / name)
        for space in sorted(ROOT.glob(SEARCH_SPACES)):
            (target / space.parent.name).mkdir(exist_ok=True)
            shutil.copyfile(space, target / space.parent.name / space.name)


setup(cmdclass={"build_py": BuildPyWithPipeline})

"""A model folder's classifier run by onnxruntime instead of torch (the ONNX backend).

``lttw export --onnx`` (``serving.onnx_export``) adds ``model.onnx`` to a model folder: the
classifier's forward pass (encoder, latent-factor fusion, attention, head) from
``input_ids``, ``attention_mask`` [and ``factors``] to ``logits``, with batch and sequence
axes dynamic. Tokenising, word splitting, the factor lookup and calibration stay in Python,
the ``Predictor``'s own. ``OnnxClassifier`` stands in for the torch classifier where the
``Predictor`` calls it (``models.trained.predict_proba``: length-sorted, trimmed batches,
as numpy arrays), so both paths share every step but the forward pass itself, and this
one imports no torch: the slim install (``pip install lttw``) answers with it.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING

import numpy as np

from lttw.errors import UserError
from lttw.models.files import CONFIG_NAME, ONNX_FILE, ONNX_RECORD
from lttw.models.trained import ARRAYS

#: the precisions ``lttw export`` writes into onnx.json (``--onnx``: fp32, ``--int8``)
PRECISIONS = ("fp32", "int8")

if TYPE_CHECKING:
    from lttw.models.model_folder import ModelFolder


def _cpu_threads() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def session(model: bytes, where: Path, threads: int | None = None):
    """An onnxruntime CPU session over the ONNX graph ``model`` (read from ``where``; intra-op
    threads: the CPUs this process may use, unless given); a damaged graph raises a
    UserError naming the file."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or _cpu_threads()
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # idle threads sleep instead of spinning: spinning takes the CPU from the tokeniser and
    # (in a server) from the event loop that gathers the next batch
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    except Exception as err:  # onnxruntime raises its own exception types for a bad graph
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise UserError(f"{where}: not a loadable ONNX model ({first[:300]})") from None


class OnnxClassifier:
    """An onnxruntime session that a ``Predictor`` calls like its torch classifier:
    ``model(input_ids=, attention_mask=, factors=)`` -> logits, all numpy arrays
    (``models.trained.ARRAYS``)."""

    reads = ARRAYS

    def __init__(self, sess, n_labels: int, precision: str):
        self.session, self.precision = sess, precision
        self.config = SimpleNamespace(n_labels=n_labels)
        self.inputs = [i.name for i in sess.get_inputs()]

    def eval(self) -> OnnxClassifier:
        return self

    def to(self, device) -> OnnxClassifier:
        """Itself, on the CPU (``device`` cpu or auto); another device raises a UserError."""
        if str(device) not in ("cpu", "auto"):
            raise UserError(
                f"an ONNX model folder runs on the CPU (onnxruntime), not {device}; "
                "use device cpu, or the torch backend"
            )
        return self

    def __call__(self, input_ids, attention_mask, factors=None, **_) -> np.ndarray:
        feed = {
            "input_ids": np.asarray(input_ids, np.int64),
            "attention_mask": np.asarray(attention_mask, np.int64),
        }
        if "factors" in self.inputs:
            feed["factors"] = np.asarray(factors, np.float32)
        (logits,) = self.session.run(["logits"], feed)
        return np.asarray(logits, np.float32)


def read_record(folder: str | Path) -> dict:
    """The folder's onnx.json ({} where it has none)."""
    path = Path(folder) / ONNX_RECORD
    if not path.is_file():
        return {}
    from lttw.io import read_json

    record = read_json(path)
    return record if isinstance(record, dict) else {}


def onnx_loader(threads: int | None = None):
    """``Predictor``'s ``load_model``: the checked folder's ``model.onnx`` in a session (an
    ensemble's part without one, e.g. its tfidf_linear part: its own classifier), sized by
    the config ``ModelFolder`` read, from the bytes it read."""

    def load(folder: ModelFolder):
        if not folder.onnx:
            from lttw.models.trained import folder_classifier

            return folder_classifier(folder)
        n_labels = folder.config.get("n_labels")
        if not isinstance(n_labels, int):
            raise UserError(f"{folder.path / CONFIG_NAME}: no n_labels; the file is damaged")
        files = folder.files
        record = files.json(ONNX_RECORD) if files.has(ONNX_RECORD) else None
        precision = record.get("precision") if isinstance(record, dict) else None
        if precision not in PRECISIONS:
            raise UserError(
                f"{folder.path / ONNX_RECORD}: no precision ({' or '.join(PRECISIONS)}) recorded "
                "for model.onnx; export the folder again (lttw export --onnx)"
            )
        graph = files.take(ONNX_FILE)
        return OnnxClassifier(session(graph, folder.path / ONNX_FILE, threads), n_labels, precision)

    return load

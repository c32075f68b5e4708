"""``lttw export --onnx [--int8]``: a model folder's classifier as ONNX, checked against torch.

What goes into ``model.onnx``: the classifier's forward pass, ``input_ids`` (B, n) int64,
``attention_mask`` (B, n) int64 [, ``factors`` (B, k+s, rank) float32] -> ``logits`` (B, p),
batch and sequence axes dynamic (opset 17, torch's TorchScript exporter, ``dynamo=False``:
it needs no extra package and traces the plain-torch BERT of ``encoder.plain_bert``). The
word splitting, the factor lookup and the tokenizer stay in Python (the folder's own files).
``--int8``: onnxruntime's dynamic quantisation (int8 weights of every MatMul / Gemm, one
scale per output channel, activations quantised per batch at run time). Per channel matters:
on the default AG News model per-tensor scales cost 0.005 macro F1 (at the limit), per-channel
ones none (0.9161 vs torch's 0.9132 on the 1,000 held-out texts), at the same speed.

The export checks itself on a held-out labelled sample (by default the pipeline's
``data/sample/test.parquet``): fp32 must give the torch model's label on every text; int8
must keep macro F1 within ``max_f1_drop`` (0.005) of torch's, either way (a higher F1 is a
changed model too). Nothing is written otherwise. An ONNX folder (fp32 or int8) holds only
what it runs: the torch weights (``model.safetensors``) are left out once the check passed.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from lttw.errors import UserError
from lttw.inference.loading import load_predictor
from lttw.inference.predict import Predictor
from lttw.models.files import ONNX_FILE, ONNX_RECORD, WEIGHTS_NAME
from lttw.models.folder_files import record_checksums
from lttw.serving.check_sample import read_labelled

OPSET = 17
#: fp32: every label equal and probabilities this close to torch's
FP32_ATOL = 1e-4
MAX_F1_DROP = 0.005
#: texts of varied length (padding in the traced batch) for the trace and a check without data
PROBE_TEXTS = [
    "lttw export check",
    "a second, longer probe text for the exported model: "
    "stocks rally as oil prices fall, and the home team wins late",
    "short",
    "world news today",
]


@dataclass
class ExportCheck:
    """How the exported model compares with torch on the check texts."""

    texts: int
    labelled: bool
    same_labels: float  # share of texts with the torch model's label
    max_prob_diff: float
    f1_torch: float | None = None
    f1_onnx: float | None = None
    passed: bool = False
    rule: str = ""

    def summary(self, precision: str) -> str:
        text = (
            f"ONNX {precision} vs torch on {self.texts} {'held-out' if self.labelled else 'probe'}"
            f" texts: same label on {self.same_labels:.2%}, max probability difference "
            f"{self.max_prob_diff:.2e}"
        )
        if self.f1_torch is not None and self.f1_onnx is not None:  # set together
            text += (
                f", macro F1 {self.f1_onnx:.4f} (torch {self.f1_torch:.4f}, "
                f"difference {self.f1_onnx - self.f1_torch:+.4f})"
            )
        return f"{text}; {'passed' if self.passed else 'FAILED'} ({self.rule})"


def _forward_module(model, with_factors: bool):
    """The classifier as a module of positional inputs (the ONNX graph's inputs)."""
    import torch

    class Forward(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, factors=None):
            return self.model(
                input_ids=input_ids,
                attention_mask=attention_mask,
                factors=factors if with_factors else None,
            )

    return Forward().eval()


def export_onnx(predictor, path: Path, int8: bool = False) -> None:
    """Write the torch ``predictor``'s classifier to ``path`` as ONNX (int8: quantised)."""
    import torch

    if getattr(predictor.model, "reads", "tokens") != "tokens":
        raise UserError(
            f"{predictor.folder}: a {predictor.meta['variant']} model reads raw "
            "texts (no neural network): there is nothing to export to ONNX"
        )
    if predictor.words is not None:
        raise UserError(
            f"{predictor.folder}: ONNX export covers models on encoder tokens; "
            "this one reads word ids (model.vocab: words)"
        )
    inputs = predictor.model_inputs(PROBE_TEXTS)
    batch, _ = inputs.batch(torch.arange(len(PROBE_TEXTS)), predictor.runtime)
    with_factors = batch["factors"] is not None
    names = ["input_ids", "attention_mask"] + (["factors"] if with_factors else [])
    axes = {
        "input_ids": {0: "batch", 1: "sequence"},
        "attention_mask": {0: "batch", 1: "sequence"},
        "factors": {0: "batch"},
        "logits": {0: "batch"},
    }
    fp32 = path.with_name(path.name + ".fp32") if int8 else path
    with warnings.catch_warnings():  # the tracer's notes on shape checks it makes constant
        warnings.simplefilter("ignore")
        try:
            torch.onnx.export(
                _forward_module(predictor.model.cpu(), with_factors),
                tuple(batch[n] for n in names),
                str(fp32),
                input_names=names,
                output_names=["logits"],
                dynamic_axes={n: axes[n] for n in names + ["logits"]},
                opset_version=OPSET,
                dynamo=False,
            )
        except Exception as err:  # the exporter raises many types for unsupported operators
            raise UserError(
                f"{predictor.folder}: the {predictor.meta['variant']} model cannot "
                f"be exported to ONNX ({str(err).splitlines()[0][:300]})"
            ) from None
    if int8:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        root = logging.getLogger()
        level = root.level
        root.setLevel(logging.ERROR)  # its advice to run shape inference first, as a warning
        try:
            # 7-bit weights (reduce_range): without VNNI (AVX2, most AVX-512) the u8 x s8
            # products saturate; on an AVX2 machine full-range int8 cost 0.007 macro F1 on
            # the default AG News model, 7-bit 0.0000. An export may run on either kind.
            quantize_dynamic(
                str(fp32),
                str(path),
                weight_type=QuantType.QInt8,
                per_channel=True,
                reduce_range=True,
            )
        finally:
            root.setLevel(level)
            fp32.unlink()


def compare(
    torch_predictor,
    onnx_predictor,
    texts: list[str],
    labels: np.ndarray | None,
    int8: bool,
    max_f1_drop: float = MAX_F1_DROP,
) -> ExportCheck:
    """The exported model against torch on ``texts`` (``labels``: for macro F1)."""
    from lttw.evaluation.metrics import classification_metrics

    want = torch_predictor.predict_proba(texts)
    got = onnx_predictor.predict_proba(texts)
    from lttw.models.calibration import Calibration

    # both predictors apply the folder's calibration (a stand-in without one: argmax)
    calibration = getattr(torch_predictor, "calibration", Calibration())
    decide = calibration.decide
    same = decide(want) == decide(got)
    check = ExportCheck(
        len(texts),
        labels is not None,
        float((same.all(axis=1) if same.ndim == 2 else same).mean()),
        float(np.abs(want - got).max()),
    )
    if labels is not None:
        p = len(torch_predictor.classes)
        if calibration.multi_label:
            from sklearn.metrics import f1_score

            def f1(pred):
                return float(f1_score(labels, pred, average="macro", zero_division=0))

        else:

            def f1(pred):
                return classification_metrics(labels, pred, p)["f1_macro"]

        check.f1_torch, check.f1_onnx = f1(decide(want)), f1(decide(got))
    if int8:
        if check.f1_torch is None or check.f1_onnx is None:  # set together
            raise UserError(
                "an int8 export is checked by macro F1 on a labelled held-out "
                "sample: pass --check-file F.parquet|F.csv (columns text, label)"
            )
        # two-sided: a higher macro F1 is as much a sign of another model as a lower one
        check.rule = f"int8: macro F1 within ±{max_f1_drop} of torch's"
        check.passed = abs(check.f1_onnx - check.f1_torch) <= max_f1_drop + 1e-12
    else:
        check.rule = f"fp32: every label equal, probabilities within {FP32_ATOL}"
        check.passed = check.same_labels == 1.0 and check.max_prob_diff <= FP32_ATOL
    return check


def add_onnx(
    folder: Path,
    torch_predictor,
    int8: bool,
    check_file: Path | None,
    check_rows: int = 1000,
    max_f1_drop: float = MAX_F1_DROP,
    say: Callable[[str], None] = print,
) -> ExportCheck:
    """Export ``torch_predictor``'s classifier into ``folder`` (a copy of its model folder
    being written) as ``model.onnx``, check it and record the check in ``onnx.json``.
    Raises a UserError (and the caller discards the folder) when the check fails."""
    from lttw.io import write_json

    precision = "int8" if int8 else "fp32"
    say(
        f"exporting the {torch_predictor.meta['variant']} classifier to ONNX ({precision}, "
        f"opset {OPSET})"
    )
    export_onnx(torch_predictor, folder / ONNX_FILE, int8)
    # what loading it reads (the check's record joins it below)
    write_json(folder / ONNX_RECORD, {"precision": precision, "opset": OPSET})
    record_checksums(folder)  # the copy as it is now, model.onnx in it (recorded again last)
    exported = load_predictor(folder, backend="onnx")
    assert isinstance(exported, Predictor)  # one model folder's export: its OnnxClassifier
    if check_file is not None:
        texts, labels = read_labelled(
            check_file, torch_predictor.classes, check_rows, torch_predictor.multi_label
        )
        say(f"checking against torch on {len(texts)} held-out texts of {check_file}")
    else:
        texts, labels = PROBE_TEXTS, None
    check = compare(torch_predictor, exported, texts, labels, int8, max_f1_drop)
    say(check.summary(precision))
    if not check.passed:
        raise UserError(f"the ONNX {precision} export fails its check: {check.summary(precision)}")
    # it runs on model.onnx alone: the torch weights would only be carried along
    (folder / WEIGHTS_NAME).unlink(missing_ok=True)
    write_json(
        folder / ONNX_RECORD,
        {
            "precision": precision,
            "opset": OPSET,
            "inputs": exported.model.inputs,
            "check": {**asdict(check), "file": str(check_file)},
        },
    )
    return check

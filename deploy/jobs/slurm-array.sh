#!/usr/bin/env bash
# One cell of a grid per Slurm array task. Submit from the project's checkout:
#
#   sbatch --array=0-$(( $(lttw exp cells paper --names | wc -l) - 1 )) deploy/jobs/slurm-array.sh paper
#
# RUNS: the shared runs folder (every task writes its cell there); WORK: node-local scratch.
#SBATCH --job-name=lttw-cell
#SBATCH --gpus=1
#SBATCH --cpus-per-task=8
#SBATCH --time=04:00:00
#SBATCH --requeue
#SBATCH --signal=TERM@120
#SBATCH --output=logs/lttw-cell-%A_%a.out
set -euo pipefail
GRID="${1:?usage: sbatch --array=0-N deploy/jobs/slurm-array.sh GRID}"
RUNS="${RUNS:-$PWD/evidence/runs}"
WORK="${WORK:-${TMPDIR:-/tmp}/lttw-grid-$SLURM_JOB_ID}"
# --signal=TERM@120: SIGTERM two minutes before the limit; the runner stops the running stage
# (a training keeps its last checkpoint in WORK, the finished folds in RUNS/.partial) and exits
srun lttw exp run "$GRID" --index "$SLURM_ARRAY_TASK_ID" --cells "$RUNS" --work "$WORK"

"""Temperature scaling (Guo et al. 2017, "On Calibration of Modern Neural Networks"): one
scalar ``T > 0`` that divides a single-label classifier's logits before the softmax, fitted
on held-out rows (the fold's validation part) by minimising the negative log-likelihood

    T* = argmin_T  -1/n * sum_i log softmax(z_i / T)[y_i]

as a bounded 1-D search over ``log T`` (``scipy.optimize.minimize_scalar``). Dividing by a
positive scalar keeps every row's order of classes, so the argmax (every label and F1) is
unchanged; only the confidence moves.

The pipeline's classifiers hand out probabilities, not logits: ``log p`` is the logit vector
up to a per-row constant (``log softmax(z) = z - logsumexp(z)``), and the softmax ignores a
per-row constant, so ``softmax(log p / T) == softmax(z / T)``; ``logits_of`` does that (a
zero probability, e.g. a class absent from the tf-idf model's training data, becomes a very
negative logit).
"""

from __future__ import annotations

import numpy as np

#: the search range of T (a wider one only reaches degenerate, all-or-nothing scores)
T_BOUNDS = (0.05, 20.0)
#: the smallest probability whose log is taken (float32's smallest normal number)
_TINY = float(np.finfo(np.float32).tiny)


def logits_of(probs: np.ndarray) -> np.ndarray:
    """``(n, C)`` float64 logits (up to a per-row constant) of ``(n, C)`` probabilities."""
    return np.log(np.clip(np.asarray(probs, np.float64), _TINY, None))


def scaled_probabilities(logits: np.ndarray, temperature: float) -> np.ndarray:
    """``softmax(logits / temperature)``, float64, row by row."""
    z = np.asarray(logits, np.float64) / temperature
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def negative_log_likelihood(logits: np.ndarray, labels: np.ndarray, temperature: float) -> float:
    """Mean ``-log softmax(logits / T)[y]`` over the rows (nan for no rows)."""
    labels = np.asarray(labels, np.int64)
    if len(labels) == 0:
        return float("nan")
    z = np.asarray(logits, np.float64) / temperature
    z = z - z.max(axis=1, keepdims=True)
    log_norm = np.log(np.exp(z).sum(axis=1))
    return float(np.mean(log_norm - z[np.arange(len(labels)), labels]))


def fit_temperature(logits: np.ndarray, labels: np.ndarray) -> float:
    """The ``T`` in ``T_BOUNDS`` that minimises the NLL of ``labels`` (``(n,)`` class ids)
    under ``softmax(logits / T)``; 1.0 (no scaling) where there are no rows to fit on."""
    from scipy.optimize import minimize_scalar

    labels = np.asarray(labels, np.int64)
    logits = np.asarray(logits, np.float64)
    if len(labels) == 0:
        return 1.0
    if logits.ndim != 2 or len(logits) != len(labels):
        raise ValueError(f"logits of shape {logits.shape} for {len(labels)} labels")
    lo, hi = np.log(T_BOUNDS[0]), np.log(T_BOUNDS[1])
    found = minimize_scalar(
        lambda log_t: negative_log_likelihood(logits, labels, float(np.exp(log_t))),
        bounds=(lo, hi),
        method="bounded",
        options={"xatol": 1e-6},
    )
    t = float(np.exp(found.x))
    # never worse than no scaling (a flat NLL, e.g. every row already certain and right)
    if negative_log_likelihood(logits, labels, t) > negative_log_likelihood(logits, labels, 1.0):
        return 1.0
    return t

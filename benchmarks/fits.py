"""Least squares the cost models' benchmarks share (auto_device.py, level_model.py)."""
from __future__ import annotations

import numpy as np


def nnls_relative(x: np.ndarray, seconds: np.ndarray, floor: float = 0.0) -> np.ndarray:
    """Non-negative least squares of ``seconds ~ x @ coef`` on relative errors (each row weighed by
    1 / max(seconds, floor)), so that short and long measurements count alike."""
    from scipy.optimize import nnls

    w = 1.0 / np.maximum(seconds, floor)
    coef, _ = nnls(x * w[:, None], seconds * w)
    return coef

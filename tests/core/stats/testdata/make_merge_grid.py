#!/usr/bin/python3
"""Writes merge_grid.json: MCT 2.3.0's merged-histogram grid, computed by
NumPy itself, for HistogramCollector's MergeHistograms test.

MCT (core/common/collectors/histogram_collector.py, v2.3.0) merges the
per-batch np.histogram results on
    w = (max - min) / n_bins             # float32 max - min, then float64
    grid = np.arange(min, max + w, w)    # 2049 or 2050 float64 edges
where min/max are float32 batch edges. Cases: random ranges, ranges whose
width is an exact multiple of the bin width, and ranges shifted far from 0.
Run with Debian's python3-numpy: /usr/bin/python3 make_merge_grid.py
"""
import json
import os

import numpy as np

N_BINS = 2048


def case(mn, mx):
    mn, mx = np.float32(mn), np.float32(mx)
    batch_edges = np.array([mn, mx], dtype=np.float32)
    bins_stack = np.vstack([batch_edges])
    lo, hi = np.min(bins_stack), np.max(bins_stack)
    w = (hi - lo) / N_BINS
    grid = np.arange(lo, hi + w, w)
    return {
        "min": float(mn),
        "max": float(mx),
        "length": len(grid),
        # Every edge would make the file large; these pin the arithmetic.
        "edges_at": {str(i): float(grid[i])
                     for i in sorted({0, 1, 2, 1023, len(grid) - 2,
                                      len(grid) - 1})},
    }


def main():
    rng = np.random.default_rng(2050)
    cases = []
    for _ in range(300):  # random ranges
        lo = rng.uniform(-50, 50)
        cases.append(case(lo, lo + rng.uniform(1e-3, 20)))
    for _ in range(300):  # width an exact multiple of a power-of-two bin
        lo = np.float32(rng.uniform(-10, 10))
        width = np.float32(N_BINS * 2.0 ** -int(rng.integers(2, 14)))
        cases.append(case(lo, np.float32(lo + width)))
    for _ in range(200):  # ranges shifted far from zero
        lo = rng.uniform(100, 5000) * (1 if rng.integers(2) else -1)
        cases.append(case(lo, lo + rng.uniform(0.01, 3)))
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "merge_grid.json")
    with open(out, "w") as f:
        json.dump({"numpy": np.__version__, "n_bins": N_BINS,
                   "cases": cases}, f, indent=0)
        f.write("\n")


if __name__ == "__main__":
    main()

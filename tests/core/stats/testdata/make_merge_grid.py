#!/usr/bin/python3
"""Writes merge_grid.json: MCT 2.3.0's merged histograms, computed by MCT's
own NumPy code, for HistogramCollector's tests (collectors_test.cc).

`mct_merge` below is MCT v2.3.0's HistogramCollector (update() and
_merge_histograms(), with interpolate_histogram), copied verbatim from
model_compression_toolkit/core/common/collectors/histogram_collector.py at
tag v2.3.0 (commit 33c45ffb2dfab4362194295edf239e26c724ab85). It merges the
per-batch np.histogram results on
    w = (max - min) / n_bins             # float32 max - min, then float64
    grid = np.arange(min, max + w, w)    # 2049 or 2050 float64 edges
where min/max are the float32 batch edges; later MCT versions use
np.linspace, 2.3.0 does not.

Two kinds of cases:
* grid: one batch whose edges are [min, max] (the grid depends only on the
  overall min and max of the batch edges). Random ranges, widths that are
  exact multiples of a representable bin width, ranges shifted far from zero
  either way, ranges straddling zero, tiny ranges (a few ulps, denormals),
  huge ranges, and ranges whose float32 width overflows (MCT raises).
* batches: 2-5 float32 batches with shifted ranges through np.histogram and
  the merge, and 1-3 batches a few ulps wide (down to denormals, where
  np.histogram's index arithmetic turns float64); the counts are checked too.
Every edge and count is pinned by a 64-bit hash of the float64 bit patterns
(sum of mix(bits[i]) * P^(i+1) mod 2^64, mix = splitmix64's finalizer), plus
a few values in clear.
Run with Debian's python3-numpy (1.24): /usr/bin/python3 make_merge_grid.py
"""
import json
import os

import numpy as np

N_BINS = 2048
HASH_P = np.uint64(0x100000001B3)


# --- MCT v2.3.0, core/common/collectors/histogram_collector.py -------------
def interpolate_histogram(current_bins, bins_to_interpolate,
                          counts_to_interpolate):
    cumulative_hist = np.hstack([0, np.cumsum(counts_to_interpolate)])
    cumulative_interpolated_hist = np.interp(current_bins,
                                             bins_to_interpolate,
                                             cumulative_hist)
    interpolated_counts = np.diff(cumulative_interpolated_hist)
    return interpolated_counts


def mct_update(histogram_per_iteration, x, n_bins=N_BINS):
    count, bins = np.histogram(x, bins=n_bins)
    histogram_per_iteration.append((count, bins))


def mct_merge(histogram_per_iteration, n_bins=N_BINS):
    bins_stack = np.vstack([hist[1] for hist in histogram_per_iteration])
    merged_histogram_min = np.min(bins_stack)
    merged_histogram_max = np.max(bins_stack)
    merged_bin_width = (merged_histogram_max - merged_histogram_min) / n_bins
    merged_histogram_bins = np.arange(merged_histogram_min,
                                      merged_histogram_max + merged_bin_width,
                                      merged_bin_width)
    merged_histogram_counts = None
    for histogram in histogram_per_iteration:
        if merged_histogram_counts is None:
            merged_histogram_counts = interpolate_histogram(
                merged_histogram_bins, histogram[1], histogram[0])
        else:
            merged_histogram_counts += interpolate_histogram(
                merged_histogram_bins, histogram[1], histogram[0])
    return merged_histogram_bins, merged_histogram_counts
# --- end of MCT's code -------------------------------------------------------


def bits_hash(values):
    z = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64).copy()
    # splitmix64's finalizer first: float bits have long runs of zero bits.
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    powers = np.cumprod(np.full(len(z), HASH_P, dtype=np.uint64))
    return "%016x" % int(np.sum(z * powers, dtype=np.uint64))


def sample_at(values):
    n = len(values)
    return {str(i): float(values[i])
            for i in sorted({0, 1, 2, 1023, n - 2, n - 1}) if 0 <= i < n}


def result(kind, histograms):
    with np.errstate(all="ignore"):
        try:
            edges, counts = mct_merge(histograms)
        except ValueError as e:  # np.arange: cannot compute length
            return {"kind": kind, "error": str(e)}
    return {"kind": kind, "length": len(edges),
            "edges_hash": bits_hash(edges), "counts_hash": bits_hash(counts),
            "edges_at": sample_at(edges), "counts_at": sample_at(counts)}


def grid_case(kind, mn, mx):
    mn, mx = np.float32(mn), np.float32(mx)
    assert mn < mx, (kind, mn, mx)
    c = result(kind, [(np.array([1]), np.array([mn, mx], dtype=np.float32))])
    c["min"], c["max"] = float(mn), float(mx)
    return c


def grid_cases(rng):
    f32 = np.float32
    cases = []
    for _ in range(400):
        lo = rng.uniform(-50, 50)
        cases.append(grid_case("random", lo, lo + rng.uniform(1e-3, 20)))
    for _ in range(400):  # width = 2048 * w with w of few mantissa bits
        w = f32(int(rng.integers(1, 16)) * 2.0 ** -int(rng.integers(-4, 20)))
        lo = f32(rng.uniform(-10, 10))
        if rng.integers(2):  # also edges all on the grid of w
            lo = f32(np.round(lo / w) * w)
        cases.append(grid_case("exact_multiple", lo, f32(lo + N_BINS * w)))
    for _ in range(300):  # ranges shifted far from zero, either way
        sign = 1 if rng.integers(2) else -1
        lo = sign * rng.uniform(100, 5000) * 10.0 ** int(rng.integers(0, 5))
        width = abs(lo) * 10.0 ** -rng.uniform(1, 6)
        lo, hi = (lo, lo + width) if sign > 0 else (lo - width, lo)
        cases.append(grid_case("shifted", lo, hi))
    for _ in range(300):  # straddling zero, tiny or zero minimum
        hi = 10.0 ** rng.uniform(-3, 4)
        lo = -hi * rng.choice([0.0, 1e-30, 1e-12, 1e-6, 1e-3, 0.1, 0.5, 1, 3])
        cases.append(grid_case("straddle", f32(lo), f32(hi)))
    for _ in range(300):  # a few ulps wide, normal and denormal
        lo = f32(10.0 ** rng.uniform(-44, 30) * (1 if rng.integers(2) else -1))
        hi = lo
        for _ in range(int(rng.integers(1, 64))):
            hi = np.nextafter(hi, f32(np.inf))
        cases.append(grid_case("tiny", lo, hi))
    for _ in range(200):  # huge magnitudes, the float32 width finite
        hi = 10.0 ** rng.uniform(20, 38.2)
        cases.append(grid_case("huge", f32(-hi * rng.uniform(0, 1)), f32(hi)))
    for hi in (3e38, f32(np.finfo(np.float32).max)):  # width overflows
        cases.append(grid_case("overflow", -f32(hi), f32(hi)))
    return cases


def batch_cases(rng):
    cases = []
    for _ in range(300):
        histograms, batches = [], []
        scale = 10.0 ** rng.uniform(-3, 3)
        for _ in range(int(rng.integers(2, 6))):
            shift = rng.uniform(-5, 5) * scale * rng.choice([0, 1, 100])
            n = int(rng.integers(1, 48))
            x = (rng.normal(size=n) * scale + shift).astype(np.float32)
            if rng.integers(8) == 0:
                x[:] = x[0]  # a constant batch: np.histogram widens by 0.5
            mct_update(histograms, x)
            batches.append([float(v) for v in x])
        c = result("batches", histograms)
        c["batches"] = batches
        cases.append(c)
    for _ in range(100):  # a few ulps wide: np.histogram's norm >= 3.4e38
        histograms, batches = [], []
        lo = np.float32(10.0 ** rng.uniform(-45, 5) * rng.choice([-1, 1]))
        for _ in range(int(rng.integers(1, 4))):
            x = np.full(int(rng.integers(1, 24)), lo, dtype=np.float32)
            for i in range(len(x)):
                for _ in range(int(rng.integers(0, 6))):
                    x[i] = np.nextafter(x[i], np.float32(np.inf))
            with np.errstate(all="ignore"):
                mct_update(histograms, x)
            batches.append([float(v) for v in x])
        c = result("tiny_batches", histograms)
        c["batches"] = batches
        cases.append(c)
    return cases


def main():
    rng = np.random.default_rng(2050)
    data = {"mct": "2.3.0", "numpy": np.__version__, "n_bins": N_BINS,
            "hash": "sum of splitmix64(float64 bits[i]) * 0x100000001b3^(i+1) mod 2^64",
            "grid_cases": grid_cases(rng), "batch_cases": batch_cases(rng)}
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "merge_grid.json")
    with open(out, "w") as f:  # one case a line
        f.write("{\n")
        for key, value in data.items():
            if not key.endswith("_cases"):
                f.write("%s: %s,\n" % (json.dumps(key), json.dumps(value)))
        f.write(",\n".join(
            "%s: [\n%s\n]" % (json.dumps(key),
                              ",\n".join(json.dumps(c) for c in data[key]))
            for key in ("grid_cases", "batch_cases")))
        f.write("\n}\n")


if __name__ == "__main__":
    main()

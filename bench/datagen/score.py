#!/usr/bin/env python3
"""Scores quantized outputs against float outputs (both ORT sample sets):
top-1 agreement and SQNR (dB, over all held-out samples) of one output."""
import glob, os, sys
import numpy as np

def load(d, out):
    return np.stack([np.load(f) for f in sorted(glob.glob(os.path.join(d, "*", out + ".npy")))])

ref_dir, out_name = sys.argv[1], sys.argv[2]
ref = load(ref_dir, out_name).reshape(-1, np.load(sorted(glob.glob(os.path.join(ref_dir, "*", out_name + ".npy")))[0]).shape[-1])
for d in sys.argv[3:]:
    q = load(d, out_name).reshape(ref.shape)
    top1 = np.mean(ref.argmax(-1) == q.argmax(-1)) * 100
    sqnr = 10 * np.log10(np.sum(ref.astype(np.float64) ** 2) / max(np.sum((ref.astype(np.float64) - q) ** 2), 1e-30))
    print(f"{os.path.basename(d.rstrip('/')):>12}: top-1 agreement {top1:6.2f}%  SQNR {sqnr:6.2f} dB  ({len(ref)} held-out samples)")

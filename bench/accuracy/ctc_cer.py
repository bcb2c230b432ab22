# CER of a quantized ppocr_rec against the float model's own greedy CTC
# decode (blank = 0), over every sample: sum(edit distance) / sum(len(float)).
#   python3 ctc_cer.py FLOAT_DIR QUANT_DIR   (or score.py ppocr_rec ...)
import os, sys
import numpy as np


def decode(p):
    ids = p.argmax(-1)
    out, prev = [], -1
    for i in ids:
        if i != prev and i != 0: out.append(int(i))
        prev = i
    return out


def edit(a, b):
    d = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, d[0] = d[0], i
        for j, y in enumerate(b, 1):
            prev, d[j] = d[j], min(d[j] + 1, d[j-1] + 1, prev + (x != y))
    return d[len(b)]


def cer(fdir, qdir):  # -> (edit distance, float characters)
    errs = total = 0
    for s in sorted(os.listdir(fdir)):
        if not os.path.isdir(os.path.join(fdir, s)): continue
        name = [f for f in os.listdir(os.path.join(fdir, s)) if f.endswith('.npy')][0]
        f = np.load(os.path.join(fdir, s, name)); q = np.load(os.path.join(qdir, s, name))
        for b in range(f.shape[0]):
            rf, rq = decode(f[b]), decode(q[b])
            errs += edit(rf, rq); total += max(1, len(rf))
    return errs, total


if __name__ == '__main__':
    errs, total = cer(sys.argv[1], sys.argv[2])
    print(f"CER {errs/total:.4f} ({errs}/{total})")

# IoU of a text-probability map (ppocr_det's output) between the float and a
# quantized model: pixels with value > 0.3 (DBNet's binarization), pooled
# over every sample: |F and Q| / |F or Q|. Also the SQNR of the maps.
#   python3 map_iou.py FLOAT_DIR QUANT_DIR   (or score.py ppocr_det ...)
import os, sys
import numpy as np


def iou(fdir, qdir):  # -> (intersection, union, SQNR dB)
    inter = union = 0
    sig = noise = 0.0
    for s in sorted(os.listdir(fdir)):
        if not os.path.isdir(os.path.join(fdir, s)): continue
        name = [f for f in os.listdir(os.path.join(fdir, s)) if f.endswith('.npy')][0]
        f = np.load(os.path.join(fdir, s, name)).astype(np.float64)
        q = np.load(os.path.join(qdir, s, name)).astype(np.float64)
        a, b = f > 0.3, q > 0.3
        inter += int(np.sum(a & b)); union += int(np.sum(a | b))
        sig += float(np.sum(f * f)); noise += float(np.sum((f - q) ** 2))
    return inter, union, float(10 * np.log10(sig / max(noise, 1e-30)))


if __name__ == '__main__':
    inter, union, db = iou(sys.argv[1], sys.argv[2])
    v = inter / union if union else 1.0
    print(f"IoU {v:.4f} ({inter}/{union}) SQNR {db:.2f} dB")

# Scores a quantized model's outputs against the float model's on the same
# samples, with the model's natural metric (bench/accuracy/e2e_table.sh):
#   ppocr_rec  CER of the greedy CTC decode (ctc_cer.py)
#   ppocr_det  IoU of the text map > 0.3 and its SQNR (map_iou.py)
#   ppocr_cls  top-1 agreement
#   otherwise  per output: SQNR pooled over the samples, the mean cosine
#              per sample (pooled over samples when a sample's output has one
#              element, e.g. a wake-word or speech probability) and the
#              largest |error| against the largest |float| (hey_jarvis's
#              score sits below one 8-bit step on non-speech samples, where
#              SQNR and cosine say nothing)
# Both folders are run_model.js / quantctl infer outputs (DIR/<sample>/<out>.npy).
#
#   python3 score.py MODEL FLOAT_DIR QUANT_DIR [--json]
import json, os, sys
import numpy as np
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ctc_cer, map_iou


def samples(fdir):
    return [s for s in sorted(os.listdir(fdir))
            if os.path.isdir(os.path.join(fdir, s))]


def load(d, s, name):
    return np.load(os.path.join(d, s, name + '.npy')).astype(np.float64)


def outputs(fdir):  # sorted, 'output' (silero's speech probability) first
    first = os.path.join(fdir, samples(fdir)[0])
    names = sorted(f[:-4] for f in os.listdir(first) if f.endswith('.npy'))
    return sorted(names, key=lambda n: n != 'output')


def top1(fdir, qdir):
    name = outputs(fdir)[0]
    agree = total = 0
    for s in samples(fdir):
        f, q = load(fdir, s, name), load(qdir, s, name)
        f, q = f.reshape(-1, f.shape[-1]), q.reshape(-1, q.shape[-1])
        agree += int(np.sum(f.argmax(-1) == q.argmax(-1)))
        total += f.shape[0]
    return {'metric': 'top1', 'value': agree / total,
            'text': f'top-1 {agree / total:.4f} ({agree}/{total})'}


def sqnr_cosine(fdir, qdir):
    per, parts = {}, []
    for name in outputs(fdir):
        sig = noise = worst = fmax = 0.0
        cos, fs, qs = [], [], []
        for s in samples(fdir):
            f = load(fdir, s, name).ravel()
            q = load(qdir, s, name).ravel()
            sig += float(f @ f); noise += float((f - q) @ (f - q))
            worst = max(worst, float(np.max(np.abs(f - q))))
            fmax = max(fmax, float(np.max(np.abs(f))))
            fs.append(f); qs.append(q)
            nf, nq = np.linalg.norm(f), np.linalg.norm(q)
            if f.size > 1: cos.append(float(f @ q / max(nf * nq, 1e-30)))
        if not cos:  # one element per sample: the cosine over the samples
            f, q = np.concatenate(fs), np.concatenate(qs)
            cos = [float(f @ q / max(np.linalg.norm(f) * np.linalg.norm(q),
                                     1e-30))]
        db = 10 * np.log10(sig / max(noise, 1e-30)) if sig > 0 else float('nan')
        per[name] = {'sqnr_db': db, 'cosine': float(np.mean(cos)),
                     'max_abs_error': worst, 'max_abs_float': fmax}
        parts.append(f'{name}: {db:.2f} dB, cos {np.mean(cos):.4f}, '
                     f'max |err| {worst:.2g} (float max {fmax:.2g})')
    first = outputs(fdir)[0]
    return {'metric': 'sqnr_cosine', 'value': per[first]['cosine'],
            'outputs': per, 'text': '; '.join(parts)}


def score(model, fdir, qdir):
    if model == 'ppocr_rec':
        errs, total = ctc_cer.cer(fdir, qdir)
        return {'metric': 'cer', 'value': errs / total,
                'text': f'CER {errs / total:.4f} ({errs}/{total})'}
    if model == 'ppocr_det':
        inter, union, db = map_iou.iou(fdir, qdir)
        v = inter / union if union else 1.0
        return {'metric': 'iou', 'value': v, 'sqnr_db': db,
                'text': f'IoU {v:.4f} ({inter}/{union}) SQNR {db:.2f} dB'}
    if model == 'ppocr_cls':
        return top1(fdir, qdir)
    return sqnr_cosine(fdir, qdir)


if __name__ == '__main__':
    r = score(sys.argv[1], sys.argv[2], sys.argv[3])
    print(json.dumps(r) if '--json' in sys.argv else r['text'])

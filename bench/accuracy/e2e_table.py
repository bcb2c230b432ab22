# Prints e2e_table.sh's results as a markdown table (bench/accuracy/RESULTS.md).
#   python3 e2e_table.py WORK_DIR MODEL...
import json, os, re, sys

TPCS = ['imx500@5.0', 'tflite@1.0', 'qnnpack@1.0']


def read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def load(d, name):
    t = read(os.path.join(d, name))
    return json.loads(t) if t else None


def short(s):  # one score as a table cell
    if s is None: return 'n/a'
    m, v = s['metric'], s['value']
    if m == 'cer': return f'CER {v:.3f}'
    if m == 'iou': return f'IoU {v:.3f} ({s["sqnr_db"]:.1f} dB)'
    if m == 'top1': return f'top-1 {100 * v:.2f}%'
    parts = []
    for i, (name, o) in enumerate(s['outputs'].items()):
        if i == 0:
            p = f'{o["sqnr_db"]:.1f} dB, cos {o["cosine"]:.4f}'
            if o['max_abs_float'] < 0.05:  # below a few 8-bit steps of [0, 1]
                p += (f', max err {o["max_abs_error"]:.1e} '
                      f'(float max {o["max_abs_float"]:.1e})')
        else:
            p = f'{name} {o["sqnr_db"]:.1f} dB'
        parts.append(p)
    return '; '.join(parts)


def scores(d, v):
    ort, qd = load(d, f'{v}.ort.json'), load(d, f'{v}.quantd.json')
    if ort is None:
        err = (read(os.path.join(d, f'{v}.ort.err')) or '?').splitlines()[-1]
        text = 'ORT: ' + re.sub(r'^run_model: .*failed:', '', err)[:90] + '...'

    else:
        text = f'**{short(ort)}**'
    return f'{text} (quantd {short(qd)})'


def secs(d, v):
    t = read(os.path.join(d, f'{v}.secs'))
    return '+'.join(t.split()) if t else '?'


def rss_mb(d, v):  # the job's peak RSS (/usr/bin/time %M, KB)
    t = read(os.path.join(d, f'{v}.rss'))
    return f'{int(t.split()[-1]) / 1024:.0f}' if t else '?'


def time_ratio(d):  # the target job's seconds over the W8A8 job's
    b, t = read(os.path.join(d, 'base.secs')), read(os.path.join(d, 'target.secs'))
    if not b or not t: return '?'
    b, t = float(b.split()[-1]), float(t.split()[-1])
    return f'{t / b:.1f}x' if b > 0 else '?'


def target_outcome(d, tgt):
    failed = read(os.path.join(d, 'target.failed'))
    if failed:
        m = re.search(r'best (-?[\d.]+) dB \((.*)\); as configured', failed)
        if not m: return 'failed: ' + failed[-200:]
        what = re.sub(r', last .*', '', m.group(2))
        what = what.replace(' bit upgrade(s)', ' upgrades')
        return f'out of reach: best {m.group(1)} dB ({what})'
    if not os.path.exists(os.path.join(d, 'done')): return 'running'
    return f'met ({tgt["output_sqnr_db"]:.2f} dB)' if tgt else '?'


def row(model, tpc, d):
    base, tgt = load(d, 'base/report.json'), load(d, 'target/report.json')
    if base is None:
        err = (read(os.path.join(d, 'base.err')) or '?').splitlines()[-1]
        return f'| {model} | {tpc} | failed: {err[:200]} |' + ' |' * 6
    cells = [model, tpc, f'{scores(d, "base")} [{base["output_sqnr_db"]:.2f} dB]',
             target_outcome(d, tgt)]
    qt = tgt.get('quality_target') if tgt else None
    if qt and not qt['changes']:
        cells.append('as W8A8 (no change)')
    elif qt:
        cells.append(f'{scores(d, "target")} [{tgt["output_sqnr_db"]:.2f} dB; '
                     f'{len(qt["changes"])} changes]')
    else:
        cells.append('')
    def vs8(r, k):
        b = r['baseline_8bit'][k + '_memory_bytes']
        return r['resource_utilization'][k + '_memory_bytes'] / b if b else 1
    mem = f'{vs8(base, "total"):.3f} / {vs8(base, "activation"):.3f}'
    if qt:
        mv = qt['memory_vs_8bit']
        mem += f' -> {mv["total"]:.3f} / {mv["activation"]:.3f}'
    cells.append(mem)
    w8 = base['baseline_8bit']['weights_memory_bytes']
    wt = (tgt or base)['resource_utilization']['weights_memory_bytes']
    act = base['baseline_8bit']['activation_memory_bytes']
    cells.append((f'{w8 / 1e3:.0f} KB (x{wt / w8:.3f})' if w8
                  else 'none quantized') + f'; act. {act / 1e3:.0f} KB')
    cells.append(f'{secs(d, "base")} / {secs(d, "target")} ({time_ratio(d)})')
    cells.append(f'{rss_mb(d, "base")} / {rss_mb(d, "target")}')
    return '| ' + ' | '.join(cells) + ' |'


def main():
    w, models = sys.argv[1], sys.argv[2:]
    print('| model | TPC | W8A8: held-out, ORT default level (quantd executor) '
          '[report SQNR] | `--target-sqnr` | at the target or its best: '
          'held-out, ORT (quantd) [report SQNR] | memory vs 8-bit, total / '
          'activation: W8A8 -> target | 8-bit weights (target x); activations | job s: W8A8 '
          '/ target (target / W8A8) | peak RSS MB: W8A8 / target |')
    print('|' + '---|' * 9)
    for m in models:
        for t in TPCS:
            d = os.path.join(w, m, t)
            if os.path.isdir(d): print(row(m, t, d))


if __name__ == '__main__':
    main()

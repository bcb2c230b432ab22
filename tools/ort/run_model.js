#!/usr/bin/env node
// Runs an ONNX model with ONNX Runtime (onnxruntime-node, CPU EP) over a
// sample set and writes the outputs in the same layout: quantd's oracle.
//
//   node tools/ort/run_model.js MODEL.onnx --inputs DIR [--out DIR]
//        [--threads N] [--optimization disabled|basic|extended|all]
//        [--warmup N] [--repeat N] [--timing FILE.json]
//        [--config KEY=VALUE]... [--optimized-model FILE.onnx]
//   node tools/ort/run_model.js MODEL.onnx --info
//
// --threads sets intra_op_num_threads (default 1; inter-op is always 1 and
// execution sequential). --repeat runs each sample N times after --warmup
// untimed runs and reports the minimum and median; outputs come from the first
// timed run. --config adds a session config entry (e.g.
// session.qdq_matmulnbits_accuracy_level=0). --info prints the model's inputs
// and outputs as JSON. Run scripts/install_ort.sh first.
'use strict';

const fs = require('fs');
const path = require('path');
const {readSampleSet, writeSample} = require('./sample_set');

function usage(msg) {
  if (msg) process.stderr.write(`run_model: ${msg}\n`);
  process.stderr.write(
      'usage: run_model.js MODEL.onnx --inputs DIR [--out DIR] [--threads N]\n' +
      '         [--optimization disabled|basic|extended|all] [--warmup N] [--repeat N]\n' +
      '         [--timing FILE] [--config KEY=VALUE]... [--optimized-model FILE]\n' +
      '       run_model.js MODEL.onnx --info\n');
  process.exit(2);
}

function parseArgs(argv) {
  const opts = {threads: 1, optimization: 'all', warmup: 0, repeat: 1, config: {}};
  const positional = [];
  const intArg = (name, v, min) => {
    if (!/^\d+$/.test(v || '') || Number(v) < min) usage(`${name} needs an integer >= ${min}`);
    return Number(v);
  };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) usage(`${a} needs a value`);
      return argv[++i];
    };
    switch (a) {
      case '--inputs': opts.inputs = next(); break;
      case '--out': opts.out = next(); break;
      case '--threads': opts.threads = intArg(a, next(), 1); break;
      case '--optimization': opts.optimization = next(); break;
      case '--warmup': opts.warmup = intArg(a, next(), 0); break;
      case '--repeat': opts.repeat = intArg(a, next(), 1); break;
      case '--timing': opts.timing = next(); break;
      case '--optimized-model': opts.optimizedModel = next(); break;
      case '--info': opts.info = true; break;
      case '--config': {
        const kv = next();
        const eq = kv.indexOf('=');
        if (eq <= 0) usage(`--config wants KEY=VALUE, got '${kv}'`);
        opts.config[kv.slice(0, eq)] = kv.slice(eq + 1);
        break;
      }
      case '-h': case '--help': usage();
      default:
        if (a.startsWith('--')) usage(`unknown flag ${a}`);
        positional.push(a);
    }
  }
  if (positional.length !== 1) usage('exactly one MODEL.onnx expected');
  opts.model = positional[0];
  if (!['disabled', 'basic', 'extended', 'all'].includes(opts.optimization)) {
    usage(`--optimization must be disabled, basic, extended or all`);
  }
  if (!opts.info && !opts.inputs) usage('--inputs DIR is required');
  return opts;
}

// "a.b.c": "v" -> {a: {b: {c: "v"}}}; the node binding flattens it back.
function nestConfig(flat) {
  const out = {};
  for (const [k, v] of Object.entries(flat)) {
    const parts = k.split('.');
    let o = out;
    for (const p of parts.slice(0, -1)) o = o[p] = o[p] || {};
    o[parts[parts.length - 1]] = v;
  }
  return out;
}

function loadOrt() {
  try {
    return require(path.join(__dirname, 'node_modules', 'onnxruntime-node'));
  } catch (e) {
    process.stderr.write(`run_model: onnxruntime-node is not installed (run scripts/install_ort.sh): ${e.message}\n`);
    process.exit(1);
  }
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function checkFeed(meta, sample, t) {
  if (!meta || !meta.isTensor) return;
  if (meta.type !== t.type) {
    throw new Error(`sample '${sample}': input '${meta.name}' is ${t.type}, the model wants ${meta.type}`);
  }
  if (meta.shape.length && meta.shape.length !== t.dims.length) {
    throw new Error(`sample '${sample}': input '${meta.name}' has shape [${t.dims}], ` +
                    `the model wants rank ${meta.shape.length} [${meta.shape}]`);
  }
  meta.shape.forEach((d, i) => {
    if (typeof d === 'number' && d >= 0 && d !== t.dims[i]) {
      throw new Error(`sample '${sample}': input '${meta.name}' has shape [${t.dims}], ` +
                      `the model wants [${meta.shape}]`);
    }
  });
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const ort = loadOrt();
  const sessionOptions = {
    executionProviders: ['cpu'],
    intraOpNumThreads: opts.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: opts.optimization,
    logSeverityLevel: 3,
  };
  if (Object.keys(opts.config).length) sessionOptions.extra = nestConfig(opts.config);
  if (opts.optimizedModel) sessionOptions.optimizedModelFilePath = opts.optimizedModel;

  const t0 = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(opts.model, sessionOptions);
  const loadMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const meta = (list, names) => names.map((n, i) => {
    const m = (list || [])[i] || {};
    return {name: n, type: m.type, shape: m.shape};
  });
  if (opts.info) {
    process.stdout.write(JSON.stringify({
      inputs: meta(session.inputMetadata, session.inputNames),
      outputs: meta(session.outputMetadata, session.outputNames),
    }, null, 2) + '\n');
    return;
  }

  const samples = readSampleSet(opts.inputs, session.inputNames);
  const records = [];
  for (const s of samples) {
    const feeds = {};
    session.inputNames.forEach((name, i) => {
      const t = s.feeds[name];
      checkFeed((session.inputMetadata || [])[i], s.name, t);
      feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
    });
    for (let w = 0; w < opts.warmup; ++w) await session.run(feeds);
    const times = [];
    let first = null;
    for (let r = 0; r < opts.repeat; ++r) {
      const start = process.hrtime.bigint();
      const out = await session.run(feeds);
      times.push(Number(process.hrtime.bigint() - start) / 1e6);
      if (first === null) first = out;
    }
    if (opts.out) {
      const outputs = {};
      for (const [name, t] of Object.entries(first)) {
        outputs[name] = {type: t.type, dims: t.dims, data: t.data};
      }
      writeSample(opts.out, s.name, outputs);
    }
    records.push({name: s.name, min_ms: Math.min(...times), median_ms: median(times), runs_ms: times});
    process.stderr.write(`${s.name}: ${median(times).toFixed(3)} ms\n`);
  }
  const mins = records.map((r) => r.min_ms);
  const medians = records.map((r) => r.median_ms);
  const summary = {
    model: opts.model,
    runtime: `onnxruntime-node ${ort.env.versions.node || ''}`.trim(),
    threads: opts.threads,
    optimization: opts.optimization,
    warmup: opts.warmup,
    repeat: opts.repeat,
    load_ms: loadMs,
    samples: records,
    mean_of_min_ms: mins.reduce((a, b) => a + b, 0) / mins.length,
    mean_of_median_ms: medians.reduce((a, b) => a + b, 0) / medians.length,
  };
  process.stderr.write(`${records.length} samples, mean ${summary.mean_of_median_ms.toFixed(3)} ms/sample ` +
                       `(median of ${opts.repeat}), ${opts.threads} thread(s), optimization ${opts.optimization}\n`);
  if (opts.timing) fs.writeFileSync(opts.timing, JSON.stringify(summary, null, 2) + '\n');
}

main().catch((e) => {
  process.stderr.write(`run_model: ${e.message}\n`);
  process.exit(1);
});

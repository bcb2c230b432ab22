#!/usr/bin/env node
// Compares ONNX Runtime outputs of pairs of models on the same inputs, many
// pairs in one process (graph tests: opset upgrades must not change results).
//
//   node ort_compare.js MANIFEST.jsonl
//
// Each manifest line: {"name": ..., "a": MODEL, "b": MODEL, "inputs": [PB...],
// "expected": [PB...]} with TensorProto files in graph-input/output order.
// Model b passes when its outputs equal a's within 1e-5 relative, or, where
// they do not, when they match ONNX's expected outputs at ONNX's tolerance
// (rtol 1e-3, atol 1e-7; ORT's kernels for some old opsets deviate from it).
// Prints one line per pair: "ok NAME maxrel", "ok-expected NAME ...",
// "skip NAME reason" (ORT cannot run model a) or "FAIL NAME reason", then
// "N passed, N failed".
'use strict';

const fs = require('fs');
const path = require('path');
const root = path.resolve(__dirname, '..', '..', '..');
const ort = require(path.join(root, 'tools', 'ort', 'node_modules', 'onnxruntime-node'));
const {readTensorProto} = require(path.join(root, 'tools', 'ort', 'tensor_proto'));

async function run(model, inputs) {
  const opts = {intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'disabled'};
  const session = await ort.InferenceSession.create(model, opts);
  const feeds = {};
  session.inputNames.forEach((name, i) => {
    const t = readTensorProto(inputs[i]);
    feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
  });
  const out = await session.run(feeds);
  return session.outputNames.map((n) => out[n]);
}

function matchesExpected(got, files) {
  if (!files || files.length < got.length) return false;
  for (let i = 0; i < got.length; ++i) {
    const e = readTensorProto(files[i]);
    if (got[i].dims.join(',') !== e.dims.join(',')) return false;
    for (let k = 0; k < e.data.length; ++k) {
      const a = Number(got[i].data[k]);
      const b = Number(e.data[k]);
      if (Number.isNaN(a) && Number.isNaN(b)) continue;
      if (Math.abs(a - b) > 1e-7 + 1e-3 * Math.abs(b)) return false;
    }
  }
  return true;
}

function maxRelative(x, y) {
  if (x.type !== y.type || x.dims.join(',') !== y.dims.join(',')) return Infinity;
  let worst = 0;
  for (let i = 0; i < x.data.length; ++i) {
    const a = Number(x.data[i]);
    const b = Number(y.data[i]);
    if (Number.isNaN(a) && Number.isNaN(b)) continue;
    if (a === b) continue;
    worst = Math.max(worst, Math.abs(a - b) / Math.max(Math.abs(b), 1e-6));
  }
  return worst;
}

async function main() {
  const lines = fs.readFileSync(process.argv[2], 'utf8').split('\n').filter((l) => l);
  let passed = 0;
  let failed = 0;
  for (const line of lines) {
    const c = JSON.parse(line);
    let want;
    try {
      want = await run(c.a, c.inputs);
    } catch (e) {
      console.log(`skip ${c.name} ${String(e.message).split('\n')[0]}`);
      continue;
    }
    try {
      const got = await run(c.b, c.inputs);
      let worst = 0;
      for (let i = 0; i < want.length; ++i) worst = Math.max(worst, maxRelative(got[i], want[i]));
      if (worst <= 1e-5) {
        ++passed;
        console.log(`ok ${c.name} ${worst}`);
      } else if (matchesExpected(got, c.expected)) {
        ++passed;
        console.log(`ok-expected ${c.name} differs from ORT on the original by ${worst} ` +
                    'but matches the ONNX expected output');
      } else {
        ++failed;
        console.log(`FAIL ${c.name} max relative difference ${worst}`);
      }
    } catch (e) {
      ++failed;
      console.log(`FAIL ${c.name} ${String(e.message).split('\n')[0]}`);
    }
  }
  console.log(`${passed} passed, ${failed} failed`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

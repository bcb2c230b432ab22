// Sample sets on disk (DESIGN.md "Sample sets on disk"), the same layout that
// core/io reads:
//   DIR/<sample>/<input>.npy   one subfolder per sample, sorted by name, one
//                              file per model input (or <input>.pb TensorProto)
//   DIR/<sample>.npy           single-input models may use plain files
// Input and output names are sanitised: characters outside [A-Za-z0-9_.-]
// become '_'.
'use strict';

const fs = require('fs');
const path = require('path');
const {readNpy, writeNpy} = require('./npy');
const {readTensorProto} = require('./tensor_proto');

function sanitize(name) {
  return name.replace(/[^A-Za-z0-9_.-]/g, '_');
}

// Byte-wise order, as std::sort on std::string does in core/io.
function byteCompare(a, b) {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

function isTensorFile(name) {
  return name.endsWith('.npy') || name.endsWith('.pb');
}

function readTensorFile(file) {
  return file.endsWith('.npy') ? readNpy(file) : readTensorProto(file);
}

function fileToInput(inputNames) {
  const map = new Map();
  for (const name of inputNames) {
    const s = sanitize(name);
    if (map.has(s)) {
      throw new Error(`inputs '${map.get(s)}' and '${name}' have the same file name '${s}'`);
    }
    map.set(s, name);
  }
  return map;
}

// Returns [{name, feeds: {inputName: {type, dims, data}}}] sorted by sample.
function readSampleSet(dir, inputNames) {
  const entries = fs.readdirSync(dir, {withFileTypes: true})
                      .filter((e) => !e.name.startsWith('.'))
                      .sort((a, b) => byteCompare(a.name, b.name));
  const subdirs = entries.filter((e) => e.isDirectory());
  const files = entries.filter((e) => e.isFile() && isTensorFile(e.name));
  if (subdirs.length && files.length) {
    throw new Error(`${dir}: mixes sample folders and plain tensor files ('${files[0].name}')`);
  }
  const byFile = fileToInput(inputNames);
  const samples = [];
  if (files.length) {
    if (inputNames.length !== 1) {
      throw new Error(`${dir}: plain tensor files need a single-input model, this one has ` +
                      `${inputNames.length} inputs (${inputNames.join(', ')})`);
    }
    for (const f of files) {
      const stem = f.name.replace(/\.(npy|pb)$/, '');
      samples.push({name: stem, feeds: {[inputNames[0]]: readTensorFile(path.join(dir, f.name))}});
    }
    return samples;
  }
  for (const d of subdirs) {
    const sampleDir = path.join(dir, d.name);
    const feeds = {};
    for (const f of fs.readdirSync(sampleDir).filter(isTensorFile).sort(byteCompare)) {
      const stem = f.replace(/\.(npy|pb)$/, '');
      const input = byFile.get(stem);
      if (input === undefined) {
        throw new Error(`${path.join(sampleDir, f)}: no model input is named '${stem}' ` +
                        `(inputs: ${inputNames.join(', ')})`);
      }
      if (feeds[input]) throw new Error(`${sampleDir}: two files for input '${input}'`);
      feeds[input] = readTensorFile(path.join(sampleDir, f));
    }
    for (const name of inputNames) {
      if (!feeds[name]) throw new Error(`${sampleDir}: missing ${sanitize(name)}.npy for input '${name}'`);
    }
    samples.push({name: d.name, feeds});
  }
  if (!samples.length) throw new Error(`${dir}: no samples`);
  return samples;
}

function writeSample(outDir, sampleName, outputs) {
  const dir = path.join(outDir, sampleName);
  fs.mkdirSync(dir, {recursive: true});
  for (const [name, t] of Object.entries(outputs)) {
    writeNpy(path.join(dir, sanitize(name) + '.npy'), t.type, t.dims, t.data);
  }
}

module.exports = {sanitize, readSampleSet, writeSample, readTensorFile};

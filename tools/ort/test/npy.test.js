// The oracle's own readers against files numpy and onnx wrote
// (tests/core/io/testdata/make_testdata.py): node --test tools/ort/test
'use strict';

const assert = require('node:assert');
const fs = require('fs');
const os = require('os');
const path = require('path');
const test = require('node:test');
const {readNpy, writeNpy} = require('../npy');
const {readTensorProto} = require('../tensor_proto');
const {readSampleSet, sanitize} = require('../sample_set');

const DATA = path.join(__dirname, '..', '..', '..', 'tests', 'core', 'io', 'testdata');

test('reads float32 C order', () => {
  const t = readNpy(path.join(DATA, 'f4_2x3.npy'));
  assert.strictEqual(t.type, 'float32');
  assert.deepStrictEqual(t.dims, [2, 3]);
  assert.deepStrictEqual(Array.from(t.data), [0, 0.5, 1, 1.5, 2, 2.5]);  // arange(6) * 0.5
});

test('swaps big-endian float64', () => {
  const t = readNpy(path.join(DATA, 'f8_be.npy'));
  assert.deepStrictEqual(Array.from(t.data), [1.5, -2.25, 3e10]);
});

test('transposes Fortran order', () => {
  const t = readNpy(path.join(DATA, 'i8_fortran_2x3x4.npy'));
  assert.deepStrictEqual(t.dims, [2, 3, 4]);
  assert.deepStrictEqual(Array.from(t.data, Number), Array.from({length: 24}, (_, k) => k));
  const s = readNpy(path.join(DATA, 'i2_be_fortran_2x3.npy'));
  assert.deepStrictEqual(Array.from(s.data), [1, -2, 300, -400, 5, 32767]);
});

test('reads bool, uint8, scalars and v2/v3 headers', () => {
  assert.deepStrictEqual(Array.from(readNpy(path.join(DATA, 'bool.npy')).data), [1, 0, 1]);
  assert.deepStrictEqual(Array.from(readNpy(path.join(DATA, 'u1.npy')).data), [0, 7, 255]);
  const sc = readNpy(path.join(DATA, 'scalar_f4.npy'));
  assert.deepStrictEqual(sc.dims, []);
  assert.strictEqual(sc.data[0], 3.5);
  for (const f of ['f4_v2.npy', 'f4_v3.npy']) {
    assert.deepStrictEqual(Array.from(readNpy(path.join(DATA, f)).data), [1, 2]);
  }
});

test('writes what numpy.save writes', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'npy-'));
  const cases = [
    ['write_f4_2x3.npy', 'float32', [2, 3], Float32Array.from([0, 0.5, 1, 1.5, 2, 2.5])],
    ['write_i8_5.npy', 'int64', [5], BigInt64Array.from([-2n, -1n, 0n, 1n, 2n])],
    ['write_f8_scalar.npy', 'float64', [], Float64Array.from([-1.25])],
    ['write_bool_3.npy', 'bool', [3], Uint8Array.from([1, 0, 1])],
  ];
  for (const [file, type, dims, data] of cases) {
    const out = path.join(dir, file);
    writeNpy(out, type, dims, data);
    assert.ok(fs.readFileSync(out).equals(fs.readFileSync(path.join(DATA, file))), file);
  }
});

test('rejects malformed files with the file name', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'npy-'));
  const bad = path.join(dir, 'bad.npy');
  fs.writeFileSync(bad, 'garbage bytes here');
  assert.throws(() => readNpy(bad), /bad\.npy: not a \.npy file/);
  const good = fs.readFileSync(path.join(DATA, 'f4_2x3.npy'));
  fs.writeFileSync(bad, good.subarray(0, good.length - 4));
  assert.throws(() => readNpy(bad), /data has 20 bytes, shape \[2,3\] of <f4 needs 24/);
});

test('reads ONNX TensorProto files', () => {
  const t = readTensorProto(path.join(DATA, 'tensor_f4_2x2.pb'));
  assert.strictEqual(t.name, 'x');
  assert.deepStrictEqual(t.dims, [2, 2]);
  assert.deepStrictEqual(Array.from(t.data), [1, 2, 3, 4]);
  const i = readTensorProto(path.join(DATA, 'tensor_i64_3.pb'));
  assert.deepStrictEqual(Array.from(i.data), [-1n, 0n, 9n]);
});

test('sample-set layout: sanitised names, sorted folders, plain files', () => {
  assert.strictEqual(sanitize('onnx::Flatten_0'), 'onnx__Flatten_0');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'set-'));
  for (const s of ['s2', 's10', 'B']) {
    fs.mkdirSync(path.join(dir, s));
    writeNpy(path.join(dir, s, 'x_0.npy'), 'float32', [1], Float32Array.from([s.length]));
  }
  const set = readSampleSet(dir, ['x:0']);
  assert.deepStrictEqual(set.map((s) => s.name), ['B', 's10', 's2']);
  assert.throws(() => readSampleSet(dir, ['x:0', 'sr']), /missing sr\.npy for input 'sr'/);
});

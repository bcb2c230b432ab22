// NumPy .npy reader/writer for onnxruntime-node tensors (no dependencies).
//
// Format (numpy/lib/format.py): "\x93NUMPY", major, minor, a little-endian
// header length (uint16 for v1, uint32 for v2/v3), then a Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (1, 3), } padded with
// spaces and a newline so that the data starts on a 64-byte boundary.
'use strict';

const fs = require('fs');

// numpy kind+size -> [ORT tensor type, typed array constructor]
const KINDS = {
  f2: ['float16', Uint16Array],
  f4: ['float32', Float32Array],
  f8: ['float64', Float64Array],
  i1: ['int8', Int8Array],
  i2: ['int16', Int16Array],
  i4: ['int32', Int32Array],
  i8: ['int64', BigInt64Array],
  u1: ['uint8', Uint8Array],
  u2: ['uint16', Uint16Array],
  u4: ['uint32', Uint32Array],
  u8: ['uint64', BigUint64Array],
  b1: ['bool', Uint8Array],
};
const ORT_TO_DESCR = {};
for (const [k, [t]] of Object.entries(KINDS)) ORT_TO_DESCR[t] = k;

const MAGIC = Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]);  // \x93NUMPY
const MAX_ELEMENTS = 2 ** 31;

function parseHeader(text, file) {
  const descr = /'descr'\s*:\s*'([^']*)'/.exec(text);
  const fortran = /'fortran_order'\s*:\s*(True|False)/.exec(text);
  const shape = /'shape'\s*:\s*\(([^)]*)\)/.exec(text);
  if (!descr || !fortran || !shape) {
    throw new Error(`${file}: malformed .npy header ${JSON.stringify(text)}`);
  }
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s.length);
  const parsed = dims.map((d) => {
    if (!/^\d+L?$/.test(d)) throw new Error(`${file}: bad dimension '${d}' in .npy shape`);
    return Number.parseInt(d, 10);
  });
  return {descr: descr[1], fortran: fortran[1] === 'True', shape: parsed};
}

function typeOfDescr(descr, file) {
  const m = /^([<>|=])([a-z])(\d+)$/.exec(descr);
  if (!m) throw new Error(`${file}: unsupported .npy dtype '${descr}'`);
  const entry = KINDS[m[2] + m[3]];
  if (!entry) throw new Error(`${file}: unsupported .npy dtype '${descr}'`);
  return {bigEndian: m[1] === '>', size: Number(m[3]), type: entry[0], Ctor: entry[1]};
}

// Row-major strides of `shape`.
function strides(shape) {
  const s = new Array(shape.length).fill(1);
  for (let i = shape.length - 2; i >= 0; --i) s[i] = s[i + 1] * shape[i + 1];
  return s;
}

// Fortran (column-major) data -> C (row-major) order.
function fortranToC(src, shape) {
  const n = src.length;
  const dst = new src.constructor(n);
  const rank = shape.length;
  const cStrides = strides(shape);
  const idx = new Array(rank).fill(0);
  for (let f = 0; f < n; ++f) {  // f walks Fortran order: first axis fastest
    let c = 0;
    for (let a = 0; a < rank; ++a) c += idx[a] * cStrides[a];
    dst[c] = src[f];
    for (let a = 0; a < rank; ++a) {
      if (++idx[a] < shape[a]) break;
      idx[a] = 0;
    }
  }
  return dst;
}

// Returns {type, dims, data} with data a fresh typed array in C order.
function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.length < 10 || !buf.subarray(0, 6).equals(MAGIC)) {
    throw new Error(`${file}: not a .npy file (bad magic)`);
  }
  const major = buf[6];
  let headerLen;
  let offset;
  if (major === 1) {
    headerLen = buf.readUInt16LE(8);
    offset = 10;
  } else if (major === 2 || major === 3) {
    if (buf.length < 12) throw new Error(`${file}: truncated .npy header`);
    headerLen = buf.readUInt32LE(8);
    offset = 12;
  } else {
    throw new Error(`${file}: unsupported .npy version ${major}.${buf[7]}`);
  }
  if (offset + headerLen > buf.length) throw new Error(`${file}: truncated .npy header`);
  const text = buf.subarray(offset, offset + headerLen).toString(major === 3 ? 'utf8' : 'latin1');
  const h = parseHeader(text, file);
  const t = typeOfDescr(h.descr, file);
  let count = 1;
  for (const d of h.shape) count *= d;
  if (count > MAX_ELEMENTS) throw new Error(`${file}: .npy shape [${h.shape}] is too large`);
  const dataStart = offset + headerLen;
  const want = count * t.size;
  if (buf.length - dataStart !== want) {
    throw new Error(`${file}: .npy data has ${buf.length - dataStart} bytes, shape [${h.shape}] ` +
                    `of ${h.descr} needs ${want}`);
  }
  const bytes = Buffer.from(buf.subarray(dataStart, dataStart + want));  // copy: aligned
  if (t.bigEndian && t.size > 1) bytes[`swap${t.size * 8}`]();
  let data = new t.Ctor(bytes.buffer, bytes.byteOffset, count);
  if (h.fortran && h.shape.length > 1) data = fortranToC(data, h.shape);
  if (t.type === 'bool') {
    for (let i = 0; i < data.length; ++i) data[i] = data[i] ? 1 : 0;
  }
  return {type: t.type, dims: h.shape, data};
}

// Writes a v1 (or v2 when the header is long) little-endian C-order .npy,
// byte-for-byte what numpy.save writes.
function writeNpy(file, type, dims, data) {
  const kind = ORT_TO_DESCR[type];
  if (!kind) throw new Error(`${file}: cannot write tensor type '${type}' as .npy`);
  const descr = (kind[1] === '1' ? '|' : '<') + kind;
  const shapeText = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shapeText}, }`;
  // numpy.save leaves room for the first dimension to grow in place.
  if (dims.length) header += ' '.repeat(Math.max(0, 21 - String(dims[0]).length));
  let major = 1;
  let prefix = 10;
  if (header.length + 1 + prefix > 65535) {
    major = 2;
    prefix = 12;
  }
  const total = Math.ceil((prefix + header.length + 1) / 64) * 64;
  header = header + ' '.repeat(total - prefix - header.length - 1) + '\n';
  const head = Buffer.alloc(prefix);
  MAGIC.copy(head, 0);
  head[6] = major;
  head[7] = 0;
  if (major === 1) head.writeUInt16LE(header.length, 8);
  else head.writeUInt32LE(header.length, 8);
  let body;
  if (type === 'bool') {
    body = Buffer.from(Uint8Array.from(data, (v) => (v ? 1 : 0)));
  } else {
    body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  }
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(header, 'latin1'), body]));
}

module.exports = {readNpy, writeNpy, fortranToC};

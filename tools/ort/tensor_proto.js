// Minimal ONNX TensorProto (.pb) reader for onnxruntime-node, no protobuf
// dependency: walks the wire format for the fields a dense tensor uses
// (dims=1, data_type=2, float_data=4, int32_data=5, int64_data=7, name=8,
// raw_data=9, double_data=10, uint64_data=11, data_location=14).
'use strict';

const fs = require('fs');

// ONNX DataType -> [ORT type, typed array ctor, bytes per element]
const TYPES = {
  1: ['float32', Float32Array, 4],
  2: ['uint8', Uint8Array, 1],
  3: ['int8', Int8Array, 1],
  4: ['uint16', Uint16Array, 2],
  5: ['int16', Int16Array, 2],
  6: ['int32', Int32Array, 4],
  7: ['int64', BigInt64Array, 8],
  9: ['bool', Uint8Array, 1],
  10: ['float16', Uint16Array, 2],
  11: ['float64', Float64Array, 8],
  12: ['uint32', Uint32Array, 4],
  13: ['uint64', BigUint64Array, 8],
};

class Reader {
  constructor(buf, file) {
    this.buf = buf;
    this.pos = 0;
    this.file = file;
  }
  fail(what) {
    throw new Error(`${this.file}: malformed TensorProto (${what} at byte ${this.pos})`);
  }
  varint() {  // BigInt
    let result = 0n;
    let shift = 0n;
    for (;;) {
      if (this.pos >= this.buf.length) this.fail('truncated varint');
      const b = this.buf[this.pos++];
      result |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) return result;
      shift += 7n;
      if (shift > 63n) this.fail('varint too long');
    }
  }
  bytes() {
    const len = Number(this.varint());
    if (this.pos + len > this.buf.length) this.fail('length past end');
    const out = this.buf.subarray(this.pos, this.pos + len);
    this.pos += len;
    return out;
  }
  skip(wire) {
    if (wire === 0) this.varint();
    else if (wire === 1) this.pos += 8;
    else if (wire === 2) this.bytes();
    else if (wire === 5) this.pos += 4;
    else this.fail(`wire type ${wire}`);
    if (this.pos > this.buf.length) this.fail('field past end');
  }
}

// Repeated scalar field, packed (wire 2) or one element (wire 0/1/5).
function readRepeated(r, wire, kind, out) {
  const one = (rr) => {
    if (kind === 'varint') return rr.varint();
    const n = kind === 'f32' ? 4 : 8;
    if (rr.pos + n > rr.buf.length) rr.fail('truncated fixed field');
    const v = kind === 'f32' ? rr.buf.readFloatLE(rr.pos) : rr.buf.readDoubleLE(rr.pos);
    rr.pos += n;
    return v;
  };
  if (wire === 2) {
    const sub = new Reader(r.bytes(), r.file);
    while (sub.pos < sub.buf.length) out.push(one(sub));
  } else {
    out.push(one(r));
  }
}

function signed64(v) {
  return BigInt.asIntN(64, v);
}

// Returns {name, type, dims, data}.
function readTensorProto(file) {
  const r = new Reader(fs.readFileSync(file), file);
  const dims = [];
  let dataType = 0;
  let name = '';
  let raw = null;
  const floats = [];
  const int32s = [];
  const int64s = [];
  const doubles = [];
  const uint64s = [];
  while (r.pos < r.buf.length) {
    const key = r.varint();
    const field = Number(key >> 3n);
    const wire = Number(key & 7n);
    switch (field) {
      case 1: readRepeated(r, wire, 'varint', dims); break;
      case 2: dataType = Number(signed64(r.varint())); break;
      case 4: readRepeated(r, wire, 'f32', floats); break;
      case 5: readRepeated(r, wire, 'varint', int32s); break;
      case 7: readRepeated(r, wire, 'varint', int64s); break;
      case 8: name = r.bytes().toString('utf8'); break;
      case 9: raw = r.bytes(); break;
      case 10: readRepeated(r, wire, 'f64', doubles); break;
      case 11: readRepeated(r, wire, 'varint', uint64s); break;
      case 13: throw new Error(`${file}: TensorProto with external data is not supported`);
      default: r.skip(wire);
    }
  }
  const t = TYPES[dataType];
  if (!t) throw new Error(`${file}: TensorProto data_type ${dataType} is not supported`);
  const shape = dims.map((d) => {
    const v = signed64(d);
    if (v < 0n || v > 2n ** 31n) throw new Error(`${file}: bad dimension ${v}`);
    return Number(v);
  });
  const count = shape.reduce((a, b) => a * b, 1);
  let data;
  if (raw) {
    if (raw.length !== count * t[2]) {
      throw new Error(`${file}: raw_data has ${raw.length} bytes, dims [${shape}] need ${count * t[2]}`);
    }
    const copy = Buffer.from(raw);
    data = new t[1](copy.buffer, copy.byteOffset, count);
  } else {
    let src;
    if (dataType === 1) src = floats;
    else if (dataType === 11) src = doubles;
    else if (dataType === 7) src = int64s.map(signed64);
    else if (dataType === 12 || dataType === 13) src = uint64s;
    else src = int32s.map((v) => Number(BigInt.asIntN(32, v)));
    if (src.length !== count) {
      throw new Error(`${file}: ${src.length} values for dims [${shape}] (${count} elements)`);
    }
    if (dataType === 12) src = src.map(Number);
    data = t[1].from(src);
  }
  return {name, type: t[0], dims: shape, data};
}

module.exports = {readTensorProto};

#!/usr/bin/env node
// Generates deterministic, realistic calibration and held-out sample sets for
// the real models that scripts/fetch_models.sh installs (docs/models.md):
//
//   node tools/ort/gen_samples.js --models DIR --out DIR [--only a,b]
//
// writes OUT/<model>/{calib,heldout}/s000/<input>.npy in the sample-set
// layout of DESIGN.md. Images are text lines (real words rendered in DejaVu
// fonts, upright or turned 180 degrees, on gradients with noise) and scenes
// (soft-edged glyph strokes, shapes, noise) put through each model's own
// preprocessing; audio is synthetic speech-like sound (harmonic glides shaped
// by formants, fricative noise, pauses, background noise). Audio models that
// consume features of an earlier stage get them the way the real application
// computes them: waveform -> melspectrogram model -> embedding model, and the
// VAD models get the recurrent state left by the chunks before, all run with
// ONNX Runtime. Seeds are fixed, so the same files come out on every run.
'use strict';

const fs = require('fs');
const path = require('path');
const {writeNpy} = require('./npy');
const {sanitize} = require('./sample_set');
const {drawText} = require('./text_render');

// ---------------------------------------------------------------- randomness
function mulberry32(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const rng = {
    next,
    uniform: (lo, hi) => lo + (hi - lo) * next(),
    int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),  // inclusive
    chance: (p) => next() < p,
    normal: () => {
      const u = Math.max(next(), 1e-12);
      return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * next());
    },
  };
  return rng;
}

// Stable 32-bit seed from a string (FNV-1a).
function seedOf(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; ++i) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

// -------------------------------------------------------------------- images
// An image is {h, w, px: Float32Array(h*w*3)} in [0,255], HWC.
function newImage(h, w) {
  return {h, w, px: new Float32Array(h * w * 3)};
}

function clamp(v, lo, hi) {
  return v < lo ? lo : v > hi ? hi : v;
}

// Light or dark background: two-colour linear gradient + low-frequency blobs.
function paintBackground(img, rng, light) {
  const c0 = [0, 1, 2].map(() => (light ? rng.uniform(170, 250) : rng.uniform(20, 120)));
  const c1 = [0, 1, 2].map((k) => clamp(c0[k] + rng.uniform(-60, 60), 0, 255));
  const angle = rng.uniform(0, Math.PI);
  const dx = Math.cos(angle);
  const dy = Math.sin(angle);
  const blobs = Array.from({length: rng.int(1, 4)}, () => ({
    x: rng.uniform(0, img.w), y: rng.uniform(0, img.h),
    r: rng.uniform(0.2, 0.8) * Math.max(img.w, img.h), a: rng.uniform(-35, 35),
  }));
  const norm = Math.abs(dx) * img.w + Math.abs(dy) * img.h;
  for (let y = 0; y < img.h; ++y) {
    for (let x = 0; x < img.w; ++x) {
      const t = clamp((x * dx + y * dy) / norm + (dx < 0 ? 1 : 0), 0, 1);
      let b = 0;
      for (const bl of blobs) {
        const d2 = ((x - bl.x) ** 2 + (y - bl.y) ** 2) / (bl.r * bl.r);
        b += bl.a * Math.exp(-d2);
      }
      const o = (y * img.w + x) * 3;
      for (let k = 0; k < 3; ++k) img.px[o + k] = c0[k] * (1 - t) + c1[k] * t + b;
    }
  }
}

// Alpha-blends colour `col` with coverage from a signed-distance function.
function blend(img, x, y, col, alpha) {
  if (alpha <= 0 || x < 0 || y < 0 || x >= img.w || y >= img.h) return;
  const o = (y * img.w + x) * 3;
  for (let k = 0; k < 3; ++k) img.px[o + k] = img.px[o + k] * (1 - alpha) + col[k] * alpha;
}

// Anti-aliased thick line segment.
function drawSegment(img, x0, y0, x1, y1, thick, col) {
  const r = thick / 2;
  const minX = Math.floor(Math.min(x0, x1) - r - 1);
  const maxX = Math.ceil(Math.max(x0, x1) + r + 1);
  const minY = Math.floor(Math.min(y0, y1) - r - 1);
  const maxY = Math.ceil(Math.max(y0, y1) + r + 1);
  const vx = x1 - x0;
  const vy = y1 - y0;
  const len2 = vx * vx + vy * vy || 1e-9;
  for (let y = Math.max(minY, 0); y <= Math.min(maxY, img.h - 1); ++y) {
    for (let x = Math.max(minX, 0); x <= Math.min(maxX, img.w - 1); ++x) {
      const t = clamp(((x - x0) * vx + (y - y0) * vy) / len2, 0, 1);
      const d = Math.hypot(x - (x0 + t * vx), y - (y0 + t * vy));
      blend(img, x, y, col, clamp(r - d + 0.5, 0, 1));
    }
  }
}

function drawRing(img, cx, cy, rx, ry, thick, col) {
  const steps = 16;
  for (let i = 0; i < steps; ++i) {
    const a0 = (2 * Math.PI * i) / steps;
    const a1 = (2 * Math.PI * (i + 1)) / steps;
    drawSegment(img, cx + rx * Math.cos(a0), cy + ry * Math.sin(a0),
                cx + rx * Math.cos(a1), cy + ry * Math.sin(a1), thick, col);
  }
}

// One glyph-like character in the box (x, y, w, h): 2-4 strokes of the kinds
// that make up Latin and CJK characters.
function drawGlyph(img, rng, x, y, w, h, thick, col) {
  const strokes = rng.int(2, 4);
  for (let s = 0; s < strokes; ++s) {
    const kind = rng.int(0, 4);
    const px = (f) => x + f * w;
    const py = (f) => y + f * h;
    if (kind === 0) {  // horizontal bar
      const fy = rng.uniform(0.1, 0.9);
      drawSegment(img, px(rng.uniform(0, 0.3)), py(fy), px(rng.uniform(0.7, 1)), py(fy), thick, col);
    } else if (kind === 1) {  // vertical bar
      const fx = rng.uniform(0.1, 0.9);
      drawSegment(img, px(fx), py(rng.uniform(0, 0.3)), px(fx), py(rng.uniform(0.7, 1)), thick, col);
    } else if (kind === 2) {  // diagonal
      drawSegment(img, px(rng.uniform(0, 0.4)), py(rng.uniform(0, 0.4)),
                  px(rng.uniform(0.6, 1)), py(rng.uniform(0.6, 1)), thick, col);
    } else if (kind === 3) {  // bowl
      drawRing(img, px(0.5), py(rng.uniform(0.4, 0.6)), w * rng.uniform(0.25, 0.45),
               h * rng.uniform(0.2, 0.4), thick, col);
    } else {  // hook
      const fx = rng.uniform(0.3, 0.7);
      drawSegment(img, px(fx), py(0.05), px(fx), py(0.8), thick, col);
      drawSegment(img, px(fx), py(0.8), px(fx - 0.3), py(0.95), thick, col);
    }
  }
}

// A line of text with baseline box (x, y, width, height); returns its right end.
function drawTextLine(img, rng, x, y, width, height, col) {
  const thick = Math.max(1.2, height * rng.uniform(0.08, 0.14));
  let cx = x;
  while (cx < x + width - height * 0.4) {
    const cw = height * rng.uniform(0.45, 0.9);
    if (rng.chance(0.12)) {  // word gap
      cx += height * 0.5;
      continue;
    }
    drawGlyph(img, rng, cx, y, Math.min(cw, x + width - cx), height, thick, col);
    cx += cw + height * rng.uniform(0.05, 0.2);
  }
  return cx;
}

function drawShape(img, rng) {
  const col = [0, 1, 2].map(() => rng.uniform(0, 255));
  const cx = rng.uniform(0, img.w);
  const cy = rng.uniform(0, img.h);
  const r = rng.uniform(0.05, 0.2) * Math.min(img.w, img.h);
  const rect = rng.chance(0.5);
  for (let y = Math.max(0, Math.floor(cy - r - 1)); y <= Math.min(img.h - 1, cy + r + 1); ++y) {
    for (let x = Math.max(0, Math.floor(cx - r - 1)); x <= Math.min(img.w - 1, cx + r + 1); ++x) {
      const d = rect ? Math.max(Math.abs(x - cx), Math.abs(y - cy)) : Math.hypot(x - cx, y - cy);
      blend(img, x, y, col, clamp(r - d + 0.5, 0, 1) * 0.9);
    }
  }
}

function addNoise(img, rng, sigma) {
  for (let i = 0; i < img.px.length; ++i) img.px[i] = clamp(img.px[i] + sigma * rng.normal(), 0, 255);
}

function rotate180(img) {
  const out = newImage(img.h, img.w);
  const n = img.h * img.w;
  for (let i = 0; i < n; ++i) {
    for (let k = 0; k < 3; ++k) out.px[i * 3 + k] = img.px[(n - 1 - i) * 3 + k];
  }
  return out;
}

// HWC [0,255] -> NCHW float32 with per-channel (v/255 - mean) / std.
function toNchw(img, mean, std) {
  const plane = img.h * img.w;
  const out = new Float32Array(3 * plane);
  for (let i = 0; i < plane; ++i) {
    for (let k = 0; k < 3; ++k) out[k * plane + i] = (img.px[i * 3 + k] / 255 - mean[k]) / std[k];
  }
  return out;
}

// A cropped text line as PaddleOCR's cls/rec models see it: real words in
// DejaVu fonts (text_render.js).
function textLineImage(rng, h, w) {
  const img = newImage(h, w);
  const light = rng.chance(0.8);
  paintBackground(img, rng, light);
  const textH = h * rng.uniform(0.55, 0.8);
  const y = (h - textH) / 2 + rng.uniform(-2, 2);
  const col = light ? [0, 1, 2].map(() => rng.uniform(0, 80)) : [0, 1, 2].map(() => rng.uniform(190, 255));
  const width = w * rng.uniform(0.5, 0.97);
  drawText(img, rng, blend, rng.uniform(1, w - width), y, width, textH, col);
  addNoise(img, rng, rng.uniform(1, 8));
  return img;
}

// A scene with several text lines and shapes, as the detector sees it.
function sceneImage(rng, h, w) {
  const img = newImage(h, w);
  paintBackground(img, rng, rng.chance(0.7));
  for (let s = rng.int(1, 4); s > 0; --s) drawShape(img, rng);
  for (let l = rng.int(2, 6); l > 0; --l) {
    const lh = rng.uniform(10, 32);
    const lw = rng.uniform(0.25, 0.8) * w;
    const dark = rng.chance(0.7);
    const col = [0, 1, 2].map(() => (dark ? rng.uniform(0, 70) : rng.uniform(200, 255)));
    drawTextLine(img, rng, rng.uniform(0, w - lw), rng.uniform(0, h - lh), lw, lh, col);
  }
  addNoise(img, rng, rng.uniform(1, 6));
  return img;
}

const HALF = [0.5, 0.5, 0.5];
const IMAGENET_MEAN = [0.485, 0.456, 0.406];
const IMAGENET_STD = [0.229, 0.224, 0.225];

// --------------------------------------------------------------------- audio
const SR = 16000;

// Speech-like waveform in [-1, 1]: voiced syllables (harmonics of a gliding
// f0 under three formant peaks), fricatives, pauses, background noise.
function speechLike(rng, n) {
  const out = new Float32Array(n);
  let t = rng.int(0, Math.floor(0.15 * SR));
  while (t < n) {
    const dur = Math.floor(rng.uniform(0.08, 0.3) * SR);
    const end = Math.min(n, t + dur);
    const gain = rng.uniform(0.2, 1);
    if (rng.chance(0.75)) {
      const f0a = rng.uniform(90, 250);
      const f0b = f0a * rng.uniform(0.8, 1.25);
      const formants = [[rng.uniform(300, 900), rng.uniform(60, 150)],
                        [rng.uniform(900, 2500), rng.uniform(80, 200)],
                        [rng.uniform(2500, 3600), rng.uniform(100, 250)]];
      const amp = (f) => formants.reduce((s, [c, bw], i) => s + Math.exp(-(((f - c) / bw) ** 2)) / (i + 1), 0.02);
      const vib = rng.uniform(4, 7);
      let phase = 0;
      for (let i = t; i < end; ++i) {
        const u = (i - t) / (end - t);
        const f0 = (f0a + (f0b - f0a) * u) * (1 + 0.01 * Math.sin(2 * Math.PI * vib * (i / SR)));
        phase += (2 * Math.PI * f0) / SR;
        let v = 0;
        for (let k = 1; k * f0 < 4000 && k <= 40; ++k) v += amp(k * f0) * Math.sin(k * phase) / Math.sqrt(k);
        out[i] += gain * Math.sin(Math.PI * u) * v;
      }
    } else {  // fricative: first-difference (high-passed) noise burst
      let prev = 0;
      for (let i = t; i < end; ++i) {
        const w = rng.normal();
        out[i] += gain * 0.3 * (w - prev) * Math.sin(Math.PI * (i - t) / (end - t));
        prev = w;
      }
    }
    t = end + Math.floor(rng.uniform(0.02, 0.2) * SR);
  }
  let peak = 1e-9;
  for (const v of out) peak = Math.max(peak, Math.abs(v));
  const level = rng.uniform(0.1, 0.9);
  const noise = level * rng.uniform(0.003, 0.08);
  const hum = rng.chance(0.3) ? level * rng.uniform(0.01, 0.05) : 0;
  const humF = rng.chance(0.5) ? 50 : 60;
  for (let i = 0; i < n; ++i) {
    out[i] = clamp((out[i] / peak) * level + noise * rng.normal() + hum * Math.sin(2 * Math.PI * humF * i / SR), -1, 1);
  }
  return out;
}

// ------------------------------------------------------------------- models
let ort = null;
const sessions = new Map();
async function session(modelsDir, name) {
  if (!sessions.has(name)) {
    ort = ort || require(path.join(__dirname, 'node_modules', 'onnxruntime-node'));
    const file = path.join(modelsDir, `${name}.onnx`);
    sessions.set(name, await ort.InferenceSession.create(file, {intraOpNumThreads: 1, interOpNumThreads: 1}));
  }
  return sessions.get(name);
}

function f32(dims, data) {
  return {type: 'float32', dims, data};
}

// openWakeWord's front end: int16-scale audio -> mel frames scaled /10 + 2.
async function melFrames(modelsDir, audio) {
  const s = await session(modelsDir, 'oww_melspectrogram');
  const x = Float32Array.from(audio, (v) => v * 32767);
  const out = await s.run({input: new ort.Tensor('float32', x, [1, x.length])});
  const mel = out.output;
  return {frames: mel.dims[2], data: Float32Array.from(mel.data, (v) => v / 10 + 2)};
}

async function embedding(modelsDir, mel, start) {
  const s = await session(modelsDir, 'oww_embedding');
  const win = mel.data.slice(start * 32, (start + 76) * 32);
  const out = await s.run({input_1: new ort.Tensor('float32', win, [1, 76, 32, 1])});
  return out.conv2d_19.data;
}

// Each spec: sample counts and a builder (rng, modelsDir) -> {input: tensor}.
const SPECS = {
  ppocr_cls: {
    // 512 held-out lines: top-1 agreement is then measured to 0.2%.
    calib: 32, heldout: 512,
    build: async (rng) => {
      let img = textLineImage(rng, 48, 192);
      if (rng.chance(0.5)) img = rotate180(img);  // the two classes: 0 and 180 degrees
      return {x: f32([1, 3, 48, 192], toNchw(img, HALF, HALF))};
    },
  },
  ppocr_rec: {
    calib: 16, heldout: 16,
    build: async (rng) => ({x: f32([1, 3, 48, 320], toNchw(textLineImage(rng, 48, 320), HALF, HALF))}),
  },
  ppocr_det: {
    calib: 16, heldout: 8,
    build: async (rng) => ({x: f32([1, 3, 320, 320], toNchw(sceneImage(rng, 320, 320), IMAGENET_MEAN, IMAGENET_STD))}),
  },
  oww_melspectrogram: {
    calib: 32, heldout: 32,
    build: async (rng) => ({input: f32([1, 1760], Float32Array.from(speechLike(rng, 1760), (v) => v * 32767))}),
  },
  oww_embedding: {
    calib: 32, heldout: 32,
    needs: ['oww_melspectrogram'],
    build: async (rng, dir) => {
      const mel = await melFrames(dir, speechLike(rng, 160 * 75 + 512));
      return {input_1: f32([1, 76, 32, 1], mel.data.slice(0, 76 * 32))};
    },
  },
  oww_hey_jarvis: {
    calib: 32, heldout: 32,
    needs: ['oww_melspectrogram', 'oww_embedding'],
    build: async (rng, dir) => {
      // 16 embeddings, one per 80 ms chunk (8 mel frames), as openWakeWord feeds them.
      const mel = await melFrames(dir, speechLike(rng, 160 * (75 + 8 * 15) + 512));
      const x = new Float32Array(16 * 96);
      for (let w = 0; w < 16; ++w) x.set((await embedding(dir, mel, 8 * w)).subarray(0, 96), w * 96);
      return {'x.1': f32([1, 16, 96], x)};
    },
  },
  silero_vad: {
    calib: 32, heldout: 32,
    build: async (rng, dir) => {
      const s = await session(dir, 'silero_vad');
      const k = rng.int(0, 7);
      const audio = speechLike(rng, 512 * (k + 1));
      const sr = {type: 'int64', dims: [], data: BigInt64Array.from([16000n])};
      let h = new Float32Array(128);
      let c = new Float32Array(128);
      for (let i = 0; i < k; ++i) {  // the state that the earlier chunks leave
        const out = await s.run({
          input: new ort.Tensor('float32', audio.slice(512 * i, 512 * (i + 1)), [1, 512]),
          sr: new ort.Tensor('int64', sr.data, []),
          h: new ort.Tensor('float32', h, [2, 1, 64]), c: new ort.Tensor('float32', c, [2, 1, 64]),
        });
        h = Float32Array.from(out.hn.data);
        c = Float32Array.from(out.cn.data);
      }
      return {input: f32([1, 512], audio.slice(512 * k)), sr, h: f32([2, 1, 64], h), c: f32([2, 1, 64], c)};
    },
  },
  silero_vad_v5: {
    calib: 32, heldout: 32,
    build: async (rng, dir) => {
      // v5 takes 64 samples of context followed by a 512-sample chunk.
      const s = await session(dir, 'silero_vad_v5');
      const k = rng.int(0, 7);
      const audio = new Float32Array(64 + 512 * (k + 1));
      audio.set(speechLike(rng, 512 * (k + 1)), 64);
      const sr = {type: 'int64', dims: [], data: BigInt64Array.from([16000n])};
      let state = new Float32Array(256);
      for (let i = 0; i < k; ++i) {
        const out = await s.run({
          input: new ort.Tensor('float32', audio.slice(512 * i, 512 * i + 576), [1, 576]),
          state: new ort.Tensor('float32', state, [2, 1, 128]),
          sr: new ort.Tensor('int64', sr.data, []),
        });
        state = Float32Array.from(out.stateN.data);
      }
      return {input: f32([1, 576], audio.slice(512 * k, 512 * k + 576)), state: f32([2, 1, 128], state), sr};
    },
  },
};

async function generate(modelsDir, outDir, name) {
  const spec = SPECS[name];
  for (const split of ['calib', 'heldout']) {
    const dir = path.join(outDir, name, split);
    fs.rmSync(dir, {recursive: true, force: true});
    for (let i = 0; i < spec[split]; ++i) {
      const sample = `s${String(i).padStart(3, '0')}`;
      const rng = mulberry32(seedOf(`${name}/${split}/${sample}`));
      const feeds = await spec.build(rng, modelsDir);
      fs.mkdirSync(path.join(dir, sample), {recursive: true});
      for (const [input, t] of Object.entries(feeds)) {
        writeNpy(path.join(dir, sample, `${sanitize(input)}.npy`), t.type, t.dims, t.data);
      }
    }
  }
  process.stderr.write(`gen_samples: ${name}: ${spec.calib} calib + ${spec.heldout} held-out\n`);
}

async function main() {
  const args = process.argv.slice(2);
  const get = (flag) => {
    const i = args.indexOf(flag);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const modelsDir = get('--models');
  const outDir = get('--out');
  if (!modelsDir || !outDir) {
    process.stderr.write('usage: gen_samples.js --models DIR --out DIR [--only name,name]\n');
    process.exit(2);
  }
  const only = get('--only') ? get('--only').split(',') : Object.keys(SPECS);
  for (const name of only) {
    if (!SPECS[name]) throw new Error(`unknown model '${name}' (known: ${Object.keys(SPECS).join(', ')})`);
    await generate(modelsDir, outDir, name);
  }
}

main().catch((e) => {
  process.stderr.write(`gen_samples: ${e.message}\n`);
  process.exit(1);
});

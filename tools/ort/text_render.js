// Renders real text with a TrueType font into the images of gen_samples.js:
// glyph outlines from opentype.js, flattened to polygons and filled with the
// non-zero winding rule at 4x4 supersampling (anti-aliased edges). Text
// models see text, not strokes that only look like it: on stroke-like
// "glyphs" PaddleOCR's direction classifier is unsure of a tenth of its
// inputs, which makes agreement figures measure noise.
'use strict';

const fs = require('fs');

// Debian's fonts-dejavu-core (scripts/setup.sh installs it).
const FONT_DIRS = ['/usr/share/fonts/truetype/dejavu'];
const FONT_FILES = ['DejaVuSans.ttf', 'DejaVuSans-Bold.ttf', 'DejaVuSerif.ttf', 'DejaVuSansMono.ttf'];

let fonts = null;
function loadFonts() {
  if (fonts) return fonts;
  const opentype = require('opentype.js');
  fonts = [];
  for (const dir of FONT_DIRS) {
    for (const file of FONT_FILES) {
      const p = `${dir}/${file}`;
      if (!fs.existsSync(p)) continue;
      const buf = fs.readFileSync(p);
      fonts.push(opentype.parse(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length)));
    }
  }
  if (fonts.length === 0) throw new Error(`text_render: no font in ${FONT_DIRS.join(', ')} (install fonts-dejavu-core)`);
  return fonts;
}

// Path commands -> closed polygons (curves flattened into 8 segments).
function polygons(path) {
  const polys = [];
  let cur = null;
  let px = 0, py = 0;
  for (const c of path.commands) {
    if (c.type === 'M') {
      cur = [[c.x, c.y]];
      polys.push(cur);
    } else if (c.type === 'L') {
      cur.push([c.x, c.y]);
    } else if (c.type === 'Q') {
      for (let i = 1; i <= 8; ++i) {
        const t = i / 8, u = 1 - t;
        cur.push([u * u * px + 2 * u * t * c.x1 + t * t * c.x, u * u * py + 2 * u * t * c.y1 + t * t * c.y]);
      }
    } else if (c.type === 'C') {
      for (let i = 1; i <= 8; ++i) {
        const t = i / 8, u = 1 - t;
        cur.push([
          u * u * u * px + 3 * u * u * t * c.x1 + 3 * u * t * t * c.x2 + t * t * t * c.x,
          u * u * u * py + 3 * u * u * t * c.y1 + 3 * u * t * t * c.y2 + t * t * t * c.y,
        ]);
      }
    }
    if (c.type !== 'Z') {
      px = c.x;
      py = c.y;
    }
  }
  return polys;
}

// Coverage in [0, 1] of each pixel of a w x h box at (x0, y0).
function coverage(polys, x0, y0, w, h) {
  const S = 4;
  const cov = new Float32Array(w * h);
  const edges = [];
  for (const p of polys) {
    for (let i = 0; i < p.length; ++i) {
      const a = p[i], b = p[(i + 1) % p.length];
      if (a[1] !== b[1]) edges.push(a[1] < b[1] ? [a[0], a[1], b[0], b[1], 1] : [b[0], b[1], a[0], a[1], -1]);
    }
  }
  for (let sy = 0; sy < h * S; ++sy) {
    const y = y0 + (sy + 0.5) / S;
    const xs = [];
    for (const [ax, ay, bx, by, dir] of edges) {
      if (y >= ay && y < by) xs.push([ax + ((y - ay) / (by - ay)) * (bx - ax), dir]);
    }
    xs.sort((p, q) => p[0] - q[0]);
    let wind = 0;
    for (let i = 0; i + 1 < xs.length; ++i) {
      wind += xs[i][1];
      if (wind === 0) continue;
      const from = Math.max(0, (xs[i][0] - x0) * S), to = Math.min(w * S, (xs[i + 1][0] - x0) * S);
      for (let sx = Math.ceil(from - 0.5); sx + 0.5 < to; ++sx) {
        cov[Math.floor(sy / S) * w + Math.floor(sx / S)] += 1 / (S * S);
      }
    }
  }
  return cov;
}

const WORDS = ('the of and to in is was for on that with as by at from this be are or an it not which have ' +
  'total price date name address phone order invoice number page report model data text line image ' +
  'quality service account amount paid due city street market station north south east west ' +
  'open close new old first last time year month day week morning evening').split(' ');

// A line of words, numbers and punctuation.
function randomLine(rng, words) {
  const parts = [];
  for (let i = 0; i < words; ++i) {
    const r = rng.next();
    if (r < 0.15) parts.push(String(rng.int(1, 99999)));
    else if (r < 0.2) parts.push(`${rng.int(1, 31)}/${rng.int(1, 12)}/${rng.int(1990, 2030)}`);
    else {
      let w = WORDS[rng.int(0, WORDS.length - 1)];
      if (rng.chance(0.2)) w = w[0].toUpperCase() + w.slice(1);
      if (rng.chance(0.08)) w = w.toUpperCase();
      parts.push(w + (rng.chance(0.1) ? [',', '.', ':', ';'][rng.int(0, 3)] : ''));
    }
  }
  return parts.join(' ');
}

// Draws a line of text of about `height` px cap-to-descender at (x, top),
// clipped to `width`; blends `col` by coverage. Returns the right edge.
function drawText(img, rng, blend, x, top, width, height, col) {
  const all = loadFonts();
  const font = all[rng.int(0, all.length - 1)];
  const size = height / 1.15;  // font size for ascender+descender ~ height
  const text = randomLine(rng, rng.int(2, 8));
  const baseline = top + size * 0.9;
  // Glyph by glyph: no shaping (opentype.js lacks some of DejaVu's GSUB
  // lookups), which Latin text does not need.
  const path = new (require('opentype.js').Path)();
  let pen = x;
  for (const ch of text) {
    const glyph = font.charToGlyph(ch);
    path.extend(glyph.getPath(pen, baseline, size));
    pen += (glyph.advanceWidth * size) / font.unitsPerEm;
  }
  const bb = path.getBoundingBox();
  const x0 = Math.max(0, Math.floor(bb.x1)), y0 = Math.max(0, Math.floor(bb.y1));
  const x1 = Math.min(img.w, Math.ceil(Math.min(bb.x2, x + width))), y1 = Math.min(img.h, Math.ceil(bb.y2));
  if (x1 <= x0 || y1 <= y0) return x;
  const cov = coverage(polygons(path), x0, y0, x1 - x0, y1 - y0);
  for (let yy = y0; yy < y1; ++yy) {
    for (let xx = x0; xx < x1; ++xx) {
      const c = Math.min(1, cov[(yy - y0) * (x1 - x0) + (xx - x0)]);
      if (c > 0) blend(img, xx, yy, col, c);
    }
  }
  return x1;
}

module.exports = {drawText};

// Draws media/icon.png (128x128), the Marketplace icon: a quiver in the graph sense,
// three objects with arrows between them, two of them parallel. Shapes are tested
// per sample (8x8 per pixel) and averaged, so edges are smooth; only Node's
// standard library is used, and the output is the same on every run.
//   node scripts/icon.mjs [out.png]
import { Buffer } from "node:buffer";
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { deflateSync } from "node:zlib";

const SIZE = 128;
const SAMPLES = 8;
const out = process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), "..", "media", "icon.png");

const hex = (h) => [1, 3, 5].map((i) => parseInt(h.slice(i, i + 2), 16) / 255);
const BG_TOP = hex("#2e3280");
const BG_BOTTOM = hex("#141637");
const ARROW = hex("#f6b93b");
const NODE = hex("#eef1ff");

// ---- geometry
const sub = (a, b) => [a[0] - b[0], a[1] - b[1]];
const add = (a, b) => [a[0] + b[0], a[1] + b[1]];
const mul = (a, k) => [a[0] * k, a[1] * k];
const dot = (a, b) => a[0] * b[0] + a[1] * b[1];
const unit = (a) => mul(a, 1 / Math.hypot(a[0], a[1]));
const normal = (a) => [-a[1], a[0]];

function segmentDistance(p, a, b) {
  const ab = sub(b, a);
  const t = Math.max(0, Math.min(1, dot(sub(p, a), ab) / dot(ab, ab)));
  return Math.hypot(...sub(p, add(a, mul(ab, t))));
}

function inTriangle(p, a, b, c) {
  const side = (u, v) => (v[0] - u[0]) * (p[1] - u[1]) - (v[1] - u[1]) * (p[0] - u[0]);
  const s1 = side(a, b), s2 = side(b, c), s3 = side(c, a);
  return (s1 >= 0 && s2 >= 0 && s3 >= 0) || (s1 <= 0 && s2 <= 0 && s3 <= 0);
}

function inRoundedSquare(p, inset, radius) {
  const lo = inset + radius, hi = SIZE - inset - radius;
  const q = [Math.max(lo - p[0], 0, p[0] - hi), Math.max(lo - p[1], 0, p[1] - hi)];
  return Math.hypot(q[0], q[1]) <= radius;
}

// ---- the quiver: objects A (left), B (right), C (top); arrows A->C, C->B, and A=>B twice
const NODE_RADIUS = 12;
const GAP = 6; // between an arrow's ends and the objects
const STROKE = 6.5;
const HEAD_LENGTH = 15;
const HEAD_HALF_WIDTH = 8;
const A = [26, 93], B = [102, 93], C = [64, 28];

/** An arrow from circle `from` to circle `to`, shifted sideways by `offset` (parallel arrows). */
function arrow(from, to, offset = 0) {
  const u = unit(sub(to, from));
  const n = normal(u);
  const reach = Math.sqrt((NODE_RADIUS + GAP) ** 2 - offset ** 2);
  const start = add(add(from, mul(u, reach)), mul(n, offset));
  const tip = add(sub(to, mul(u, reach)), mul(n, offset));
  const base = sub(tip, mul(u, HEAD_LENGTH));
  return {
    shaftStart: start,
    shaftEnd: add(base, mul(u, 1)), // under the head, so no seam shows
    tip,
    left: add(base, mul(n, HEAD_HALF_WIDTH)),
    right: sub(base, mul(n, HEAD_HALF_WIDTH)),
  };
}
const arrows = [arrow(A, C), arrow(C, B), arrow(A, B, -9), arrow(A, B, 9)];

function inArrow(p) {
  return arrows.some(
    (a) => segmentDistance(p, a.shaftStart, a.shaftEnd) <= STROKE / 2 || inTriangle(p, a.tip, a.left, a.right),
  );
}

/** Premultiplied RGBA of one sample point. */
function sample(p) {
  if (!inRoundedSquare(p, 2, 26)) return [0, 0, 0, 0];
  if ([A, B, C].some((c) => Math.hypot(...sub(p, c)) <= NODE_RADIUS)) return [...NODE, 1];
  if (inArrow(p)) return [...ARROW, 1];
  // A diagonal gradient, light from the top left.
  const t = Math.min(1, Math.max(0, (p[0] * 0.35 + p[1]) / (SIZE * 1.35)));
  return [0, 1, 2].map((i) => BG_TOP[i] * (1 - t) + BG_BOTTOM[i] * t).concat(1);
}

const rows = Buffer.alloc(SIZE * (SIZE * 4 + 1));
for (let y = 0; y < SIZE; y++) {
  rows[y * (SIZE * 4 + 1)] = 0; // filter: none
  for (let x = 0; x < SIZE; x++) {
    const sum = [0, 0, 0, 0];
    for (let sy = 0; sy < SAMPLES; sy++) {
      for (let sx = 0; sx < SAMPLES; sx++) {
        const s = sample([x + (sx + 0.5) / SAMPLES, y + (sy + 0.5) / SAMPLES]);
        for (let i = 0; i < 4; i++) sum[i] += i < 3 ? s[i] * s[3] : s[3];
      }
    }
    const alpha = sum[3] / SAMPLES ** 2;
    const offset = y * (SIZE * 4 + 1) + 1 + x * 4;
    for (let i = 0; i < 3; i++) rows[offset + i] = alpha === 0 ? 0 : Math.round((255 * sum[i]) / sum[3]);
    rows[offset + 3] = Math.round(255 * alpha);
  }
}

// ---- PNG: signature, IHDR (8-bit RGBA), IDAT, IEND
const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(bytes) {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
function chunk(type, data) {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}
const header = Buffer.alloc(13);
header.writeUInt32BE(SIZE, 0);
header.writeUInt32BE(SIZE, 4);
header.set([8, 6, 0, 0, 0], 8); // bit depth 8, colour type RGBA, deflate, no filter, no interlace
const png = Buffer.concat([
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  chunk("IHDR", header),
  chunk("IDAT", deflateSync(rows, { level: 9 })),
  chunk("IEND", Buffer.alloc(0)),
]);
writeFileSync(out, png);
console.log(`wrote ${out} (${png.length} bytes)`);

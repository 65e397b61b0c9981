/**
 * The f16 weight copy of the WGSL collection kernel's tensor-core engine (ENGINE 4,
 * wgsl/collect_tile.wgsl `dense_mma`), and `pack_half`, the kernel that writes it from the f32
 * nets buffer.
 *
 * Layout (`halfNetsLayout`): one packed matrix per layer op of the plain DQN program (online and
 * target: trunk 0, trunk 1, the fused value/advantage hidden layers, the fused heads; then the
 * curiosity model's two layers), each `[outPad, kPad]` row-major in halves (W is [out, in]),
 * outputs and inputs padded to multiples of 16 with zeros, every matrix starting on a multiple of
 * 16 halves (32 bytes: subgroup-matrix loads want 16-byte aligned rows). A fused op's rows are its
 * first block's outputs, then its second's (the order the op writes them); a block contributes
 * only its own input columns [kLo, kLo + kLen), zero elsewhere. The shader finds a matrix by its
 * first block's weight offset in `nets` (constants MMH_KEY_i / MMH_OFF_i).
 *
 * Order 1 (engine 5, `dense_stream`): the same matrices at the same offsets, stored in groups of 8
 * inputs: half i of a matrix is input 8 floor(i / (8 outPad)) + i % 8 of row floor(i / 8) % outPad,
 * so 16-byte word g outPad + j holds inputs 8 g .. 8 g + 7 of output j.
 *
 * Buffer: u32 words, two halves each (low half first, as WGSL's pack2x16float and a little-endian
 * array<f16> agree), `words` in all. Values are clamped to the f16 range (+-65504) and rounded to
 * nearest even.
 */

import {
  CURIOSITY_IN,
  CURIOSITY_OUT,
  curiosityLayout,
  duelingLayout,
  layerByName,
  STATE_DIM,
} from '../nets/layout.js';
import { grid1d, groupCount, threadsPerGroup } from './grid.js';
import type { Kernel, TypedArray } from './reference.js';
import type { DeviceBuffer, Dispatch, KernelSpec } from './spec.js';

/** One weight block of a packed matrix: `rows` outputs of the [rows, kLen] weight at nets[w]. */
export interface HalfBlock {
  w: number;
  rows: number;
  kLo: number;
  kLen: number;
}

/** One packed matrix: rows [0, b0.rows) from b0, then b1's; `outPad` x `kPad` halves at `off`. */
export interface HalfEntry {
  /** What it is, for messages: `online trunk 0`, ... */
  name: string;
  /** nets offset of the first block's weight: the shader's key. */
  key: number;
  off: number;
  outPad: number;
  kPad: number;
  blocks: [HalfBlock, HalfBlock];
}

export interface HalfNetsLayout {
  entries: HalfEntry[];
  /** Halves in all (even). */
  halves: number;
  /** u32 words of the buffer. */
  words: number;
}

/** Entries the shader's lookup (mma_offset) has: 4 ops per dueling net, 2 curiosity layers. */
export const HALF_ENTRIES = 10;

/** Words per entry of pack_half's table: off, outPad, kPad, then w, rows, kLo, kLen per block. */
export const HALF_TABLE_STRIDE = 11;

const pad16 = (x: number) => Math.ceil(x / 16) * 16;
const NONE: HalfBlock = { w: 0, rows: 0, kLo: 0, kLen: 0 };

/** The packed layout of the plain DQN nets buffer (online at 0, target after it, curiosity last). */
export function halfNetsLayout(): HalfNetsLayout {
  const q = duelingLayout('plain');
  const c = curiosityLayout();
  const entries: HalfEntry[] = [];
  let off = 0;
  const add = (name: string, nIn: number, b0: HalfBlock, b1: HalfBlock = NONE) => {
    const outPad = pad16(b0.rows + b1.rows);
    const kPad = pad16(nIn);
    entries.push({ name, key: b0.w, off, outPad, kPad, blocks: [b0, b1] });
    off += outPad * kPad;
  };
  for (const [net, base] of [
    ['online', 0],
    ['target', q.size],
  ] as const) {
    const l = (name: string) => layerByName(q, name);
    const blk = (name: string, kLo = 0): HalfBlock => ({
      w: base + l(name).wOffset,
      rows: l(name).out,
      kLo,
      kLen: l(name).in,
    });
    add(`${net} trunk 0`, STATE_DIM, blk('shared_layers.0'));
    add(`${net} trunk 1`, 256, blk('shared_layers.1'));
    add(`${net} streams`, 256, blk('value_stream.0'), blk('advantage_stream.0'));
    // The heads op: advantages from the advantage hidden layer (columns 128-255), then the value.
    add(`${net} heads`, 256, blk('advantage_stream.1', 128), blk('value_stream.1', 0));
  }
  const cb = 2 * q.size;
  const cl = (name: string): HalfBlock => {
    const layer = layerByName(c, name);
    return { w: cb + layer.wOffset, rows: layer.out, kLo: 0, kLen: layer.in };
  };
  add('curiosity fc1', CURIOSITY_IN, cl('fc1'));
  add('curiosity fc2', 64, cl('fc2'));
  if (entries.length !== HALF_ENTRIES) throw new Error('halfNetsLayout: entry count drifted from the shader');
  if (cl('fc2').rows !== CURIOSITY_OUT) throw new Error('halfNetsLayout: curiosity output width drifted');
  return { entries, halves: off, words: off / 2 };
}

/** The shader's lookup constants (MMH_KEY_i, MMH_OFF_i). */
export function halfConstants(layout: HalfNetsLayout = halfNetsLayout()): Record<string, number> {
  const c: Record<string, number> = {};
  layout.entries.forEach((e, i) => {
    c[`MMH_KEY_${i}`] = e.key;
    c[`MMH_OFF_${i}`] = e.off;
  });
  return c;
}

/** pack_half's table: HALF_TABLE_STRIDE words per entry. */
export function halfTable(layout: HalfNetsLayout = halfNetsLayout()): Uint32Array {
  const t = new Uint32Array(layout.entries.length * HALF_TABLE_STRIDE);
  layout.entries.forEach((e, i) => {
    t.set(
      [e.off, e.outPad, e.kPad, ...e.blocks.flatMap((b) => [b.w, b.rows, b.kLo, b.kLen])],
      i * HALF_TABLE_STRIDE,
    );
  });
  return t;
}

export const packHalfSpec: KernelSpec = {
  name: 'pack_half',
  bindings: [
    { name: 'nets', type: 'f32', access: 'read' },
    { name: 'table', type: 'u32', access: 'read' },
    { name: 'nets16', type: 'u32', access: 'read_write' },
  ],
  uniforms: [
    { name: 'words', type: 'u32' },
    { name: 'entries', type: 'u32' },
    { name: 'order', type: 'u32' },
  ],
  workgroupSize: [256, 1, 1],
};

const f32b = new Float32Array(1);
const u32b = new Uint32Array(f32b.buffer);

/** IEEE binary16 bits of x clamped to +-65504, rounded to nearest even (subnormals kept). */
export function toHalfBits(x: number): number {
  f32b[0] = Math.min(65504, Math.max(-65504, x));
  const u = u32b[0];
  const sign = (u >>> 16) & 0x8000;
  const exp = (u >>> 23) & 0xff;
  let mant = u & 0x7fffff;
  if (exp === 0xff) return sign | 0x7e00; // NaN (the clamp leaves no infinity)
  let e = exp - 127 + 15;
  if (e >= 31) return sign | 0x7bff;
  if (e <= 0) {
    // Subnormal half: shift the full mantissa (with its implicit bit) right, round to even.
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    const half = mant >>> shift;
    const rest = mant & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    return sign | (half + (rest > mid || (rest === mid && half & 1) ? 1 : 0));
  }
  let h = (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && h & 1)) h++;
  e = h >>> 10;
  return sign | (e >= 31 ? 0x7bff : h);
}

/** The f32 value of half bits h. */
export function fromHalfBits(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const e = (h >>> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return sign * m * 2 ** -24;
  if (e === 31) return m ? Number.NaN : sign * Number.POSITIVE_INFINITY;
  return sign * (1 + m / 1024) * 2 ** (e - 15);
}

/** Element (row j, input k) of packed entry t (table words at t), read from nets. */
function packedValue(nets: Float32Array, table: Uint32Array, t: number, j: number, k: number): number {
  const r0 = table[t + 4];
  const b = j < r0 ? t + 3 : t + 7;
  const jr = j < r0 ? j : j - r0;
  const [w, rows, kLo, kLen] = [table[b], table[b + 1], table[b + 2], table[b + 3]];
  if (jr >= rows || k < kLo || k >= kLo + kLen) return 0;
  return nets[w + jr * kLen + (k - kLo)];
}

function packHalfReference(
  buffers: TypedArray[],
  u: Record<string, number>,
  groups: readonly [number, number, number],
): void {
  const [nets, table, out] = buffers as [Float32Array, Uint32Array, Uint32Array];
  const words = Math.min(u.words, groupCount(groups) * threadsPerGroup(packHalfSpec.workgroupSize));
  for (let wi = 0; wi < words; wi++) {
    const h = 2 * wi;
    let v0 = 0;
    let v1 = 0;
    for (let e = 0; e < u.entries; e++) {
      const t = e * HALF_TABLE_STRIDE;
      const off = table[t];
      const size = table[t + 1] * table[t + 2];
      if (h >= off && h < off + size) {
        const kp = table[t + 2];
        const op = table[t + 1];
        const i = h - off;
        if (u.order === 1) {
          const j = Math.floor(i / 8) % op;
          const k = Math.floor(i / (8 * op)) * 8 + (i % 8);
          v0 = packedValue(nets, table, t, j, k);
          v1 = packedValue(nets, table, t, j, k + 1);
        } else {
          v0 = packedValue(nets, table, t, Math.floor(i / kp), i % kp);
          v1 = packedValue(nets, table, t, Math.floor((i + 1) / kp), (i + 1) % kp);
        }
        break;
      }
    }
    out[wi] = (toHalfBits(v0) | (toHalfBits(v1) << 16)) >>> 0;
  }
}

export const packHalf: Kernel = { spec: packHalfSpec, reference: packHalfReference };

/** The order of the packed matrices: 0 row-major (engine 4's tiles), 1 k-groups (engine 5). */
export type HalfOrder = 0 | 1;

/**
 * The dispatch that packs `nets` into `nets16` (buffers: nets, table, nets16) in `order`
 * (0 row-major for engine 4, 1 k-groups for engine 5).
 */
export function packHalfDispatch(
  nets: DeviceBuffer,
  table: DeviceBuffer,
  nets16: DeviceBuffer,
  layout: HalfNetsLayout = halfNetsLayout(),
  order: HalfOrder = 0,
): Dispatch {
  return {
    kernel: packHalfSpec,
    buffers: [nets, table, nets16],
    uniforms: { words: layout.words, entries: layout.entries.length, order },
    groups: grid1d(Math.ceil(layout.words / 256)),
  };
}

/** The WGSL global directives of a module using engine 4. */
export const HALF_MMA_DIRECTIVES = ['enable f16;', 'enable chromium_experimental_subgroup_matrix;'];

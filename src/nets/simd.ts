/**
 * Dense layers of fixed weights on WebAssembly SIMD: the arithmetic of forward.ts denseForward bit
 * for bit, about four times faster. Each output's sum runs in input order from its bias, every
 * multiply and every add rounded to f32: `f32x4.mul` and `f32x4.add` are IEEE binary32 lane by lane
 * (never fused, subnormals kept), so lane l of a pass computes output 8p + l exactly as the
 * scalar loop does. The weights are packed once per net ([ceil(out / 8)][in][8], zero rows past
 * `out`), so a `PackedNet` is for many forward passes with the same weights: a backtest's greedy
 * policy, one collection round. Where WebAssembly SIMD is missing, `packNet` returns the params
 * themselves and forward.ts runs the scalar loop. The CPU learner's backward sums run here too
 * (ColumnSums, below).
 */
import type { Layer, NetLayout } from './layout.js';

/**
 * The module, over its exported memory m (byte pointers):
 *   d(w, b, x, y, in, pairs): for p < pairs (eight outputs, two independent sums of four):
 *     acc0 = v128.load(b + 32 p), acc1 = v128.load(b + 32 p + 16); for i < in:
 *     acc0 = acc0 + w[p, i, 0..3] * splat(x[i]), acc1 = acc1 + w[p, i, 4..7] * splat(x[i])
 *     (w at w + 32 (p in + i)); acc0, acc1 stored at y + 32 p
 *   s(m, idx, val, count, rowBytes, pairs, out): for p < pairs: acc0 = acc1 = +0; for t < count:
 *     r = m + idx[t] rowBytes + 32 p; acc0 = acc0 + splat(val[t]) * v128.load(r);
 *     acc1 = acc1 + splat(val[t]) * v128.load(r + 16); v128.store(out + 32 p, acc0, acc1)
 */
function moduleBytes(): Uint8Array<ArrayBuffer> {
  const section = (id: number, body: number[]) => [id, ...leb(body.length), ...body];
  // biome-ignore format: one instruction group a line
  const dense = [
    // locals: p, i, wp, xp (i32), acc0, acc1, xs (v128)
    0x02, 0x04, 0x7f, 0x03, 0x7b,
    // p = 0; loop
    0x41, 0x00, 0x21, 0x06, 0x03, 0x40,
    //   acc0 = v128.load(b + (p << 5)); acc1 = v128.load(b + (p << 5) + 16)
    0x20, 0x01, 0x20, 0x06, 0x41, 0x05, 0x74, 0x6a, 0xfd, 0x00, 0x00, 0x00, 0x21, 0x0a,
    0x20, 0x01, 0x20, 0x06, 0x41, 0x05, 0x74, 0x6a, 0xfd, 0x00, 0x00, 0x10, 0x21, 0x0b,
    //   wp = w + ((p * in) << 5); xp = x; i = in; loop
    0x20, 0x00, 0x20, 0x06, 0x20, 0x04, 0x6c, 0x41, 0x05, 0x74, 0x6a, 0x21, 0x08, 0x20, 0x02, 0x21, 0x09,
    0x20, 0x04, 0x21, 0x07, 0x03, 0x40,
    //     xs = f32x4.splat(f32.load(xp))
    0x20, 0x09, 0x2a, 0x00, 0x00, 0xfd, 0x13, 0x21, 0x0c,
    //     acc0 = f32x4.add(acc0, f32x4.mul(v128.load(wp), xs)); acc1 the same at wp + 16
    0x20, 0x0a, 0x20, 0x08, 0xfd, 0x00, 0x00, 0x00, 0x20, 0x0c, 0xfd, 0xe6, 0x01, 0xfd, 0xe4, 0x01, 0x21, 0x0a,
    0x20, 0x0b, 0x20, 0x08, 0xfd, 0x00, 0x00, 0x10, 0x20, 0x0c, 0xfd, 0xe6, 0x01, 0xfd, 0xe4, 0x01, 0x21, 0x0b,
    //     wp += 32; xp += 4; br_if (i = i - 1) != 0
    0x20, 0x08, 0x41, 0x20, 0x6a, 0x21, 0x08, 0x20, 0x09, 0x41, 0x04, 0x6a, 0x21, 0x09,
    0x20, 0x07, 0x41, 0x01, 0x6b, 0x22, 0x07, 0x0d, 0x00, 0x0b,
    //   wp = y + (p << 5); v128.store(wp, acc0); v128.store(wp + 16, acc1)
    0x20, 0x03, 0x20, 0x06, 0x41, 0x05, 0x74, 0x6a, 0x22, 0x08, 0x20, 0x0a, 0xfd, 0x0b, 0x00, 0x00,
    0x20, 0x08, 0x20, 0x0b, 0xfd, 0x0b, 0x00, 0x10,
    //   br_if (p = p + 1) != pairs; end; end
    0x20, 0x06, 0x41, 0x01, 0x6a, 0x22, 0x06, 0x20, 0x05, 0x47, 0x0d, 0x00, 0x0b, 0x0b,
  ];
  const zero = [0xfd, 0x0c, ...new Array(16).fill(0)];
  // biome-ignore format: one instruction group a line
  const sums = [
    // locals: p, t, r (i32), acc0, acc1, vs (v128)
    0x02, 0x03, 0x7f, 0x03, 0x7b,
    // loop (p from 0)
    0x03, 0x40,
    //   acc0 = acc1 = +0; t = 0; block; loop; br_if 1 (t >= count)
    ...zero, 0x21, 0x0a, ...zero, 0x21, 0x0b, 0x41, 0x00, 0x21, 0x08, 0x02, 0x40, 0x03, 0x40,
    0x20, 0x08, 0x20, 0x03, 0x4f, 0x0d, 0x01,
    //     vs = f32x4.splat(f32.load(val + (t << 2)))
    0x20, 0x02, 0x20, 0x08, 0x41, 0x02, 0x74, 0x6a, 0x2a, 0x00, 0x00, 0xfd, 0x13, 0x21, 0x0c,
    //     r = i32.load(idx + (t << 2)) * rowBytes + m + (p << 5)
    0x20, 0x01, 0x20, 0x08, 0x41, 0x02, 0x74, 0x6a, 0x28, 0x00, 0x00, 0x20, 0x04, 0x6c, 0x20, 0x00, 0x6a,
    0x20, 0x07, 0x41, 0x05, 0x74, 0x6a, 0x21, 0x09,
    //     acc0 = f32x4.add(acc0, f32x4.mul(vs, v128.load(r)))
    0x20, 0x0a, 0x20, 0x0c, 0x20, 0x09, 0xfd, 0x00, 0x00, 0x00, 0xfd, 0xe6, 0x01, 0xfd, 0xe4, 0x01, 0x21, 0x0a,
    //     acc1 = f32x4.add(acc1, f32x4.mul(vs, v128.load(r + 16)))
    0x20, 0x0b, 0x20, 0x0c, 0x20, 0x09, 0xfd, 0x00, 0x00, 0x10, 0xfd, 0xe6, 0x01, 0xfd, 0xe4, 0x01, 0x21, 0x0b,
    //     t = t + 1; br 0; end; end
    0x20, 0x08, 0x41, 0x01, 0x6a, 0x21, 0x08, 0x0c, 0x00, 0x0b, 0x0b,
    //   r = out + (p << 5); v128.store(r, acc0); v128.store(r + 16, acc1)
    0x20, 0x06, 0x20, 0x07, 0x41, 0x05, 0x74, 0x6a, 0x22, 0x09, 0x20, 0x0a, 0xfd, 0x0b, 0x00, 0x00,
    0x20, 0x09, 0x20, 0x0b, 0xfd, 0x0b, 0x00, 0x10,
    //   br_if (p = p + 1) != pairs; end
    0x20, 0x07, 0x41, 0x01, 0x6a, 0x22, 0x07, 0x20, 0x05, 0x47, 0x0d, 0x00, 0x0b, 0x0b,
  ];
  const i32s = (n: number) => new Array(n).fill(0x7f);
  return new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    ...section(1, [0x02, 0x60, 0x06, ...i32s(6), 0x00, 0x60, 0x07, ...i32s(7), 0x00]),
    ...section(3, [0x02, 0x00, 0x01]),
    ...section(5, [0x01, 0x00, 0x01]),
    ...section(7, [0x03, 0x01, 0x6d, 0x02, 0x00, 0x01, 0x64, 0x00, 0x00, 0x01, 0x73, 0x00, 0x01]),
    ...section(10, [0x02, ...leb(dense.length), ...dense, ...leb(sums.length), ...sums]),
  ]);
}

function leb(n: number): number[] {
  const out: number[] = [];
  do {
    let byte = n & 0x7f;
    n >>>= 7;
    if (n !== 0) byte |= 0x80;
    out.push(byte);
  } while (n !== 0);
  return out;
}

let compiled: WebAssembly.Module | null | undefined;

/** The compiled module, or null where WebAssembly SIMD is unavailable. */
function simdModule(): WebAssembly.Module | null {
  if (compiled === undefined) {
    try {
      const bytes = moduleBytes();
      compiled =
        typeof WebAssembly === 'object' && WebAssembly.validate(bytes) ? new WebAssembly.Module(bytes) : null;
    } catch {
      compiled = null;
    }
  }
  return compiled;
}

/** Whether `packNet` packs here (WebAssembly SIMD present). */
export function simdAvailable(): boolean {
  return simdModule() !== null;
}

type Dense = (w: number, b: number, x: number, y: number, nIn: number, pairs: number) => void;

/** A net's weights packed for the SIMD dense layers (see the header). */
export class PackedNet {
  private readonly dense: Dense;
  private readonly mem: Float32Array;
  /** Per layer (by its weight offset): float offsets of its packed weights and biases. */
  private readonly at = new Map<number, { w: number; b: number }>();
  private readonly x: number;
  private readonly y: number;

  private packed: Float32Array;

  constructor(
    readonly layout: NetLayout,
    params: Float32Array,
    module: WebAssembly.Module,
  ) {
    let floats = 0;
    let widest = 0;
    // Quads of outputs, an even number: the kernel takes two a pass (89 against 110 us a C51
    // forward); the rows past `out` stay zero.
    const groups = (l: Layer) => 2 * Math.ceil(l.out / 8);
    for (const l of layout.layers) {
      this.at.set(l.wOffset, { w: floats, b: floats + groups(l) * 4 * l.in });
      floats += groups(l) * 4 * (l.in + 1);
      widest = Math.max(widest, l.in, groups(l) * 4);
    }
    this.x = floats;
    this.y = floats + widest;
    // Each net its own instance and memory, grown once here (a view stays valid after).
    const bytes = 4 * (floats + 2 * widest);
    const exported = new WebAssembly.Instance(module).exports as { m: WebAssembly.Memory; d: Dense };
    const have = exported.m.buffer.byteLength;
    if (have < bytes) exported.m.grow(Math.ceil((bytes - have) / 65536));
    this.dense = exported.d;
    this.mem = new Float32Array(exported.m.buffer);
    this.packed = params;
    this.repack(params);
  }

  /** The weights packed (not read again: later changes to them are not seen until `repack`). */
  get params(): Float32Array {
    return this.packed;
  }

  /**
   * Packs `params` (weights of the same layout) over the ones packed before, in the same memory:
   * for a learner whose weights change between batches (no new instance or memory per batch).
   */
  repack(params: Float32Array): this {
    if (params.length !== this.layout.size) {
      throw new Error(
        `${this.layout.kind}: ${params.length} params to repack, the layout has ${this.layout.size}`,
      );
    }
    this.packed = params;
    for (const l of this.layout.layers) {
      const { w, b } = this.at.get(l.wOffset)!;
      for (let j = 0; j < l.out; j++) {
        const pair = j >> 3;
        const lane = j & 7;
        const row = l.wOffset + j * l.in;
        for (let i = 0; i < l.in; i++) this.mem[w + (pair * l.in + i) * 8 + lane] = params[row + i];
        this.mem[b + j] = params[l.bOffset + j];
      }
    }
    return this;
  }

  /** denseForward(params, layer, x, xOff, y, yOff) on the packed weights: the same bits. */
  forward(layer: Layer, x: Float32Array, xOff: number, y: Float32Array, yOff: number, slope: number): void {
    const at = this.at.get(layer.wOffset);
    if (!at) throw new Error(`${this.layout.kind}: layer ${layer.name} is not in the packed net`);
    const m = this.mem;
    m.set(x.subarray(xOff, xOff + layer.in), this.x);
    this.dense(4 * at.w, 4 * at.b, 4 * this.x, 4 * this.y, layer.in, Math.ceil(layer.out / 8));
    const o = this.y;
    const act = layer.act;
    for (let j = 0; j < layer.out; j++) {
      const acc = m[o + j];
      if (act === 'relu') y[yOff + j] = Math.max(acc, 0);
      else if (act === 'leaky') y[yOff + j] = acc > 0 ? acc : Math.fround(acc * slope);
      else y[yOff + j] = acc;
    }
  }
}

/**
 * `params` packed for many forward passes with these weights (forward.ts takes either), or
 * `params` itself where WebAssembly SIMD is unavailable.
 */
export function packNet(layout: NetLayout, params: Float32Array): PackedNet | Float32Array {
  const module = simdModule();
  return module ? new PackedNet(layout, params, module) : params;
}

type Sums = (
  m: number,
  idx: number,
  val: number,
  count: number,
  rowBytes: number,
  pairs: number,
  out: number,
) => void;

/**
 * Sums over listed rows of a matrix staged in WebAssembly memory: for each column i < n,
 * sum_t f32(val[t] * M[idx[t], i]), t ascending from +0, every multiply and add rounded to f32 (the
 * scalar loop's bits, eight columns a pass). One instance serves every call; its memory grows to
 * the largest matrix staged.
 */
export class ColumnSums {
  private readonly sums: Sums;
  private readonly memory: WebAssembly.Memory;
  private f32: Float32Array;
  private i32: Int32Array;
  private n = 0;
  private idxAt = 0;
  private valAt = 0;
  private outAt = 0;

  constructor(module: WebAssembly.Module) {
    const exported = new WebAssembly.Instance(module).exports as { m: WebAssembly.Memory; s: Sums };
    this.sums = exported.s;
    this.memory = exported.m;
    this.f32 = new Float32Array(this.memory.buffer);
    this.i32 = new Int32Array(this.memory.buffer);
  }

  /** Stages `rows` rows of `n` floats of `m` from float `start`, for lists of up to `cap` rows. */
  stage(m: Float32Array, start: number, rows: number, n: number, cap: number): void {
    // The last pass of eight columns reads up to seven floats past the last row.
    const matrix = rows * n + 8;
    this.n = n;
    this.idxAt = matrix;
    this.valAt = matrix + cap;
    this.outAt = matrix + 2 * cap;
    const bytes = 4 * (this.outAt + Math.ceil(n / 8) * 8);
    const have = this.memory.buffer.byteLength;
    if (have < bytes) {
      this.memory.grow(Math.ceil((bytes - have) / 65536));
      this.f32 = new Float32Array(this.memory.buffer);
      this.i32 = new Int32Array(this.memory.buffer);
    }
    this.f32.set(m.subarray(start, start + rows * n), 0);
    this.f32.fill(0, rows * n, matrix);
  }

  /** The n column sums over rows idx[t] weighted by val[t], t < count (a view, valid until the next call). */
  run(idx: Int32Array, val: Float32Array, count: number): Float32Array {
    this.i32.set(idx.subarray(0, count), this.idxAt);
    this.f32.set(val.subarray(0, count), this.valAt);
    const n = this.n;
    this.sums(0, 4 * this.idxAt, 4 * this.valAt, count, 4 * n, Math.ceil(n / 8), 4 * this.outAt);
    return this.f32.subarray(this.outAt, this.outAt + n);
  }
}

let columnSumsInstance: ColumnSums | null | undefined;

/** The shared ColumnSums, or null where WebAssembly SIMD is unavailable. */
export function columnSums(): ColumnSums | null {
  if (columnSumsInstance === undefined) {
    const module = simdModule();
    columnSumsInstance = module ? new ColumnSums(module) : null;
  }
  return columnSumsInstance;
}

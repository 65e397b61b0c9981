/**
 * Dense layers of fixed weights on WebAssembly SIMD: the arithmetic of forward.ts denseForward bit
 * for bit, about four times faster. Each output's sum runs in input order from its bias, every
 * multiply and every add rounded to f32: `f32x4.mul` and `f32x4.add` are IEEE binary32 lane by lane
 * (never fused, subnormals kept), so lane l of a group computes output 4g + l exactly as the
 * scalar loop does. The weights are packed once per net ([ceil(out / 4)][in][4], zero rows past
 * `out`), so a `PackedNet` is for many forward passes with the same weights: a backtest's greedy
 * policy, one collection round. Where WebAssembly SIMD is missing, `packNet` returns the params
 * themselves and forward.ts runs the scalar loop.
 */
import type { Layer, NetLayout } from './layout.js';

/**
 * The module: one function d(w, b, x, y, in, groups) over its exported memory m, byte pointers:
 *   for g < groups: acc = v128.load(b + 16 g); for i < in: acc = acc + w[g, i] * splat(x[i])
 *   (w at w + 16 (g in + i)); v128.store(y + 16 g, acc)
 */
function moduleBytes(): Uint8Array<ArrayBuffer> {
  const section = (id: number, body: number[]) => [id, ...leb(body.length), ...body];
  const body = [
    // locals: j, i, wp, xp (i32), acc (v128)
    0x02, 0x04, 0x7f, 0x01, 0x7b,
    // j = 0; loop
    0x41, 0x00, 0x21, 0x06, 0x03, 0x40,
    //   acc = v128.load(b + (j << 4))
    0x20, 0x01, 0x20, 0x06, 0x41, 0x04, 0x74, 0x6a, 0xfd, 0x00, 0x00, 0x00, 0x21, 0x0a,
    //   wp = w + ((j * in) << 4); xp = x; i = in; loop
    0x20, 0x00, 0x20, 0x06, 0x20, 0x04, 0x6c, 0x41, 0x04, 0x74, 0x6a, 0x21, 0x08, 0x20, 0x02, 0x21, 0x09,
    0x20, 0x04, 0x21, 0x07, 0x03, 0x40,
    //     acc = f32x4.add(acc, f32x4.mul(v128.load(wp), f32x4.splat(f32.load(xp))))
    0x20, 0x0a, 0x20, 0x08, 0xfd, 0x00, 0x00, 0x00, 0x20, 0x09, 0x2a, 0x00, 0x00, 0xfd, 0x13, 0xfd, 0xe6,
    0x01, 0xfd, 0xe4, 0x01, 0x21, 0x0a,
    //     wp += 16; xp += 4; br_if (i = i - 1) != 0
    0x20, 0x08, 0x41, 0x10, 0x6a, 0x21, 0x08, 0x20, 0x09, 0x41, 0x04, 0x6a, 0x21, 0x09, 0x20, 0x07, 0x41,
    0x01, 0x6b, 0x22, 0x07, 0x0d, 0x00, 0x0b,
    //   v128.store(y + (j << 4), acc); br_if (j = j + 1) != groups
    0x20, 0x03, 0x20, 0x06, 0x41, 0x04, 0x74, 0x6a, 0x20, 0x0a, 0xfd, 0x0b, 0x00, 0x00, 0x20, 0x06, 0x41,
    0x01, 0x6a, 0x22, 0x06, 0x20, 0x05, 0x47, 0x0d, 0x00, 0x0b, 0x0b,
  ];
  return new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    ...section(1, [0x01, 0x60, 0x06, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x00]),
    ...section(3, [0x01, 0x00]),
    ...section(5, [0x01, 0x00, 0x01]),
    ...section(7, [0x02, 0x01, 0x6d, 0x02, 0x00, 0x01, 0x64, 0x00, 0x00]),
    ...section(10, [0x01, ...leb(body.length), ...body]),
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

type Dense = (w: number, b: number, x: number, y: number, nIn: number, groups: number) => void;

/** A net's weights packed for the SIMD dense layers (see the header). */
export class PackedNet {
  private readonly dense: Dense;
  private readonly mem: Float32Array;
  /** Per layer (by its weight offset): float offsets of its packed weights and biases. */
  private readonly at = new Map<number, { w: number; b: number }>();
  private readonly x: number;
  private readonly y: number;

  constructor(
    readonly layout: NetLayout,
    /** The weights packed (not read again: later changes to them are not seen). */
    readonly params: Float32Array,
    module: WebAssembly.Module,
  ) {
    let floats = 0;
    let widest = 0;
    const groups = (l: Layer) => Math.ceil(l.out / 4);
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
    for (const l of layout.layers) {
      const { w, b } = this.at.get(l.wOffset)!;
      for (let j = 0; j < l.out; j++) {
        const g = j >> 2;
        const lane = j & 3;
        const row = l.wOffset + j * l.in;
        for (let i = 0; i < l.in; i++) this.mem[w + (g * l.in + i) * 4 + lane] = params[row + i];
        this.mem[b + j] = params[l.bOffset + j];
      }
    }
  }

  /** denseForward(params, layer, x, xOff, y, yOff) on the packed weights: the same bits. */
  forward(layer: Layer, x: Float32Array, xOff: number, y: Float32Array, yOff: number, slope: number): void {
    const at = this.at.get(layer.wOffset);
    if (!at) throw new Error(`${this.layout.kind}: layer ${layer.name} is not in the packed net`);
    const m = this.mem;
    m.set(x.subarray(xOff, xOff + layer.in), this.x);
    this.dense(4 * at.w, 4 * at.b, 4 * this.x, 4 * this.y, layer.in, Math.ceil(layer.out / 4));
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

/**
 * Batched forward with cached activations and backward of the generic chain networks (PPO
 * actor, PPO critic, curiosity): the TS reference of the learner's matmul kernels.
 *
 * Precision follows the buffers. With Float32Array params (training) every multiply and add
 * rounds to f32 exactly as src/nets/forward.ts defines it, so the batched forward equals
 * `forwardMlp` bit for bit; backward sums over the batch (b ascending) and over output units
 * (j ascending) round to f32 at each step too. GPU kernels reduce in other orders, so parity
 * with them is to a tolerance, not exact. With Float64Array params nothing is rounded: the
 * tests use that mode for finite differences.
 *
 * Shapes: activations are row-major `[batch, width]`. `cache.acts[0]` is the input the caller
 * fills; `cache.acts[l + 1]` is layer l's output after its activation. Derivatives of the
 * activations are read from the outputs: relu' = y > 0 ? 1 : 0, leaky' = y > 0 ? 1 : slope
 * (at a pre-activation of exactly 0 this is PyTorch's choice too).
 */

import { denseForward } from '../nets/forward.js';
import { type Layer, LEAKY_SLOPE, type NetLayout } from '../nets/layout.js';
import { columnSums, PackedNet, packNet } from '../nets/simd.js';

export type Floats = Float32Array | Float64Array;
export type FloatsCtor = Float32ArrayConstructor | Float64ArrayConstructor;

const identity = (x: number) => x;

/** The rounding that matches a buffer's precision: f32 rounding for Float32Array, none for f64. */
export function roundFor(a: Floats): (x: number) => number {
  return a instanceof Float32Array ? Math.fround : identity;
}

/** The typed-array constructor of a buffer's precision. */
export function ctorOf(a: Floats): FloatsCtor {
  return a instanceof Float32Array ? Float32Array : Float64Array;
}

export interface MlpCache {
  layout: NetLayout;
  /** Largest batch this cache holds. */
  capacity: number;
  /** acts[0]: input `[batch, in]`; acts[l + 1]: output of layer l `[batch, out_l]`. */
  acts: Floats[];
  /** deltas[l]: loss gradient w.r.t. layer l's pre-activation `[batch, out_l]`. */
  deltas: Floats[];
}

/** Buffers for a batch of up to `capacity` rows, in the precision of `ctor`. */
export function createMlpCache(
  layout: NetLayout,
  capacity: number,
  ctor: FloatsCtor = Float32Array,
): MlpCache {
  const layers = layout.layers;
  for (let l = 1; l < layers.length; l++) {
    if (layers[l].in !== layers[l - 1].out) {
      throw new Error(`${layout.kind}: layer ${layers[l].name} is not a chain (in ${layers[l].in})`);
    }
  }
  return {
    layout,
    capacity,
    acts: [new ctor(capacity * layers[0].in), ...layers.map((l) => new ctor(capacity * l.out))],
    deltas: layers.map((l) => new ctor(capacity * l.out)),
  };
}

function checkBatch(cache: MlpCache, params: Floats, batch: number): void {
  if (ctorOf(params) !== ctorOf(cache.acts[0])) {
    throw new Error(`${cache.layout.kind}: params and cache must share a precision (both f32 or both f64)`);
  }
  if (params.length !== cache.layout.size) {
    throw new Error(
      `${cache.layout.kind}: params have ${params.length} floats, the layout needs ${cache.layout.size}`,
    );
  }
  if (!Number.isInteger(batch) || batch < 1 || batch > cache.capacity) {
    throw new Error(`${cache.layout.kind}: batch ${batch} outside the cache's 1..${cache.capacity}`);
  }
}

// One packed net per layout, packed again on every batch: a learner's weights change between
// batches, and a new instance and memory per batch cost more than the packing (allocation, GC).
const packedByLayout = new WeakMap<NetLayout, PackedNet>();

function packedFor(layout: NetLayout, params: Float32Array): PackedNet | Float32Array {
  const kept = packedByLayout.get(layout);
  if (kept) return kept.repack(params);
  const packed = packNet(layout, params);
  if (packed instanceof PackedNet) packedByLayout.set(layout, packed);
  return packed;
}

/** Forward on rows 0..batch of `cache.acts[0]`; returns the output buffer (`[batch, out]` used). */
export function forwardMlpBatch(layout: NetLayout, params: Floats, cache: MlpCache, batch: number): Floats {
  checkBatch(cache, params, batch);
  const r = roundFor(params);
  const slope = r(LEAKY_SLOPE);
  // f32: forward.ts's dense layer row by row, on WebAssembly SIMD with the weights packed once
  // per call into the layout's kept net (packedFor; src/nets/simd.ts: the same bits), else its
  // scalar loop.
  const packed = params instanceof Float32Array ? packedFor(layout, params) : null;
  layout.layers.forEach((layer, l) => {
    const x = cache.acts[l];
    const y = cache.acts[l + 1];
    if (params instanceof Float32Array) {
      const xs = x as Float32Array;
      const ys = y as Float32Array;
      for (let b = 0; b < batch; b++) {
        if (packed instanceof PackedNet) packed.forward(layer, xs, b * layer.in, ys, b * layer.out, slope);
        else denseForward(params, layer, xs, b * layer.in, ys, b * layer.out);
      }
      return;
    }
    const { in: nIn, out: nOut, wOffset, bOffset, act } = layer;
    for (let b = 0; b < batch; b++) {
      for (let j = 0; j < nOut; j++) {
        let acc = loops64.dot(params[bOffset + j], params, wOffset + j * nIn, x, b * nIn, nIn);
        if (act === 'relu') acc = Math.max(acc, 0);
        else if (act === 'leaky') acc = acc > 0 ? acc : acc * slope;
        y[b * nOut + j] = acc;
      }
    }
  });
  return cache.acts[layout.layers.length];
}

/**
 * Backward of the last `forwardMlpBatch` on this cache. `dOut` is the loss gradient w.r.t. the
 * network's output `[batch, out]` (after the last activation). Overwrites `grad` (same flat
 * layout as params) with the parameter gradient; input gradients are not computed.
 */
export function backwardMlp(
  layout: NetLayout,
  params: Floats,
  cache: MlpCache,
  dOut: Floats,
  batch: number,
  grad: Floats,
): void {
  checkBatch(cache, params, batch);
  if (grad.length !== layout.size || ctorOf(grad) !== ctorOf(params) || ctorOf(dOut) !== ctorOf(params)) {
    throw new Error(
      `${layout.kind}: grad (${grad.length} floats) must match the layout (${layout.size}) and share the params' precision`,
    );
  }
  const { axpy } = loops64;
  const r = roundFor(grad);
  const slope = r(LEAKY_SLOPE);
  const layers = layout.layers;
  const last = layers.length - 1;
  // Seed: dOut times the derivative of the last activation.
  {
    const { out, act } = layers[last];
    const y = cache.acts[last + 1];
    const d = cache.deltas[last];
    for (let k = 0; k < batch * out; k++) d[k] = r(dOut[k] * actDerivative(act, y[k], slope));
  }
  for (let l = last; l >= 0; l--) {
    const { in: nIn, out: nOut, wOffset, bOffset } = layers[l];
    const x = cache.acts[l];
    const d = cache.deltas[l];
    if (params instanceof Float32Array) {
      const g32 = grad as Float32Array;
      weightGrad32(layers[l], x as Float32Array, d as Float32Array, batch, g32);
      if (l === 0) break;
      const prev = cache.deltas[l - 1] as Float32Array;
      inputGrad32(
        params,
        layers[l],
        d as Float32Array,
        batch,
        x as Float32Array,
        layers[l - 1].act,
        slope,
        prev,
      );
      continue;
    }
    for (let j = 0; j < nOut; j++) {
      let gb = 0;
      const row = wOffset + j * nIn;
      grad.fill(0, row, row + nIn);
      for (let b = 0; b < batch; b++) {
        const dj = d[b * nOut + j];
        if (dj === 0) continue;
        gb = r(gb + dj);
        axpy(dj, x, b * nIn, grad, row, nIn);
      }
      grad[bOffset + j] = gb;
    }
    if (l === 0) break;
    // Gradient w.r.t. this layer's input, times the derivative of the previous activation.
    const prev = cache.deltas[l - 1];
    const act = layers[l - 1].act;
    for (let b = 0; b < batch; b++) {
      const pb = b * nIn;
      prev.fill(0, pb, pb + nIn);
      for (let j = 0; j < nOut; j++) {
        const dj = d[b * nOut + j];
        if (dj === 0) continue;
        axpy(dj, params, wOffset + j * nIn, prev, pb, nIn);
      }
      for (let i = 0; i < nIn; i++) prev[pb + i] = r(prev[pb + i] * actDerivative(act, x[pb + i], slope));
    }
  }
}

function actDerivative(act: NetLayout['layers'][number]['act'], y: number, slope: number): number {
  if (act === 'relu') return y > 0 ? 1 : 0;
  if (act === 'leaky') return y > 0 ? 1 : slope;
  return 1;
}

// The f64 loops (finite-difference tests) stay plain; the f32 kernels below are written once for
// Float32Array: V8 compiles a loop for one typed-array kind, and sharing one function between
// Float32Array and Float64Array made every element access and rounding call polymorphic (about
// 4x slower, measured on the critic).
const loops64 = {
  /** acc + sum_i a[aOff + i] * b[bOff + i], i ascending. */
  dot(acc: number, a: Floats, aOff: number, b: Floats, bOff: number, n: number): number {
    for (let i = 0; i < n; i++) acc += a[aOff + i] * b[bOff + i];
    return acc;
  },
  /** y[yOff + i] += alpha * x[xOff + i]. */
  axpy(alpha: number, x: Floats, xOff: number, y: Floats, yOff: number, n: number): void {
    for (let i = 0; i < n; i++) y[yOff + i] += alpha * x[xOff + i];
  },
};

const f = Math.fround;

// The f32 backward kernels compute every output with exactly the reference's operations in the
// reference's order (each weight-gradient sum over b ascending and each input-gradient sum over j
// ascending, terms with a zero delta skipped; a rounding after every multiply and add), so their
// results are bit for bit those of the plain loops. They only interleave independent sums: the
// backward sums 8 adjacent outputs at once over the list of nonzero deltas instead of a
// read-modify-write of the output row per term, on WebAssembly SIMD (src/nets/simd.ts ColumnSums;
// where it is missing, the plain loop: columnSummer). The forward is forward.ts's dense layer, on
// WebAssembly SIMD too.

// Nonzero deltas of one column or row (index and value), reused across calls.
let nzIndex = new Int32Array(0);
let nzValue = new Float32Array(0);

function nzCapacity(n: number): void {
  if (nzIndex.length < n) {
    nzIndex = new Int32Array(n);
    nzValue = new Float32Array(n);
  }
}

type ColumnSummer = (
  count: number,
  out: Float32Array,
  outOff: number,
  scale: Float32Array | null,
  slope: number,
  act: Layer['act'],
) => void;

/**
 * Column sums over one matrix for many lists of nonzero deltas: `rows` rows of `n` floats of `m`
 * from float `off`. A call sums, for i in 0..n, f32(nzValue[t] * m[off + nzIndex[t] * n + i]) over
 * t < count ascending from +0 (the reference's axpy accumulation with zero deltas skipped) and
 * stores it at out[outOff + i], times act'(scale[outOff + i]) when `scale` is given (rounded once
 * more, as the reference does). On WebAssembly SIMD the matrix is staged once and eight columns
 * run a pass (src/nets/simd.ts ColumnSums: the same operations in the same order, the same bits);
 * where SIMD is missing, the reference's loop over each column.
 */
function columnSummer(m: Float32Array, off: number, rows: number, n: number, cap: number): ColumnSummer {
  const simd = columnSums();
  const sums = simd === null ? new Float32Array(n) : null;
  simd?.stage(m, off, rows, n, cap);
  return (count, out, outOff, scale, slope, act) => {
    let s: Float32Array;
    if (simd !== null) s = simd.run(nzIndex, nzValue, count);
    else {
      s = sums!;
      for (let i = 0; i < n; i++) {
        let acc = 0;
        for (let t = 0; t < count; t++) acc = f(acc + f(nzValue[t] * m[off + nzIndex[t] * n + i]));
        s[i] = acc;
      }
    }
    if (scale === null) out.set(s, outOff);
    else for (let i = 0; i < n; i++) out[outOff + i] = f(s[i] * actDerivative(act, scale[outOff + i], slope));
  };
}

/**
 * Weight and bias gradient of one layer: g[j, i] = sum_b d[b, j] * x[b, i], g_bias[j] = sum_b
 * d[b, j], b ascending over the rows whose delta is nonzero (the reference's skip).
 */
function weightGrad32(layer: Layer, x: Float32Array, d: Float32Array, batch: number, g: Float32Array): void {
  const { in: n, out: nOut, wOffset, bOffset } = layer;
  nzCapacity(batch);
  const sums = columnSummer(x, 0, batch, n, batch);
  for (let j = 0; j < nOut; j++) {
    let count = 0;
    let gb = 0;
    for (let b = 0; b < batch; b++) {
      const v = d[b * nOut + j];
      if (v === 0) continue;
      gb = f(gb + v);
      nzIndex[count] = b;
      nzValue[count] = v;
      count++;
    }
    sums(count, g, wOffset + j * n, null, 0, 'none');
    g[bOffset + j] = gb;
  }
}

/**
 * Input gradient of one layer times the previous activation's derivative (read from that
 * layer's outputs `x`): prev[b, i] = f32(f32(sum_j d[b, j] * W[j, i]) * act'(x[b, i])), j
 * ascending over the nonzero deltas of row b (the reference's skip).
 */
function inputGrad32(
  p: Float32Array,
  layer: Layer,
  d: Float32Array,
  batch: number,
  x: Float32Array,
  act: Layer['act'],
  slope: number,
  prev: Float32Array,
): void {
  const { in: n, out: nOut, wOffset } = layer;
  nzCapacity(nOut);
  const sums = columnSummer(p, wOffset, nOut, n, nOut);
  for (let b = 0; b < batch; b++) sums(rowNonzeros(d, b, nOut), prev, b * n, x, slope, act);
}

/** Row b's nonzero deltas (of nOut) into nzIndex / nzValue, j ascending; returns their count. */
function rowNonzeros(d: Float32Array, b: number, nOut: number): number {
  let count = 0;
  for (let j = 0; j < nOut; j++) {
    const v = d[b * nOut + j];
    if (v === 0) continue;
    nzIndex[count] = j;
    nzValue[count] = v;
    count++;
  }
  return count;
}

/**
 * The loss gradient w.r.t. the chain's input rows 0..batch, from the last `backwardMlp` on this
 * cache (its `deltas[0]`): dx[b, i] = sum_j d[b, j] * W0[j, i], j ascending, rounded like the
 * buffers. Networks built from several chains (the dueling Q net: trunk, then two streams) pass
 * it down as the `dOut` of the chain below.
 */
export function inputGradMlp(
  layout: NetLayout,
  params: Floats,
  cache: MlpCache,
  batch: number,
  dx: Floats,
): void {
  checkBatch(cache, params, batch);
  const { in: n, out: nOut, wOffset } = layout.layers[0];
  const r = roundFor(dx);
  const d = cache.deltas[0];
  if (params instanceof Float32Array && dx instanceof Float32Array && d instanceof Float32Array) {
    // The same sums, eight columns at a time over each row's nonzero deltas (columnSummer).
    nzCapacity(nOut);
    const sums = columnSummer(params, wOffset, nOut, n, nOut);
    for (let b = 0; b < batch; b++) sums(rowNonzeros(d, b, nOut), dx, b * n, null, 0, 'none');
    return;
  }
  for (let b = 0; b < batch; b++) {
    const xb = b * n;
    for (let i = 0; i < n; i++) dx[xb + i] = 0;
    for (let j = 0; j < nOut; j++) {
      const dj = d[b * nOut + j];
      if (dj === 0) continue;
      const row = wOffset + j * n;
      for (let i = 0; i < n; i++) dx[xb + i] = r(dx[xb + i] + r(dj * params[row + i]));
    }
  }
}

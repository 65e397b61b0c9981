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
import { LEAKY_SLOPE, type NetLayout } from '../nets/layout.js';

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

/** Forward on rows 0..batch of `cache.acts[0]`; returns the output buffer (`[batch, out]` used). */
export function forwardMlpBatch(layout: NetLayout, params: Floats, cache: MlpCache, batch: number): Floats {
  checkBatch(cache, params, batch);
  const { dot } = loopsFor(params);
  const r = roundFor(params);
  const slope = r(LEAKY_SLOPE);
  layout.layers.forEach((layer, l) => {
    const { in: nIn, out: nOut, wOffset, bOffset, act } = layer;
    const x = cache.acts[l];
    const y = cache.acts[l + 1];
    for (let b = 0; b < batch; b++) {
      for (let j = 0; j < nOut; j++) {
        let acc = dot(params[bOffset + j], params, wOffset + j * nIn, x, b * nIn, nIn);
        if (act === 'relu') acc = Math.max(acc, 0);
        else if (act === 'leaky') acc = acc > 0 ? acc : r(acc * slope);
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
  const { axpy } = loopsFor(params);
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

// The innermost loops exist once per precision: V8 compiles a loop for one typed-array kind, and
// sharing one function between Float32Array and Float64Array made every element access and
// rounding call polymorphic (about 4x slower, measured on the critic).
interface Loops {
  /** acc + sum_i a[aOff + i] * b[bOff + i], i ascending. */
  dot(acc: number, a: Floats, aOff: number, b: Floats, bOff: number, n: number): number;
  /** y[yOff + i] += alpha * x[xOff + i]. */
  axpy(alpha: number, x: Floats, xOff: number, y: Floats, yOff: number, n: number): void;
}

const f = Math.fround;

const loops32: Loops = {
  dot(acc, a, aOff, b, bOff, n) {
    for (let i = 0; i < n; i++) acc = f(acc + f(a[aOff + i] * b[bOff + i]));
    return acc;
  },
  axpy(alpha, x, xOff, y, yOff, n) {
    for (let i = 0; i < n; i++) y[yOff + i] = f(y[yOff + i] + f(alpha * x[xOff + i]));
  },
};

const loops64: Loops = {
  dot(acc, a, aOff, b, bOff, n) {
    for (let i = 0; i < n; i++) acc += a[aOff + i] * b[bOff + i];
    return acc;
  },
  axpy(alpha, x, xOff, y, yOff, n) {
    for (let i = 0; i < n; i++) y[yOff + i] += alpha * x[xOff + i];
  },
};

function loopsFor(a: Floats): Loops {
  return a instanceof Float32Array ? loops32 : loops64;
}

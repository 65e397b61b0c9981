// Shared by the learn-*.test.ts suites: deterministic test data and a finite-difference checker.
import { philox4x32, u32ToUnitFloat } from '../../src/rng/philox.js';
import { Stream } from '../../src/rng/streams.js';

/** Deterministic uniforms in [lo, hi) for test data. */
export function uniforms(n: number, stream: number, lo = -1, hi = 1): Float64Array {
  const out = new Float64Array(n);
  const w = new Uint32Array(4);
  for (let i = 0; i < n; i++) {
    philox4x32(Stream.Test, stream, i >> 2, 0, 99, 0, w);
    out[i] = lo + (hi - lo) * u32ToUnitFloat(w[i & 3]);
  }
  return out;
}

/**
 * Central differences on the given parameter indices; returns the worst relative error
 * |g - fd| / max(|g|, |fd|) over those whose gradient is not negligibly small, and how many
 * indices had a non-negligible gradient.
 */
export function checkGradient(
  params: Float64Array,
  grad: Float64Array,
  indices: number[],
  loss: (p: Float64Array) => number,
  eps = 1e-5,
): { worst: number; live: number } {
  let worst = 0;
  let live = 0;
  for (const k of indices) {
    const saved = params[k];
    params[k] = saved + eps;
    const up = loss(params);
    params[k] = saved - eps;
    const down = loss(params);
    params[k] = saved;
    const fd = (up - down) / (2 * eps);
    const scale = Math.max(Math.abs(fd), Math.abs(grad[k]));
    if (scale < 1e-7) continue;
    live++;
    worst = Math.max(worst, Math.abs(fd - grad[k]) / scale);
  }
  return { worst, live };
}

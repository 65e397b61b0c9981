/**
 * Gradient-norm clipping and Adam / AdamW with PyTorch semantics: the TS reference of the
 * `grad_norm` and `adam_step` kernels.
 *
 * Adam, per element, in this order (PyTorch's single-tensor `torch.optim.Adam`/`AdamW`), with
 * t = the step count after increment and the host scalars
 *   stepSize = lr / (1 - beta1^t), bc2Sqrt = sqrt(1 - beta2^t)   (computed in f64, passed as f32):
 *   AdamW only: p = p * (1 - lr * weightDecay)                   (decoupled weight decay)
 *   m = m + (1 - beta1) * (g - m)                                (PyTorch's lerp_)
 *   v = v * beta2 + (1 - beta2) * (g * g)
 *   p = p - stepSize * (m / (sqrt(v) / bc2Sqrt + eps))
 * In f32 buffers every operation rounds to f32, so an elementwise GPU kernel can match it
 * exactly where its sqrt and division are correctly rounded (CUDA's defaults are; WGSL allows
 * a few ulp, hence a tolerance there).
 *
 * Clipping: the global L2 norm over all given buffers (accumulated in f64 here; kernels reduce in
 * f32 trees, a 1e-6-relative difference), then, as `torch.nn.utils.clip_grad_norm_`, every
 * gradient is scaled by min(1, maxNorm / (norm + 1e-6)).
 */
import { type Floats, type FloatsCtor, roundFor } from './mlp.js';

export interface AdamState {
  /** First moment, same layout as the params. */
  m: Floats;
  /** Second moment. */
  v: Floats;
  /** Steps taken so far (t of the bias correction is step + 1 during the next step). */
  step: number;
}

export interface AdamOptions {
  lr: number;
  beta1?: number;
  beta2?: number;
  eps?: number;
  /** Decoupled (AdamW) weight decay; 0 gives plain Adam. */
  weightDecay?: number;
}

export function createAdam(size: number, ctor: FloatsCtor = Float32Array): AdamState {
  return { m: new ctor(size), v: new ctor(size), step: 0 };
}

/** One Adam (or AdamW when weightDecay > 0) step in place on `params`; increments `state.step`. */
export function adamStep(params: Floats, grad: Floats, state: AdamState, opts: AdamOptions): void {
  const n = params.length;
  if (grad.length !== n || state.m.length !== n || state.v.length !== n) {
    throw new Error(
      `adam: params (${n}), grad (${grad.length}) and moments (${state.m.length}) differ in size`,
    );
  }
  const r = roundFor(params);
  const beta1 = opts.beta1 ?? 0.9;
  const beta2 = opts.beta2 ?? 0.999;
  const t = state.step + 1;
  const stepSize = r(opts.lr / (1 - beta1 ** t));
  const bc2Sqrt = r(Math.sqrt(1 - beta2 ** t));
  const eps = r(opts.eps ?? 1e-8);
  const oneMinusB1 = r(1 - beta1);
  const oneMinusB2 = r(1 - beta2);
  const b2 = r(beta2);
  const decay = r(1 - opts.lr * (opts.weightDecay ?? 0));
  const { m, v } = state;
  for (let k = 0; k < n; k++) {
    const g = grad[k];
    let p = params[k];
    if (decay !== 1) p = r(p * decay);
    const mk = r(m[k] + r(oneMinusB1 * r(g - m[k])));
    const vk = r(r(v[k] * b2) + r(oneMinusB2 * r(g * g)));
    m[k] = mk;
    v[k] = vk;
    const denom = r(r(r(Math.sqrt(vk)) / bc2Sqrt) + eps);
    params[k] = r(p - r(stepSize * r(mk / denom)));
  }
  state.step = t;
}

/** L2 norm over all buffers together. */
export function globalGradNorm(grads: Floats[]): number {
  let sum = 0;
  for (const g of grads) for (let k = 0; k < g.length; k++) sum += g[k] * g[k];
  return Math.sqrt(sum);
}

/**
 * Scales all gradients together so their global norm is at most `maxNorm` (PyTorch's
 * clip_grad_norm_, including its 1e-6 in the denominator). Returns the norm before clipping.
 */
export function clipGradNorm(grads: Floats[], maxNorm: number): number {
  const norm = globalGradNorm(grads);
  const coef = maxNorm / (norm + 1e-6);
  if (coef < 1) {
    for (const g of grads) {
      const r = roundFor(g);
      const c = r(coef);
      for (let k = 0; k < g.length; k++) g[k] = r(g[k] * c);
    }
  }
  return norm;
}

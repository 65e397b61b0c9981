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
  const h = { stepSize, bc2Sqrt, eps, oneMinusB1, oneMinusB2, b2, decay };
  if (params instanceof Float32Array)
    adamLoop32(params, grad as Float32Array, state.m as Float32Array, state.v as Float32Array, h);
  else adamLoop64(params, grad, state.m, state.v, h);
  state.step = t;
}

interface AdamScalars {
  stepSize: number;
  bc2Sqrt: number;
  eps: number;
  oneMinusB1: number;
  oneMinusB2: number;
  b2: number;
  decay: number;
}

const f32 = Math.fround;

// The element loops live apart from adamStep, each for one precision with its rounding spelled
// out: a single loop calling `roundFor`'s closure kept its numbers boxed once a long run had
// warmed other code (10x slower in `foxhunt train --backend cpu`, 48 against 5 ms a C51 step).
function adamLoop32(
  p: Float32Array,
  g: Float32Array,
  m: Float32Array,
  v: Float32Array,
  h: AdamScalars,
): void {
  const { stepSize, bc2Sqrt, eps, oneMinusB1, oneMinusB2, b2, decay } = h;
  for (let k = 0; k < p.length; k++) {
    const gk = g[k];
    const pk = decay !== 1 ? f32(p[k] * decay) : p[k];
    const mk = f32(m[k] + f32(oneMinusB1 * f32(gk - m[k])));
    const vk = f32(f32(v[k] * b2) + f32(oneMinusB2 * f32(gk * gk)));
    m[k] = mk;
    v[k] = vk;
    const denom = f32(f32(f32(Math.sqrt(vk)) / bc2Sqrt) + eps);
    p[k] = f32(pk - f32(stepSize * f32(mk / denom)));
  }
}

function adamLoop64(p: Floats, g: Floats, m: Floats, v: Floats, h: AdamScalars): void {
  const { stepSize, bc2Sqrt, eps, oneMinusB1, oneMinusB2, b2, decay } = h;
  for (let k = 0; k < p.length; k++) {
    const gk = g[k];
    const pk = decay !== 1 ? p[k] * decay : p[k];
    const mk = m[k] + oneMinusB1 * (gk - m[k]);
    const vk = v[k] * b2 + oneMinusB2 * (gk * gk);
    m[k] = mk;
    v[k] = vk;
    p[k] = pk - stepSize * (mk / (Math.sqrt(vk) / bc2Sqrt + eps));
  }
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

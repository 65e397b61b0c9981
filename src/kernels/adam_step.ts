/**
 * adam_step: global gradient-norm clip and one Adam / AdamW step over a flat parameter buffer
 * (src/learn/optim.ts, PyTorch semantics), in one launch:
 *   norm = sqrt(sum of partials[0..nPartials))   (the per-tile sums of squares mlp_backward wrote)
 *   coef = maxNorm / (norm + 1e-6); when clip != 0 and coef < 1, every gradient is scaled by coef
 *   stats[normAt] += norm (when clip != 0, once)
 *   per element k < n, with m = moments[k], v = moments[n + k]:
 *     p = p * decay (AdamW; decay = 1 - lr * weightDecay, skipped when 1)
 *     m = m + (1 - beta1) (g - m);  v = v beta2 + (1 - beta2) g^2
 *     p = p - stepSize (m / (sqrt(v) / bc2Sqrt + eps))
 * stepSize = lr / (1 - beta1^t) and bc2Sqrt = sqrt(1 - beta2^t) are read as f32 bits from
 * sched[schedAt], sched[schedAt + 1]: the host computes them in f64 (as optim.ts) and uploads the
 * whole update's table once, so a captured update replays unchanged.
 *
 * Loss statistics: when lossGroups > 0, workgroup 0 also adds the loss head's per-workgroup sums
 * (ppo_loss: lossGroups rows of LOSS_PARTS floats at partials[lossAt]) to stats[0 .. LOSS_PARTS),
 * each column summed in row order and divided by lossCount (the minibatch size), so the loss head
 * needs no reduction launch of its own.
 *
 * Gate: when gateAt != NO_GATE and sched[gateAt] == 0 the step is skipped entirely (params,
 * moments and statistics untouched): the curiosity model takes no step on an empty batch, and the
 * batch size is only known on the device (curiosity_gather writes it there).
 *
 * Every workgroup reduces the partials itself, in the same fixed order, so all agree on the norm
 * without another launch (the partials are a few hundred floats). The gradients buffer is read,
 * not scaled in place.
 *
 * Workgroup: 256 threads, ITEMS elements each (strided by 256: coalesced). Numerics: the CUDA
 * twin uses round-to-nearest intrinsics (no fused multiply-adds), so it matches this reference
 * bit for bit where the norm agrees; WGSL allows a few ulp in sqrt and division (tolerance).
 */

import { grid1d, groupCount } from './grid.js';
import { LOSS_PARTS } from './ppo_loss.js';
import type { Kernel, TypedArray } from './reference.js';
import type { DeviceBuffer, Dispatch, KernelSpec } from './spec.js';

export const adamStepSpec: KernelSpec = {
  name: 'adam_step',
  bindings: [
    { name: 'params', type: 'f32', access: 'read_write' },
    { name: 'grads', type: 'f32', access: 'read' },
    { name: 'moments', type: 'f32', access: 'read_write' },
    { name: 'partials', type: 'f32', access: 'read' },
    { name: 'sched', type: 'u32', access: 'read' },
    { name: 'stats', type: 'f32', access: 'read_write' },
  ],
  uniforms: [
    { name: 'n', type: 'u32' },
    { name: 'nPartials', type: 'u32' },
    { name: 'clip', type: 'u32' },
    { name: 'maxNorm', type: 'f32' },
    { name: 'oneMinusB1', type: 'f32' },
    { name: 'beta2', type: 'f32' },
    { name: 'oneMinusB2', type: 'f32' },
    { name: 'eps', type: 'f32' },
    { name: 'decay', type: 'f32' },
    { name: 'schedAt', type: 'u32' },
    { name: 'normAt', type: 'u32' },
    { name: 'gateAt', type: 'u32' },
    { name: 'lossAt', type: 'u32' },
    { name: 'lossGroups', type: 'u32' },
    { name: 'lossCount', type: 'u32' },
  ],
  workgroupSize: [256, 1, 1],
  constants: { ITEMS: 4, LOSS_PARTS },
};

/** gateAt value of an ungated step. */
export const NO_GATE = 0xffffffff;

const PER_GROUP = adamStepSpec.workgroupSize[0] * adamStepSpec.constants!.ITEMS;

export interface AdamHyper {
  lr: number;
  beta1?: number;
  beta2?: number;
  eps?: number;
  weightDecay?: number;
  /** Global norm clip; 0 or absent: no clipping. */
  maxGradNorm?: number;
}

export interface AdamStepArgs {
  params: DeviceBuffer;
  grads: DeviceBuffer;
  moments: DeviceBuffer;
  partials: DeviceBuffer;
  sched: DeviceBuffer;
  stats: DeviceBuffer;
  n: number;
  nPartials: number;
  /** Index in `stats` that accumulates the norm (used when clipping). */
  normAt: number;
  /** Index in `sched` of the step's gate (0: skip the step); default NO_GATE. */
  gateAt?: number;
  /** The loss head's per-workgroup sums to fold into stats (ppo_loss); default none. */
  loss?: { at: number; groups: number; count: number };
}

/** The two f32 bias-correction scalars of step t (1-based), as the host computes them (optim.ts). */
export function adamBiasCorrection(h: AdamHyper, t: number): [stepSize: number, bc2Sqrt: number] {
  const beta1 = h.beta1 ?? 0.9;
  const beta2 = h.beta2 ?? 0.999;
  return [Math.fround(h.lr / (1 - beta1 ** t)), Math.fround(Math.sqrt(1 - beta2 ** t))];
}

/** The step whose bias corrections sit at sched[schedAt], sched[schedAt + 1]. */
export function adamStepDispatch(a: AdamStepArgs, h: AdamHyper, schedAt: number): Dispatch {
  const beta1 = h.beta1 ?? 0.9;
  const beta2 = h.beta2 ?? 0.999;
  const f = Math.fround;
  return {
    kernel: adamStepSpec,
    buffers: [a.params, a.grads, a.moments, a.partials, a.sched, a.stats],
    uniforms: {
      n: a.n,
      nPartials: a.nPartials,
      clip: h.maxGradNorm ? 1 : 0,
      maxNorm: f(h.maxGradNorm ?? 0),
      oneMinusB1: f(1 - beta1),
      beta2: f(beta2),
      oneMinusB2: f(1 - beta2),
      eps: f(h.eps ?? 1e-8),
      decay: f(1 - h.lr * (h.weightDecay ?? 0)),
      schedAt,
      normAt: a.normAt,
      gateAt: a.gateAt ?? NO_GATE,
      lossAt: a.loss?.at ?? 0,
      lossGroups: a.loss?.groups ?? 0,
      lossCount: a.loss?.count ?? 1,
    },
    groups: grid1d(Math.ceil(a.n / PER_GROUP)),
  };
}

const f = Math.fround;

function adamStepReference(
  buffers: TypedArray[],
  u: Record<string, number>,
  groups: readonly [number, number, number],
): void {
  const [params, grads, moments, partials, sched, stats] = buffers;
  const schedF = new Float32Array(sched.buffer, sched.byteOffset, sched.length);
  if (u.gateAt !== NO_GATE && sched[u.gateAt] === 0) return;
  let coef = 1;
  if (u.clip) {
    let sum = 0;
    for (let p = 0; p < u.nPartials; p++) sum += partials[p];
    const norm = Math.sqrt(sum);
    const c = u.maxNorm / (norm + 1e-6);
    if (c < 1) coef = f(c);
    stats[u.normAt] = f(stats[u.normAt] + f(norm));
  }
  for (let p = 0; p < LOSS_PARTS && u.lossGroups > 0; p++) {
    let sum = 0;
    for (let g = 0; g < u.lossGroups; g++) sum = f(sum + partials[u.lossAt + g * LOSS_PARTS + p]);
    stats[p] = f(stats[p] + f(sum / u.lossCount));
  }
  const stepSize = schedF[u.schedAt];
  const bc2Sqrt = schedF[u.schedAt + 1];
  const n = Math.min(u.n, groupCount(groups) * PER_GROUP);
  for (let k = 0; k < n; k++) {
    const g = coef === 1 ? grads[k] : f(grads[k] * coef);
    let p = params[k];
    if (u.decay !== 1) p = f(p * u.decay);
    const m = f(moments[k] + f(u.oneMinusB1 * f(g - moments[k])));
    const v = f(f(moments[u.n + k] * u.beta2) + f(u.oneMinusB2 * f(g * g)));
    moments[k] = m;
    moments[u.n + k] = v;
    const denom = f(f(f(Math.sqrt(v)) / bc2Sqrt) + u.eps);
    params[k] = f(p - f(stepSize * f(m / denom)));
  }
}

export const adamStep: Kernel = { spec: adamStepSpec, reference: adamStepReference };

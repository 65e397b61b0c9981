/**
 * ppo_loss: the PPO loss head of one minibatch (src/learn/ppo_loss.ts), from the actor's logits
 * and the critic's values already in `acts`, writing the loss gradients that seed the backward
 * pass and adding the minibatch's loss parts to the update's statistics:
 *   A = (adv - mean) / (std + 1e-8) when `normalize` (unbiased std over the minibatch, 0 for one
 *       sample); logp = log_softmax(logits); ratio = exp(logp[action] - oldLogp)
 *   deltas[dLogitsOff + b * nActions + k] = dLoss/dlogit_k, deltas[dValueOff + b] = dLoss/dV
 *   stats[STAT.policy..clipFrac] += the minibatch means (policy, 0.5 * mean sq. value error,
 *       entropy, approx KL (k3), clip fraction)
 * Both output layers are linear, so these are the output layers' deltas.
 *
 * mb holds the gathered samples (ppo_gather): action (f32), old log-prob, advantage, return,
 * `batch` floats each. An action outside [0, nActions) is clamped (the collector never writes
 * one; a GPU cannot throw).
 *
 * Workgroup: one, of 256 threads: the advantage statistics and the loss sums are block
 * reductions in a fixed tree order (deterministic), each thread taking samples tid, tid + 256, ...
 * Numerics: the twins compute in f32 with their own exp/log; this reference computes like
 * src/learn/ppo_loss.ts in f64 from the stored f32 values and rounds when storing (tolerance).
 */
import type { DeviceBuffer, Dispatch, KernelSpec } from '../backend/types.js';
import type { Kernel, TypedArray } from './reference.js';

/** Slots of the update statistics buffer (f32 sums over the update's minibatches). */
export const STAT = { policy: 0, value: 1, entropy: 2, approxKl: 3, clipFrac: 4, gradNorm: 5 } as const;
export const STAT_COUNT = 6;

export const ppoLossSpec: KernelSpec = {
  name: 'ppo_loss',
  bindings: [
    { name: 'acts', type: 'f32', access: 'read' },
    { name: 'mb', type: 'f32', access: 'read' },
    { name: 'deltas', type: 'f32', access: 'read_write' },
    { name: 'stats', type: 'f32', access: 'read_write' },
  ],
  uniforms: [
    { name: 'batch', type: 'u32' },
    { name: 'nActions', type: 'u32' },
    { name: 'logitsOff', type: 'u32' },
    { name: 'valuesOff', type: 'u32' },
    { name: 'dLogitsOff', type: 'u32' },
    { name: 'dValueOff', type: 'u32' },
    { name: 'clip', type: 'f32' },
    { name: 'valueCoef', type: 'f32' },
    { name: 'entropyCoef', type: 'f32' },
    { name: 'normalize', type: 'u32' },
  ],
  workgroupSize: [256, 1, 1],
  constants: {
    STAT_POLICY: STAT.policy,
    STAT_VALUE: STAT.value,
    STAT_ENTROPY: STAT.entropy,
    STAT_KL: STAT.approxKl,
    STAT_CLIPFRAC: STAT.clipFrac,
  },
};

export interface PpoLossArgs {
  acts: DeviceBuffer;
  mb: DeviceBuffer;
  deltas: DeviceBuffer;
  stats: DeviceBuffer;
  batch: number;
  nActions: number;
  logitsOff: number;
  valuesOff: number;
  dLogitsOff: number;
  dValueOff: number;
  clip: number;
  valueCoef: number;
  entropyCoef: number;
  normalize: boolean;
}

export function ppoLossDispatch(a: PpoLossArgs): Dispatch {
  return {
    kernel: ppoLossSpec,
    buffers: [a.acts, a.mb, a.deltas, a.stats],
    uniforms: {
      batch: a.batch,
      nActions: a.nActions,
      logitsOff: a.logitsOff,
      valuesOff: a.valuesOff,
      dLogitsOff: a.dLogitsOff,
      dValueOff: a.dValueOff,
      clip: Math.fround(a.clip),
      valueCoef: Math.fround(a.valueCoef),
      entropyCoef: Math.fround(a.entropyCoef),
      normalize: a.normalize ? 1 : 0,
    },
    groups: [1, 1, 1],
  };
}

function ppoLossReference(buffers: TypedArray[], u: Record<string, number>): void {
  const [acts, mb, deltas, stats] = buffers;
  const n = u.batch;
  const nA = u.nActions;
  const adv = (b: number) => mb[2 * n + b];
  let mean = 0;
  let scale = 1;
  if (u.normalize) {
    for (let b = 0; b < n; b++) mean += adv(b);
    mean /= n;
    let ss = 0;
    for (let b = 0; b < n; b++) ss += (adv(b) - mean) ** 2;
    scale = 1 / ((n > 1 ? Math.sqrt(ss / (n - 1)) : 0) + 1e-8);
  }
  const { clip, valueCoef, entropyCoef } = u;
  let policy = 0;
  let value = 0;
  let entropy = 0;
  let kl = 0;
  let clipped = 0;
  for (let b = 0; b < n; b++) {
    const base = u.logitsOff + b * nA;
    let max = Number.NEGATIVE_INFINITY;
    for (let k = 0; k < nA; k++) max = Math.max(max, acts[base + k]);
    let sumExp = 0;
    for (let k = 0; k < nA; k++) sumExp += Math.exp(acts[base + k] - max);
    const lse = max + Math.log(sumExp);
    let h = 0;
    for (let k = 0; k < nA; k++) {
      const lp = acts[base + k] - lse;
      h -= Math.exp(lp) * lp;
    }
    const action = Math.min(Math.max(Math.trunc(mb[b]), 0), nA - 1);
    const logRatio = acts[base + action] - lse - mb[n + b];
    const ratio = Math.exp(logRatio);
    const a = (adv(b) - mean) * scale;
    const unclipped = -a * ratio;
    const clippedTerm = -a * Math.min(Math.max(ratio, 1 - clip), 1 + clip);
    policy += Math.max(unclipped, clippedTerm);
    entropy += h;
    kl += ratio - 1 - logRatio;
    if (Math.abs(ratio - 1) > clip) clipped++;
    const dNewLp = unclipped >= clippedTerm ? (-a * ratio) / n : 0;
    for (let k = 0; k < nA; k++) {
      const lp = acts[base + k] - lse;
      const p = Math.exp(lp);
      deltas[u.dLogitsOff + b * nA + k] =
        dNewLp * ((k === action ? 1 : 0) - p) + (entropyCoef * p * (lp + h)) / n;
    }
    const err = acts[u.valuesOff + b] - mb[3 * n + b];
    value += err * err;
    deltas[u.dValueOff + b] = (valueCoef * err) / n;
  }
  const add = (slot: number, v: number) => {
    stats[slot] = Math.fround(stats[slot] + Math.fround(v));
  };
  add(STAT.policy, policy / n);
  add(STAT.value, (0.5 * value) / n);
  add(STAT.entropy, entropy / n);
  add(STAT.approxKl, kl / n);
  add(STAT.clipFrac, clipped / n);
}

export const ppoLoss: Kernel = { spec: ppoLossSpec, reference: ppoLossReference };

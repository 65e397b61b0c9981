/**
 * ppo_loss: the PPO loss head of one minibatch (src/learn/ppo_loss.ts), from the actor's logits
 * and the critic's values already in `acts`, writing the loss gradients that seed the backward
 * pass and each workgroup's sums of the loss parts:
 *   A = (adv - mean) / (std + 1e-8) when `normalize` (unbiased std over the minibatch, 0 for one
 *       sample); logp = log_softmax(logits); ratio = exp(logp[action] - oldLogp)
 *   deltas[dLogitsOff + b * nActions + k] = dLoss/dlogit_k, deltas[dValueOff + b] = dLoss/dV
 *   partials[lossAt + g * LOSS_PARTS + part] = sum over workgroup g's samples of policy,
 *       0.5 (V - R)^2, entropy, (ratio - 1) - log ratio, [|ratio - 1| > clip]
 * adam_step adds the partials (in workgroup order, divided by batch) to the update statistics,
 * so the head needs no launch of its own for its reduction. Both output layers are linear, so
 * these are the output layers' deltas.
 *
 * mb holds the gathered samples (ppo_gather): action (f32), old log-prob, advantage, return,
 * `batch` floats each. An action outside [0, nActions) is clamped (the collector never writes
 * one; a GPU cannot throw).
 *
 * Workgroup: TEAMS teams of TEAM = 32 threads (x: lane, y: team); team t of workgroup g takes
 * samples g * PER_GROUP + j * TEAMS + t, j < PER_TEAM, its lanes splitting the logits. Every
 * workgroup first computes the minibatch's advantage mean and std itself (the same tree, so all
 * agree). Max, sum of exponentials and entropy are team trees; all reductions have fixed orders.
 * Numerics: the twins compute in f32 with their own exp/log; this reference computes like
 * src/learn/ppo_loss.ts in f64 from the stored f32 values and rounds when storing (tolerance).
 */

import { grid1d, groupCount } from './grid.js';
import type { Kernel, TypedArray } from './reference.js';
import type { DeviceBuffer, Dispatch, KernelSpec } from './spec.js';

/** Slots of the update statistics buffer (f32 sums over the update's minibatches). */
export const STAT = { policy: 0, value: 1, entropy: 2, approxKl: 3, clipFrac: 4, gradNorm: 5 } as const;
export const STAT_COUNT = 6;
/** Loss parts per workgroup partial: STAT.policy .. STAT.clipFrac. */
export const LOSS_PARTS = 5;

/** The loss head's uniforms after `batch` (ppo_loss's; mlp_delta_chain's loss mode carries them too). */
export const PPO_LOSS_UNIFORMS: KernelSpec['uniforms'] = [
  { name: 'nActions', type: 'u32' },
  { name: 'logitsOff', type: 'u32' },
  { name: 'valuesOff', type: 'u32' },
  { name: 'dLogitsOff', type: 'u32' },
  { name: 'dValueOff', type: 'u32' },
  { name: 'clip', type: 'f32' },
  { name: 'valueCoef', type: 'f32' },
  { name: 'entropyCoef', type: 'f32' },
  { name: 'normalize', type: 'u32' },
  { name: 'lossAt', type: 'u32' },
];

export const ppoLossSpec: KernelSpec = {
  name: 'ppo_loss',
  bindings: [
    { name: 'acts', type: 'f32', access: 'read' },
    { name: 'mb', type: 'f32', access: 'read' },
    { name: 'deltas', type: 'f32', access: 'read_write' },
    { name: 'partials', type: 'f32', access: 'read_write' },
  ],
  uniforms: [{ name: 'batch', type: 'u32' }, ...PPO_LOSS_UNIFORMS],
  workgroupSize: [32, 8, 1],
  constants: { PER_TEAM: 2, LOSS_PARTS },
};

/** Samples per workgroup. */
export const LOSS_PER_GROUP = ppoLossSpec.workgroupSize[1] * ppoLossSpec.constants!.PER_TEAM;

/** Workgroups (and partial rows) of a minibatch of `batch` samples. */
export function lossGroups(batch: number): number {
  return Math.ceil(batch / LOSS_PER_GROUP);
}

export interface PpoLossArgs {
  acts: DeviceBuffer;
  mb: DeviceBuffer;
  deltas: DeviceBuffer;
  partials: DeviceBuffer;
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
  /** First float of the lossGroups(batch) x LOSS_PARTS partials. */
  lossAt: number;
}

export function ppoLossDispatch(a: PpoLossArgs): Dispatch {
  return {
    kernel: ppoLossSpec,
    buffers: [a.acts, a.mb, a.deltas, a.partials],
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
      lossAt: a.lossAt,
    },
    groups: grid1d(lossGroups(a.batch)),
  };
}

/** The uniforms of the loss head (ppo_loss's, and mlp_delta_chain's in its loss mode). */
export type LossHeadUniforms = Record<
  | 'batch'
  | 'nActions'
  | 'logitsOff'
  | 'valuesOff'
  | 'dLogitsOff'
  | 'dValueOff'
  | 'clip'
  | 'valueCoef'
  | 'entropyCoef'
  | 'normalize',
  number
>;

/** The minibatch's advantage normalisation: A = (adv - mean) * scale (identity unless `normalize`). */
export interface AdvantageStats {
  mean: number;
  scale: number;
}

export function advantageStats(mb: TypedArray, u: LossHeadUniforms): AdvantageStats {
  const n = u.batch;
  let mean = 0;
  let scale = 1;
  if (u.normalize) {
    for (let b = 0; b < n; b++) mean += mb[2 * n + b];
    mean /= n;
    let ss = 0;
    for (let b = 0; b < n; b++) ss += (mb[2 * n + b] - mean) ** 2;
    scale = 1 / ((n > 1 ? Math.sqrt(ss / (n - 1)) : 0) + 1e-8);
  }
  return { mean, scale };
}

/**
 * The loss head of sample b: writes its output deltas (dLogits, dValue) to `deltas` and adds its
 * LOSS_PARTS parts to `sums` (f64). ppo_loss and mlp_delta_chain's loss mode both call it, so they
 * give the same bits per sample.
 */
export function ppoLossSample(
  acts: TypedArray,
  mb: TypedArray,
  deltas: TypedArray,
  u: LossHeadUniforms,
  stats: AdvantageStats,
  b: number,
  sums: Float64Array,
): void {
  const n = u.batch;
  const nA = u.nActions;
  const { clip, valueCoef, entropyCoef } = u;
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
  const a = (mb[2 * n + b] - stats.mean) * stats.scale;
  const unclipped = -a * ratio;
  const clippedTerm = -a * Math.min(Math.max(ratio, 1 - clip), 1 + clip);
  const dNewLp = unclipped >= clippedTerm ? (-a * ratio) / n : 0;
  for (let k = 0; k < nA; k++) {
    const lp = acts[base + k] - lse;
    const p = Math.exp(lp);
    deltas[u.dLogitsOff + b * nA + k] =
      dNewLp * ((k === action ? 1 : 0) - p) + (entropyCoef * p * (lp + h)) / n;
  }
  const err = acts[u.valuesOff + b] - mb[3 * n + b];
  deltas[u.dValueOff + b] = (valueCoef * err) / n;
  sums[0] += Math.max(unclipped, clippedTerm);
  sums[1] += 0.5 * err * err;
  sums[2] += h;
  sums[3] += ratio - 1 - logRatio;
  sums[4] += Math.abs(ratio - 1) > clip ? 1 : 0;
}

function ppoLossReference(
  buffers: TypedArray[],
  u: Record<string, number>,
  groups: readonly [number, number, number],
): void {
  const [acts, mb, deltas, partials] = buffers;
  const n = u.batch;
  const stats = advantageStats(mb, u as LossHeadUniforms);
  const wgs = Math.min(lossGroups(n), groupCount(groups));
  for (let g = 0; g < wgs; g++) {
    const sums = new Float64Array(LOSS_PARTS);
    for (let b = g * LOSS_PER_GROUP; b < Math.min(n, (g + 1) * LOSS_PER_GROUP); b++) {
      ppoLossSample(acts, mb, deltas, u as LossHeadUniforms, stats, b, sums);
    }
    for (let p = 0; p < LOSS_PARTS; p++) partials[u.lossAt + g * LOSS_PARTS + p] = sums[p];
  }
}

export const ppoLoss: Kernel = { spec: ppoLossSpec, reference: ppoLossReference };

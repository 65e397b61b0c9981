/**
 * The DQN-family learner (SPEC 9), the TS reference of one device train step:
 *   1. sample    B replay rows from the PER tree (Philox thresholds of train step s), weights
 *   2. gather    state, action, n-step return, discount, bootstrap state of each row
 *   3. forward   online(s); online(s') for a*; target(s') (IQN: N taus for s, N' for s')
 *   4. loss      Huber / C51 cross-entropy / IQN quantile Huber (src/learn/dqn_loss.ts)
 *   5. backward  through the dueling net (src/learn/dueling.ts)
 *   6. Adam      global-norm clip dqn.maxGradNorm, Adam dqn.lr (src/learn/optim.ts)
 *   7. priority  |signal| + eps for the sampled rows
 *   8. target    hard copy after every dqn.targetEvery-th step, or Polyak
 *                target = f32(t + f32(tau * f32(o - t))) after every step when targetEvery is 0
 * IQN taus of step s, row b: word k & 3 of Philox(LearnTau, b, s, k >> 2), k < N the online
 * taus, N <= k < N + N' the target taus.
 */
import type { DqnConfig } from '../config.js';
import type { C51Support } from '../nets/forward.js';
import { duelingLayout, type QHead, STATE_DIM } from '../nets/layout.js';
import { philox4x32, u32ToUnitFloat } from '../rng/philox.js';
import { Stream } from '../rng/streams.js';
import { c51Loss, dqnHuberLoss, iqnLoss, type LossRows } from './dqn_loss.js';
import {
  createDuelingCache,
  type DuelingCache,
  type DuelingNet,
  duelingBackward,
  duelingForward,
  duelingNet,
} from './dueling.js';
import { type Floats, type FloatsCtor, roundFor } from './mlp.js';
import { type AdamState, adamStep, clipGradNorm, createAdam } from './optim.js';
import { type Per, perSample, perUpdate } from './per.js';
import { REPLAY_F, type Replay, ReplayF } from './replay.js';

export interface DqnLearner {
  net: DuelingNet;
  cfg: DqnConfig;
  online: Floats;
  target: Floats;
  adam: AdamState;
  grad: Floats;
  /** Online net on s (N taus a row for IQN). */
  cur: DuelingCache;
  /** Online and target nets on the bootstrap states (N' taus for IQN). */
  nextOnline: DuelingCache;
  nextTarget: DuelingCache;
  rows: LossRows;
  /** Sampled replay rows of the step. */
  index: Int32Array;
  taus: Floats;
  targetTaus: Floats;
  dOut: Floats;
  /** Each row's priority signal (before |.| + eps). */
  prio: Floats;
  /** Train steps taken (the target schedule and the Philox step of the next step). */
  steps: number;
}

/** The Q head of a DQN-family algorithm (`dqn`, `c51`, `iqn`). */
export const headOf = (algo: string): QHead => (algo === 'c51' ? 'c51' : algo === 'iqn' ? 'iqn' : 'plain');

/** The C51 support of the config. */
export const c51Support = (cfg: DqnConfig): C51Support => ({
  vMin: cfg.vMin,
  vMax: cfg.vMax,
  atoms: cfg.atoms,
});

/** A learner for `head` starting from `online` (the target starts as its copy). */
export function createDqnLearner(
  head: QHead,
  cfg: DqnConfig,
  online: Floats,
  ctor: FloatsCtor = Float32Array,
): DqnLearner {
  const layout = duelingLayout(head, cfg.atoms, cfg.iqnEmbed);
  if (online.length !== layout.size) {
    throw new Error(
      `dqn learner: ${online.length} parameters, the ${layout.kind} layout needs ${layout.size}`,
    );
  }
  const net = duelingNet(layout, head, c51Support(cfg));
  const B = cfg.batch;
  const nTau = head === 'iqn' ? cfg.iqnTau : 1;
  const cur = createDuelingCache(net, B, nTau, ctor);
  return {
    net,
    cfg,
    online: ctor.from(online),
    target: ctor.from(online),
    adam: createAdam(layout.size, ctor),
    grad: new ctor(layout.size),
    cur,
    nextOnline: createDuelingCache(net, B, nTau, ctor),
    nextTarget: createDuelingCache(net, B, nTau, ctor),
    rows: {
      batch: B,
      actions: new Int32Array(B),
      returns: new ctor(B),
      discounts: new ctor(B),
      weights: new ctor(B),
    },
    index: new Int32Array(B),
    taus: new ctor(B * nTau),
    targetTaus: new ctor(B * nTau),
    dOut: new ctor(cur.out.length),
    prio: new ctor(B),
    steps: 0,
  };
}

/** Copies replay rows `index[0 .. B)` into the learner's inputs (weights are set by the caller). */
export function gatherRows(learner: DqnLearner, replay: Replay, index: Int32Array, batch: number): void {
  const { rows } = learner;
  const s = learner.cur.trunk.acts[0];
  const n1 = learner.nextOnline.trunk.acts[0];
  const n2 = learner.nextTarget.trunk.acts[0];
  for (let b = 0; b < batch; b++) {
    const o = index[b] * REPLAY_F;
    for (let k = 0; k < STATE_DIM; k++) {
      s[b * STATE_DIM + k] = replay.f[o + ReplayF.State + k];
      const x = replay.f[o + ReplayF.Next + k];
      n1[b * STATE_DIM + k] = x;
      n2[b * STATE_DIM + k] = x;
    }
    rows.actions[b] = replay.i[index[b]];
    rows.returns[b] = replay.f[o + ReplayF.Return];
    rows.discounts[b] = replay.f[o + ReplayF.Discount];
  }
  rows.batch = batch;
}

/** IQN taus of train step `step` for rows 0..batch (see the header). */
export function learnerTaus(learner: DqnLearner, key: [number, number], step: number, batch: number): void {
  const N = learner.cur.taus;
  const w = new Uint32Array(4);
  for (let b = 0; b < batch; b++) {
    for (let k = 0; k < 2 * N; k++) {
      if ((k & 3) === 0) philox4x32(Stream.LearnTau, b, step >>> 0, k >> 2, key[0], key[1], w);
      const u = u32ToUnitFloat(w[k & 3]);
      if (k < N) learner.taus[b * N + k] = u;
      else learner.targetTaus[b * N + k - N] = u;
    }
  }
}

/**
 * Forward, loss and (when `grad` is given) backward on the gathered batch with `params` as the
 * online net. Returns the weighted mean loss; fills `learner.prio`.
 */
export function dqnLossGrad(learner: DqnLearner, params: Floats, grad?: Floats): number {
  const { net, cfg, rows } = learner;
  const B = rows.batch;
  const q = duelingForward(net, params, learner.cur, B, learner.taus);
  const nOn = duelingForward(net, params, learner.nextOnline, B, learner.targetTaus);
  const nTg = duelingForward(net, learner.target, learner.nextTarget, B, learner.targetTaus);
  let loss: number;
  if (net.head === 'plain')
    loss = dqnHuberLoss(q, nOn, nTg, rows, cfg.huberKappa, learner.dOut, learner.prio);
  else if (net.head === 'c51') loss = c51Loss(net.support, q, nOn, nTg, rows, learner.dOut, learner.prio);
  else {
    const N = learner.cur.taus;
    loss = iqnLoss(q, learner.taus, N, nOn, nTg, N, rows, cfg.huberKappa, learner.dOut, learner.prio);
  }
  if (grad) duelingBackward(net, params, learner.cur, learner.dOut, B, grad);
  return loss;
}

export interface DqnStepStats {
  loss: number;
  /** Global gradient norm before clipping. */
  gradNorm: number;
  /** Mean |priority signal| of the batch (|TD| for plain DQN). */
  td: number;
}

/** Target-network update after a train step (see the header). */
export function updateTarget(learner: DqnLearner): void {
  targetUpdate(learner.cfg, learner.steps, learner.online, learner.target);
}

/** `updateTarget` on plain buffers: after train step `steps` (counted from 1). */
export function targetUpdate(
  cfg: Pick<DqnConfig, 'targetEvery' | 'polyakTau'>,
  steps: number,
  online: Floats,
  target: Floats,
): void {
  if (cfg.targetEvery > 0) {
    if (steps % cfg.targetEvery === 0) target.set(online);
    return;
  }
  const r = roundFor(target);
  const tau = r(cfg.polyakTau);
  for (let k = 0; k < target.length; k++) target[k] = r(target[k] + r(tau * r(online[k] - target[k])));
}

/** One train step (steps 1-8 of the header) on a replay holding `replay.size` rows. */
export function dqnTrainStep(
  learner: DqnLearner,
  replay: Replay,
  per: Per,
  key: [number, number],
  beta: number,
): DqnStepStats {
  const B = learner.cfg.batch;
  const step = learner.steps;
  perSample(per, replay.size, B, beta, key, step, learner.index, learner.rows.weights as Float32Array);
  gatherRows(learner, replay, learner.index, B);
  if (learner.net.head === 'iqn') learnerTaus(learner, key, step, B);
  const loss = dqnLossGrad(learner, learner.online, learner.grad);
  const gradNorm = clipGradNorm([learner.grad], learner.cfg.maxGradNorm);
  adamStep(learner.online, learner.grad, learner.adam, { lr: learner.cfg.lr });
  perUpdate(per, learner.index, learner.prio, B);
  learner.steps++;
  updateTarget(learner);
  let td = 0;
  for (let b = 0; b < B; b++) td += Math.abs(learner.prio[b]);
  return { loss, gradNorm, td: td / B };
}

/** Exploration rate of collection round r (epoch r + 1): linear from start to end over decayEpochs. */
export function epsilonAt(cfg: DqnConfig, round: number): number {
  const t = Math.min(1, round / cfg.epsilonDecayEpochs);
  return cfg.epsilonStart + (cfg.epsilonEnd - cfg.epsilonStart) * t;
}

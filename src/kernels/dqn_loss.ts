/**
 * dqn_loss: the loss head of the DQN-family learner step on a sampled replay batch
 * (src/learn/dqn_loss.ts), dueling double DQN with the Huber loss (`atoms` = 1) or C51
 * (`atoms` > 1, the categorical projection on [vMin, vMax], cross-entropy through the log-softmax).
 * Per sample b < batch, from the head outputs already on the device:
 *   online  Q(s) rows at qOff, Q(s') rows at nextOff; targetNet  Q_target(s') rows at targetOff
 *           (rows of 45 x atoms floats, action-major)
 *   rows    the batch in the replay row layout (src/learn/replay.ts, REPLAY_F = 110 floats):
 *           n-step return at ReplayF.Return, discount at ReplayF.Discount
 *   actions i32 [batch] (clamped to [0, 45): a GPU cannot throw), weights f32 [batch] (PER's
 *           importance weights, 1 without PER)
 * it writes
 *   dOut[dOutOff + b * 45 * atoms ..]  dLoss/d head outputs (IS-weighted, / batch), zero off the action
 *   td[b]          the priority signal: Huber delta = Q(s, a) - y, C51 the cross-entropy L_b
 *   td[batch + b]  w_b * L_b (the step's loss is their sum / batch)
 * Workgroup: WG_X (64) threads, one sample: they zero its dOut row off the action; C51's first 45
 * take one action's expected value at s' each, the two distributions (target at the argmax, the
 * taken action's, up to MAX_ATOMS atoms) go an atom a thread, and thread 0 takes the argmax, the
 * maxima, sums, projection and loss in the reference's order. Numerics: f32 with the twins' own
 * exp/log (this reference rounds like dqn_loss.ts with Math.exp/Math.log: tolerance).
 */

import { type C51Scratch, c51Sample, c51Scratch, dqnHuberSample } from '../learn/dqn_loss.js';
import { REPLAY_F, ReplayF } from '../learn/replay.js';
import type { C51Support } from '../nets/forward.js';
import { NUM_ACTIONS } from '../nets/layout.js';
import { grid1d } from './grid.js';
import type { Kernel, TypedArray } from './reference.js';
import type { DeviceBuffer, Dispatch, KernelSpec } from './spec.js';

/** Largest C51 support the twins hold per thread. */
export const DQN_MAX_ATOMS = 64;

export const dqnLossSpec: KernelSpec = {
  name: 'dqn_loss',
  bindings: [
    { name: 'online', type: 'f32', access: 'read' },
    { name: 'targetNet', type: 'f32', access: 'read' },
    { name: 'rows', type: 'f32', access: 'read' },
    { name: 'actions', type: 'i32', access: 'read' },
    { name: 'weights', type: 'f32', access: 'read' },
    { name: 'dOut', type: 'f32', access: 'read_write' },
    { name: 'td', type: 'f32', access: 'read_write' },
  ],
  uniforms: [
    { name: 'batch', type: 'u32' },
    { name: 'atoms', type: 'u32' },
    { name: 'qOff', type: 'u32' },
    { name: 'nextOff', type: 'u32' },
    { name: 'targetOff', type: 'u32' },
    { name: 'dOutOff', type: 'u32' },
    { name: 'kappa', type: 'f32' },
    { name: 'vMin', type: 'f32' },
    { name: 'vMax', type: 'f32' },
  ],
  // At least NUM_ACTIONS: one thread an action's expected value.
  workgroupSize: [64, 1, 1],
  constants: {
    NUM_ACTIONS,
    REPLAY_F,
    RETURN_AT: ReplayF.Return,
    DISCOUNT_AT: ReplayF.Discount,
    MAX_ATOMS: DQN_MAX_ATOMS,
  },
};

export interface DqnLossArgs {
  online: DeviceBuffer;
  targetNet: DeviceBuffer;
  rows: DeviceBuffer;
  actions: DeviceBuffer;
  weights: DeviceBuffer;
  dOut: DeviceBuffer;
  td: DeviceBuffer;
  batch: number;
  /** 'huber' (dueling double DQN) or the C51 support. */
  head: { kind: 'huber'; kappa: number } | { kind: 'c51'; support: C51Support };
  qOff: number;
  nextOff: number;
  targetOff: number;
  dOutOff: number;
}

export function dqnLossDispatch(a: DqnLossArgs): Dispatch {
  if (!Number.isInteger(a.batch) || a.batch < 1) throw new Error(`dqn_loss: batch ${a.batch} must be >= 1`);
  const c51 = a.head.kind === 'c51' ? a.head.support : null;
  if (c51 && (c51.atoms < 2 || c51.atoms > DQN_MAX_ATOMS || !(c51.vMax > c51.vMin)))
    throw new Error(
      `dqn_loss: C51 needs 2..${DQN_MAX_ATOMS} atoms and vMax > vMin (got ${c51.atoms} on [${c51.vMin}, ${c51.vMax}])`,
    );
  const kappa = a.head.kind === 'huber' ? a.head.kappa : 1;
  if (!(kappa > 0)) throw new Error(`dqn_loss: Huber kappa ${kappa} must be > 0`);
  return {
    kernel: dqnLossSpec,
    buffers: [a.online, a.targetNet, a.rows, a.actions, a.weights, a.dOut, a.td],
    uniforms: {
      batch: a.batch,
      atoms: c51 ? c51.atoms : 1,
      qOff: a.qOff,
      nextOff: a.nextOff,
      targetOff: a.targetOff,
      dOutOff: a.dOutOff,
      kappa: Math.fround(kappa),
      vMin: Math.fround(c51 ? c51.vMin : 0),
      vMax: Math.fround(c51 ? c51.vMax : 0),
    },
    groups: grid1d(a.batch),
  };
}

function dqnLossReference(buffers: TypedArray[], u: Record<string, number>): void {
  const [online, targetNet, rows, actions, weights, dOut, td] = buffers as Float32Array[];
  const n = u.atoms;
  const row = NUM_ACTIONS * n;
  const support = { vMin: u.vMin, vMax: u.vMax, atoms: n };
  const scratch: C51Scratch | null = n > 1 ? c51Scratch(support) : null;
  for (let b = 0; b < u.batch; b++) {
    const o = b * row;
    const at = { q: u.qOff + o, next: u.nextOff + o, target: u.targetOff + o, dOut: u.dOutOff + o };
    const s = {
      action: Math.min(NUM_ACTIONS - 1, Math.max(0, actions[b])),
      ret: rows[b * REPLAY_F + ReplayF.Return],
      discount: rows[b * REPLAY_F + ReplayF.Discount],
      weight: weights[b],
      batch: u.batch,
    };
    dOut.fill(0, at.dOut, at.dOut + row);
    let loss: number;
    if (scratch) {
      loss = c51Sample(support, online, online, targetNet, at, s, dOut, scratch);
      td[b] = loss;
    } else {
      const one = dqnHuberSample(online, online, targetNet, at, s, u.kappa, dOut);
      loss = one.loss;
      td[b] = one.prio;
    }
    td[u.batch + b] = s.weight * loss;
  }
}

export const dqnLoss: Kernel = { spec: dqnLossSpec, reference: dqnLossReference };

/**
 * iqn_loss: IQN's quantile Huber loss head on a sampled replay batch (src/learn/dqn_loss.ts
 * `iqnLoss`, Dabney et al. 2018). Per sample b < batch, from the quantile rows on the device
 * (45 floats a row):
 *   online     Z rows b * nTau + i at qOff (quantiles at taus[b * nTau + i]), the next-state rows
 *              b * nTarget + j at nextOff (a* = argmax of their mean over j, first on ties)
 *   targetNet  the target net's next-state rows b * nTarget + j at targetOff
 *   rows, actions, weights as dqn_loss (replay row layout, i32 actions, importance weights)
 * y_j = G + d Zt_j(s', a*), delta_ij = y_j - Z_i(s, a), rho = |tau_i - [delta < 0]| Huber(delta) / kappa,
 * L_b = sum_i mean_j rho_ij. Writes
 *   dOut[dOutOff + (b nTau + i) 45 ..]  dL/dZ at the action (w / batch), zero elsewhere
 *   td[b] = L_b (the priority signal), td[batch + b] = w L_b
 * Workgroup: WG_X (64) threads, one sample: a thread per action's target sum at s', per target
 * y_j and per quantile i's gradient; thread 0 the argmax and the loss in the reference's order.
 * Numerics: f32 (the reference sums L_b in f64: tolerance).
 */

import { iqnSample } from '../learn/dqn_loss.js';
import { REPLAY_F, ReplayF } from '../learn/replay.js';
import { NUM_ACTIONS } from '../nets/layout.js';
import { grid1d } from './grid.js';
import type { Kernel, TypedArray } from './reference.js';
import type { DeviceBuffer, Dispatch, KernelSpec } from './spec.js';

/** Most target quantiles per sample the twins hold. */
export const IQN_MAX_TAU = 64;

export const iqnLossSpec: KernelSpec = {
  name: 'iqn_loss',
  bindings: [
    { name: 'online', type: 'f32', access: 'read' },
    { name: 'targetNet', type: 'f32', access: 'read' },
    { name: 'taus', type: 'f32', access: 'read' },
    { name: 'rows', type: 'f32', access: 'read' },
    { name: 'actions', type: 'i32', access: 'read' },
    { name: 'weights', type: 'f32', access: 'read' },
    { name: 'dOut', type: 'f32', access: 'read_write' },
    { name: 'td', type: 'f32', access: 'read_write' },
  ],
  uniforms: [
    { name: 'batch', type: 'u32' },
    { name: 'nTau', type: 'u32' },
    { name: 'nTarget', type: 'u32' },
    { name: 'qOff', type: 'u32' },
    { name: 'nextOff', type: 'u32' },
    { name: 'targetOff', type: 'u32' },
    { name: 'dOutOff', type: 'u32' },
    { name: 'tauOff', type: 'u32' },
    { name: 'kappa', type: 'f32' },
  ],
  workgroupSize: [64, 1, 1],
  constants: {
    NUM_ACTIONS,
    REPLAY_F,
    RETURN_AT: ReplayF.Return,
    DISCOUNT_AT: ReplayF.Discount,
    MAX_TAU: IQN_MAX_TAU,
  },
};

export interface IqnLossArgs {
  online: DeviceBuffer;
  targetNet: DeviceBuffer;
  taus: DeviceBuffer;
  rows: DeviceBuffer;
  actions: DeviceBuffer;
  weights: DeviceBuffer;
  dOut: DeviceBuffer;
  td: DeviceBuffer;
  batch: number;
  nTau: number;
  nTarget: number;
  kappa: number;
  qOff: number;
  nextOff: number;
  targetOff: number;
  dOutOff: number;
  tauOff: number;
}

export function iqnLossDispatch(a: IqnLossArgs): Dispatch {
  if (!Number.isInteger(a.batch) || a.batch < 1) throw new Error(`iqn_loss: batch ${a.batch} must be >= 1`);
  if (!Number.isInteger(a.nTau) || a.nTau < 1 || a.nTau > IQN_MAX_TAU)
    throw new Error(`iqn_loss: ${a.nTau} online quantiles, need 1..${IQN_MAX_TAU}`);
  if (!Number.isInteger(a.nTarget) || a.nTarget < 1 || a.nTarget > IQN_MAX_TAU)
    throw new Error(`iqn_loss: ${a.nTarget} target quantiles, need 1..${IQN_MAX_TAU}`);
  if (!(a.kappa > 0)) throw new Error(`iqn_loss: Huber kappa ${a.kappa} must be > 0`);
  return {
    kernel: iqnLossSpec,
    buffers: [a.online, a.targetNet, a.taus, a.rows, a.actions, a.weights, a.dOut, a.td],
    uniforms: {
      batch: a.batch,
      nTau: a.nTau,
      nTarget: a.nTarget,
      qOff: a.qOff,
      nextOff: a.nextOff,
      targetOff: a.targetOff,
      dOutOff: a.dOutOff,
      tauOff: a.tauOff,
      kappa: Math.fround(a.kappa),
    },
    groups: grid1d(a.batch),
  };
}

function iqnLossReference(buffers: TypedArray[], u: Record<string, number>): void {
  const [online, targetNet, taus, rows, actions, weights, dOut, td] = buffers as Float32Array[];
  const shape = { nTau: u.nTau, nTarget: u.nTarget };
  const y = new Float64Array(u.nTarget);
  for (let b = 0; b < u.batch; b++) {
    const on = b * u.nTau * NUM_ACTIONS;
    const next = b * u.nTarget * NUM_ACTIONS;
    const at = { q: u.qOff + on, next: u.nextOff + next, target: u.targetOff + next, dOut: u.dOutOff + on };
    const s = {
      action: Math.min(NUM_ACTIONS - 1, Math.max(0, actions[b])),
      ret: rows[b * REPLAY_F + ReplayF.Return],
      discount: rows[b * REPLAY_F + ReplayF.Discount],
      weight: weights[b],
      batch: u.batch,
    };
    dOut.fill(0, at.dOut, at.dOut + u.nTau * NUM_ACTIONS);
    const lb = iqnSample(
      online,
      taus,
      u.tauOff + b * u.nTau,
      online,
      targetNet,
      shape,
      at,
      s,
      u.kappa,
      dOut,
      y,
    );
    td[b] = lb;
    td[u.batch + b] = s.weight * lb;
  }
}

export const iqnLoss: Kernel = { spec: iqnLossSpec, reference: iqnLossReference };

/**
 * dqn_loss: the loss head of the DQN-family learner step on a sampled replay batch
 * (src/learn/dqn_loss.ts), dueling double DQN with the Huber loss (`atoms` = 1) or C51
 * (`atoms` > 1, the categorical projection on [vMin, vMax], cross-entropy through the log-softmax),
 * with the dueling combination and its backward folded in (src/learn/dueling.ts `duelingCombine`,
 * `duelingCombineBackward`: no head-output rows are written). Per sample b < batch, from the streams'
 * output layers already on the device (the online net's in `acts`, the target net's in
 * `targetActs`, so its forward pass runs beside the online net's in a CUDA graph; V rows of `atoms`
 * floats, A rows of 45 x atoms, action-major):
 *   online s    V at vOff + b atoms, A at aOff + b 45 atoms
 *   online s'   V at nextVOff + .., A at nextAOff + ..;   target s'  V at tvOff + .., A at taOff + ..
 *   rows        the batch in the replay row layout (src/learn/replay.ts, REPLAY_F = 110 floats):
 *               n-step return at ReplayF.Return, discount at ReplayF.Discount
 *   actions i32 [batch] (clamped to [0, 45): a GPU cannot throw), weights f32 [batch] (PER's
 *               importance weights, 1 without PER)
 * the head outputs are Q[a, z] = f32(f32(V[z] + A[a, z]) - f32(f32(sum_a A[a, z]) / 45)), and it writes
 *   deltas[dVOff + b atoms ..]      dLoss/dV = sum_a dOut[a, z] (dOut: the loss gradient of the head
 *                                   outputs, IS-weighted, / batch, zero off the taken action)
 *   deltas[dAOff + b 45 atoms ..]   dLoss/dA = f32(dOut[a, z] - f32(dV[z] / 45))
 *   td[b]          the priority signal: Huber delta = Q(s, a) - y, C51 the cross-entropy L_b
 *   td[batch + b]  w_b * L_b (the step's loss is their sum / batch)
 * Workgroup: WG_X (128) threads, one sample: the three rows' per-atom means an (atom, row) a thread,
 * the s' head outputs into workgroup memory an output a thread (C51: then exp(l - max) an output a
 * thread), the first 45 one action's value at s' each (C51: max, sum and expectation in atom
 * order), thread 0 the argmax; C51's two distributions (target at
 * the argmax, the taken action's) an atom a thread where the order does not matter, thread 0
 * where it does (maxima, sums, projection, loss); the gradients an output a thread. Numerics: f32
 * with the twins' own exp/log (this reference rounds like dqn_loss.ts with Math.exp/Math.log:
 * tolerance).
 */

import { type C51Scratch, c51Sample, c51Scratch, dqnHuberSample } from '../learn/dqn_loss.js';
import { duelingCombine, duelingCombineBackward } from '../learn/dueling.js';
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
    { name: 'acts', type: 'f32', access: 'read' },
    { name: 'targetActs', type: 'f32', access: 'read' },
    { name: 'rows', type: 'f32', access: 'read' },
    { name: 'actions', type: 'i32', access: 'read' },
    { name: 'weights', type: 'f32', access: 'read' },
    { name: 'deltas', type: 'f32', access: 'read_write' },
    { name: 'td', type: 'f32', access: 'read_write' },
  ],
  uniforms: [
    { name: 'batch', type: 'u32' },
    { name: 'atoms', type: 'u32' },
    { name: 'vOff', type: 'u32' },
    { name: 'aOff', type: 'u32' },
    { name: 'nextVOff', type: 'u32' },
    { name: 'nextAOff', type: 'u32' },
    { name: 'tvOff', type: 'u32' },
    { name: 'taOff', type: 'u32' },
    { name: 'dVOff', type: 'u32' },
    { name: 'dAOff', type: 'u32' },
    { name: 'kappa', type: 'f32' },
    { name: 'vMin', type: 'f32' },
    { name: 'vMax', type: 'f32' },
  ],
  // At least NUM_ACTIONS: one thread an action's value at s'.
  workgroupSize: [128, 1, 1],
  constants: {
    NUM_ACTIONS,
    REPLAY_F,
    RETURN_AT: ReplayF.Return,
    DISCOUNT_AT: ReplayF.Discount,
    MAX_ATOMS: DQN_MAX_ATOMS,
  },
};

/** Where one state's streams outputs sit (in `acts`, or `targetActs`): V rows at `v`, A rows at `a`. */
export interface StreamsAt {
  v: number;
  a: number;
}

export interface DqnLossArgs {
  acts: DeviceBuffer;
  /** The target net's activations (may be `acts` itself). */
  targetActs: DeviceBuffer;
  rows: DeviceBuffer;
  actions: DeviceBuffer;
  weights: DeviceBuffer;
  deltas: DeviceBuffer;
  td: DeviceBuffer;
  batch: number;
  /** 'huber' (dueling double DQN) or the C51 support. */
  head: { kind: 'huber'; kappa: number } | { kind: 'c51'; support: C51Support };
  /** The online net's streams on s and on s' (in `acts`), the target net's on s' (in `targetActs`). */
  online: StreamsAt;
  next: StreamsAt;
  target: StreamsAt;
  /** Where dV and dA (the streams' output layers' deltas) go in `deltas`. */
  dVOff: number;
  dAOff: number;
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
    buffers: [a.acts, a.targetActs, a.rows, a.actions, a.weights, a.deltas, a.td],
    uniforms: {
      batch: a.batch,
      atoms: c51 ? c51.atoms : 1,
      vOff: a.online.v,
      aOff: a.online.a,
      nextVOff: a.next.v,
      nextAOff: a.next.a,
      tvOff: a.target.v,
      taOff: a.target.a,
      dVOff: a.dVOff,
      dAOff: a.dAOff,
      kappa: Math.fround(kappa),
      vMin: Math.fround(c51 ? c51.vMin : 0),
      vMax: Math.fround(c51 ? c51.vMax : 0),
    },
    groups: grid1d(a.batch),
  };
}

function dqnLossReference(buffers: TypedArray[], u: Record<string, number>): void {
  const [acts, targetActs, rows, actions, weights, deltas, td] = buffers as Float32Array[];
  const n = u.atoms;
  const B = u.batch;
  const row = NUM_ACTIONS * n;
  const support = { vMin: u.vMin, vMax: u.vMax, atoms: n };
  const scratch: C51Scratch | null = n > 1 ? c51Scratch(support) : null;
  const heads = (from: Float32Array, vOff: number, aOff: number) => {
    const out = new Float32Array(B * row);
    duelingCombine(from.subarray(vOff, vOff + B * n), from.subarray(aOff, aOff + B * row), out, B, n);
    return out;
  };
  const q = heads(acts, u.vOff, u.aOff);
  const next = heads(acts, u.nextVOff, u.nextAOff);
  const target = heads(targetActs, u.tvOff, u.taOff);
  const dOut = new Float32Array(B * row);
  for (let b = 0; b < B; b++) {
    const o = b * row;
    const at = { q: o, next: o, target: o, dOut: o };
    const s = {
      action: Math.min(NUM_ACTIONS - 1, Math.max(0, actions[b])),
      ret: rows[b * REPLAY_F + ReplayF.Return],
      discount: rows[b * REPLAY_F + ReplayF.Discount],
      weight: weights[b],
      batch: B,
    };
    let loss: number;
    if (scratch) {
      loss = c51Sample(support, q, next, target, at, s, dOut, scratch);
      td[b] = loss;
    } else {
      const one = dqnHuberSample(q, next, target, at, s, u.kappa, dOut);
      loss = one.loss;
      td[b] = one.prio;
    }
    td[B + b] = s.weight * loss;
  }
  duelingCombineBackward(
    dOut,
    deltas.subarray(u.dVOff, u.dVOff + B * n),
    deltas.subarray(u.dAOff, u.dAOff + B * row),
    B,
    n,
  );
}

export const dqnLoss: Kernel = { spec: dqnLossSpec, reference: dqnLossReference };

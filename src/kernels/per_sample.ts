/**
 * per_sample: prioritized replay on the device, the twin of src/learn/per.ts perSample / perUpdate
 * plus the gather of the sampled rows. Three phases of one kernel:
 * - phase 0 (sample; one workgroup of WG_X threads, thread lid takes samples lid, lid + WG_X, ..):
 *   step = state[1] + stepSlot; seg = f32(root / batch); sample j's threshold
 *   x_j = f32(f32(j + u_j) * seg), u_j = unit float of word j & 3 of Philox(Replay, step, j >> 2, 0);
 *   descent of the sum tree as perSample (left when x < left child or the right child is 0);
 *   rows -> batchI[batch + j]; weights w_j = (size * leaf / root)^-beta with beta = betaStart +
 *   (betaEnd - betaStart) * min(1, step / betaSteps), divided by their max (a fixed-order
 *   workgroup reduction) -> batchF[batch * ROW_F + j].
 * - phase 1 (gather; grid, one thread per output element): batchF[j * ROW_F + c] = ring row
 *   rows[j]'s float c (the replay row layout of src/learn/replay.ts), batchI[j] = its action.
 * - phase 2 (priorities; one workgroup): p_j = f32(|td[j]| + eps); leaf rows[j] = p_j^alpha, written
 *   only by the last j of a duplicated row (perUpdate: the last in batch order wins); state[0] (f32
 *   bits) = max(state[0], max_j p_j) (the rows are scanned from workgroup memory for batches up to
 *   SHARED_ROWS, from batchI past that); then the ancestors of the written leaves, level by level
 *   with a barrier between levels (threads sharing a node write the same sum), until a level has
 *   at most TOP_NODES / 2 nodes; that level goes to workgroup memory and every node above it is
 *   summed there (an unchanged node gets the same sum again): the tree equals perUpdate's.
 * Indices are exact across backends (the descent compares f32 sums the tree holds bit for bit;
 * seg is a correctly rounded division: exact for a power-of-two batch on every GPU); weights and
 * priorities use pow, within a few f32 ulps of the TS reference.
 * Batch outputs (what the DQN loss reads): batchF = [batch, ROW_F] rows then [batch] weights;
 * batchI = [batch] actions then [batch] ring rows (the indices the priority update writes).
 * state: [0] max priority (f32 bits, 1 at the start), [1] the first train step of this launch
 * group (uploaded once per epoch, so captured steps replay unchanged with stepSlot).
 */

import { STATE_DIM } from '../nets/layout.js';
import { philox4x32, u32ToUnitFloat } from '../rng/philox.js';
import { Stream } from '../rng/streams.js';
import { grid1d, groupCount, threadsPerGroup } from './grid.js';
import type { Kernel, TypedArray } from './reference.js';
import type { DeviceBuffer, Dispatch, KernelSpec } from './spec.js';

const ROW_F = 2 * STATE_DIM + 2;

export const perSampleSpec: KernelSpec = {
  name: 'per_sample',
  bindings: [
    { name: 'ringF', type: 'f32', access: 'read' },
    { name: 'ringI', type: 'i32', access: 'read' },
    { name: 'tree', type: 'f32', access: 'read_write' },
    { name: 'state', type: 'u32', access: 'read_write' },
    { name: 'batchF', type: 'f32', access: 'read_write' },
    { name: 'batchI', type: 'i32', access: 'read_write' },
    { name: 'td', type: 'f32', access: 'read' },
  ],
  uniforms: [
    { name: 'phase', type: 'u32' },
    { name: 'batch', type: 'u32' },
    { name: 'size', type: 'u32' },
    { name: 'leaves', type: 'u32' },
    { name: 'stepSlot', type: 'u32' },
    { name: 'key0', type: 'u32' },
    { name: 'key1', type: 'u32' },
    { name: 'betaSteps', type: 'u32' },
    { name: 'betaStart', type: 'f32' },
    { name: 'betaEnd', type: 'f32' },
    { name: 'alpha', type: 'f32' },
    { name: 'eps', type: 'f32' },
  ],
  workgroupSize: [256, 1, 1],
  // SHARED_ROWS: phase 2 keeps up to this many sampled rows in workgroup memory (8 KiB);
  // TOP_NODES: it sums the tree's top nodes 1 .. TOP_NODES - 1 in workgroup memory (4 KiB).
  constants: { ROW_F, REPLAY_STREAM: Stream.Replay, SHARED_ROWS: 2048, TOP_NODES: 1024 },
};

export interface PerSampleArgs {
  ringF: DeviceBuffer;
  ringI: DeviceBuffer;
  tree: DeviceBuffer;
  state: DeviceBuffer;
  batchF: DeviceBuffer;
  batchI: DeviceBuffer;
  td: DeviceBuffer;
  batch: number;
  leaves: number;
  key: readonly [number, number];
  /** Train steps over which beta goes from betaStart to betaEnd (0: betaEnd at once). */
  betaSteps: number;
  betaStart: number;
  betaEnd: number;
  alpha: number;
  eps: number;
}

function uniforms(a: PerSampleArgs, phase: number, size: number, stepSlot: number): Record<string, number> {
  return {
    phase,
    batch: a.batch,
    size,
    leaves: a.leaves,
    stepSlot,
    key0: a.key[0],
    key1: a.key[1],
    betaSteps: a.betaSteps,
    betaStart: a.betaStart,
    betaEnd: a.betaEnd,
    alpha: a.alpha,
    eps: a.eps,
  };
}

const buffersOf = (a: PerSampleArgs) => [a.ringF, a.ringI, a.tree, a.state, a.batchF, a.batchI, a.td];

/** Sample + gather of train step state[1] + stepSlot from a replay holding `size` rows. */
export function perSampleDispatches(a: PerSampleArgs, size: number, stepSlot: number): Dispatch[] {
  const gatherThreads = a.batch * (ROW_F + 1);
  return [
    {
      kernel: perSampleSpec,
      buffers: buffersOf(a),
      uniforms: uniforms(a, 0, size, stepSlot),
      groups: [1, 1, 1],
    },
    {
      kernel: perSampleSpec,
      buffers: buffersOf(a),
      uniforms: uniforms(a, 1, size, stepSlot),
      groups: grid1d(Math.ceil(gatherThreads / threadsPerGroup(perSampleSpec.workgroupSize))),
    },
  ];
}

/** Priorities of the last sampled rows from the step's TD errors (td[0 .. batch)). */
export function perUpdateDispatch(a: PerSampleArgs): Dispatch {
  return { kernel: perSampleSpec, buffers: buffersOf(a), uniforms: uniforms(a, 2, 0, 0), groups: [1, 1, 1] };
}

const f = Math.fround;
const asFloat = (bits: number) => new Float32Array(Uint32Array.of(bits).buffer)[0];
const asBits = (x: number) => new Uint32Array(Float32Array.of(x).buffer)[0];

function perSampleReference(
  buffers: TypedArray[],
  u: Record<string, number>,
  groups: readonly [number, number, number],
): void {
  const [ringF, ringI, tree, state, batchF, batchI, td] = buffers;
  const B = u.batch;
  if (u.phase === 1) {
    const n = Math.min(B * (ROW_F + 1), groupCount(groups) * threadsPerGroup(perSampleSpec.workgroupSize));
    for (let t = 0; t < n; t++) {
      if (t < B * ROW_F) {
        const j = Math.floor(t / ROW_F);
        batchF[t] = ringF[batchI[B + j] * ROW_F + (t - j * ROW_F)];
      } else batchI[t - B * ROW_F] = ringI[batchI[B + t - B * ROW_F]];
    }
    return;
  }
  if (u.phase === 2) {
    let maxP = asFloat(state[0]);
    for (let j = 0; j < B; j++) {
      const p = f(Math.abs(td[j]) + u.eps);
      if (p > maxP) maxP = p;
      tree[u.leaves + batchI[B + j]] = f(p ** u.alpha);
    }
    state[0] = asBits(maxP);
    for (let level = 1; u.leaves >> level >= 1; level++) {
      for (let j = 0; j < B; j++) {
        const k = (u.leaves + batchI[B + j]) >>> level;
        tree[k] = f(tree[2 * k] + tree[2 * k + 1]);
      }
    }
    return;
  }
  const step = (state[1] + u.stepSlot) >>> 0;
  const total = tree[1];
  const progress = u.betaSteps > 0 ? Math.min(1, step / u.betaSteps) : 1;
  const beta = u.betaStart + (u.betaEnd - u.betaStart) * progress;
  const seg = f(total / B);
  const w = new Uint32Array(4);
  let maxW = 0;
  for (let j = 0; j < B; j++) {
    if ((j & 3) === 0) philox4x32(Stream.Replay, step, j >> 2, 0, u.key0 >>> 0, u.key1 >>> 0, w);
    let x = f(f(j + u32ToUnitFloat(w[j & 3])) * seg);
    let node = 1;
    while (node < u.leaves) {
      const left = tree[2 * node];
      if (x < left || tree[2 * node + 1] === 0) node = 2 * node;
      else {
        x = f(x - left);
        node = 2 * node + 1;
      }
    }
    batchI[B + j] = node - u.leaves;
    const wj = f((u.size * f(tree[node] / total)) ** -beta);
    batchF[B * ROW_F + j] = wj;
    if (wj > maxW) maxW = wj;
  }
  for (let j = 0; j < B; j++) batchF[B * ROW_F + j] = f(batchF[B * ROW_F + j] / maxW);
}

export const perSample: Kernel = { spec: perSampleSpec, reference: perSampleReference };

/**
 * ppo_gather: builds minibatch k of a PPO update epoch from the rollout, in the order of the
 * device-computed shuffle (src/learn/shuffle.ts): sample j < batch is rollout row
 *   s = shuffle_index(k * batch + j, count, sched[0] + epochSlot, key)
 * and the kernel copies its state into the minibatch input rows acts[j * stateDim ..] and its
 * action, old log-probability, advantage and return into mb[j], mb[batch + j], mb[2 * batch + j],
 * mb[3 * batch + j] (the action as an f32: exact, actions are small integers).
 *
 * The rollout is read where the collector wrote it: rolloutF holds f32 sections, rolloutI i32
 * sections, at element offsets statesOff (rows of stateDim), logpOff, advOff, retOff, actOff.
 * sched[0] is the first shuffle epoch of this update (update * updateEpochs), uploaded per update
 * so that a captured update replays unchanged.
 *
 * Workgroup: 64 threads; each workgroup takes `rows` samples (<= 64), computes their rollout rows
 * into workgroup memory, then copies their state rows together. Both twins read `rows`; CUDA and
 * WebGPU dispatch 4 per workgroup (PPO_GATHER_CUDA_ROWS): a 512-sample minibatch is 128 workgroups
 * with one round of copies each instead of 8 of 7 dependent rounds. Exact (integer shuffle, plain
 * copies).
 */

import { shuffleIndex } from '../rng/shuffle.js';
import { Stream } from '../rng/streams.js';
import { grid1d, groupCount } from './grid.js';
import type { Kernel, TypedArray } from './reference.js';
import type { DeviceBuffer, Dispatch, KernelSpec } from './spec.js';

export const ppoGatherSpec: KernelSpec = {
  name: 'ppo_gather',
  bindings: [
    { name: 'rolloutF', type: 'f32', access: 'read' },
    { name: 'rolloutI', type: 'i32', access: 'read' },
    { name: 'sched', type: 'u32', access: 'read' },
    { name: 'acts', type: 'f32', access: 'read_write' },
    { name: 'mb', type: 'f32', access: 'read_write' },
  ],
  uniforms: [
    { name: 'count', type: 'u32' },
    { name: 'batch', type: 'u32' },
    { name: 'minibatch', type: 'u32' },
    { name: 'epochSlot', type: 'u32' },
    { name: 'key0', type: 'u32' },
    { name: 'key1', type: 'u32' },
    { name: 'stateDim', type: 'u32' },
    { name: 'statesOff', type: 'u32' },
    { name: 'logpOff', type: 'u32' },
    { name: 'advOff', type: 'u32' },
    { name: 'retOff', type: 'u32' },
    { name: 'actOff', type: 'u32' },
    // Samples per workgroup (CUDA twin only; WGSL always takes WG_X).
    { name: 'rows', type: 'u32' },
  ],
  workgroupSize: [64, 1, 1],
  constants: { SHUFFLE_STREAM: Stream.Shuffle },
};

/** Where the PPO fields live in a rollout's two buffers (element offsets). */
export interface RolloutSections {
  states: number;
  logProbs: number;
  advantages: number;
  returns: number;
  /** In the i32 buffer. */
  actions: number;
}

export interface PpoGatherArgs {
  rolloutF: DeviceBuffer;
  rolloutI: DeviceBuffer;
  sched: DeviceBuffer;
  acts: DeviceBuffer;
  mb: DeviceBuffer;
  sections: RolloutSections;
  count: number;
  batch: number;
  stateDim: number;
  key: readonly [number, number];
  /** Samples per workgroup, 1..64 (default 64). */
  rowsPerGroup?: number;
}

/** Samples per ppo_gather workgroup on CUDA and WebGPU: >= 128 for a 512-sample minibatch. */
export const PPO_GATHER_CUDA_ROWS = 4;

/** The gather of minibatch `minibatch` of the update's epoch `epochSlot`. */
export function ppoGatherDispatch(a: PpoGatherArgs, epochSlot: number, minibatch: number): Dispatch {
  const rows = a.rowsPerGroup ?? ppoGatherSpec.workgroupSize[0];
  if (!Number.isInteger(rows) || rows < 1 || rows > ppoGatherSpec.workgroupSize[0]) {
    throw new Error(`ppo_gather: rows per workgroup must be an integer in [1, 64], got ${rows}`);
  }
  return {
    kernel: ppoGatherSpec,
    buffers: [a.rolloutF, a.rolloutI, a.sched, a.acts, a.mb],
    uniforms: {
      count: a.count,
      batch: a.batch,
      minibatch,
      epochSlot,
      key0: a.key[0],
      key1: a.key[1],
      stateDim: a.stateDim,
      statesOff: a.sections.states,
      logpOff: a.sections.logProbs,
      advOff: a.sections.advantages,
      retOff: a.sections.returns,
      actOff: a.sections.actions,
      rows,
    },
    groups: grid1d(Math.ceil(a.batch / rows)),
  };
}

function ppoGatherReference(
  buffers: TypedArray[],
  u: Record<string, number>,
  groups: readonly [number, number, number],
): void {
  const [rolloutF, rolloutI, sched, acts, mb] = buffers;
  const n = Math.min(u.batch, groupCount(groups) * (u.rows || ppoGatherSpec.workgroupSize[0]));
  const epoch = (sched[0] + u.epochSlot) >>> 0;
  const d = u.stateDim;
  const key = [u.key0 >>> 0, u.key1 >>> 0] as const;
  for (let j = 0; j < n; j++) {
    const s = shuffleIndexWithKey(u.minibatch * u.batch + j, u.count, epoch, key);
    for (let c = 0; c < d; c++) acts[j * d + c] = rolloutF[u.statesOff + s * d + c];
    mb[j] = rolloutI[u.actOff + s];
    mb[u.batch + j] = rolloutF[u.logpOff + s];
    mb[2 * u.batch + j] = rolloutF[u.advOff + s];
    mb[3 * u.batch + j] = rolloutF[u.retOff + s];
  }
}

/**
 * shuffleIndex for a Philox key given as two words (kernels receive the key, not the seed): the
 * seed whose seedToKey is this key gives the same permutation. Keys of safe-integer seeds only.
 */
export function shuffleIndexWithKey(
  index: number,
  count: number,
  epoch: number,
  key: readonly [number, number],
): number {
  if (key[1] >= 2 ** 21) throw new Error(`shuffle: key word ${key[1]} is not from a safe-integer seed`);
  return shuffleIndex(index, count, epoch, key[0] + key[1] * 2 ** 32);
}

export const ppoGather: Kernel = { spec: ppoGatherSpec, reference: ppoGatherReference };

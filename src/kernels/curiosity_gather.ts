/**
 * curiosity_gather: assembles the curiosity model's training batch from a PPO rollout on the
 * device, with the CPU engine's rule (src/engine/cpu_ppo.ts): walk j = 0, 1, ... of the
 * shuffle permutation of epoch `epoch` (src/learn/shuffle.ts); rollout row idx = perm(j) is kept
 * when its next row is the same episode's next bar (not done, not truncated, idx % steps !=
 * steps - 1); kept rows fill the batch in order until `batch` rows or the rollout runs out:
 *   acts[r * inDim + c] = states[idx][c] (c < outDim), acts[r * inDim + outDim + k] = [k == category]
 *   targets[r * outDim + c] = states[idx + 1][c]
 *   sched[0] = rows kept (curiosity_loss reads it as the row count; adam_step as its gate)
 * with category = 0 for exposure index (action / 9) 0-1, 1 for 2, 2 for 3-4 (src/env/actions.ts).
 *
 * Workgroup: one, of WG_X threads, taking WG_X permutation positions per round: each thread
 * tests its row, a workgroup exclusive scan of the keep flags gives each kept row its slot, and
 * the loop ends once the batch is full. Exact (integers and copies), deterministic.
 */

import { category } from '../env/actions.js';
import { Stream } from '../rng/streams.js';
import { shuffleIndexWithKey } from './ppo_gather.js';
import type { Kernel, TypedArray } from './reference.js';
import type { DeviceBuffer, Dispatch, KernelSpec } from './spec.js';

export const curiosityGatherSpec: KernelSpec = {
  name: 'curiosity_gather',
  bindings: [
    { name: 'rolloutF', type: 'f32', access: 'read' },
    { name: 'rolloutI', type: 'i32', access: 'read' },
    { name: 'acts', type: 'f32', access: 'read_write' },
    { name: 'targets', type: 'f32', access: 'read_write' },
    { name: 'sched', type: 'u32', access: 'read_write' },
  ],
  uniforms: [
    { name: 'count', type: 'u32' },
    { name: 'steps', type: 'u32' },
    { name: 'batch', type: 'u32' },
    { name: 'epoch', type: 'u32' },
    { name: 'key0', type: 'u32' },
    { name: 'key1', type: 'u32' },
    { name: 'stateDim', type: 'u32' },
    { name: 'inDim', type: 'u32' },
    { name: 'outDim', type: 'u32' },
    { name: 'statesOff', type: 'u32' },
    { name: 'actOff', type: 'u32' },
    { name: 'doneOff', type: 'u32' },
    { name: 'truncOff', type: 'u32' },
  ],
  workgroupSize: [256, 1, 1],
  constants: { SHUFFLE_STREAM: Stream.Shuffle },
};

/** Where the fields curiosity reads live in a rollout's buffers (element offsets). */
export interface CuriositySections {
  states: number;
  /** In the i32 buffer. */
  actions: number;
  dones: number;
  truncateds: number;
}

export interface CuriosityGatherArgs {
  rolloutF: DeviceBuffer;
  rolloutI: DeviceBuffer;
  acts: DeviceBuffer;
  targets: DeviceBuffer;
  sched: DeviceBuffer;
  sections: CuriositySections;
  count: number;
  /** Steps per episode (L): rows are episode-major, idx = episode * L + step. */
  steps: number;
  batch: number;
  stateDim: number;
  inDim: number;
  outDim: number;
  key: readonly [number, number];
}

export function curiosityGatherDispatch(a: CuriosityGatherArgs, epoch: number): Dispatch {
  return {
    kernel: curiosityGatherSpec,
    buffers: [a.rolloutF, a.rolloutI, a.acts, a.targets, a.sched],
    uniforms: {
      count: a.count,
      steps: a.steps,
      batch: a.batch,
      epoch: epoch >>> 0,
      key0: a.key[0],
      key1: a.key[1],
      stateDim: a.stateDim,
      inDim: a.inDim,
      outDim: a.outDim,
      statesOff: a.sections.states,
      actOff: a.sections.actions,
      doneOff: a.sections.dones,
      truncOff: a.sections.truncateds,
    },
    groups: [1, 1, 1],
  };
}

function curiosityGatherReference(buffers: TypedArray[], u: Record<string, number>): void {
  const [rolloutF, rolloutI, acts, targets, sched] = buffers;
  const key = [u.key0 >>> 0, u.key1 >>> 0] as const;
  const { stateDim: d, inDim, outDim } = u;
  let rows = 0;
  for (let j = 0; j < u.count && rows < u.batch; j++) {
    const idx = shuffleIndexWithKey(j, u.count, u.epoch, key);
    if (rolloutI[u.doneOff + idx] || rolloutI[u.truncOff + idx] || idx % u.steps === u.steps - 1) continue;
    const s = u.statesOff + idx * d;
    for (let c = 0; c < outDim; c++) {
      acts[rows * inDim + c] = rolloutF[s + c];
      targets[rows * outDim + c] = rolloutF[s + d + c];
    }
    const cat = category(rolloutI[u.actOff + idx]);
    for (let k = 0; k < inDim - outDim; k++) acts[rows * inDim + outDim + k] = k === cat ? 1 : 0;
    rows++;
  }
  sched[0] = rows;
}

export const curiosityGather: Kernel = { spec: curiosityGatherSpec, reference: curiosityGatherReference };

/**
 * replay_insert: writes one collect_dqn launch into the device replay ring and its PER leaves,
 * the device twin of src/learn/replay.ts insertRollout + src/learn/per.ts perInsert. Two phases:
 * - phase 0 (insert): thread i < count takes rollout row idx = skip + i (episode e = idx / L, step
 *   l = idx % L), folds its n-step return exactly as insertRollout (f32 ops in the same order, no
 *   fused multiply-add), writes ring row (head + idx) % capacity (state | bootstrap state | return
 *   | discount, and the action) and sets that row's PER leaf tree[leaves + row] to
 *   f32(maxPriority ^ alpha), maxPriority read as f32 bits from state[0].
 * - phase 1 (refresh, one dispatch per tree level 1..log2(leaves)): thread i < count recomputes
 *   node k = (leaves + (first + i) % capacity) >> level as f32(tree[2k] + tree[2k + 1]); a thread
 *   whose previous row has the same ancestor skips it (two threads that still share a node, at a
 *   ring wrap, write the same value). Levels run in order, so children are final when read: the
 *   tree equals perInsert's bit for bit.
 * The rollout is read where collect_dqn wrote it (element offsets of its DQN_OUTPUT sections).
 */

import { STATE_DIM } from '../nets/layout.js';
import { grid1d, groupCount, threadsPerGroup } from './grid.js';
import type { Kernel, TypedArray } from './reference.js';
import type { DeviceBuffer, Dispatch, KernelSpec } from './spec.js';

/** Floats per replay row (src/learn/replay.ts REPLAY_F). */
const ROW_F = 2 * STATE_DIM + 2;

export const replayInsertSpec: KernelSpec = {
  name: 'replay_insert',
  bindings: [
    { name: 'rolloutF', type: 'f32', access: 'read' },
    { name: 'rolloutI', type: 'i32', access: 'read' },
    { name: 'ringF', type: 'f32', access: 'read_write' },
    { name: 'ringI', type: 'i32', access: 'read_write' },
    { name: 'tree', type: 'f32', access: 'read_write' },
    { name: 'state', type: 'u32', access: 'read' },
  ],
  uniforms: [
    { name: 'phase', type: 'u32' },
    { name: 'steps', type: 'u32' },
    { name: 'capacity', type: 'u32' },
    { name: 'head', type: 'u32' },
    { name: 'skip', type: 'u32' },
    { name: 'count', type: 'u32' },
    { name: 'first', type: 'u32' },
    { name: 'leaves', type: 'u32' },
    { name: 'level', type: 'u32' },
    { name: 'nStep', type: 'u32' },
    { name: 'gamma', type: 'f32' },
    { name: 'alpha', type: 'f32' },
    { name: 'statesOff', type: 'u32' },
    { name: 'nextOff', type: 'u32' },
    { name: 'rewardsOff', type: 'u32' },
    { name: 'actionsOff', type: 'u32' },
    { name: 'donesOff', type: 'u32' },
    { name: 'truncOff', type: 'u32' },
  ],
  workgroupSize: [64, 1, 1],
  constants: { STATE_DIM, ROW_F },
};

/** Element offsets of the DQN fields in collect_dqn's out_f (f32) and out_i (i32) buffers. */
export interface DqnRolloutSections {
  states: number;
  nextStates: number;
  rewards: number;
  actions: number;
  dones: number;
  truncateds: number;
}

export interface ReplayInsertArgs {
  rolloutF: DeviceBuffer;
  rolloutI: DeviceBuffer;
  ringF: DeviceBuffer;
  ringI: DeviceBuffer;
  tree: DeviceBuffer;
  state: DeviceBuffer;
  sections: DqnRolloutSections;
  /** Episodes (N) and steps (L) of the launch. */
  episodes: number;
  steps: number;
  capacity: number;
  /** Ring position the launch starts at (the host tracks it: launch sizes are fixed). */
  head: number;
  leaves: number;
  gamma: number;
  nStep: number;
  alpha: number;
}

/** The insert and the tree refresh of one launch: 1 + log2(leaves) dispatches. */
export function replayInsertDispatches(a: ReplayInsertArgs): Dispatch[] {
  const total = a.episodes * a.steps;
  const skip = Math.max(0, total - a.capacity);
  const count = total - skip;
  const first = (a.head + skip) % a.capacity;
  const groups = grid1d(Math.ceil(count / threadsPerGroup(replayInsertSpec.workgroupSize)));
  const s = a.sections;
  const uniforms = {
    phase: 0,
    steps: a.steps,
    capacity: a.capacity,
    head: a.head,
    skip,
    count,
    first,
    leaves: a.leaves,
    level: 0,
    nStep: a.nStep,
    gamma: a.gamma,
    alpha: a.alpha,
    statesOff: s.states,
    nextOff: s.nextStates,
    rewardsOff: s.rewards,
    actionsOff: s.actions,
    donesOff: s.dones,
    truncOff: s.truncateds,
  };
  const buffers = [a.rolloutF, a.rolloutI, a.ringF, a.ringI, a.tree, a.state];
  const out: Dispatch[] = [{ kernel: replayInsertSpec, buffers, uniforms, groups }];
  for (let level = 1; a.leaves >> level >= 1; level++) {
    out.push({ kernel: replayInsertSpec, buffers, uniforms: { ...uniforms, phase: 1, level }, groups });
  }
  return out;
}

const f = Math.fround;

function replayInsertReference(
  buffers: TypedArray[],
  u: Record<string, number>,
  groups: readonly [number, number, number],
): void {
  const [rolloutF, rolloutI, ringF, ringI, tree, state] = buffers;
  const n = Math.min(u.count, groupCount(groups) * threadsPerGroup(replayInsertSpec.workgroupSize));
  const C = u.capacity;
  if (u.phase === 1) {
    const ancestor = (i: number) => (u.leaves + ((u.first + i) % C)) >>> u.level;
    for (let i = 0; i < n; i++) {
      const k = ancestor(i);
      if (i > 0 && ancestor(i - 1) === k) continue;
      tree[k] = f(tree[2 * k] + tree[2 * k + 1]);
    }
    return;
  }
  const maxPriority = new Float32Array(Uint32Array.of(state[0]).buffer)[0];
  const leaf = f(maxPriority ** u.alpha);
  const L = u.steps;
  const g32 = f(u.gamma);
  for (let i = 0; i < n; i++) {
    const idx = u.skip + i;
    const e = Math.floor(idx / L);
    const l = idx - e * L;
    const row = (u.head + idx) % C;
    let ret = 0;
    let disc = 1;
    let last = idx;
    for (let k = 0; k < u.nStep && l + k < L; k++) {
      const t = e * L + l + k;
      ret = f(ret + f(disc * rolloutF[u.rewardsOff + t]));
      disc = f(disc * g32);
      last = t;
      if (rolloutI[u.donesOff + t] || rolloutI[u.truncOff + t]) break;
    }
    const o = row * ROW_F;
    for (let c = 0; c < STATE_DIM; c++) {
      ringF[o + c] = rolloutF[u.statesOff + idx * STATE_DIM + c];
      ringF[o + STATE_DIM + c] = rolloutF[u.nextOff + last * STATE_DIM + c];
    }
    ringF[o + 2 * STATE_DIM] = ret;
    ringF[o + 2 * STATE_DIM + 1] = rolloutI[u.donesOff + last] ? 0 : disc;
    ringI[row] = rolloutI[u.actionsOff + idx];
    tree[u.leaves + row] = leaf;
  }
}

export const replayInsert: Kernel = { spec: replayInsertSpec, reference: replayInsertReference };

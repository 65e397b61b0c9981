/**
 * dqn_target_update: the target network's update after a DQN-family train step
 * (src/learn/dqn_update.ts `updateTarget`), over `count` params:
 *   hard = 1  targetNet[targetOff + k] = online[onlineOff + k]          (every K-th step: the host
 *             records the launch only after those steps, so no counter is read back)
 *   hard = 0  targetNet[targetOff + k] = f32(t + f32(tau * f32(o - t)))  (Polyak, after every step)
 * Workgroup: WG_X threads, one param each. Numerics: each rounding spelled out (CUDA __fmul_rn /
 * __fadd_rn; WGSL may fuse the multiply-add: tolerance of one ulp).
 */

import { grid1d } from './grid.js';
import type { Kernel, TypedArray } from './reference.js';
import type { DeviceBuffer, Dispatch, KernelSpec } from './spec.js';

export const dqnTargetUpdateSpec: KernelSpec = {
  name: 'dqn_target_update',
  bindings: [
    { name: 'online', type: 'f32', access: 'read' },
    { name: 'targetNet', type: 'f32', access: 'read_write' },
  ],
  uniforms: [
    { name: 'count', type: 'u32' },
    { name: 'onlineOff', type: 'u32' },
    { name: 'targetOff', type: 'u32' },
    { name: 'hard', type: 'u32' },
    { name: 'tau', type: 'f32' },
  ],
  workgroupSize: [256, 1, 1],
};

export interface DqnTargetUpdateArgs {
  online: DeviceBuffer;
  targetNet: DeviceBuffer;
  count: number;
  onlineOff: number;
  targetOff: number;
  /** 'copy' (hard update) or the Polyak rate tau in (0, 1]. */
  update: 'copy' | number;
}

export function dqnTargetUpdateDispatch(a: DqnTargetUpdateArgs): Dispatch {
  if (!Number.isInteger(a.count) || a.count < 0) throw new Error(`dqn_target_update: bad count ${a.count}`);
  if (a.update !== 'copy' && !(a.update > 0 && a.update <= 1))
    throw new Error(`dqn_target_update: Polyak tau ${a.update} must be in (0, 1]`);
  return {
    kernel: dqnTargetUpdateSpec,
    buffers: [a.online, a.targetNet],
    uniforms: {
      count: a.count,
      onlineOff: a.onlineOff,
      targetOff: a.targetOff,
      hard: a.update === 'copy' ? 1 : 0,
      tau: a.update === 'copy' ? 1 : Math.fround(a.update),
    },
    groups: grid1d(Math.ceil(a.count / dqnTargetUpdateSpec.workgroupSize[0])),
  };
}

function dqnTargetUpdateReference(buffers: TypedArray[], u: Record<string, number>): void {
  const [online, targetNet] = buffers;
  const r = Math.fround;
  for (let k = 0; k < u.count; k++) {
    const o = online[u.onlineOff + k];
    const t = targetNet[u.targetOff + k];
    targetNet[u.targetOff + k] = u.hard ? o : r(t + r(u.tau * r(o - t)));
  }
}

export const dqnTargetUpdate: Kernel = { spec: dqnTargetUpdateSpec, reference: dqnTargetUpdateReference };

/**
 * dqn_inputs: the DQN learner's network inputs from a sampled batch in the replay row layout
 * (src/learn/replay.ts, REPLAY_F floats a row): for b < batch, k < 54,
 *   acts[outOff + b 54 + k]           = rows[b REPLAY_F + ReplayF.State + k]   (states s)
 *   acts[outOff + (batch + b) 54 + k] = rows[b REPLAY_F + ReplayF.Next + k]    (bootstrap states s')
 * so the online net runs s and s' as one 2 batch row forward and the target net reads the s' half.
 * Workgroup: WG_X threads, one float each. Numerics: copies.
 */

import { REPLAY_F, ReplayF } from '../learn/replay.js';
import { STATE_DIM } from '../nets/layout.js';
import { grid1d } from './grid.js';
import type { Kernel, TypedArray } from './reference.js';
import type { DeviceBuffer, Dispatch, KernelSpec } from './spec.js';

export const dqnInputsSpec: KernelSpec = {
  name: 'dqn_inputs',
  bindings: [
    { name: 'rows', type: 'f32', access: 'read' },
    { name: 'acts', type: 'f32', access: 'read_write' },
  ],
  uniforms: [
    { name: 'batch', type: 'u32' },
    { name: 'outOff', type: 'u32' },
  ],
  workgroupSize: [256, 1, 1],
  constants: { STATE_DIM, REPLAY_F, STATE_AT: ReplayF.State, NEXT_AT: ReplayF.Next },
};

export function dqnInputsDispatch(a: {
  rows: DeviceBuffer;
  acts: DeviceBuffer;
  batch: number;
  outOff: number;
}): Dispatch {
  if (!Number.isInteger(a.batch) || a.batch < 1) throw new Error(`dqn_inputs: batch ${a.batch} must be >= 1`);
  return {
    kernel: dqnInputsSpec,
    buffers: [a.rows, a.acts],
    uniforms: { batch: a.batch, outOff: a.outOff },
    groups: grid1d(Math.ceil((2 * a.batch * STATE_DIM) / dqnInputsSpec.workgroupSize[0])),
  };
}

function dqnInputsReference(buffers: TypedArray[], u: Record<string, number>): void {
  const [rows, acts] = buffers;
  for (let b = 0; b < u.batch; b++) {
    for (let k = 0; k < STATE_DIM; k++) {
      acts[u.outOff + b * STATE_DIM + k] = rows[b * REPLAY_F + ReplayF.State + k];
      acts[u.outOff + (u.batch + b) * STATE_DIM + k] = rows[b * REPLAY_F + ReplayF.Next + k];
    }
  }
}

export const dqnInputs: Kernel = { spec: dqnInputsSpec, reference: dqnInputsReference };

/**
 * delta_sum: deltas[outOff + i] = f32(deltas[aOff + i] + deltas[bOff + i]) for i < count. The
 * dueling net's trunk feeds two streams, so the trunk output's deltas are the sum of the value and
 * advantage streams' input gradients (each already times the trunk's activation derivative, as
 * mlp_backward writes them). The three ranges must not overlap except out == a or out == b.
 * Workgroup: WG_X threads, one float each. Numerics: one f32 add, bit for bit this reference.
 */

import { grid1d } from './grid.js';
import type { Kernel, TypedArray } from './reference.js';
import type { DeviceBuffer, Dispatch, KernelSpec } from './spec.js';

export const deltaSumSpec: KernelSpec = {
  name: 'delta_sum',
  bindings: [{ name: 'deltas', type: 'f32', access: 'read_write' }],
  uniforms: [
    { name: 'count', type: 'u32' },
    { name: 'aOff', type: 'u32' },
    { name: 'bOff', type: 'u32' },
    { name: 'outOff', type: 'u32' },
  ],
  workgroupSize: [256, 1, 1],
};

export function deltaSumDispatch(a: {
  deltas: DeviceBuffer;
  count: number;
  aOff: number;
  bOff: number;
  outOff: number;
}): Dispatch {
  if (!Number.isInteger(a.count) || a.count < 0) throw new Error(`delta_sum: bad count ${a.count}`);
  return {
    kernel: deltaSumSpec,
    buffers: [a.deltas],
    uniforms: { count: a.count, aOff: a.aOff, bOff: a.bOff, outOff: a.outOff },
    groups: grid1d(Math.ceil(a.count / deltaSumSpec.workgroupSize[0])),
  };
}

function deltaSumReference(buffers: TypedArray[], u: Record<string, number>): void {
  const [d] = buffers;
  for (let i = 0; i < u.count; i++) d[u.outOff + i] = Math.fround(d[u.aOff + i] + d[u.bOff + i]);
}

export const deltaSum: Kernel = { spec: deltaSumSpec, reference: deltaSumReference };

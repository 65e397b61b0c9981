/**
 * dueling_combine: the dueling head's combination of the value and advantage streams, and its
 * backward (src/learn/dueling.ts `duelingCombine`, `duelingCombineBackward`), for `rows` rows of
 * `atoms` outputs per action (1: plain DQN and IQN, the C51 atoms otherwise), action-major:
 *   backward = 0  acts[outOff + (k 45 + a) n + z] = f32(f32(V[k, z] + A[k, a, z]) - f32(sum_a A / 45))
 *                 with V at acts[vOff + k n + z], A at acts[aOff + (k 45 + a) n + z]
 *   backward = 1  deltas[dVOff + k n + z] = sum_a dOut[k, a, z]
 *                 deltas[dAOff + (k 45 + a) n + z] = f32(dOut - f32(dV / 45)), dOut at deltas[dOutOff ..]
 * The value and advantage streams' output layers are linear (mlp_forward writes V and A to acts),
 * so dV and dA are those layers' deltas for mlp_backward. Sums over a run ascending in f32.
 * Workgroup: WG_X threads, one (row, atom) each. Numerics: f32 adds and one division, bit for bit
 * this reference where the division is correctly rounded (CUDA; WGSL allows 2.5 ulp: tolerance).
 */

import { duelingCombine, duelingCombineBackward } from '../learn/dueling.js';
import { NUM_ACTIONS } from '../nets/layout.js';
import { grid1d } from './grid.js';
import type { Kernel, TypedArray } from './reference.js';
import type { DeviceBuffer, Dispatch, KernelSpec } from './spec.js';

export const duelingCombineSpec: KernelSpec = {
  name: 'dueling_combine',
  bindings: [
    { name: 'acts', type: 'f32', access: 'read_write' },
    { name: 'deltas', type: 'f32', access: 'read_write' },
  ],
  uniforms: [
    { name: 'rows', type: 'u32' },
    { name: 'atoms', type: 'u32' },
    { name: 'backward', type: 'u32' },
    { name: 'vOff', type: 'u32' },
    { name: 'aOff', type: 'u32' },
    { name: 'outOff', type: 'u32' },
    { name: 'dOutOff', type: 'u32' },
    { name: 'dVOff', type: 'u32' },
    { name: 'dAOff', type: 'u32' },
  ],
  workgroupSize: [64, 1, 1],
  constants: { NUM_ACTIONS },
};

interface CombineShape {
  acts: DeviceBuffer;
  deltas: DeviceBuffer;
  rows: number;
  atoms: number;
}

function dispatch(a: CombineShape, u: Record<string, number>): Dispatch {
  if (!Number.isInteger(a.rows) || a.rows < 0) throw new Error(`dueling_combine: bad row count ${a.rows}`);
  if (!Number.isInteger(a.atoms) || a.atoms < 1)
    throw new Error(`dueling_combine: bad atom count ${a.atoms}`);
  const zero = { vOff: 0, aOff: 0, outOff: 0, dOutOff: 0, dVOff: 0, dAOff: 0 };
  return {
    kernel: duelingCombineSpec,
    buffers: [a.acts, a.deltas],
    uniforms: { rows: a.rows, atoms: a.atoms, ...zero, ...u },
    groups: grid1d(Math.ceil((a.rows * a.atoms) / duelingCombineSpec.workgroupSize[0])),
  };
}

/** Forward: Q (or C51 logits) rows at outOff from V rows at vOff and A rows at aOff, all in `acts`. */
export function duelingCombineDispatch(
  a: CombineShape & { vOff: number; aOff: number; outOff: number },
): Dispatch {
  return dispatch(a, { backward: 0, vOff: a.vOff, aOff: a.aOff, outOff: a.outOff });
}

/** Backward: dV and dA rows from dOut rows, all in `deltas`. */
export function duelingCombineBackwardDispatch(
  a: CombineShape & { dOutOff: number; dVOff: number; dAOff: number },
): Dispatch {
  return dispatch(a, { backward: 1, dOutOff: a.dOutOff, dVOff: a.dVOff, dAOff: a.dAOff });
}

function duelingCombineReference(buffers: TypedArray[], u: Record<string, number>): void {
  const [acts, deltas] = buffers as Float32Array[];
  const n = u.atoms;
  const wide = u.rows * NUM_ACTIONS * n;
  if (u.backward) {
    duelingCombineBackward(
      deltas.subarray(u.dOutOff, u.dOutOff + wide),
      deltas.subarray(u.dVOff, u.dVOff + u.rows * n),
      deltas.subarray(u.dAOff, u.dAOff + wide),
      u.rows,
      n,
    );
  } else {
    duelingCombine(
      acts.subarray(u.vOff, u.vOff + u.rows * n),
      acts.subarray(u.aOff, u.aOff + wide),
      acts.subarray(u.outOff, u.outOff + wide),
      u.rows,
      n,
    );
  }
}

export const duelingCombineKernel: Kernel = { spec: duelingCombineSpec, reference: duelingCombineReference };

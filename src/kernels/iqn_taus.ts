/**
 * iqn_taus: the IQN taus of one train step and their cosine features (src/learn/dqn_update.ts
 * `learnerTaus`, src/nets/forward.ts `iqnCosines`). Row r < 2 batch nTau is
 *   r < batch nTau:   online tau t = r % nTau of sample b = r / nTau     (Philox word k = t)
 *   else:             target tau t of sample b, r - batch nTau = b nTau + t  (word k = nTau + t)
 * tau_r = unit float of word k & 3 of Philox(LearnTau, b, step, k >> 2) with the step read from
 * the device, step = state[stateAt] + stepSlot (so a recorded submission or captured CUDA graph
 * replays with the step the host uploads). Writes
 *   taus[tauOff + r]                    tau_r   (the online taus first: iqn_loss's layout)
 *   acts[cosOff + r embed + i]          f32(cos(f32(f32(i) * PI_F32) * tau_r)), i < embed
 * Workgroup: WG_X threads, one (r, i) each. Numerics: Philox exact; cos within a few ulp of the
 * reference's correctly rounded f64 cos (CUDA cosf; WGSL its own Cephes cosf, as the builtin is
 * only specified to 2^-11).
 */

import { iqnCosines } from '../nets/forward.js';
import { philox4x32, u32ToUnitFloat } from '../rng/philox.js';
import { Stream } from '../rng/streams.js';
import { grid1d } from './grid.js';
import type { Kernel, TypedArray } from './reference.js';
import type { DeviceBuffer, Dispatch, KernelSpec } from './spec.js';

export const iqnTausSpec: KernelSpec = {
  name: 'iqn_taus',
  bindings: [
    { name: 'state', type: 'u32', access: 'read' },
    { name: 'taus', type: 'f32', access: 'read_write' },
    { name: 'acts', type: 'f32', access: 'read_write' },
  ],
  uniforms: [
    { name: 'batch', type: 'u32' },
    { name: 'nTau', type: 'u32' },
    { name: 'embed', type: 'u32' },
    { name: 'stateAt', type: 'u32' },
    { name: 'stepSlot', type: 'u32' },
    { name: 'key0', type: 'u32' },
    { name: 'key1', type: 'u32' },
    { name: 'tauOff', type: 'u32' },
    { name: 'cosOff', type: 'u32' },
  ],
  workgroupSize: [256, 1, 1],
  constants: { TAU_STREAM: Stream.LearnTau },
};

export interface IqnTausArgs {
  /** u32 words; the step of stepSlot 0 at `stateAt`. */
  state: DeviceBuffer;
  taus: DeviceBuffer;
  acts: DeviceBuffer;
  batch: number;
  nTau: number;
  /** Cosine features per tau (the tau_embed layer's inputs). */
  embed: number;
  stateAt: number;
  stepSlot: number;
  key: readonly [number, number];
  tauOff: number;
  cosOff: number;
}

export function iqnTausDispatch(a: IqnTausArgs): Dispatch {
  for (const [what, v] of [
    ['batch', a.batch],
    ['nTau', a.nTau],
    ['embed', a.embed],
  ] as const) {
    if (!Number.isInteger(v) || v < 1) throw new Error(`iqn_taus: ${what} ${v} must be an integer >= 1`);
  }
  const threads = 2 * a.batch * a.nTau * a.embed;
  if (threads > 2 ** 32 - 1) throw new Error(`iqn_taus: ${threads} cosines exceed u32 indexing`);
  return {
    kernel: iqnTausSpec,
    buffers: [a.state, a.taus, a.acts],
    uniforms: {
      batch: a.batch,
      nTau: a.nTau,
      embed: a.embed,
      stateAt: a.stateAt,
      stepSlot: a.stepSlot,
      key0: a.key[0] >>> 0,
      key1: a.key[1] >>> 0,
      tauOff: a.tauOff,
      cosOff: a.cosOff,
    },
    groups: grid1d(Math.ceil(threads / iqnTausSpec.workgroupSize[0])),
  };
}

function iqnTausReference(buffers: TypedArray[], u: Record<string, number>): void {
  const [state, taus, acts] = buffers;
  const step = (state[u.stateAt] + u.stepSlot) >>> 0;
  const half = u.batch * u.nTau;
  const w = new Uint32Array(4);
  const cos = new Float32Array(u.embed);
  for (let r = 0; r < 2 * half; r++) {
    const q = r < half ? r : r - half;
    const b = Math.floor(q / u.nTau);
    const k = (r < half ? 0 : u.nTau) + (q % u.nTau);
    philox4x32(Stream.LearnTau, b, step, k >> 2, u.key0, u.key1, w);
    const tau = u32ToUnitFloat(w[k & 3]);
    taus[u.tauOff + r] = tau;
    iqnCosines(tau, cos, u.embed);
    acts.set(cos, u.cosOff + r * u.embed);
  }
}

export const iqnTaus: Kernel = { spec: iqnTausSpec, reference: iqnTausReference };

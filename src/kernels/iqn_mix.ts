/**
 * iqn_mix: IQN's product of the trunk output with the tau embedding (src/learn/dueling.ts), with
 * `rows` = batch * nTau embedding rows, row r = b * nTau + t belonging to trunk row b, `width`
 * floats a row:
 *   forward  (mode 0)  acts[outOff + r w + j] = f32(trunk[b, j] * e[r, j])
 *   backward (mode 1)  from dh = deltas[dOff ..] (the streams' summed input gradients, [rows, w]):
 *            deltas[dTrunkOff + b w + j] = f32(sum_t f32(dh[r, j] e[r, j])) * act'(trunk[b, j])
 *            deltas[dEmbedOff + r w + j] = f32(dh[r, j] trunk[b, j]) * act'(e[r, j])
 *            (t ascending; act' as mlp_backward applies it, from the activation's output, with the
 *            trunk's and tau_embed's activation codes), i.e. the deltas mlp_backward of the trunk's
 *            last layer and of tau_embed take.
 * trunk = acts[trunkOff ..] ([batch, w]), e = acts[embedOff ..] ([rows, w], relu(tau_embed)).
 * Workgroup: WG_X threads, one float each (backward: one trunk float and its nTau embedding floats).
 * Numerics: f32 products and sums in this order, bit for bit the reference where nothing fuses.
 */

import type { Activation } from '../nets/layout.js';
import { ActCode } from './dense_forward.js';
import { grid1d } from './grid.js';
import { actDerivative } from './mlp_backward.js';
import type { Kernel, TypedArray } from './reference.js';
import type { DeviceBuffer, Dispatch, KernelSpec } from './spec.js';

export const iqnMixSpec: KernelSpec = {
  name: 'iqn_mix',
  bindings: [
    { name: 'acts', type: 'f32', access: 'read_write' },
    { name: 'deltas', type: 'f32', access: 'read_write' },
  ],
  uniforms: [
    { name: 'mode', type: 'u32' },
    { name: 'batch', type: 'u32' },
    { name: 'nTau', type: 'u32' },
    { name: 'width', type: 'u32' },
    { name: 'trunkOff', type: 'u32' },
    { name: 'embedOff', type: 'u32' },
    { name: 'outOff', type: 'u32' },
    { name: 'dOff', type: 'u32' },
    { name: 'dTrunkOff', type: 'u32' },
    { name: 'dEmbedOff', type: 'u32' },
    { name: 'trunkAct', type: 'u32' },
    { name: 'embedAct', type: 'u32' },
  ],
  workgroupSize: [256, 1, 1],
};

interface MixShape {
  acts: DeviceBuffer;
  deltas: DeviceBuffer;
  /** Trunk rows (samples). */
  batch: number;
  nTau: number;
  width: number;
  trunkOff: number;
  embedOff: number;
}

function check(a: MixShape): void {
  for (const [what, v] of [
    ['batch', a.batch],
    ['nTau', a.nTau],
    ['width', a.width],
  ] as const) {
    if (!Number.isInteger(v) || v < 1) throw new Error(`iqn_mix: ${what} ${v} must be an integer >= 1`);
  }
  if (a.batch * a.nTau * a.width > 2 ** 32 - 1)
    throw new Error(`iqn_mix: ${a.batch} x ${a.nTau} x ${a.width} floats exceed u32 indexing`);
}

const ZERO = { outOff: 0, dOff: 0, dTrunkOff: 0, dEmbedOff: 0, trunkAct: 0, embedAct: 0 };

/** h = trunk * e into acts[outOff ..] ([batch nTau, width]). */
export function iqnMixDispatch(a: MixShape & { outOff: number }): Dispatch {
  check(a);
  const { acts, deltas, ...u } = a;
  return {
    kernel: iqnMixSpec,
    buffers: [acts, deltas],
    uniforms: { ...ZERO, ...u, mode: 0 },
    groups: grid1d(Math.ceil((a.batch * a.nTau * a.width) / iqnMixSpec.workgroupSize[0])),
  };
}

/** The trunk's and the embedding's deltas from dh at deltas[dOff ..] (see the header). */
export function iqnMixBackwardDispatch(
  a: MixShape & {
    dOff: number;
    dTrunkOff: number;
    dEmbedOff: number;
    trunkAct: Activation;
    embedAct: Activation;
  },
): Dispatch {
  check(a);
  const { acts, deltas, trunkAct, embedAct, ...u } = a;
  return {
    kernel: iqnMixSpec,
    buffers: [acts, deltas],
    uniforms: { ...ZERO, ...u, mode: 1, trunkAct: ActCode[trunkAct], embedAct: ActCode[embedAct] },
    groups: grid1d(Math.ceil((a.batch * a.width) / iqnMixSpec.workgroupSize[0])),
  };
}

function iqnMixReference(buffers: TypedArray[], u: Record<string, number>): void {
  const [acts, deltas] = buffers;
  const f = Math.fround;
  const W = u.width;
  const T = u.nTau;
  if (u.mode === 0) {
    for (let r = 0; r < u.batch * T; r++) {
      const tb = u.trunkOff + Math.floor(r / T) * W;
      for (let j = 0; j < W; j++) acts[u.outOff + r * W + j] = f(acts[tb + j] * acts[u.embedOff + r * W + j]);
    }
    return;
  }
  for (let b = 0; b < u.batch; b++) {
    for (let j = 0; j < W; j++) {
      const hv = acts[u.trunkOff + b * W + j];
      let s = 0;
      for (let t = 0; t < T; t++) {
        const k = (b * T + t) * W + j;
        const dh = deltas[u.dOff + k];
        const e = acts[u.embedOff + k];
        s = f(s + f(dh * e));
        deltas[u.dEmbedOff + k] = f(f(dh * hv) * actDerivative(e, u.embedAct));
      }
      deltas[u.dTrunkOff + b * W + j] = f(s * actDerivative(hv, u.trunkAct));
    }
  }
}

export const iqnMix: Kernel = { spec: iqnMixSpec, reference: iqnMixReference };

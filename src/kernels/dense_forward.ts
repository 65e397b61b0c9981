/**
 * dense_forward: one fully connected layer over a batch,
 * `y[b, o] = act(bias[o] + sum_i W[o, i] * x[b, i])`, reading W and bias straight out of a
 * network's flat parameter buffer (src/nets/layout.ts: weight `[out, in]` row-major at
 * `wOffset`, bias `[out]` at `bOffset`). `x` is `[batch, inDim]`, `y` is `[batch, outDim]`.
 * Activation: 0 none, 1 ReLU, 2 LeakyReLU(0.01).
 *
 * Numerics: f32, accumulation starts at the bias and adds the products in increasing `i`, the
 * reference rounding to f32 after each multiply and each add; a GPU may fuse the multiply-add,
 * so twins agree to a small tolerance, not bit for bit. NaN inputs propagate (ReLU keeps NaN).
 */

import { type Activation, type Layer, LEAKY_SLOPE } from '../nets/layout.js';
import { MAX_GROUPS_PER_DIM } from './grid.js';
import type { Kernel, TypedArray } from './reference.js';
import type { DeviceBuffer, Dispatch, KernelSpec } from './spec.js';

/** Uniform `act` codes. */
export const ActCode: Record<Activation, number> = { none: 0, relu: 1, leaky: 2 };

export const denseForwardSpec: KernelSpec = {
  name: 'dense_forward',
  bindings: [
    { name: 'params', type: 'f32', access: 'read' },
    { name: 'x', type: 'f32', access: 'read' },
    { name: 'y', type: 'f32', access: 'read_write' },
  ],
  uniforms: [
    { name: 'batch', type: 'u32' },
    { name: 'inDim', type: 'u32' },
    { name: 'outDim', type: 'u32' },
    { name: 'wOffset', type: 'u32' },
    { name: 'bOffset', type: 'u32' },
    { name: 'act', type: 'u32' },
  ],
  // 16 x 16 threads, each computing a 4 x 4 block of outputs x batch rows of a 64 x 64 tile;
  // TILE_K inputs of W and x are staged in workgroup memory per step (8 KiB).
  workgroupSize: [16, 16, 1],
  constants: { TILE_OUT: 64, TILE_BATCH: 64, TILE_K: 16 },
};

const SLOPE = Math.fround(LEAKY_SLOPE);

/** The activation exactly as the twins apply it (`acc < 0` so that NaN and -0 pass through). */
export function activate(acc: number, act: number): number {
  // biome-ignore lint: mirrors the twins' select(a, 0, a < 0), which keeps NaN and -0.
  if (act === 1) return acc < 0 ? 0 : acc;
  if (act === 2) return acc < 0 ? Math.fround(acc * SLOPE) : acc;
  return acc;
}

function denseForwardReference(
  buffers: TypedArray[],
  u: Record<string, number>,
  groups: readonly [number, number, number],
): void {
  const [params, x, y] = buffers;
  const c = denseForwardSpec.constants!;
  const outs = Math.min(u.outDim, groups[0] * c.TILE_OUT);
  const rows = Math.min(u.batch, groups[1] * c.TILE_BATCH);
  for (let b = 0; b < rows; b++) {
    for (let o = 0; o < outs; o++) {
      let acc = params[u.bOffset + o];
      const w = u.wOffset + o * u.inDim;
      const xb = b * u.inDim;
      for (let i = 0; i < u.inDim; i++) acc = Math.fround(acc + Math.fround(params[w + i] * x[xb + i]));
      y[b * u.outDim + o] = activate(acc, u.act);
    }
  }
}

export const denseForward: Kernel = { spec: denseForwardSpec, reference: denseForwardReference };

/** The dispatch that applies `layer` (of the network whose flat buffer is `params`) to `batch` rows of `x`. */
export function denseForwardDispatch(
  params: DeviceBuffer,
  layer: Pick<Layer, 'in' | 'out' | 'wOffset' | 'bOffset' | 'act'>,
  x: DeviceBuffer,
  y: DeviceBuffer,
  batch: number,
): Dispatch {
  const c = denseForwardSpec.constants!;
  const groups: [number, number, number] = [
    Math.ceil(layer.out / c.TILE_OUT),
    Math.ceil(batch / c.TILE_BATCH),
    1,
  ];
  if (groups[0] > MAX_GROUPS_PER_DIM || groups[1] > MAX_GROUPS_PER_DIM) {
    throw new Error(`dense_forward: ${batch} rows x ${layer.out} outputs exceed one dispatch`);
  }
  return {
    kernel: denseForwardSpec,
    buffers: [params, x, y],
    uniforms: {
      batch,
      inDim: layer.in,
      outDim: layer.out,
      wOffset: layer.wOffset,
      bOffset: layer.bOffset,
      act: ActCode[layer.act],
    },
    groups,
  };
}

/**
 * mlp_chain_forward: the forward of consecutive layers l0..l1 of ONE chain network in one launch,
 * for a tile of ROWS minibatch rows per workgroup. The tile's activations stay in workgroup memory
 * from layer to layer (widths <= MAX_WIDTH in and out); weights are read from global memory (small
 * layers: they stay in L2). Each layer's outputs are also stored in `acts`, where the backward pass
 * (and, for an output layer, the loss head) reads them. Layer c of the chain (c < layers) computes
 *   acts[yOff_c + b * out_c + o] = act_c(bias[o] + sum_i W[o, i] * x_c[b, i])
 * for b < batch, o < out_c, with x_0 the rows at acts[xOff] (`in0` wide) and x_c the previous
 * layer's outputs (in_c = out_{c-1}); W `[out_c, in_c]` at params[wOff_c], bias at params[bOff_c].
 *
 * The learner runs it for the critic's tail (value_layer_3 -> value_layer_4 -> value_output),
 * which no actor layer shares a launch with: one launch instead of three (src/device/learn_mlp.ts).
 *
 * Grid: ceil(batch / ROWS) workgroups (grid1d), workgroup w owns rows w * ROWS ... Each layer's
 * R x out dot products go to 256 threads as G k-groups of `out` threads (G the largest power of two
 * with G * out <= 256 and at most one group per CHUNK inputs): thread (g, o) adds the products of
 * output o over inputs slice g (whole CHUNKs, increasing i) for every row of the tile, weights read
 * once per row tile. Group 0 starts from the bias; the groups' sums are then added in group order.
 *
 * CUDA's chain launch is the staged build (mlpChainForwardDispatch with `staged`; the learner's
 * plan asks for it on CUDA): 512 threads per block first copy the whole tail's parameters (the PPO
 * critic's: 41,217 floats, 161 KiB) into dynamic shared memory, every thread issuing all its float4
 * loads before storing any, then compute every layer from shared memory (k-groups of up to 32 lanes
 * per output, summed in a fixed xor-butterfly; chainStagedGroups). A tail whose parameters and two
 * row tiles do not fit 227 KiB (sm_90's shared memory per block) falls back to the 256-thread build
 * above, which reads the weights from global memory.
 *
 * Numerics: f32. This reference adds from the bias in increasing i in one running sum, as
 * src/learn/mlp.ts and mlp_forward's reference do (so the CPU backend gives the same bits as three
 * mlp_forward launches); the GPU twins split K into the groups above and fuse multiply-adds, so
 * they agree to a tolerance (fixed order: the same bits on every run).
 */

import type { Layer } from '../nets/layout.js';
import { ActCode, activate } from './dense_forward.js';
import { grid1d } from './grid.js';
import type { Kernel, TypedArray } from './reference.js';
import type { DeviceBuffer, Dispatch, KernelSpec } from './spec.js';

/** Most layers of one chain launch (the uniforms hold this many). */
export const MAX_CHAIN_LAYERS = 4;

const LAYER_FIELDS = ['out', 'wOff', 'bOff', 'yOff', 'act'] as const;

const variants = new Map<number, KernelSpec>();

/** Rows per workgroup a chain launch may take (the tile is rows x MAX_WIDTH floats: <= 16 KiB). */
export const CHAIN_ROWS_CHOICES = [2, 4, 8, 16] as const;

/**
 * The kernel with `rows` rows per workgroup (the ROWS constant: the threads' accumulators are
 * arrays of it), one spec object per value so backends cache one pipeline each.
 */
export function mlpChainForwardSpecFor(rows: number): KernelSpec {
  if (!(CHAIN_ROWS_CHOICES as readonly number[]).includes(rows)) {
    throw new Error(
      `mlp_chain_forward: rows per workgroup must be one of ${CHAIN_ROWS_CHOICES.join(', ')}, got ${rows}`,
    );
  }
  let spec = variants.get(rows);
  if (!spec) {
    spec = { ...mlpChainForwardSpec, constants: { ...mlpChainForwardSpec.constants, ROWS: rows } };
    variants.set(rows, spec);
  }
  return spec;
}

/** The default variant (8 rows: 64 workgroups for a 512-row minibatch), as the registry lists it. */
export const mlpChainForwardSpec: KernelSpec = {
  name: 'mlp_chain_forward',
  bindings: [
    { name: 'params', type: 'f32', access: 'read' },
    { name: 'acts', type: 'f32', access: 'read_write' },
  ],
  uniforms: [
    { name: 'batch', type: 'u32' },
    { name: 'layers', type: 'u32' },
    { name: 'xOff', type: 'u32' },
    { name: 'in0', type: 'u32' },
    ...Array.from({ length: MAX_CHAIN_LAYERS }, (_, c) =>
      LAYER_FIELDS.map((f) => ({ name: `${f}${c}`, type: 'u32' as const })),
    ).flat(),
  ],
  workgroupSize: [256, 1, 1],
  // ROWS rows per workgroup: 64 workgroups for a 512-row minibatch; MAX_WIDTH: widest layer
  // (the workgroup's tile is ROWS x MAX_WIDTH floats: 8 KiB); CHUNK: inputs per unrolled step, its
  // weights loaded while the previous chunk multiplies (16 loads in flight per thread: one
  // workgroup per SM leaves the L2 latency to hide to each thread's own loads).
  constants: { ROWS: 8, MAX_WIDTH: 256, CHUNK: 16 },
};
variants.set(8, mlpChainForwardSpec);

const C = mlpChainForwardSpec.constants!;

/** Rows per workgroup by default (WebGPU and the 256-thread CUDA build). */
export const CHAIN_ROWS = C.ROWS;
/**
 * Rows per block of the CUDA staged build by default: on one H200 (bench train, TF32, 512-row
 * minibatches) the launch took 12.2 us at 4 rows (128 blocks), 15.1 us at 8, 21.0 us at 16: the
 * whole-tail copy costs about the same per block at any rows, so more blocks finish sooner.
 */
export const CHAIN_ROWS_STAGED = 4;
/** Widest layer input or output a chain launch takes. */
export const CHAIN_MAX_WIDTH = C.MAX_WIDTH;

/**
 * k-groups the GPU twins split a layer's inputs into (the TS reference does not split): the largest
 * power of two G with G * nOut <= MAX_WIDTH threads and G <= the input's CHUNKs.
 */
export function chainGroups(nIn: number, nOut: number): number {
  const chunks = Math.ceil(nIn / C.CHUNK);
  let g = 1;
  while (2 * g * nOut <= C.MAX_WIDTH && 2 * g <= chunks) g *= 2;
  return g;
}

/** Threads per block of CUDA's staged build. */
export const CHAIN_STAGED_THREADS = 512;
/** Shared memory one block of the staged build may take (sm_90: 227 KiB). */
export const CHAIN_STAGED_SHARED_LIMIT = 227 * 1024;

/**
 * k-groups of a layer in the staged build (cuda/mlp_chain_forward.cu: chain_staged_groups): the
 * largest power of two G <= 32 with G * nOut <= 512 threads and G <= the input's float4 chunks.
 */
export function chainStagedGroups(nIn: number, nOut: number): number {
  const chunks = Math.ceil(nIn / 4);
  let g = 1;
  while (2 * g * nOut <= CHAIN_STAGED_THREADS && 2 * g <= chunks && 2 * g <= 32) g *= 2;
  return g;
}

/** What the staged build copies: params[wOff0 ..+ stageFloats), and its shared memory. */
export interface ChainStaging {
  /**
   * wOff0 % 4: the copy loads aligned float4s from the 16-byte boundary before the first layer's
   * weights and shifts them by wShift floats (a warp shuffle) so that they start the copy.
   */
  wShift: number;
  /** Floats of the copy (a multiple of 4) covering every layer's weights and bias. */
  stageFloats: number;
  /** The copy and two row tiles (rows x MAX_WIDTH floats each). */
  sharedBytes: number;
}

/**
 * The staged build's copy of `layers`' parameters with `rows` rows per block, or undefined when it
 * does not fit CHAIN_STAGED_SHARED_LIMIT (or a layer's parameters lie before the first layer's
 * weights, where the copy starts): then the launch takes the 256-thread build.
 */
export function chainStaging(layers: ChainLayer[], rows: number): ChainStaging | undefined {
  const w0 = layers[0].netBase + layers[0].layer.wOffset;
  const wShift = w0 % 4;
  let end = 0;
  for (const { layer, netBase } of layers) {
    const w = netBase + layer.wOffset;
    const b = netBase + layer.bOffset;
    if (w < w0 || b < w0) return undefined;
    end = Math.max(end, w + layer.in * layer.out, b + layer.out);
  }
  const stageFloats = Math.ceil((end - w0) / 4) * 4;
  const sharedBytes = 4 * (stageFloats + 2 * rows * C.MAX_WIDTH);
  return sharedBytes <= CHAIN_STAGED_SHARED_LIMIT ? { wShift, stageFloats, sharedBytes } : undefined;
}

const stagedVariants = new Map<string, KernelSpec>();

/** The staged build for `rows` rows per block and the copy `s` (one spec object per shape). */
export function mlpChainForwardStagedSpecFor(rows: number, s: ChainStaging): KernelSpec {
  mlpChainForwardSpecFor(rows); // checks the value
  const key = `${rows}|${s.wShift}|${s.stageFloats}`;
  let spec = stagedVariants.get(key);
  if (!spec) {
    spec = {
      ...mlpChainForwardSpec,
      workgroupSize: [CHAIN_STAGED_THREADS, 1, 1],
      constants: {
        ROWS: rows,
        MAX_WIDTH: C.MAX_WIDTH,
        STAGED: 1,
        WSHIFT: s.wShift,
        STAGE_FLOATS: s.stageFloats,
      },
      sharedBytes: s.sharedBytes,
    };
    stagedVariants.set(key, spec);
  }
  return spec;
}

/** One layer of the chain: its shape, params offsets (network base added), output rows in acts. */
export interface ChainLayer {
  layer: Pick<Layer, 'in' | 'out' | 'wOffset' | 'bOffset' | 'act'>;
  netBase: number;
  /** Offset in `acts` (floats) of the layer's output rows `[batch, out]`. */
  yOff: number;
}

/** Whether `layers` (a chain: each layer's input is the previous one's output) fit one launch. */
export function chainFits(layers: Pick<Layer, 'in' | 'out'>[]): boolean {
  return (
    layers.length >= 1 &&
    layers.length <= MAX_CHAIN_LAYERS &&
    layers.every(
      (l, c) =>
        l.in >= 1 &&
        l.out >= 1 &&
        l.in <= C.MAX_WIDTH &&
        l.out <= C.MAX_WIDTH &&
        (c === 0 || l.in === layers[c - 1].out),
    )
  );
}

/**
 * The launch of `layers` over `batch` rows whose first input rows are at acts[xOff], `rows` rows
 * per workgroup (CHAIN_ROWS_CHOICES). `staged` (CUDA only): the staged build when the tail fits
 * its shared memory (chainStaging), else the 256-thread build.
 */
export function mlpChainForwardDispatch(
  params: DeviceBuffer,
  acts: DeviceBuffer,
  batch: number,
  xOff: number,
  layers: ChainLayer[],
  rows: number = CHAIN_ROWS,
  staged = false,
): Dispatch {
  if (!chainFits(layers.map((l) => l.layer))) {
    throw new Error(
      `mlp_chain_forward: 1-${MAX_CHAIN_LAYERS} chained layers of widths <= ${C.MAX_WIDTH}, got ${layers
        .map((l) => `${l.layer.in}->${l.layer.out}`)
        .join(', ')}`,
    );
  }
  const uniforms: Record<string, number> = {
    batch,
    layers: layers.length,
    xOff,
    in0: layers[0].layer.in,
  };
  for (let c = 0; c < MAX_CHAIN_LAYERS; c++) {
    const l = layers[c];
    uniforms[`out${c}`] = l?.layer.out ?? 0;
    uniforms[`wOff${c}`] = l ? l.netBase + l.layer.wOffset : 0;
    uniforms[`bOff${c}`] = l ? l.netBase + l.layer.bOffset : 0;
    uniforms[`yOff${c}`] = l?.yOff ?? 0;
    uniforms[`act${c}`] = l ? ActCode[l.layer.act] : 0;
  }
  const staging = staged ? chainStaging(layers, rows) : undefined;
  return {
    kernel: staging ? mlpChainForwardStagedSpecFor(rows, staging) : mlpChainForwardSpecFor(rows),
    buffers: [params, acts],
    uniforms,
    groups: grid1d(Math.ceil(batch / rows)),
  };
}

/** Every row of the batch (mlpChainForwardDispatch's grid always covers it). */
function mlpChainForwardReference(buffers: TypedArray[], u: Record<string, number>): void {
  const [params, acts] = buffers;
  const f = Math.fround;
  const rows = u.batch;
  let nIn = u.in0;
  let xOff = u.xOff;
  for (let c = 0; c < u.layers; c++) {
    const [nOut, wOff, bOff, yOff, act] = LAYER_FIELDS.map((k) => u[`${k}${c}`]);
    for (let b = 0; b < rows; b++) {
      const x = xOff + b * nIn;
      for (let o = 0; o < nOut; o++) {
        const w = wOff + o * nIn;
        let acc = params[bOff + o];
        for (let i = 0; i < nIn; i++) acc = f(acc + f(params[w + i] * acts[x + i]));
        acts[yOff + b * nOut + o] = activate(acc, act);
      }
    }
    nIn = nOut;
    xOff = yOff;
  }
}

export const mlpChainForward: Kernel = { spec: mlpChainForwardSpec, reference: mlpChainForwardReference };

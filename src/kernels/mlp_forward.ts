/**
 * mlp_forward: one dense layer of up to two networks in one launch (a grouped GEMM), keeping
 * every layer's output as the activations the backward pass reads. Job j (0 or 1) computes
 *   acts[yOff_j + b * out_j + o] = act_j(bias[o] + sum_i W[o, i] * acts[xOff_j + b * in_j + i])
 * for b < batch, o < out_j, with W `[out_j, in_j]` at params[wOff_j] and bias at params[bOff_j]
 * (the flat layouts of src/nets/layout.ts, shifted by the network's base in `params`). A job with
 * out_j = 0 is absent. The learner pairs the actor's layer s with the critic's layer s, so a PPO
 * forward is 6 launches instead of 9.
 *
 * Grid: the tiles of job 0, then those of job 1, flat over x (grid1d); a tile is TILE_X outputs x
 * TILE_Y rows, 8 x 16 threads each owning a contiguous 4 x 4 block (vector reads of the staged
 * tiles; 32-wide tiles give the small PPO layers enough workgroups to fill a large GPU), times
 * kSplit k-groups that split the inputs between them and add their tiles in group order.
 *
 * K split (both twins; constant SPLIT_IN = 1 only for launches reading a split input): a job with
 * splits_j = S > 1 runs each tile as S workgroups over slices of whole k-tiles of the inputs, each
 * storing its partial sums (no bias, no activation) at acts[yScr_j + s * batch * out_j + b * out_j
 * + o]. The next layer's job then reads its input as x = act(bias + slice 0 + slice 1 + ...)
 * (xSplits_j, xScr_j, xBOff_j, xAct_j: the previous layer's slices, bias and activation), and its
 * workgroups of output column 0 also store x at xOff_j, so the backward pass finds every
 * activation in place. One launch per layer either way; a split layer's own launch has short K
 * loops on more workgroups.
 *
 * Numerics: f32; each sum starts at the bias and adds products in increasing i, as
 * src/learn/mlp.ts (a split layer: each slice from 0 in increasing i, then bias + slice 0 + ...);
 * GPUs fuse multiply-adds, so twins agree to a tolerance. The CUDA TF32 build (constant TF32 = 1,
 * train.precision 'tf32') rounds every product's operands to TF32 (10-bit mantissas): per output
 * |err| <= ~2^-10 * (|bias| + sum_i |W[o, i]| |x[b, i]|) plus f32 accumulation.
 */

import type { Layer } from '../nets/layout.js';
import { ActCode, activate } from './dense_forward.js';
import { grid1d, groupCount } from './grid.js';
import type { Kernel, TypedArray } from './reference.js';
import type { DeviceBuffer, Dispatch, KernelSpec } from './spec.js';

const FIELDS = ['in', 'out', 'wOff', 'bOff', 'xOff', 'yOff', 'act'] as const;
/** K split of job j: its slices, and its input's slices (see the file comment). */
const SPLIT_FIELDS = ['splits', 'yScr', 'xSplits', 'xScr', 'xBOff', 'xAct'] as const;

const variants = new Map<string, KernelSpec>();

/**
 * The kernel with `kSplit` k-groups of 8 x 16 threads per workgroup (WG_Z): 4 on CUDA, as many as
 * a WebGPU device's workgroup limits allow (kSplitFor in src/device/learn_mlp.ts). `splitIn` (the
 * SPLIT_IN constant) is 1 only for launches with a job whose input was split: with 0 the staging
 * loads are plain reads of `acts`, the slice-summing branch folded away when the pipeline is built
 * (on WebGPU that branch in every staged load kept the loads from issuing together and made every
 * forward launch ~1.8x slower on the H200). `tf32` 1 (CUDA only: the TF32 constant) computes the
 * tiles with TF32 tensor cores (cuda/learn_mma.cuh); 0 leaves the constant out (the exact path).
 * One spec object per (kSplit, splitIn, tf32), so backends cache one pipeline each.
 */
export function mlpForwardSpecFor(kSplit: number, splitIn: 0 | 1 = 0, tf32: 0 | 1 = 0): KernelSpec {
  const key = `${kSplit}|${splitIn}|${tf32}`;
  let spec = variants.get(key);
  if (!spec) {
    spec = {
      name: 'mlp_forward',
      bindings: [
        { name: 'params', type: 'f32', access: 'read' },
        { name: 'acts', type: 'f32', access: 'read_write' },
      ],
      uniforms: [
        { name: 'batch', type: 'u32' },
        ...[0, 1].flatMap((j) => FIELDS.map((f) => ({ name: `${f}${j}`, type: 'u32' as const }))),
        ...[0, 1].flatMap((j) => SPLIT_FIELDS.map((f) => ({ name: `${f}${j}`, type: 'u32' as const }))),
      ],
      workgroupSize: [8, 16, kSplit],
      constants: { TILE_X: 32, TILE_Y: 64, TILE_K: 16, SPLIT_IN: splitIn, ...(tf32 ? { TF32: 1 } : {}) },
    };
    variants.set(key, spec);
  }
  return spec;
}

/** The CUDA variant (the one the registry lists and the nvcc test compiles). */
export const mlpForwardSpec = mlpForwardSpecFor(4);

const C = mlpForwardSpec.constants!;

/** A layer of a network whose params start at `netBase` in the shared params buffer. */
export interface ForwardJob {
  layer: Pick<Layer, 'in' | 'out' | 'wOffset' | 'bOffset' | 'act'>;
  netBase: number;
  /** Offsets in `acts` (floats) of the layer's input rows and output rows. */
  xOff: number;
  yOff: number;
  /** K split (WGSL): this layer's slices (at acts[yScr]), default none. */
  split?: { splits: number; yScr: number };
  /** The input's slices when the previous layer was split: where, its bias offset, its activation. */
  xSplit?: { splits: number; xScr: number; bOff: number; act: Layer['act'] };
}

/** Most K slices of a split forward layer. */
export const MAX_K_SPLITS = 8;

/** Inputs of one slice of a layer with `nIn` inputs cut into `splits` slices (whole k-tiles). */
export const forwardSliceLen = (nIn: number, splits: number) =>
  Math.ceil(Math.ceil(nIn / C.TILE_K) / splits) * C.TILE_K;

/** Tiles of a layer with `out` outputs over `batch` rows (each K slice of a split layer is one more). */
export const tilesOf = (out: number, batch: number) =>
  Math.ceil(out / C.TILE_X) * Math.ceil(batch / C.TILE_Y);

function jobUniforms(job: ForwardJob | undefined, j: number): Record<string, number> {
  const l = job?.layer;
  return {
    [`in${j}`]: l?.in ?? 0,
    [`out${j}`]: l?.out ?? 0,
    [`wOff${j}`]: l ? job.netBase + l.wOffset : 0,
    [`bOff${j}`]: l ? job.netBase + l.bOffset : 0,
    [`xOff${j}`]: job?.xOff ?? 0,
    [`yOff${j}`]: job?.yOff ?? 0,
    [`act${j}`]: l ? ActCode[l.act] : 0,
    [`splits${j}`]: job?.split?.splits ?? 1,
    [`yScr${j}`]: job?.split?.yScr ?? 0,
    [`xSplits${j}`]: job?.xSplit?.splits ?? 1,
    [`xScr${j}`]: job?.xSplit?.xScr ?? 0,
    [`xBOff${j}`]: job?.xSplit?.bOff ?? 0,
    [`xAct${j}`]: job?.xSplit ? ActCode[job.xSplit.act] : 0,
  };
}

/** The launch of one or two layers over `batch` rows (`tf32`: the CUDA tensor-core build). */
export function mlpForwardDispatch(
  params: DeviceBuffer,
  acts: DeviceBuffer,
  batch: number,
  jobs: [ForwardJob] | [ForwardJob, ForwardJob],
  kSplit = 1,
  tf32 = false,
): Dispatch {
  for (const job of jobs) {
    for (const n of [job.split?.splits ?? 1, job.xSplit?.splits ?? 1]) {
      if (!Number.isInteger(n) || n < 1 || n > MAX_K_SPLITS) {
        throw new Error(`mlp_forward: K slices must be an integer in [1, ${MAX_K_SPLITS}], got ${n}`);
      }
    }
  }
  const tiles = jobs.reduce((t, job) => t + tilesOf(job.layer.out, batch) * (job.split?.splits ?? 1), 0);
  const splitIn = jobs.some((job) => (job.xSplit?.splits ?? 1) > 1) ? 1 : 0;
  return {
    kernel: mlpForwardSpecFor(kSplit, splitIn, tf32 ? 1 : 0),
    buffers: [params, acts],
    uniforms: { batch, ...jobUniforms(jobs[0], 0), ...jobUniforms(jobs[1], 1) },
    groups: grid1d(tiles),
  };
}

function mlpForwardReference(
  buffers: TypedArray[],
  u: Record<string, number>,
  groups: readonly [number, number, number],
): void {
  const [params, acts] = buffers;
  const f = Math.fround;
  let budget = groupCount(groups);
  for (const j of [0, 1]) {
    const [nIn, nOut, wOff, bOff, xOff, yOff, act] = FIELDS.map((f) => u[`${f}${j}`]);
    const [splits, yScr, xSplits, xScr, xBOff, xAct] = SPLIT_FIELDS.map((f) => u[`${f}${j}`] || 0);
    const tx = Math.ceil(nOut / C.TILE_X);
    const S = Math.max(1, splits);
    const tiles = tx * Math.ceil(u.batch / C.TILE_Y);
    const done = Math.min(tiles, Math.floor(budget / S));
    const rowsDone = Math.min(u.batch, Math.ceil(done / tx) * C.TILE_Y);
    if (xSplits > 1) {
      // The previous layer's slices -> its activations (what column-0 workgroups store).
      for (let b = 0; b < rowsDone; b++) {
        for (let i = 0; i < nIn; i++) {
          let a = params[xBOff + i];
          for (let s = 0; s < xSplits; s++) a = f(a + acts[xScr + s * u.batch * nIn + b * nIn + i]);
          acts[xOff + b * nIn + i] = activate(a, xAct);
        }
      }
    }
    const sliceLen = forwardSliceLen(nIn, S);
    for (let t = 0; t < done; t++) {
      const o0 = (t % tx) * C.TILE_X;
      const b0 = Math.floor(t / tx) * C.TILE_Y;
      for (let b = b0; b < Math.min(u.batch, b0 + C.TILE_Y); b++) {
        const x = xOff + b * nIn;
        for (let o = o0; o < Math.min(nOut, o0 + C.TILE_X); o++) {
          const w = wOff + o * nIn;
          if (S > 1) {
            for (let s = 0; s < S; s++) {
              let acc = 0;
              for (let i = s * sliceLen; i < Math.min(nIn, (s + 1) * sliceLen); i++) {
                acc = f(acc + f(params[w + i] * acts[x + i]));
              }
              acts[yScr + s * u.batch * nOut + b * nOut + o] = acc;
            }
            continue;
          }
          let acc = params[bOff + o];
          for (let i = 0; i < nIn; i++) acc = f(acc + f(params[w + i] * acts[x + i]));
          acts[yOff + b * nOut + o] = activate(acc, act);
        }
      }
    }
    budget -= Math.min(tiles * S, budget);
  }
}

export const mlpForward: Kernel = { spec: mlpForwardSpec, reference: mlpForwardReference };

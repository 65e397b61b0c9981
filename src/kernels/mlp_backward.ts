/**
 * mlp_backward: the backward pass through up to MAX_BACKWARD_JOBS (8) dense layers in one launch
 * (one job each: a layer of any network, e.g. one of the actor and one of the critic, or every
 * layer whose deltas a delta chain computed), given for each job its layer's
 * delta = dLoss/d(pre-activation) of the layer's outputs `[batch, out]`:
 *   dW[o, i] = sum_b delta[b, o] * x[b, i]       (batched outer products, reduced over the batch)
 *   db[o]    = sum_b delta[b, o]                 (the same sum against an input column of ones)
 *   dX[b, i] = (sum_o delta[b, o] * W[o, i]) * act'(x[b, i])   -> the previous layer's delta
 * where x = acts[xOff + b * in + i] is the layer's input (the previous layer's output, whose
 * activation code is pAct; pAct = NO_DX skips dX, for a first layer). dW and db are written into
 * `grads` at the params' offsets (same flat layout). Each dW tile also writes the sum of squares of
 * its gradients to partials[partBase + tile]: adam_step reduces those to the global norm, so no
 * launch of its own is needed for it.
 *
 * Grid: per job, its dW tiles (over (in + 1) inputs x out outputs) then its dX tiles (over in
 * inputs x batch rows); job 0's before job 1's, ..., before job 7's, flat over x (jobs past the
 * launch's have out_j = 0 and no tiles). Every tile is TILE_X x TILE_Y with a K loop (batch for
 * dW, out for dX), 8 x 16 threads each owning a contiguous 4 x 4 block, times kSplit k-groups
 * that split the K loop between them and add their tiles in group order. A dW tile's batch can
 * also be split over `splits` workgroups (DwSplit, one value per launch; device_mlp.ts decides
 * it). On CUDA the last of them to arrive adds the slices in slice order (hand-off 'last');
 * WGSL has no device-scope fence, so there the slice workgroups only store their slices
 * (hand-off 'later', `sliceOnly` = 1) and a later launch adds them: its first workgroups, one per
 * split tile of the (at most MAX_SUM_JOBS = 2) jobs in `sumIn0..`, sum the slices in slice order
 * and finish the tiles (grads, sums of squares). Launches are ordered, so the slices are visible
 * to it.
 *
 * Numerics: f32; every sum adds in increasing k (b for dW, o for dX) from 0, as src/learn/mlp.ts;
 * multiply-adds may fuse on GPUs, so twins agree to a tolerance. Partials are per-tile sums in the
 * twins' fixed tree order (deterministic per backend). The CUDA TF32 build (constant TF32 = 1)
 * rounds every product's operands to TF32: |err| <= ~2^-10 * sum_k |a_k| |b_k| per output.
 */

import { type Activation, type Layer, LEAKY_SLOPE } from '../nets/layout.js';
import { ActCode } from './dense_forward.js';
import { grid1d, groupCount } from './grid.js';
import type { Kernel, TypedArray } from './reference.js';
import type { DeviceBuffer, Dispatch, KernelSpec } from './spec.js';

/** pAct value of a first layer: no input gradient is computed. */
export const NO_DX = 3;

/** Most jobs (layers) of one launch; the uniforms hold FIELDS for each (in0 .. partBase7). */
export const MAX_BACKWARD_JOBS = 8;
/** Most jobs whose split dW tiles one launch finishes (WGSL hand-off 'later'). */
export const MAX_SUM_JOBS = 2;

const jobIndices = (n: number) => Array.from({ length: n }, (_, j) => j);

const FIELDS = ['in', 'out', 'wOff', 'bOff', 'xOff', 'dOff', 'pOff', 'pAct', 'partBase'] as const;
/** A job whose split dW tiles a launch finishes (sumOut_j = 0: none). */
const SUM_FIELDS = ['sumIn', 'sumOut', 'sumWOff', 'sumBOff', 'sumPartBase'] as const;

const variants = new Map<string, KernelSpec>();

/**
 * The kernel with `kSplit` k-groups of 8 x 16 threads per workgroup; `tf32` 1 (CUDA only) its TF32
 * tensor-core build (see mlpForwardSpecFor).
 */
export function mlpBackwardSpecFor(kSplit: number, tf32: 0 | 1 = 0): KernelSpec {
  const key = `${kSplit}|${tf32}`;
  let spec = variants.get(key);
  if (!spec) {
    spec = {
      name: 'mlp_backward',
      bindings: [
        { name: 'params', type: 'f32', access: 'read' },
        { name: 'acts', type: 'f32', access: 'read' },
        { name: 'deltas', type: 'f32', access: 'read_write' },
        { name: 'grads', type: 'f32', access: 'read_write' },
        { name: 'partials', type: 'f32', access: 'read_write' },
      ],
      uniforms: [
        { name: 'batch', type: 'u32' },
        // Job j's fields at word 1 + 9 j + field (absent jobs: out_j = 0).
        ...jobIndices(MAX_BACKWARD_JOBS).flatMap((j) =>
          FIELDS.map((f) => ({ name: `${f}${j}`, type: 'u32' as const })),
        ),
        // Split dW: slices per dW tile and where the scratch slots start.
        { name: 'splits', type: 'u32' },
        { name: 'scratchAt', type: 'u32' },
        // WGSL hand-off (the CUDA twin reads none of these; it is dispatched with sliceOnly = 0 and
        // sumSplits = 0): split dW workgroups only store their slices; this launch's first
        // workgroups add the slices (sumSplits of them) of an earlier launch's split tiles.
        { name: 'sliceOnly', type: 'u32' },
        { name: 'sumSplits', type: 'u32' },
        ...jobIndices(MAX_SUM_JOBS).flatMap((j) =>
          SUM_FIELDS.map((f) => ({ name: `${f}${j}`, type: 'u32' as const })),
        ),
      ],
      workgroupSize: [8, 16, kSplit],
      constants: { TILE_X: 32, TILE_Y: 64, TILE_K: 16, ...(tf32 ? { TF32: 1 } : {}) },
    };
    variants.set(key, spec);
  }
  return spec;
}

/** The CUDA variant (the one the registry lists and the nvcc test compiles). */
export const mlpBackwardSpec = mlpBackwardSpecFor(4);

const C = mlpBackwardSpec.constants!;
const ceilDiv = (a: number, b: number) => Math.ceil(a / b);

/** Most batch slices of a split dW tile (CUDA). */
export const MAX_DW_SPLITS = 8;

/**
 * Floats of one dW tile's scratch slot in `deltas` when dW is split: an arrival counter (u32 bits,
 * padded to 16 bytes), then MAX_DW_SPLITS partial tiles.
 */
export const DW_SLOT_FLOATS = 4 + MAX_DW_SPLITS * C.TILE_X * C.TILE_Y;

/**
 * Split dW: each dW tile runs as `splits` workgroups over slices of the batch that store partial
 * tiles in the tile's slot at deltas[scratchAt + partial slot * DW_SLOT_FLOATS]. splits = 1 is the
 * unsplit kernel. Hand-off 'last' (CUDA): the last workgroup to arrive at the slot's counter adds
 * the slices in slice order. Hand-off 'later' (WGSL): nothing in this launch adds them; a later
 * launch's `sum` does.
 */
export interface DwSplit {
  splits: number;
  scratchAt: number;
  handoff?: 'last' | 'later';
  /** Split dW tiles of an earlier launch (its jobs and their splits) that this launch finishes. */
  sum?: { jobs: readonly BackwardJob[]; splits: number };
}

/**
 * Where element (X = x0 + i, Y = y0 + o) of slice s of a dW tile lies in its scratch slot (after
 * the counter): thread (i / 4, o / 4) of the WGSL twin stores its 4 x 4 block as 16 runs over the
 * 128 threads, so each store and load of a workgroup is contiguous.
 */
export function sliceIndex(s: number, i: number, o: number): number {
  const tid = (i >> 2) + (C.TILE_X / 4) * (o >> 2);
  return s * C.TILE_X * C.TILE_Y + (4 * (o & 3) + (i & 3)) * ((C.TILE_X * C.TILE_Y) / 16) + tid;
}

/** Tiles of dW (and the partials they write) for a layer with `nIn` inputs and `nOut` outputs. */
export function gradTiles(nIn: number, nOut: number): number {
  return ceilDiv(nIn + 1, C.TILE_X) * ceilDiv(nOut, C.TILE_Y);
}

/** Tiles of dX for a layer with `nIn` inputs over `batch` rows (none for a first layer, pAct = NO_DX). */
export function dxTiles(nIn: number, batch: number, pAct: number): number {
  return pAct === NO_DX ? 0 : ceilDiv(nIn, C.TILE_X) * ceilDiv(batch, C.TILE_Y);
}

export interface BackwardJob {
  layer: Pick<Layer, 'in' | 'out' | 'wOffset' | 'bOffset'>;
  netBase: number;
  /** Offset in `acts` of the layer's input rows. */
  xOff: number;
  /** Offset in `deltas` of this layer's delta rows. */
  dOff: number;
  /** The previous layer's delta rows (offset in `deltas`) and its activation; null for a first layer. */
  prev: { dOff: number; act: Activation } | null;
  /** First slot of this layer's gradTiles partials. */
  partBase: number;
}

function sumUniforms(job: BackwardJob | undefined, j: number): Record<string, number> {
  const l = job?.layer;
  return {
    [`sumIn${j}`]: l?.in ?? 0,
    [`sumOut${j}`]: l?.out ?? 0,
    [`sumWOff${j}`]: l ? job.netBase + l.wOffset : 0,
    [`sumBOff${j}`]: l ? job.netBase + l.bOffset : 0,
    [`sumPartBase${j}`]: job?.partBase ?? 0,
  };
}

function jobUniforms(job: BackwardJob | undefined, j: number): Record<string, number> {
  const l = job?.layer;
  return {
    [`in${j}`]: l?.in ?? 0,
    [`out${j}`]: l?.out ?? 0,
    [`wOff${j}`]: l ? job.netBase + l.wOffset : 0,
    [`bOff${j}`]: l ? job.netBase + l.bOffset : 0,
    [`xOff${j}`]: job?.xOff ?? 0,
    [`dOff${j}`]: job?.dOff ?? 0,
    [`pOff${j}`]: job?.prev?.dOff ?? 0,
    [`pAct${j}`]: job?.prev ? ActCode[job.prev.act] : NO_DX,
    [`partBase${j}`]: job?.partBase ?? 0,
  };
}

/** The uniforms of jobs 0 .. n - 1 in one record. */
const perJob = (n: number, of: (j: number) => Record<string, number>): Record<string, number> =>
  Object.fromEntries(jobIndices(n).flatMap((j) => Object.entries(of(j))));

export function mlpBackwardDispatch(
  buffers: {
    params: DeviceBuffer;
    acts: DeviceBuffer;
    deltas: DeviceBuffer;
    grads: DeviceBuffer;
    partials: DeviceBuffer;
  },
  batch: number,
  jobs: readonly BackwardJob[],
  kSplit = 1,
  split: DwSplit = { splits: 1, scratchAt: 0 },
  tf32 = false,
): Dispatch {
  const validSplits = (n: number) => Number.isInteger(n) && n >= 1 && n <= MAX_DW_SPLITS;
  if (!validSplits(split.splits)) {
    throw new Error(`mlp_backward: splits must be an integer in [1, ${MAX_DW_SPLITS}], got ${split.splits}`);
  }
  const sum = split.sum && split.sum.splits > 1 && split.sum.jobs.length > 0 ? split.sum : undefined;
  if (sum && !validSplits(sum.splits)) {
    throw new Error(
      `mlp_backward: sum splits must be an integer in [2, ${MAX_DW_SPLITS}], got ${sum.splits}`,
    );
  }
  if (
    jobs.length > MAX_BACKWARD_JOBS ||
    (sum?.jobs.length ?? 0) > MAX_SUM_JOBS ||
    (jobs.length === 0 && !sum)
  ) {
    throw new Error(
      `mlp_backward: a launch takes 1 to ${MAX_BACKWARD_JOBS} jobs (none only to finish split tiles), ` +
        `got ${jobs.length}, and finishes at most ${MAX_SUM_JOBS} jobs' split tiles, got ${sum?.jobs.length ?? 0}`,
    );
  }
  let tiles = 0;
  for (const job of sum?.jobs ?? []) tiles += gradTiles(job.layer.in, job.layer.out);
  for (const job of jobs) {
    const { in: nIn, out: nOut } = job.layer;
    tiles += gradTiles(nIn, nOut) * split.splits + dxTiles(nIn, batch, job.prev ? 0 : NO_DX);
  }
  const { params, acts, deltas, grads, partials } = buffers;
  return {
    kernel: mlpBackwardSpecFor(kSplit, tf32 ? 1 : 0),
    buffers: [params, acts, deltas, grads, partials],
    uniforms: {
      batch,
      ...perJob(MAX_BACKWARD_JOBS, (j) => jobUniforms(jobs[j], j)),
      splits: split.splits,
      scratchAt: split.scratchAt,
      sliceOnly: split.splits > 1 && split.handoff === 'later' ? 1 : 0,
      sumSplits: sum?.splits ?? 0,
      ...perJob(MAX_SUM_JOBS, (j) => sumUniforms(sum?.jobs[j], j)),
    },
    groups: grid1d(tiles),
  };
}

const SLOPE = Math.fround(LEAKY_SLOPE);

/** act'(y) as the twins apply it (from the activation's output). */
export function actDerivative(y: number, act: number): number {
  if (act === ActCode.relu) return y > 0 ? 1 : 0;
  if (act === ActCode.leaky) return y > 0 ? 1 : SLOPE;
  return 1;
}

const f = Math.fround;

function mlpBackwardReference(
  buffers: TypedArray[],
  u: Record<string, number>,
  groups: readonly [number, number, number],
): void {
  const [params, acts, deltas, grads, partials] = buffers;
  const batch = u.batch;
  let budget = groupCount(groups);
  const slot = (partial: number) => u.scratchAt + partial * DW_SLOT_FLOATS + 4;
  // A dW tile's gradients and the f32 sum of their squares, row by row, from value(o, i).
  const finish = (
    nIn: number,
    nOut: number,
    wOff: number,
    bOff: number,
    i0: number,
    o0: number,
    value: (o: number, i: number) => number,
  ): number => {
    let ss = 0;
    for (let o = o0; o < Math.min(nOut, o0 + C.TILE_Y); o++) {
      for (let i = i0; i < Math.min(nIn + 1, i0 + C.TILE_X); i++) {
        const g = value(o, i);
        grads[i < nIn ? wOff + o * nIn + i : bOff + o] = g;
        ss = f(ss + f(g * g));
      }
    }
    return ss;
  };
  // An earlier launch's split dW tiles (WGSL hand-off): their slices added in slice order.
  if (u.sumSplits > 1) {
    for (const j of jobIndices(MAX_SUM_JOBS)) {
      const [nIn, nOut, wOff, bOff, partBase] = SUM_FIELDS.map((f) => u[`${f}${j}`]);
      if (nOut === 0) continue;
      const tx = ceilDiv(nIn + 1, C.TILE_X);
      const sTiles = Math.min(gradTiles(nIn, nOut), budget);
      for (let t = 0; t < sTiles; t++) {
        const i0 = (t % tx) * C.TILE_X;
        const o0 = Math.floor(t / tx) * C.TILE_Y;
        const at = slot(partBase + t);
        partials[partBase + t] = finish(nIn, nOut, wOff, bOff, i0, o0, (o, i) => {
          let g = 0;
          for (let s = 0; s < u.sumSplits; s++) g = f(g + deltas[at + sliceIndex(s, i - i0, o - o0)]);
          return g;
        });
      }
      budget -= sTiles;
    }
  }
  // The jobs in grid order, each its dW tiles (x splits) then its dX tiles.
  for (const j of jobIndices(MAX_BACKWARD_JOBS)) {
    const [nIn, nOut, wOff, bOff, xOff, dOff, pOff, pAct, partBase] = FIELDS.map((f) => u[`${f}${j}`]);
    if (nOut === 0) continue;
    // dW and db, tile by tile (a tile's partial is the f32 sum of its squares, row by row).
    const tx = ceilDiv(nIn + 1, C.TILE_X);
    // A split dW tile is `splits` workgroups over slices of whole k-tiles of the batch.
    const splits = Math.max(1, u.splits);
    const sliceLen = ceilDiv(ceilDiv(batch, C.TILE_K), splits) * C.TILE_K;
    const wTiles = Math.min(gradTiles(nIn, nOut), Math.floor(budget / splits));
    // Rows [b0, b1) of tile (i0, o0): a Float32Array rounds every sum to f32 as it is stored; b ascends.
    const tileSum = (i0: number, o0: number, b0: number, b1: number) => {
      const w = C.TILE_X;
      const sums = new Float32Array(C.TILE_X * C.TILE_Y);
      for (let o = o0; o < Math.min(nOut, o0 + C.TILE_Y); o++) {
        for (let b = b0; b < b1; b++) {
          const d = deltas[dOff + b * nOut + o];
          const x = xOff + b * nIn;
          for (let i = i0; i < Math.min(nIn + 1, i0 + C.TILE_X); i++) {
            sums[(o - o0) * w + i - i0] += f(d * (i < nIn ? acts[x + i] : 1));
          }
        }
      }
      return sums;
    };
    for (let t = 0; t < wTiles; t++) {
      const i0 = (t % tx) * C.TILE_X;
      const o0 = Math.floor(t / tx) * C.TILE_Y;
      if (splits > 1 && u.sliceOnly) {
        // WGSL hand-off: every slice (zeros outside the layer) goes to the tile's scratch slot.
        const at = slot(partBase + t);
        for (let s = 0; s < splits; s++) {
          const b0 = Math.min(s * sliceLen, batch);
          const sums = tileSum(i0, o0, b0, Math.min(b0 + sliceLen, batch));
          for (let o = 0; o < C.TILE_Y; o++) {
            for (let i = 0; i < C.TILE_X; i++) deltas[at + sliceIndex(s, i, o)] = sums[o * C.TILE_X + i];
          }
        }
        continue;
      }
      const sums = tileSum(i0, o0, 0, batch);
      partials[partBase + t] = finish(
        nIn,
        nOut,
        wOff,
        bOff,
        i0,
        o0,
        (o, i) => sums[(o - o0) * C.TILE_X + i - i0],
      );
    }
    budget -= Math.min(gradTiles(nIn, nOut) * splits, budget);
    // dX times the previous activation's derivative.
    const xTiles = Math.min(dxTiles(nIn, batch, pAct), budget);
    const ix = ceilDiv(nIn, C.TILE_X);
    for (let t = 0; t < xTiles; t++) {
      const i0 = (t % ix) * C.TILE_X;
      const b0 = Math.floor(t / ix) * C.TILE_Y;
      const i1 = Math.min(nIn, i0 + C.TILE_X);
      const row = new Float32Array(i1 - i0);
      for (let b = b0; b < Math.min(batch, b0 + C.TILE_Y); b++) {
        row.fill(0);
        for (let o = 0; o < nOut; o++) {
          const d = deltas[dOff + b * nOut + o];
          const w = wOff + o * nIn;
          for (let i = i0; i < i1; i++) row[i - i0] += f(d * params[w + i]);
        }
        for (let i = i0; i < i1; i++) {
          const y = acts[xOff + b * nIn + i];
          deltas[pOff + b * nIn + i] = f(row[i - i0] * actDerivative(y, pAct));
        }
      }
    }
    budget -= xTiles;
  }
}

export const mlpBackward: Kernel = { spec: mlpBackwardSpec, reference: mlpBackwardReference };

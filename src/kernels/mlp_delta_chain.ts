/**
 * mlp_delta_chain: the input gradients (deltas) of consecutive layers of up to two chain networks
 * in one launch, from each network's top delta rows down, for a tile of ROWS minibatch rows per
 * workgroup. A layer's dX is row-local (one row's lower delta needs only that row's upper delta),
 * so the tile's deltas stay in workgroup memory from layer to layer; each is also stored in
 * `deltas`, where the dW launch (mlp_backward) reads it. Net n's layers are given from the TOP
 * (output side) down; layer c computes, for b < batch, i < in_c,
 *   deltas[pOff_c + b * in_c + i] = (sum_o deltas[dOff_c + b * out_c + o] * W[o, i]) * act'(acts[xOff_c + b * in_c + i])
 * with W `[out_c, in_c]` at params[wOff_c], the sum over o increasing from 0, acts[xOff_c ..] the
 * layer's input rows (the previous layer's outputs) and act' the derivative of that previous
 * layer's activation (pAct_c), read from its output as mlp_backward does. Chained: out_{c+1} =
 * in_c and dOff_{c+1} = pOff_c (layer c + 1 starts from the delta layer c wrote).
 *
 * The learner runs it for the PPO networks' top layers (the actor's policy_output and
 * policy_layer_1, the critic's value_output .. value_layer_3): one launch for the deltas that
 * mlp_backward's per-layer launches would compute one layer at a time; one mlp_backward launch
 * then takes all those layers' dW.
 *
 * Grid: ceil(batch / ROWS) workgroups (grid1d), workgroup w owns rows w * ROWS ..; its threads
 * split in `nets` equal parts, one per network, both networks at once. The layers run in steps
 * with a barrier between them, a shorter chain starting later (its last layer in the last step),
 * so the steps pair each network's bottom (widest) layers. Within a network's part, thread t takes
 * inputs i = t, t + part, ..: it adds delta[o] * W[o, i] over o for all ROWS rows (the weight
 * read once per tile, consecutive threads at consecutive addresses; each row's delta a broadcast
 * from workgroup memory, where the tile's deltas are kept as `[unit][ROWS]`).
 *
 * CUDA's launch is the staged build (`staged`; the learner's plan asks for it on CUDA): 512
 * threads per block first copy both networks' weight ranges (params[pFrom_n .. pEnd_n), each the
 * chain's layers' weights and biases, from the 16-byte boundary before it, in float4s, every
 * thread's loads of a round in flight before its stores) into dynamic shared memory, then read
 * every weight from there. PPO: 52,404 floats of weights (205 KiB) and 576 floats of tiles per
 * row. A pair whose copy and tiles do not fit 227 KiB (sm_90's shared memory per block) takes the
 * 256-thread build, which reads the weights from global memory (as WGSL does).
 *
 * Loss mode (`loss`: the dispatch's `io.loss`; uniform loss = 1, spec constant LOSS = 1): before the
 * chain, each workgroup computes the PPO loss head (ppo_loss: src/kernels/ppo_loss.ts, the same
 * per-sample function) for ITS rows: the minibatch's advantage statistics (every workgroup computes
 * them itself, as ppo_loss's workgroups do), then per row the output deltas dLogits and dValue,
 * written to `deltas` at dLogitsOff and dValueOff, which must be the chain's top delta rows (net
 * 0's the actor's policy output, nActions wide; net 1's the critic's value, 1 wide: the dispatch
 * checks it), and the rows' LOSS_PARTS sums to partials[lossAt + w * LOSS_PARTS + part] for
 * workgroup w (adam_step then adds ceil(batch / rows) such groups). So one launch does what
 * ppo_loss and mlp_delta_chain did. The loss head needs no weights: CUDA's staged build issues the
 * weight copy's loads first, computes the loss while they are in flight, then stores the copy.
 * `mb` holds the gathered samples (ppo_gather: action, old log-prob, advantage, return; batch
 * floats each). Without the loss mode `mb` and `partials` are bound but not read or written.
 *
 * Numerics: f32. This reference adds each dX sum from +0 in increasing o, then multiplies by act'
 * once, exactly as src/learn/mlp.ts's backward and mlp_backward's reference (mlp.ts skips the
 * terms whose delta is 0, which leaves the sum's bits unchanged for finite weights: a sum from +0
 * never becomes -0), so the CPU backend gives the same bits as the reference learner. The CUDA
 * twin adds in the same order (the same bits on the emulator, which does not fuse); NVRTC fuses
 * multiply-adds, and WGSL compilers may, so the GPU twins agree to a tolerance (fixed order: the
 * same bits on every run).
 */

import type { Activation, Layer } from '../nets/layout.js';
import { ActCode } from './dense_forward.js';
import { grid1d } from './grid.js';
import { actDerivative } from './mlp_backward.js';
import { CHAIN_STAGED_SHARED_LIMIT } from './mlp_chain_forward.js';
import {
  advantageStats,
  LOSS_PARTS,
  type LossHeadUniforms,
  PPO_LOSS_UNIFORMS,
  type PpoLossArgs,
  ppoLossSample,
} from './ppo_loss.js';
import type { Kernel, TypedArray } from './reference.js';
import type { DeviceBuffer, Dispatch, KernelSpec } from './spec.js';

/** Most networks of one launch, and most layers of each (the uniforms hold this many). */
export const MAX_DELTA_NETS = 2;
export const MAX_DELTA_LAYERS = 4;
/** Widest layer input or output a launch takes. */
export const DELTA_MAX_WIDTH = 256;
/** Rows per workgroup a launch may take. */
export const DELTA_ROWS_CHOICES = [2, 4, 8, 16] as const;
/** Rows per workgroup by default, both builds (128 workgroups for a 512-row minibatch). */
export const DELTA_ROWS = 4;
/** Threads per workgroup of the 256-thread build (WGSL, and CUDA's fallback). */
export const DELTA_THREADS = 256;
/** Threads per block of CUDA's staged build. */
export const DELTA_STAGED_THREADS = 512;
/** Shared memory one block of the staged build may take (sm_90: 227 KiB). */
export const DELTA_STAGED_SHARED_LIMIT = CHAIN_STAGED_SHARED_LIMIT;

const LAYER_FIELDS = ['in', 'out', 'wOff', 'dOff', 'xOff', 'pOff', 'pAct'] as const;
const NET_FIELDS = ['layers', 'pFrom', 'pEnd'] as const;

/** One layer of a network's chain (top first): its shape and weights, and its rows' offsets. */
export interface DeltaChainLayer {
  layer: Pick<Layer, 'in' | 'out' | 'wOffset' | 'bOffset'>;
  netBase: number;
  /** Offset in `acts` of the layer's input rows `[batch, in]` (the previous layer's outputs). */
  xOff: number;
  /** Offset in `deltas` of this layer's delta rows `[batch, out]`. */
  dOff: number;
  /** Offset in `deltas` where this layer's dX rows `[batch, in]` go (the previous layer's delta). */
  pOff: number;
  /** The previous layer's activation (act' is applied to the dX). */
  pAct: Activation;
}

/** One network's chain, top layer first (layer c + 1 is the layer below layer c). */
export interface DeltaChainNet {
  layers: DeltaChainLayer[];
}

/** Throws unless `nets` is 1..2 chains of 1..4 layers of widths <= DELTA_MAX_WIDTH. */
export function checkDeltaChain(nets: readonly DeltaChainNet[]): void {
  const fail = (why: string): never => {
    throw new Error(`mlp_delta_chain: ${why}`);
  };
  if (nets.length < 1 || nets.length > MAX_DELTA_NETS) {
    fail(`1-${MAX_DELTA_NETS} networks per launch, got ${nets.length}`);
  }
  nets.forEach(({ layers }, n) => {
    if (layers.length < 1 || layers.length > MAX_DELTA_LAYERS) {
      fail(`net ${n}: 1-${MAX_DELTA_LAYERS} layers, got ${layers.length}`);
    }
    layers.forEach((l, c) => {
      const { in: nIn, out: nOut } = l.layer;
      if (!(nIn >= 1 && nOut >= 1 && nIn <= DELTA_MAX_WIDTH && nOut <= DELTA_MAX_WIDTH)) {
        fail(`net ${n} layer ${c}: widths 1-${DELTA_MAX_WIDTH}, got ${nIn}->${nOut}`);
      }
      const above = layers[c - 1];
      if (above && (nOut !== above.layer.in || l.dOff !== above.pOff)) {
        fail(
          `net ${n}: layer ${c} (${nIn}->${nOut}, deltas at ${l.dOff}) is not chained below layer ` +
            `${c - 1} (${above.layer.in}->${above.layer.out}, dX to ${above.pOff}): its out must be the ` +
            `upper layer's in and its dOff the upper layer's pOff (layers are given from the top down)`,
        );
      }
    });
  });
}

/**
 * Floats of a network's two delta tiles per row: the deltas of its chain, top (out_0), then in_0,
 * in_1, .. alternate between tile A (even) and tile B (odd), each as wide as its widest.
 */
function tileWidths(net: DeltaChainNet): [number, number] {
  const widths = [net.layers[0].layer.out, ...net.layers.map((l) => l.layer.in)];
  const widest = (parity: number) => Math.max(0, ...widths.filter((_, k) => k % 2 === parity));
  return [widest(0), widest(1)];
}

/** Floats of the workgroup's delta tiles (both networks' A and B tiles, `rows` rows each). */
export function deltaChainTileFloats(nets: readonly DeltaChainNet[], rows: number): number {
  return rows * nets.reduce((n, net) => n + tileWidths(net).reduce((a, b) => a + b), 0);
}

/** The params range [from, end) of a network's chain: its layers' weights and biases. */
function paramRange(net: DeltaChainNet): { from: number; end: number } {
  let from = Number.POSITIVE_INFINITY;
  let end = 0;
  for (const { layer, netBase } of net.layers) {
    const w = netBase + layer.wOffset;
    const b = netBase + layer.bOffset;
    from = Math.min(from, w, b);
    end = Math.max(end, w + layer.in * layer.out, b + layer.out);
  }
  return { from, end };
}

/**
 * Floats of the loss mode's scratch (the advantage sums' tree and the rows' loss parts), after the
 * tiles in CUDA's dynamic shared memory: one per thread.
 */
export function deltaChainLossScratch(threads: number): number {
  return threads;
}

/** What the staged build copies into shared memory, and its shared memory. */
export interface DeltaChainStaging {
  /**
   * Per network, the params range [from, end) of its chain; the copy starts at the 16-byte
   * boundary at or before `from` (from - from % 4) and takes whole float4s.
   */
  ranges: { from: number; end: number }[];
  /** Floats of the copy (a multiple of 4): the networks' ranges, each rounded out to float4s. */
  stageFloats: number;
  /** Floats of the delta tiles (deltaChainTileFloats). */
  tileFloats: number;
  /** Floats of the loss mode's scratch (0 without the loss mode). */
  lossFloats: number;
  /** The copy, the tiles and the loss scratch, in bytes. */
  sharedBytes: number;
}

/**
 * The staged build's copy of `nets`' weights with `rows` rows per block, or undefined when it does
 * not fit DELTA_STAGED_SHARED_LIMIT: then the launch takes the 256-thread build.
 */
export function deltaChainStaging(
  nets: readonly DeltaChainNet[],
  rows: number,
  loss = false,
): DeltaChainStaging | undefined {
  const ranges = nets.map(paramRange);
  const stageFloats = ranges.reduce(
    (n, { from, end }) => n + Math.ceil((end - (from - (from % 4))) / 4) * 4,
    0,
  );
  const tileFloats = deltaChainTileFloats(nets, rows);
  const lossFloats = loss ? deltaChainLossScratch(DELTA_STAGED_THREADS) : 0;
  const sharedBytes = 4 * (stageFloats + tileFloats + lossFloats);
  return sharedBytes <= DELTA_STAGED_SHARED_LIMIT
    ? { ranges, stageFloats, tileFloats, lossFloats, sharedBytes }
    : undefined;
}

function checkRows(rows: number): void {
  if (!(DELTA_ROWS_CHOICES as readonly number[]).includes(rows)) {
    throw new Error(
      `mlp_delta_chain: rows per workgroup must be one of ${DELTA_ROWS_CHOICES.join(', ')}, got ${rows}`,
    );
  }
}

const base: Omit<KernelSpec, 'workgroupSize' | 'constants'> = {
  name: 'mlp_delta_chain',
  bindings: [
    { name: 'params', type: 'f32', access: 'read' },
    { name: 'acts', type: 'f32', access: 'read' },
    { name: 'deltas', type: 'f32', access: 'read_write' },
    { name: 'mb', type: 'f32', access: 'read' },
    { name: 'partials', type: 'f32', access: 'read_write' },
  ],
  uniforms: [
    { name: 'batch', type: 'u32' },
    { name: 'nets', type: 'u32' },
    // The loss mode (loss = 1; rows: rows per workgroup, for the reference's loss groups) and
    // ppo_loss's uniforms.
    { name: 'loss', type: 'u32' },
    { name: 'rows', type: 'u32' },
    ...PPO_LOSS_UNIFORMS,
    ...Array.from({ length: MAX_DELTA_NETS }, (_, n) => [
      ...NET_FIELDS.map((f) => ({ name: `${f}${n}`, type: 'u32' as const })),
      ...Array.from({ length: MAX_DELTA_LAYERS }, (_, c) =>
        LAYER_FIELDS.map((f) => ({ name: `${f}${n}_${c}`, type: 'u32' as const })),
      ).flat(),
    ]).flat(),
  ],
};

const variants = new Map<string, KernelSpec>();

/**
 * The 256-thread build (WGSL; CUDA when the weights do not fit shared memory) with `rows` rows
 * per workgroup and `tileFloats` floats of delta tiles (one spec object per shape, so backends
 * cache one pipeline each); `loss`: the loss mode's build (LOSS = 1). CUDA takes the tiles (and
 * the loss scratch, LOSS_FLOATS) as dynamic shared memory (sharedBytes).
 */
export function mlpDeltaChainSpecFor(rows: number, tileFloats: number, loss = false): KernelSpec {
  checkRows(rows);
  const key = `${rows}|${tileFloats}|${loss ? 1 : 0}`;
  let spec = variants.get(key);
  if (!spec) {
    const lossFloats = loss ? deltaChainLossScratch(DELTA_THREADS) : 0;
    spec = {
      ...base,
      workgroupSize: [DELTA_THREADS, 1, 1],
      constants: {
        ROWS: rows,
        MAX_WIDTH: DELTA_MAX_WIDTH,
        TILE_FLOATS: tileFloats,
        LOSS: loss ? 1 : 0,
        LOSS_FLOATS: lossFloats,
        LOSS_PARTS,
      },
      sharedBytes: 4 * (tileFloats + lossFloats),
    };
    variants.set(key, spec);
  }
  return spec;
}

/**
 * The staged build (CUDA only) for `rows` rows per block and the copy `s` (its loss scratch:
 * the loss mode's build).
 */
export function mlpDeltaChainStagedSpecFor(rows: number, s: DeltaChainStaging): KernelSpec {
  checkRows(rows);
  const key = `staged|${rows}|${s.stageFloats}|${s.tileFloats}|${s.lossFloats}`;
  let spec = variants.get(key);
  if (!spec) {
    spec = {
      ...base,
      workgroupSize: [DELTA_STAGED_THREADS, 1, 1],
      constants: {
        ROWS: rows,
        MAX_WIDTH: DELTA_MAX_WIDTH,
        TILE_FLOATS: s.tileFloats,
        STAGED: 1,
        STAGE_FLOATS: s.stageFloats,
        LOSS: s.lossFloats > 0 ? 1 : 0,
        LOSS_FLOATS: s.lossFloats,
        LOSS_PARTS,
      },
      sharedBytes: s.sharedBytes,
    };
    variants.set(key, spec);
  }
  return spec;
}

/**
 * The registry's variant: DELTA_ROWS rows with tiles for any two networks (every tile
 * DELTA_MAX_WIDTH wide).
 */
export const mlpDeltaChainSpec = mlpDeltaChainSpecFor(
  DELTA_ROWS,
  DELTA_ROWS * MAX_DELTA_NETS * 2 * DELTA_MAX_WIDTH,
);

/**
 * The loss mode's arguments: ppo_loss's (PpoLossArgs) without its buffers and batch. dLogitsOff must
 * be net 0's top delta rows (its dOff, a top layer nActions wide), dValueOff net 1's (1 wide);
 * lossAt is the first float of the ceil(batch / rows) x LOSS_PARTS partials.
 */
export type DeltaChainLoss = Omit<PpoLossArgs, 'acts' | 'mb' | 'deltas' | 'partials' | 'batch'>;

/** The buffers a launch binds besides params, acts and deltas, and the loss mode. */
export interface DeltaChainIo {
  /** ppo_gather's per-sample floats (read in the loss mode only). */
  mb: DeviceBuffer;
  /** The loss sums (written in the loss mode only); a buffer other than `deltas`. */
  partials: DeviceBuffer;
  /** The loss mode: the PPO loss head first, its output deltas the chain's top deltas. */
  loss?: DeltaChainLoss;
}

/** Loss groups (rows of LOSS_PARTS partials) of the loss mode: its workgroups. */
export function deltaChainLossGroups(batch: number, rows: number): number {
  return Math.ceil(batch / rows);
}

function checkLoss(nets: readonly DeltaChainNet[], loss: DeltaChainLoss): void {
  const top = nets.map((n) => n.layers[0]);
  if (
    nets.length !== 2 ||
    top[0].dOff !== loss.dLogitsOff ||
    top[0].layer.out !== loss.nActions ||
    top[1].dOff !== loss.dValueOff ||
    top[1].layer.out !== 1
  ) {
    throw new Error(
      `mlp_delta_chain: the loss mode needs net 0's top layer to be the policy output (${loss.nActions} ` +
        `wide, deltas at ${loss.dLogitsOff}) and net 1's the value output (1 wide, deltas at ${loss.dValueOff}); ` +
        `got ${nets.length} networks, tops ${top.map((l) => `${l.layer.out} wide at ${l.dOff}`).join(', ')}`,
    );
  }
}

/**
 * The launch of `nets` (checkDeltaChain) over `batch` rows, `rows` rows per workgroup
 * (DELTA_ROWS_CHOICES). `staged` (CUDA only): the staged build when the weights fit its shared
 * memory (deltaChainStaging), else the 256-thread build. `io`: the mb and partials buffers, and
 * the loss mode (io.loss).
 */
export function mlpDeltaChainDispatch(
  params: DeviceBuffer,
  acts: DeviceBuffer,
  deltas: DeviceBuffer,
  batch: number,
  nets: DeltaChainNet[],
  rows: number,
  staged: boolean,
  io: DeltaChainIo,
): Dispatch {
  checkDeltaChain(nets);
  checkRows(rows);
  const { loss } = io;
  if (loss) checkLoss(nets, loss);
  const uniforms: Record<string, number> = {
    batch,
    nets: nets.length,
    loss: loss ? 1 : 0,
    rows,
    nActions: loss?.nActions ?? 0,
    logitsOff: loss?.logitsOff ?? 0,
    valuesOff: loss?.valuesOff ?? 0,
    dLogitsOff: loss?.dLogitsOff ?? 0,
    dValueOff: loss?.dValueOff ?? 0,
    clip: Math.fround(loss?.clip ?? 0),
    valueCoef: Math.fround(loss?.valueCoef ?? 0),
    entropyCoef: Math.fround(loss?.entropyCoef ?? 0),
    normalize: loss?.normalize ? 1 : 0,
    lossAt: loss?.lossAt ?? 0,
  };
  for (let n = 0; n < MAX_DELTA_NETS; n++) {
    const net = nets[n];
    const range = net ? paramRange(net) : { from: 0, end: 0 };
    uniforms[`layers${n}`] = net?.layers.length ?? 0;
    uniforms[`pFrom${n}`] = range.from;
    uniforms[`pEnd${n}`] = range.end;
    for (let c = 0; c < MAX_DELTA_LAYERS; c++) {
      const l = net?.layers[c];
      const at = `${n}_${c}`;
      uniforms[`in${at}`] = l?.layer.in ?? 0;
      uniforms[`out${at}`] = l?.layer.out ?? 0;
      uniforms[`wOff${at}`] = l ? l.netBase + l.layer.wOffset : 0;
      uniforms[`dOff${at}`] = l?.dOff ?? 0;
      uniforms[`xOff${at}`] = l?.xOff ?? 0;
      uniforms[`pOff${at}`] = l?.pOff ?? 0;
      uniforms[`pAct${at}`] = l ? ActCode[l.pAct] : 0;
    }
  }
  const staging = staged ? deltaChainStaging(nets, rows, loss !== undefined) : undefined;
  return {
    kernel: staging
      ? mlpDeltaChainStagedSpecFor(rows, staging)
      : mlpDeltaChainSpecFor(rows, deltaChainTileFloats(nets, rows), loss !== undefined),
    buffers: [params, acts, deltas, io.mb, io.partials],
    uniforms,
    groups: grid1d(Math.ceil(batch / rows)),
  };
}

const f = Math.fround;

/**
 * Every row of the batch (mlpDeltaChainDispatch's grid always covers it), layer by layer; in the
 * loss mode first the loss head of every workgroup's rows (ppoLossSample, as ppo_loss's reference:
 * the same bits per sample, so the chain then gets the bits ppo_loss would have written; the loss
 * sums, f64 per workgroup rounded to f32, group `rows` samples instead of ppo_loss's
 * LOSS_PER_GROUP, so adam_step's statistics may differ from the unfused launches' in their last
 * bits).
 */
function mlpDeltaChainReference(buffers: TypedArray[], u: Record<string, number>): void {
  const [params, acts, deltas, mb, partials] = buffers;
  if (u.loss) {
    const lu = u as LossHeadUniforms;
    const stats = advantageStats(mb, lu);
    for (let g = 0; g < deltaChainLossGroups(u.batch, u.rows); g++) {
      const sums = new Float64Array(LOSS_PARTS);
      for (let b = g * u.rows; b < Math.min(u.batch, (g + 1) * u.rows); b++) {
        ppoLossSample(acts, mb, deltas, lu, stats, b, sums);
      }
      for (let p = 0; p < LOSS_PARTS; p++) partials[u.lossAt + g * LOSS_PARTS + p] = sums[p];
    }
  }
  for (let n = 0; n < u.nets; n++) {
    for (let c = 0; c < u[`layers${n}`]; c++) {
      const [nIn, nOut, wOff, dOff, xOff, pOff, pAct] = LAYER_FIELDS.map((k) => u[`${k}${n}_${c}`]);
      const row = new Float32Array(nIn);
      for (let b = 0; b < u.batch; b++) {
        // row[i] += f32(d * W[o, i]), o increasing: the Float32Array rounds each sum to f32.
        row.fill(0);
        for (let o = 0; o < nOut; o++) {
          const d = deltas[dOff + b * nOut + o];
          const w = wOff + o * nIn;
          for (let i = 0; i < nIn; i++) row[i] += f(d * params[w + i]);
        }
        for (let i = 0; i < nIn; i++) {
          deltas[pOff + b * nIn + i] = f(row[i] * actDerivative(acts[xOff + b * nIn + i], pAct));
        }
      }
    }
  }
}

export const mlpDeltaChain: Kernel = { spec: mlpDeltaChainSpec, reference: mlpDeltaChainReference };

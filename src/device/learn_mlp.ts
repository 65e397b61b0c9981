/**
 * Where chain networks (src/nets/layout.ts) live in the learner's device buffers, and the
 * mlp_forward / mlp_backward jobs that run them. Several networks share one set of buffers:
 *   params, grads  [P]: the networks' flat buffers back to back (net i at `base`), so one
 *                  adam_step and one global gradient norm cover them all;
 *   acts           [batch, inDim] input rows at 0 (shared: every network reads the same input),
 *                  then each layer's output rows `[batch, out]`, network by network, then the
 *                  forward K slices of split layers (WebGPU);
 *   deltas         each layer's dLoss/d(pre-activation) rows `[batch, out]`;
 *   partials       one float per dW tile of every layer (mlp_backward's sums of squares).
 * Stage s of the forward pairs layer s of the first two networks in one launch; backward stage s
 * pairs their layers counted from the output. With `chain` (true, or rows per workgroup), a
 * network's tail that no other network's layer shares a launch with (the PPO critic's layers 3..5)
 * runs as one mlp_chain_forward launch instead of one mlp_forward launch per layer.
 */
import { capsOf } from '../backend/caps.js';
import { tuningFor, WEBGPU_SPLIT_BUDGET } from '../backend/tuning.js';
import type { Backend, BackendKind, DeviceBuffer, Dispatch } from '../backend/types.js';
import {
  type BackwardJob,
  DW_SLOT_FLOATS,
  dxTiles,
  gradTiles,
  MAX_BACKWARD_JOBS,
  MAX_DW_SPLITS,
  mlpBackwardDispatch,
  mlpBackwardSpec,
  NO_DX,
} from '../kernels/mlp_backward.js';
import {
  CHAIN_ROWS,
  CHAIN_ROWS_STAGED,
  type ChainLayer,
  chainFits,
  MAX_CHAIN_LAYERS,
  mlpChainForwardDispatch,
  mlpChainForwardSpecFor,
} from '../kernels/mlp_chain_forward.js';
import {
  DELTA_MAX_WIDTH,
  DELTA_ROWS,
  type DeltaChainIo,
  type DeltaChainLayer,
  type DeltaChainNet,
  deltaChainStaging,
  MAX_DELTA_LAYERS,
  MAX_DELTA_NETS,
  mlpDeltaChainDispatch,
} from '../kernels/mlp_delta_chain.js';
import {
  type ForwardJob,
  forwardSliceLen,
  tilesOf as forwardTiles,
  MAX_K_SPLITS,
  mlpForwardDispatch,
} from '../kernels/mlp_forward.js';
import { ppoGatherSpec } from '../kernels/ppo_gather.js';
import type { NetLayout } from '../nets/layout.js';

export interface NetPlan {
  layout: NetLayout;
  /** Offset of the network's flat params (and grads) in the shared buffers, in floats. */
  base: number;
  /** acts offset of layer l's input rows (l = 0: the shared input at 0). */
  inputAt: number[];
  /** acts offset of layer l's output rows. */
  outputAt: number[];
  /** deltas offset of layer l's rows. */
  deltaAt: number[];
  /** First partials slot of layer l. */
  partialAt: number[];
  /**
   * Forward K slices of layer l (1: not split) and where in `acts` they go (WebGPU, hand-off
   * 'later': mlp_forward's K split; the next layer's launch finishes the activations).
   */
  fwdSplits: number[];
  fwdScratchAt: number[];
  /**
   * First layer of the network's forward tail that runs as one mlp_chain_forward launch (its
   * layers from here on share no launch with another network's); layers.length: none.
   */
  chainFrom: number;
}

export interface MlpPlan {
  nets: NetPlan[];
  batch: number;
  /** k-groups per matmul workgroup (kSplitFor). */
  kSplit: number;
  /**
   * Workgroups a backward launch may grow to by splitting its dW tiles over batch slices (0: never
   * split; dwSplitBudgetFor), and where in `deltas` the split tiles' scratch slots start.
   */
  splitBudget: number;
  scratchAt: number;
  /**
   * Who adds a split tile's slices: 'last', the last of its workgroups to arrive (CUDA: integer
   * counter + __threadfence); 'later', the next backward launch's first workgroups, or one launch
   * after the last (WGSL: no device-scope fence, so only launch order makes slices visible).
   */
  dwHandoff: 'last' | 'later';
  /**
   * How many slices a launch takes: 'most', the most within the budget (CUDA; the first WebGPU
   * plan); 'waves', the fewest waves x rounds by waveCost (WebGPU's default).
   */
  splitPolicy: SplitPolicy;
  /** Rows per workgroup of the chain launches (0: no chain; planMlps' `chain`). */
  chainRows: number;
  /**
   * The chain launches take mlp_chain_forward's staged build (CUDA: the tail's weights copied into
   * shared memory by 512 threads) where it fits: the 'last' hand-off's plans (CUDA, and the CPU,
   * whose TS reference ignores the launch shape); WebGPU keeps the 256-thread build.
   */
  chainStaged: boolean;
  /** The matmuls' CUDA TF32 tensor-core build (constant TF32 = 1; default false: exact f32). */
  tf32?: boolean;
  /**
   * The backward's input deltas of the networks' top layers in one mlp_delta_chain launch
   * (planDeltaChain; network n's layers from[n] .. output, the rows' deltas kept on chip from layer
   * to layer), then mlp_backward launches of every layer whose deltas are known
   * (deltaChainGroups). Undefined: one mlp_backward launch per stage.
   */
  deltaChain?: { from: number[]; rows: number; staged: boolean };
  inDim: number;
  /** Floats of params / grads (and of each half of the Adam moments). */
  paramFloats: number;
  actFloats: number;
  deltaFloats: number;
  partialCount: number;
}

/** Offsets for `layouts` (chain networks reading the same input) on minibatches of `batch` rows. */
export type SplitPolicy = 'most' | 'waves';

export function planMlps(
  layouts: NetLayout[],
  batch: number,
  kSplit = 1,
  splitBudget = 0,
  dwHandoff: 'last' | 'later' = 'last',
  splitPolicy: SplitPolicy = dwHandoff === 'later' ? 'waves' : 'most',
  chain: boolean | number = false,
): MlpPlan {
  const staged = dwHandoff === 'last';
  const chainRows = chain === true ? (staged ? CHAIN_ROWS_STAGED : CHAIN_ROWS) : chain === false ? 0 : chain;
  if (chainRows > 0) mlpChainForwardSpecFor(chainRows); // checks the value
  if (!Number.isInteger(batch) || batch < 1) throw new Error(`learner: minibatch must be >= 1, got ${batch}`);
  const inDim = layouts[0].layers[0].in;
  let params = 0;
  let acts = batch * inDim;
  let deltas = 0;
  let partials = 0;
  const nets = layouts.map((layout) => {
    if (layout.layers[0].in !== inDim) {
      throw new Error(`learner: ${layout.kind} reads ${layout.layers[0].in} inputs, not ${inDim}`);
    }
    const plan: NetPlan = {
      layout,
      base: params,
      inputAt: [],
      outputAt: [],
      deltaAt: [],
      partialAt: [],
      fwdSplits: layout.layers.map(() => 1),
      fwdScratchAt: layout.layers.map(() => 0),
      chainFrom: layout.layers.length,
    };
    layout.layers.forEach((layer, l) => {
      if (l > 0 && layer.in !== layout.layers[l - 1].out) {
        throw new Error(`learner: ${layout.kind} layer ${layer.name} is not a chain`);
      }
      plan.inputAt.push(l === 0 ? 0 : plan.outputAt[l - 1]);
      plan.outputAt.push(acts);
      acts += batch * layer.out;
      plan.deltaAt.push(deltas);
      deltas += batch * layer.out;
      plan.partialAt.push(partials);
      partials += gradTiles(layer.in, layer.out);
    });
    params += layout.size;
    return plan;
  });
  if (chainRows > 0) {
    nets.forEach((net, n) => {
      net.chainFrom = chainStart(nets, n);
    });
  }
  // The forward's budget: WebGPU's split budget; on CUDA half the dW budget, one block per SM
  // (mlp_forward takes ~100 registers: one 512-thread block per SM, so only launches that still fit
  // one wave split: at 512 rows the critic's 256- and 128-input layers, 4 and 2 slices).
  const fwdBudget = dwHandoff === 'later' ? splitBudget : Math.floor(splitBudget / 2);
  if (fwdBudget > 0) {
    // Forward K slices per launch (same pairing as forwardDispatches), their scratch after the rows.
    for (let s = 0; s < Math.max(...nets.map((n) => n.layout.layers.length)); s++) {
      const stage = nets.filter((n) => s < Math.min(n.layout.layers.length, n.chainFrom));
      for (let p = 0; p < stage.length; p += 2) {
        const pair = stage.slice(p, p + 2);
        const splits = forwardSplitsFor(pair, s, batch, kSplit, fwdBudget, splitPolicy);
        pair.forEach((net, j) => {
          net.fwdSplits[s] = splits[j];
          if (splits[j] > 1) {
            net.fwdScratchAt[s] = acts;
            acts += splits[j] * batch * net.layout.layers[s].out;
          }
        });
      }
    }
  }
  // Split dW scratch: one slot per dW tile after the delta rows, 16-byte aligned (float4 stores).
  const scratchAt = splitBudget > 0 ? Math.ceil(deltas / 4) * 4 : 0;
  return {
    nets,
    batch,
    kSplit,
    splitBudget,
    scratchAt,
    dwHandoff,
    splitPolicy,
    chainRows,
    chainStaged: chainRows > 0 && staged,
    inDim,
    paramFloats: params,
    actFloats: acts,
    deltaFloats: splitBudget > 0 ? scratchAt + partials * DW_SLOT_FLOATS : deltas,
    partialCount: partials,
  };
}

/**
 * First layer of network `n`'s chain tail: from there on each of its layers runs alone in its
 * forward stage (an odd network out of the stage's pairs), at least 2 layers (else nothing is
 * saved), at most MAX_CHAIN_LAYERS, widths within mlp_chain_forward's; layers.length: none.
 */
function chainStart(nets: NetPlan[], n: number): number {
  const layers = nets[n].layout.layers;
  const alone = (s: number) => {
    const stage = nets.map((net, i) => (s < net.layout.layers.length ? i : -1)).filter((i) => i >= 0);
    return stage.length % 2 === 1 && stage[stage.length - 1] === n;
  };
  let from = layers.length;
  while (from > 0 && alone(from - 1)) from--;
  for (; from <= layers.length - 2; from++) {
    const tail = layers.slice(from);
    if (tail.length <= MAX_CHAIN_LAYERS && chainFits(tail)) return from;
  }
  return layers.length;
}

/**
 * Forward K slices of the launch of layer `s` of `nets` (WebGPU): the cheapest by waveCost (policy
 * 'waves') or the most ('most') within `budget` workgroups, each slice at least kSplit k-tiles
 * (every k-group busy), none for a network's output layer (the loss head reads it).
 */
function forwardSplitsFor(
  nets: NetPlan[],
  s: number,
  batch: number,
  kSplit: number,
  budget: number,
  policy: SplitPolicy,
): number[] {
  const layers = nets.map((n) => n.layout.layers[s]);
  const caps = nets.map((n, j) => {
    // Output layers (the loss head reads them) and a chain's input (it reads plain rows) never split.
    if (s === n.layout.layers.length - 1 || s === n.chainFrom - 1) return 1;
    return Math.max(1, Math.min(MAX_K_SPLITS, Math.floor(Math.ceil(layers[j].in / TILE_K) / kSplit)));
  });
  const tiles = layers.map((l) => forwardTiles(l.out, batch));
  let best = { splits: nets.map(() => 1), cost: Number.POSITIVE_INFINITY };
  for (let want = 1; want <= MAX_K_SPLITS; want++) {
    const splits = caps.map((c) => Math.min(c, want));
    const groups = splits.reduce((g, k, j) => g + k * tiles[j], 0);
    if (want > 1 && groups > budget) break;
    const longest = Math.max(...layers.map((l, j) => rounds(forwardSliceLen(l.in, splits[j]), kSplit)));
    // 'most': every allowed step up is better.
    const cost = policy === 'most' ? -want : waveCost(groups, longest, budget);
    if (cost < best.cost) best = { splits, cost };
  }
  return best.splits;
}

/** Workgroup memory of one k-group of the matmul kernels: TILE_K rows of (32 + 4) + (64 + 4) floats. */
const GROUP_BYTES = 16 * (36 + 68) * 4;

/**
 * k-groups per matmul workgroup on `backend` (LearnTuning.kSplit, src/backend/tuning.ts): CUDA's
 * fixed 4, or as many (4, 2, 1) as the invocation and workgroup-memory limits allow (2 at
 * WebGPU's defaults of 256 and 16 KiB; 1 where the backend states none: the CPU).
 */
export function kSplitFor(backend: Pick<Backend, 'kind' | 'info'>): number {
  const caps = capsOf(backend);
  const fixed = tuningFor(caps).learn.kSplit;
  if (fixed !== 'limits') return fixed;
  const { invocationsPerWorkgroup: threads } = caps.limits;
  const bytes = backend.info.limits.maxComputeWorkgroupStorageSize;
  if (threads === undefined || typeof bytes !== 'number') return 1;
  let k = 4;
  while (k > 1 && (128 * k > threads || k * GROUP_BYTES + 512 > bytes)) k /= 2;
  return k;
}

export { WEBGPU_SPLIT_BUDGET };

/**
 * The split-dW budget on `backend` (MlpPlan.splitBudget): two 512-thread matmul workgroups per SM
 * where the backend reports its SM count (CUDA), else the device class's (LearnTuning.dwSplitBudget:
 * WEBGPU_SPLIT_BUDGET on WebGPU, 0 on the CPU, which never splits).
 */
export function dwSplitBudgetFor(backend: Pick<Backend, 'info' | 'kind'>): number {
  const sms = backend.info.limits.smCount;
  if (typeof sms === 'number' && sms > 0) return 2 * sms;
  return tuningFor(backend).learn.dwSplitBudget;
}

/**
 * ppo_gather samples per workgroup on a backend (LearnTuning.gatherRows): the GPUs take narrow ones,
 * the CPU a whole workgroup's worth.
 */
export function ppoGatherRowsFor(
  backend: BackendKind | (Pick<Backend, 'kind'> & { info?: Backend['info'] }),
): number {
  const rows = tuningFor(typeof backend === 'string' ? { kind: backend } : backend).learn.gatherRows;
  return rows === 'workgroup' ? ppoGatherSpec.workgroupSize[0] : rows;
}

/** MlpPlan.dwHandoff on `backend`: WGSL finishes split tiles in a later launch (see mlp_backward.wgsl). */
export function dwHandoffFor(backend: Pick<Backend, 'kind'>): 'last' | 'later' {
  return tuningFor(backend).learn.dwHandoff;
}

/** The matmul kernels' k-tile (mlp_forward and mlp_backward share it). */
const TILE_K = mlpBackwardSpec.constants!.TILE_K;

/** Rounds of a k-grouped K loop over `k` values (kSplit k-tiles per round). */
const rounds = (k: number, kSplit: number) => Math.ceil(Math.ceil(k / TILE_K) / kSplit);

/**
 * Relative time of a WebGPU matmul launch of `groups` workgroups whose longest K loop takes
 * `rounds` rounds: in waves of budget / 2 workgroups (the H200 runs one 512-thread workgroup per
 * SM: its per-launch times step up past ~130 workgroups), each costing its rounds plus about two
 * rounds' worth of fixed work (first loads, the k-group sum, the stores): 1.85 us a round and
 * ~4 us a wave in the H200 table.
 */
function waveCost(groups: number, rounds: number, budget: number): number {
  return Math.ceil(groups / Math.max(1, Math.floor(budget / 2))) * (rounds + 2);
}

/**
 * Relative time of a launch of more workgroups than its budget whose workgroups differ in length:
 * `a` of `ra` rounds and `b` of `rb`, on budget / 2 slots (as waveCost), each costing its rounds plus
 * two: the longest workgroup, or the work spread over the slots, whichever is longer. A launch of
 * alike workgroups costs about what waveCost gives it.
 */
function spreadCost(a: number, ra: number, b: number, rb: number, budget: number): number {
  const slots = Math.max(1, Math.floor(budget / 2));
  const work = a * (ra + 2) + b * (rb + 2);
  return Math.max(a > 0 ? ra + 2 : 0, b > 0 ? rb + 2 : 0, work / slots);
}

/**
 * Slices per dW tile of one backward launch. CUDA (hand-off 'last'): the most (8, 4, 2) that keep
 * the launch within the plan's budget of workgroups and leave every slice a k-tile of rows, else
 * 1 (policy 'most'). Short K loops on many workgroups instead of the whole batch on a few: the
 * latency-bound launches are the ones with few tiles. WebGPU's default ('waves'): the cheapest by
 * waveCost within the budget.
 */
function splitsFor(plan: MlpPlan, jobs: BackwardJob[], sumGroups = 0): number {
  if (plan.splitBudget <= 0) return 1;
  const dw = jobs.reduce((n, j) => n + gradTiles(j.layer.in, j.layer.out), 0);
  const dx = jobs.reduce((n, j) => n + dxTiles(j.layer.in, plan.batch, j.prev ? 0 : NO_DX), 0);
  if (plan.splitPolicy === 'waves') {
    // WebGPU: the fewest waves x rounds (see waveCost) at the plan's k-groups; the launch also
    // finishes sumGroups tiles.
    const otherK = Math.max(0, ...jobs.filter((j) => j.prev).map((j) => j.layer.out));
    const shape = { kSplit: plan.kSplit, budget: plan.splitBudget, batch: plan.batch, dw, other: dx, otherK };
    return matmulShape(shape, sumGroups, [plan.kSplit]).splits;
  }
  const kTiles = Math.ceil(plan.batch / TILE_K);
  for (let s = MAX_DW_SPLITS; s > 1; s /= 2) {
    if (s <= kTiles && s * dw + dx <= plan.splitBudget) return s;
  }
  return 1;
}

/** A matmul launch's k-groups and, for a backward launch, its dW tiles' batch slices. */
export interface MatmulShape {
  kSplit: number;
  splits: number;
}

/**
 * The cheapest shape of one matmul launch by waveCost: `kChoices` k-groups a workgroup (default 1
 * or `kSplit`; a workgroup of k groups is k / kSplit of a full one, so kSplit / k of them take its
 * place in a wave), and for a backward launch 1, 2, 4 or 8 batch slices of its dW tiles (each at
 * least one k-tile of rows; the launch stays within `budget` workgroups). A backward launch past
 * the budget by its own tiles is rated by spreadCost instead, over every slice count: its few dW tiles'
 * K loops over the whole batch (IQN: batch x taus rows, 2,048 k-tiles) would otherwise outlast
 * its waves of dX tiles several times over. `dw`: dW tiles over
 * K = `batch` rows; `other`: the launch's other tiles (dX, or a forward's output tiles) over
 * K = `otherK`; `sumGroups`: workgroups that finish an earlier launch's split tiles (WGSL
 * hand-off). The DQN family's learner shapes every launch with it; PPO's WebGPU plan its dW slices
 * (splitsFor). A budget of 0 (the CPU) keeps `kSplit` and never splits. Ties go to the fewer
 * k-groups, then the fewer slices.
 */
export function matmulShape(
  s: { kSplit: number; budget: number; batch: number; dw: number; other: number; otherK: number },
  sumGroups = 0,
  kChoices = s.kSplit > 1 ? [1, s.kSplit] : [1],
): MatmulShape {
  if (s.budget <= 0) return { kSplit: s.kSplit, splits: 1 };
  const kTiles = Math.ceil(s.batch / TILE_K);
  // Past the budget by its own tiles (not by an earlier launch's sums it finishes).
  const over = s.dw > 0 && s.dw + s.other > s.budget;
  let best = { kSplit: kChoices[0], splits: 1, cost: Number.POSITIVE_INFINITY };
  for (const k of kChoices) {
    const budget = (s.budget * s.kSplit) / k;
    for (let n = 1; n <= (s.dw > 0 ? Math.min(MAX_DW_SPLITS, kTiles) : 1); n *= 2) {
      const groups = n * s.dw + s.other + sumGroups;
      const dwRounds = s.dw > 0 ? Math.ceil(Math.ceil(kTiles / n) / k) : 0;
      const otherRounds = s.other > 0 ? rounds(s.otherK, k) : 0;
      const longest = Math.max(dwRounds, otherRounds);
      // A backward launch past the budget unsplit (many dX tiles beside a few dW tiles: IQN's streams
      // on batch x taus rows) runs unlike waves: the dW tiles' long K loops beside waves of short dX
      // tiles (spreadCost). Within the budget, the launch splits only as far as it stays within it.
      if (!over && n > 1 && groups > s.budget) break;
      const cost = over
        ? spreadCost(n * s.dw, dwRounds, s.other + sumGroups, otherRounds, budget)
        : waveCost(groups, longest, budget);
      if (cost < best.cost) best = { kSplit: k, splits: n, cost };
    }
  }
  return { kSplit: best.kSplit, splits: best.splits };
}

/** The device buffers an MlpPlan describes. */
export interface MlpBuffers {
  params: DeviceBuffer;
  grads: DeviceBuffer;
  acts: DeviceBuffer;
  deltas: DeviceBuffer;
  partials: DeviceBuffer;
}

function forwardJob(net: NetPlan, l: number): ForwardJob {
  const job: ForwardJob = {
    layer: net.layout.layers[l],
    netBase: net.base,
    xOff: net.inputAt[l],
    yOff: net.outputAt[l],
  };
  if (net.fwdSplits[l] > 1) job.split = { splits: net.fwdSplits[l], yScr: net.fwdScratchAt[l] };
  if (l > 0 && net.fwdSplits[l - 1] > 1) {
    const prev = net.layout.layers[l - 1];
    job.xSplit = {
      splits: net.fwdSplits[l - 1],
      xScr: net.fwdScratchAt[l - 1],
      bOff: net.base + prev.bOffset,
      act: prev.act,
    };
  }
  return job;
}

function backwardJob(net: NetPlan, l: number): BackwardJob {
  const layers = net.layout.layers;
  return {
    layer: layers[l],
    netBase: net.base,
    xOff: net.inputAt[l],
    dOff: net.deltaAt[l],
    prev: l === 0 ? null : { dOff: net.deltaAt[l - 1], act: layers[l - 1].act },
    partBase: net.partialAt[l],
  };
}

/** Pairs the per-network jobs of one stage into launches of at most two jobs. */
function pairs<T>(jobs: T[]): ([T] | [T, T])[] {
  const out: ([T] | [T, T])[] = [];
  for (let i = 0; i < jobs.length; i += 2) out.push(i + 1 < jobs.length ? [jobs[i], jobs[i + 1]] : [jobs[i]]);
  return out;
}

function depth(plan: MlpPlan): number {
  return Math.max(...plan.nets.map((n) => n.layout.layers.length));
}

/**
 * Forward of every network on the `batch` input rows at acts[0..]: one launch per stage, and one
 * for each chain tail (NetPlan.chainFrom) after the launch of the layer before it.
 */
export function forwardDispatches(plan: MlpPlan, b: MlpBuffers): Dispatch[] {
  const out: Dispatch[] = [];
  for (let s = 0; s < depth(plan); s++) {
    const jobs = plan.nets
      .filter((n) => s < Math.min(n.layout.layers.length, n.chainFrom))
      .map((n) => forwardJob(n, s));
    for (const p of pairs(jobs))
      out.push(mlpForwardDispatch(b.params, b.acts, plan.batch, p, plan.kSplit, plan.tf32));
    for (const net of plan.nets.filter((n) => n.chainFrom === s && s < n.layout.layers.length)) {
      const layers: ChainLayer[] = net.layout.layers
        .slice(s)
        .map((layer, c) => ({ layer, netBase: net.base, yOff: net.outputAt[s + c] }));
      out.push(
        mlpChainForwardDispatch(
          b.params,
          b.acts,
          plan.batch,
          net.inputAt[s],
          layers,
          plan.chainRows,
          plan.chainStaged,
        ),
      );
    }
  }
  return out;
}

/**
 * Backward of every network from its output layer's deltas (written by a loss head): gradients
 * into `grads`, per-tile sums of squares into `partials`. Without a delta chain one launch per
 * stage (the networks' layers counted from the output, paired); with one (MlpPlan.deltaChain) the
 * mlp_delta_chain launch first, then the launches of deltaChainGroups. `chainIo`: the delta
 * chain's mb and partials bindings and its loss mode (the PPO learner's fused loss head: then no
 * loss launch precedes these); default: no loss mode, mb bound to acts and partials to b.partials
 * (neither read nor written then).
 */
export function backwardDispatches(plan: MlpPlan, b: MlpBuffers, chainIo?: DeltaChainIo): Dispatch[] {
  const out: Dispatch[] = [];
  let groups: BackwardJob[][];
  if (plan.deltaChain) {
    const dc = plan.deltaChain;
    out.push(
      mlpDeltaChainDispatch(
        b.params,
        b.acts,
        b.deltas,
        plan.batch,
        deltaChainNets(plan, dc.from),
        dc.rows,
        dc.staged,
        chainIo ?? { mb: b.acts, partials: b.partials },
      ),
    );
    groups = deltaChainGroups(plan);
  } else {
    groups = [];
    for (let s = 0; s < depth(plan); s++) {
      const jobs = plan.nets
        .filter((n) => s < n.layout.layers.length)
        .map((n) => backwardJob(n, n.layout.layers.length - 1 - s));
      groups.push(...pairs(jobs));
    }
  }
  const { scratchAt, dwHandoff: handoff } = plan;
  // Hand-off 'later': the split tiles each launch leaves for the next one to finish (at most two
  // jobs' worth, so a launch of more jobs does not split there).
  let pending: { jobs: BackwardJob[]; splits: number } | undefined;
  for (const jobs of groups) {
    const sumGroups = pending ? pending.jobs.reduce((n, j) => n + gradTiles(j.layer.in, j.layer.out), 0) : 0;
    const splits = handoff === 'later' && jobs.length > 2 ? 1 : splitsFor(plan, jobs, sumGroups);
    out.push(
      mlpBackwardDispatch(
        b,
        plan.batch,
        jobs,
        plan.kSplit,
        { splits, scratchAt, handoff, sum: pending },
        plan.tf32,
      ),
    );
    pending = handoff === 'later' && splits > 1 ? { jobs, splits } : undefined;
  }
  if (pending) {
    out.push(
      mlpBackwardDispatch(
        b,
        plan.batch,
        [],
        plan.kSplit,
        { splits: 1, scratchAt, handoff, sum: pending },
        plan.tf32,
      ),
    );
  }
  return out;
}

/**
 * The mlp_delta_chain jobs of `from` (per network, the lowest layer whose input deltas the chain
 * computes; layers.length: none): each network's layers from the output down to from[n], each
 * writing the deltas of the layer below it.
 */
export function deltaChainNets(plan: MlpPlan, from: readonly number[]): DeltaChainNet[] {
  return plan.nets.flatMap((net, n) => {
    const layers = net.layout.layers;
    const chain: DeltaChainLayer[] = [];
    for (let l = layers.length - 1; l >= Math.max(1, from[n]); l--) {
      chain.push({
        layer: layers[l],
        netBase: net.base,
        xOff: net.inputAt[l],
        dOff: net.deltaAt[l],
        pOff: net.deltaAt[l - 1],
        pAct: layers[l - 1].act,
      });
    }
    return chain.length > 0 ? [{ layers: chain }] : [];
  });
}

/**
 * The mlp_backward launches after a delta chain. Launch k computes the dX each network needs next
 * (with that layer's dW: a job always does its dW): with the chain's lowest layer low_n, layer
 * low_n - k. The layers whose dX is already known (the chain's, and a first layer, which has
 * none) are dW-only jobs that may run in any launch from the one after their deltas exist: the
 * plan puts them where they cost least by a latency model of these launches (costOfLaunch: a fixed
 * cost per launch plus its longest K loop in rounds, times its waves), trying every placement when
 * there are few (<= 4^8), else each at its first chance (also on plans without a split budget: the
 * CPU, where the model means nothing). At most MAX_BACKWARD_JOBS jobs a launch. The PPO networks
 * on CUDA at 512 rows: value_layer_2 (dW, dX) with the dW of value_layer_3, value_layer_4,
 * policy_layer_0 and value_output (dW in 2 slices: 260 workgroups, 4 rounds), value_layer_1 (dW,
 * dX) with policy_layer_1 and policy_output (238 workgroups, 8 rounds), value_layer_0 (8 slices,
 * 1 round): 3 launches instead of 6. Within
 * a launch the jobs with a dX go first, then the others by size (the grid's first workgroups start
 * first).
 */
export function deltaChainGroups(plan: MlpPlan): BackwardJob[][] {
  const from = plan.deltaChain?.from ?? plan.nets.map((n) => n.layout.layers.length);
  const fixed: { job: BackwardJob; at: number }[] = [];
  const free: { job: BackwardJob; from: number }[] = [];
  plan.nets.forEach((net, n) => {
    const layers = net.layout.layers;
    const low = Math.min(from[n], layers.length) - 1;
    for (let l = layers.length - 1; l > low; l--)
      free.push({ job: { ...backwardJob(net, l), prev: null }, from: 0 });
    for (let l = low; l >= 1; l--) fixed.push({ job: backwardJob(net, l), at: low - l });
    if (low >= 0) free.push({ job: backwardJob(net, 0), from: Math.max(0, low) });
  });
  const launches = Math.max(0, ...fixed.map((f) => f.at + 1), ...free.map((f) => f.from + 1));
  const groupsOf = (place: number[]) => {
    const groups: BackwardJob[][] = Array.from({ length: launches }, () => []);
    for (const f of fixed) groups[f.at].push(f.job);
    free.forEach((f, i) => {
      groups[place[i]].push(f.job);
    });
    return groups.filter((g) => g.length > 0);
  };
  let best = free.map((f) => f.from);
  const choices = free.reduce((n, f) => n * (launches - f.from), 1);
  if (plan.splitBudget > 0 && plan.splitPolicy === 'most' && choices <= 4 ** 8) {
    let bestCost = Number.POSITIVE_INFINITY;
    const place = free.map((f) => f.from);
    for (let c = 0; c < choices; c++) {
      let rest = c;
      free.forEach((f, i) => {
        const span = launches - f.from;
        place[i] = f.from + (rest % span);
        rest = Math.floor(rest / span);
      });
      const cost = groupsOf(place).reduce((t, g) => t + costOfLaunch(plan, g), 0);
      if (cost < bestCost) {
        bestCost = cost;
        best = [...place];
      }
    }
  }
  const size = (j: BackwardJob) => gradTiles(j.layer.in, j.layer.out);
  return groupsOf(best).flatMap((jobs) => {
    jobs.sort((a, c) => Number(c.prev !== null) - Number(a.prev !== null) || size(c) - size(a));
    const out: BackwardJob[][] = [];
    for (let i = 0; i < jobs.length; i += MAX_BACKWARD_JOBS) out.push(jobs.slice(i, i + MAX_BACKWARD_JOBS));
    return out;
  });
}

/**
 * Fixed cost of one matmul launch in rounds of its K loop: on the H200 (bench train, Nsight Compute
 * at ff1baad and c513783) a backward launch took about 9 us plus 1.2 us per round.
 */
const LAUNCH_ROUNDS = 8;

/** costOfLaunch: the latency model of one mlp_backward launch of `jobs` (deltaChainGroups). */
function costOfLaunch(plan: MlpPlan, jobs: BackwardJob[]): number {
  if (jobs.length > MAX_BACKWARD_JOBS) return Number.POSITIVE_INFINITY;
  const s = splitsFor(plan, jobs);
  const dw = jobs.reduce((n, j) => n + gradTiles(j.layer.in, j.layer.out), 0);
  const dx = jobs.reduce((n, j) => n + dxTiles(j.layer.in, plan.batch, j.prev ? 0 : NO_DX), 0);
  const dwRounds = rounds(Math.ceil(Math.ceil(plan.batch / TILE_K) / s) * TILE_K, plan.kSplit);
  const dxRounds = Math.max(0, ...jobs.filter((j) => j.prev).map((j) => rounds(j.layer.out, plan.kSplit)));
  const waves = Math.ceil((s * dw + dx) / plan.splitBudget);
  return LAUNCH_ROUNDS + waves * Math.max(dwRounds, dxRounds);
}

/**
 * MlpPlan.deltaChain for `plan`: grows each network's chain down from its output layer, one layer
 * per network in turn, while the layer has an input delta to compute (not a first layer), its
 * widths are within DELTA_MAX_WIDTH, the chain within MAX_DELTA_LAYERS, and (staged build: the
 * 'last' hand-off's plans, as MlpPlan.chainStaged) the layers' weights and row tiles fit shared
 * memory (deltaChainStaging). The PPO actor's policy_output and policy_layer_1 and the critic's
 * value_output, value_layer_4 and value_layer_3 (52,398 floats); value_layer_2 is 512 wide.
 * `loss`: the launch takes the loss mode (its scratch counts in the staged build's shared memory).
 * Undefined when no layer qualifies.
 */
export function planDeltaChain(plan: MlpPlan, rows?: number, loss = false): MlpPlan['deltaChain'] {
  const staged = plan.dwHandoff === 'last';
  const r = rows ?? DELTA_ROWS;
  const from = plan.nets.map((n) => n.layout.layers.length);
  for (let grew = true; grew; ) {
    grew = false;
    for (let n = 0; n < plan.nets.length; n++) {
      const layers = plan.nets[n].layout.layers;
      const l = from[n] - 1;
      if (l < 1 || layers.length - l > MAX_DELTA_LAYERS) continue;
      if (layers[l].in > DELTA_MAX_WIDTH || layers[l].out > DELTA_MAX_WIDTH) continue;
      const next = [...from];
      next[n] = l;
      const nets = deltaChainNets(plan, next);
      if (nets.length > MAX_DELTA_NETS) continue;
      if (staged && !deltaChainStaging(nets, r, loss)) continue;
      from[n] = l;
      grew = true;
    }
  }
  if (from.every((f, n) => f >= plan.nets[n].layout.layers.length)) return undefined;
  return { from, rows: r, staged };
}

/**
 * Allocates the buffers of a plan (zero-filled), labelled `<prefix>.<name>`; `extraPartials` floats
 * after the plan's partials are for a loss head's per-workgroup sums.
 */
export function createMlpBuffers(
  backend: { createBuffer(bytes: number, label: string): DeviceBuffer },
  plan: MlpPlan,
  prefix: string,
  extraPartials = 0,
): MlpBuffers {
  const make = (floats: number, name: string) =>
    backend.createBuffer(4 * Math.max(1, floats), `${prefix}.${name}`);
  return {
    params: make(plan.paramFloats, 'params'),
    grads: make(plan.paramFloats, 'grads'),
    acts: make(plan.actFloats, 'acts'),
    deltas: make(plan.deltaFloats, 'deltas'),
    partials: make(plan.partialCount + extraPartials, 'partials'),
  };
}

/**
 * collect_dqn: L steps of N episodes in one launch (SPEC 6, 9): per step build the 54-float
 * state, run the online dueling net, choose the action epsilon-greedily (Philox), step the
 * simulator (src/env/step.ts), write the experience, restart finished episodes. Episode state
 * persists in env_f / env_i / div_window. New experiences enter the replay at its max priority
 * (replay_insert), so the collection runs no target net and writes no TD error.
 *
 * Bindings, uniform block and output layout: src/kernels/collect_layout.ts. Own uniforms:
 *   n, steps        N episodes, L steps
 *   stepBase        global step of the launch's first step (Philox action counter word 2 is
 *                   stepBase + t: consecutive launches continue the streams)
 *   epsilon         exploration rate
 *   vMin, vMax      C51 support (ignored by the other heads)
 *   curiosity       1: the curiosity bonus is on (its net is in `nets`), 0: bonus 0
 *   head, atoms, actTaus, iqnEmbed  the head as data for the CPU twin; the GPU twins use the
 *                   equal constants HEAD, ATOMS, ACT_TAUS, IQN_EMBED
 * nets: online dueling net at NET_Q_BASE, curiosity at NET_C_BASE.
 *
 * Variants (constant SEED_VARIANT): 0, the tiled kernel (a workgroup owns TILE_E episodes and
 * runs each layer as a small matrix product with the weights staged in workgroup memory);
 * 1, the seed design (one thread per episode, every weight read from global memory), kept only
 * for the benchmark. Variant `cluster` (CUDA sm_90 only, plain head, f32 exact) is its own kernel,
 * cuda/collect_dqn_cluster.cu: a thread-block cluster of `cluster` CTAs owns `tileEpisodes`
 * episodes and each CTA keeps a 1/cluster slice of every layer in shared memory for the whole
 * launch (small N: no weight traffic per step). Its CPU twin is the same reference.
 */

import { collectDqn, type DqnNets } from '../collect/dqn.js';
import type { DqnRollout } from '../collect/rollout.js';
import { curiosityLayout, duelingLayout, NUM_ACTIONS, type QHead } from '../nets/layout.js';
import { checkEngine, isQuadEngine, tileEngineConstants } from './collect_engine.js';
import {
  COLLECT_BINDINGS,
  commonConstants,
  ENV_UNIFORMS,
  envFromBuffers,
  envParamsFromUniforms,
  envStateConstants,
  marketFromBuffers,
  netConstants,
  outputConstants,
  outputLayout,
  sectionViews,
} from './collect_layout.js';
import { grid1d } from './grid.js';
import type { Kernel, TypedArray } from './reference.js';
import type { DeviceBuffer, Dispatch, KernelSpec } from './spec.js';

export const HeadCode: Record<QHead, number> = { plain: 0, c51: 1, iqn: 2 };

/**
 * Per-step outputs of collect_dqn: the fields of DqnRollout (src/collect/rollout.ts), same
 * names, same index (episode * L + step) and trailing dimension within each section.
 */
export const DQN_OUTPUT = outputLayout([
  { name: 'states', type: 'f32', width: 54 },
  { name: 'nextStates', type: 'f32', width: 54 },
  { name: 'rewards', type: 'f32', width: 1 },
  { name: 'components', type: 'f32', width: 5 },
  { name: 'actions', type: 'i32', width: 1 },
  { name: 'dones', type: 'i32', width: 1 },
  { name: 'truncateds', type: 'i32', width: 1 },
]);

export interface CollectDqnOptions {
  head: QHead;
  /** C51 atoms per action. */
  atoms: number;
  /** IQN cosine features. */
  iqnEmbed: number;
  /** IQN taus per acting decision (K). */
  actTaus: number;
  /**
   * `tiled` (the kernel), `seed` (one thread per episode, plain head, benchmark only) or
   * `cluster` (CUDA sm_90 thread-block clusters, plain head: cuda/collect_dqn_cluster.cu).
   */
  variant: 'tiled' | 'seed' | 'cluster';
  /** Cluster variant: CTAs per cluster (1..16; above 8 needs the non-portable cluster size). Default 8. */
  cluster?: number;
  /**
   * Cluster variant: the tensor-core build (constant TF32 = 1: TF32-rounded slices padded to whole
   * m16n8k8 tiles, split-K partial sums; at most 16 episodes per cluster). Its shared-memory plan
   * differs from the exact build's, so the descriptor must know it.
   */
  tf32?: boolean;
  /** Episodes per workgroup (tiled); the seed variant has one per thread. */
  tileEpisodes: number;
  /** Threads per workgroup. */
  threads: number;
  /** WGSL tile engine: threads across a layer's outputs (the rest split the rows). */
  tj: number;
  /** WGSL tile engine: inputs per weight slice staged in workgroup memory (a multiple of 4). */
  kt: number;
  /** IQN: taus per pass of the tile (rows = tileEpisodes * tauRows); divides actTaus. */
  tauRows: number;
  /**
   * WGSL tile engine (collect_tile.wgsl, constant ENGINE): 0 (default) a thread owns rows x
   * outputs strided by tj with scalar activations; 2 quad blocks (vec4 activations, a thread
   * owns QUAD_MQ quads of 4 consecutive outputs in named accumulators, at most QUAD2_MAX_ROWS
   * rows per thread; tj is then unused), the same bits.
   */
  engine?: number;
}

/**
 * The WGSL tile engine's shape (collect_tile.wgsl): rows, row strides, the widest layer and the
 * accumulators per thread. Spec constants, so the workgroup-memory budget below and the shader
 * read the same numbers.
 */
export function dqnTileConstants(o: CollectDqnOptions): Record<string, number> {
  if (o.variant === 'seed')
    return {
      TJ: o.threads,
      KT: 4,
      ROWS: 1,
      ACT_W: 4,
      QW: 4,
      WS_OUT: 4,
      MJ_MAX: 1,
      TAU_ROWS: 1,
      ENGINE: 0,
      MQ: 1,
    };
  const rows = o.tileEpisodes * (o.head === 'iqn' ? o.tauRows : 1);
  return {
    TJ: o.tj,
    KT: o.kt,
    ...tileEngineConstants(o.engine ?? 0, rows, o.threads, o.tj, 256),
    ACT_W: 256,
    QW: o.head === 'c51' ? 256 : 48,
    WS_OUT: 256,
    MJ_MAX: Math.ceil(256 / o.tj),
    TAU_ROWS: o.head === 'iqn' ? o.tauRows : 1,
  };
}

/** Workgroup memory the WGSL kernel declares for these options, in bytes. */
export function dqnWorkgroupBytes(o: CollectDqnOptions): number {
  const c = dqnTileConstants(o);
  const e = episodesPerGroup(o);
  const head = o.head;
  // The engine's activation array, plus the other engine's one-element array (a vec4 or a f32).
  const floats =
    c.ROWS * c.ACT_W +
    (isQuadEngine(c.ENGINE) ? 1 : 4) +
    c.KT * c.WS_OUT +
    c.ROWS * c.QW +
    e * 7 +
    (head !== 'plain' ? e * 48 : 1) +
    (head === 'iqn' ? e * 256 + e * o.actTaus : 2) +
    (head === 'c51' ? 2 * e * o.atoms : 2);
  return floats * 4;
}

/** Throws when the options cannot describe a valid kernel. */
export function checkDqnOptions(o: CollectDqnOptions): void {
  const bad = (msg: string) => {
    throw new Error(`collect_dqn: ${msg}`);
  };
  if (o.variant === 'seed' && o.head !== 'plain') bad('the seed variant has the plain head only');
  if (o.variant === 'cluster') {
    const c = o.cluster ?? DEFAULT_CLUSTER;
    if (o.head !== 'plain') bad('the cluster variant has the plain head only');
    if (!Number.isInteger(c) || c < 1 || c > 16) bad(`cluster ${c} must be an integer from 1 to 16 CTAs`);
    if (o.threads % 32 !== 0) bad(`threads ${o.threads} must be a multiple of 32`);
    if (Math.ceil(o.tileEpisodes / c) > o.threads) bad('a CTA runs one owned episode per thread');
    if (o.tf32 && o.tileEpisodes > 16)
      bad(
        `the TF32 cluster build holds one m16 tile: at most 16 episodes per cluster, not ${o.tileEpisodes}`,
      );
    const bytes = cudaClusterSharedBytes(o);
    if (bytes > CUDA_MAX_SHARED)
      bad(
        `${o.tileEpisodes} episodes over ${c} CTAs need ${bytes} bytes of shared memory per CTA (> ${CUDA_MAX_SHARED}); ` +
          'use more CTAs per cluster or fewer episodes',
      );
  }
  if (o.variant === 'tiled') {
    if (o.threads % o.tj !== 0) bad(`tj ${o.tj} must divide threads ${o.threads}`);
    if (o.kt % 4 !== 0) bad(`kt ${o.kt} must be a multiple of 4`);
    if (o.tileEpisodes > o.threads) bad('a tile cannot own more episodes than it has threads');
    if (o.head === 'c51' && o.atoms > 256) bad(`C51 with ${o.atoms} atoms > 256 is not supported`);
    if (o.head === 'iqn' && o.actTaus % o.tauRows !== 0) bad(`tauRows ${o.tauRows} must divide ${o.actTaus}`);
    checkEngine('collect_dqn', o.engine ?? 0, o.threads, 256);
  }
}

export const DQN_UNIFORMS = [
  { name: 'n', type: 'u32' },
  { name: 'steps', type: 'u32' },
  { name: 'stepBase', type: 'u32' },
  { name: 'epsilon', type: 'f32' },
  { name: 'vMin', type: 'f32' },
  { name: 'vMax', type: 'f32' },
  { name: 'curiosity', type: 'u32' },
  { name: 'head', type: 'u32' },
  { name: 'atoms', type: 'u32' },
  { name: 'actTaus', type: 'u32' },
  { name: 'iqnEmbed', type: 'u32' },
  ...ENV_UNIFORMS,
] as const satisfies KernelSpec['uniforms'];

/** Episodes one workgroup owns. */
export function episodesPerGroup(o: Pick<CollectDqnOptions, 'variant' | 'tileEpisodes' | 'threads'>): number {
  return o.variant === 'seed' ? o.threads : o.tileEpisodes;
}

/** Row stride of a CUDA shared activation buffer (cuda/mlp_tile.cuh tile_stride). */
const tileStride = (width: number) => {
  const w = Math.ceil(width / 16) * 16;
  return w % 32 === 16 ? w : w + 16;
};
const align4 = (floats: number) => Math.ceil(floats / 4) * 4;

/** Static shared memory a CUDA block may declare; larger plans use dynamic shared memory. */
const CUDA_STATIC_SHARED = 48 * 1024;
/** Opt-in shared memory per block on sm_90 (H100 / H200). */
const CUDA_MAX_SHARED = 227 * 1024;
/** CTAs per cluster of the cluster variant unless chosen: the portable maximum. */
export const DEFAULT_CLUSTER = 8;

/**
 * Bytes of cuda/collect_dqn_cluster.cu's shared-memory plan per CTA (the kernel asserts its own sum
 * equals this): the CTA's slices (ceil(Out / C) rows of every layer, rows padded to a multiple of 4
 * floats and off a multiple of 32, then the biases; TF32: rows padded to 8, 16-padded inputs) of the
 * online dueling net (trunk 0, trunk 1, both streams' hidden layers as one, both output layers as
 * one, TF32: the advantage layer alone); then for all E episodes states, two trunk buffers, value ++
 * advantages and next states; the curiosity input, hidden and output rows of the CTA's own
 * episodes; actions; TF32: the split-K partial sums of a layer; the exchanges' five mbarriers; the
 * curiosity model's weights where the whole plan still fits 227 KiB; then the owned episodes'
 * 20-word simulator state.
 */
export function cudaClusterSharedBytes(
  o: Pick<CollectDqnOptions, 'tileEpisodes' | 'cluster' | 'tf32'> & { threads?: number },
): number {
  const c = o.cluster ?? DEFAULT_CLUSTER;
  const e = o.tileEpisodes;
  const rows = (out: number) => Math.ceil(out / c);
  const ldw = (inp: number) => (align4(inp) % 32 === 0 ? align4(inp) + 4 : align4(inp));
  // TF32: rows padded to n8 tiles, K = round16(in) per row, then the biases.
  const mmaRows = (out: number) => Math.ceil(rows(out) / 8) * 8;
  const mmaK = (inp: number) => Math.ceil(inp / 16) * 16;
  const slice = (inp: number, out: number) =>
    o.tf32 ? mmaRows(out) * mmaK(inp) + mmaRows(out) : rows(out) * ldw(inp) + align4(rows(out));
  // The sliced output layer: value ++ advantages (exact), advantages alone (TF32: each CTA takes the
  // value column itself).
  const outs = o.tf32 ? NUM_ACTIONS : 1 + NUM_ACTIONS;
  let at = slice(54, 256) + slice(256, 256) + slice(256, 256) + slice(128, outs);
  // States, two trunk buffers, value ++ advantages, next states.
  for (const width of [
    tileStride(54),
    tileStride(256),
    tileStride(256),
    tileStride(NUM_ACTIONS),
    tileStride(54),
  ])
    at = align4(at + e * width);
  const owned = Math.ceil(e / c);
  for (const [rows, width] of [
    // The curiosity input, hidden and output rows of the CTA's own episodes.
    [owned, tileStride(64)],
    [owned, tileStride(64)],
    [owned, tileStride(32)],
    // Actions.
    [e, 1],
  ])
    at = align4(at + rows * width);
  if (o.tf32) {
    // Partial sums of a layer phase: the largest split-K plan.
    const warps = Math.floor((o.threads ?? 256) / 32);
    const part = (inp: number, out: number) => {
      const plan = splitkPlan(mmaRows(out) / 8, mmaK(inp) / 16, warps);
      return (plan % 16) * e * mmaRows(out);
    };
    const parts = [part(54, 256), part(256, 256), part(128, outs)];
    at = align4(at + Math.max(...parts));
  }
  // The exchanges' five mbarriers (8 bytes each; used by the CLUSTER_MBAR build).
  at = align4(at + 10);
  // The curiosity model's weights where they fit (rows at odd strides): 35 -> 64 -> 32.
  const odd = (n: number) => (n % 2 ? n : n + 1);
  const curiosity = 64 * odd(35) + 64 + 32 * odd(64) + 32;
  const episodes = owned * 20;
  if (align4(align4(at + curiosity) + episodes) * 4 <= CUDA_MAX_SHARED) at = align4(at + curiosity);
  return align4(at + episodes) * 4;
}

/**
 * cuda/mlp_splitk.cuh splitk_plan: the warp task plan of a tensor-core layer with `nt` n8 column
 * tiles and `k16` k16 steps on `warps` warps, as WN * 16 + KSPLIT (0: no plan fits).
 */
export function splitkPlan(nt: number, k16: number, warps: number): number {
  let best = 0;
  let cost = 1 << 30;
  for (let wn = 1; wn <= 4; wn *= 2) {
    const ng = Math.ceil(nt / wn);
    for (let ks = 1; ks <= k16 && ks <= 8; ks++) {
      if (k16 % ks !== 0 || ng * ks > warps) continue;
      const c = wn * (k16 / ks) + 2 * ks;
      if (c < cost) {
        cost = c;
        best = wn * 16 + ks;
      }
    }
  }
  return best;
}

/**
 * Bytes of the CUDA tiled kernel's shared-memory plan for the plain head (cuda/collect_dqn.cu:
 * act [E, LD_TRUNK], v [E], a [E, LD_Q], the episodes' 20-word simulator state; past 48 KiB, in
 * dynamic shared memory, also hid [E, LD_TRUNK]), or 0 for the other heads and the seed variant,
 * whose plans stay within static shared memory. The kernel asserts that its own sum equals this
 * number whenever it is used.
 */
export function cudaDqnSharedBytes(o: Pick<CollectDqnOptions, 'head' | 'variant' | 'tileEpisodes'>): number {
  if (o.variant === 'seed' || o.head !== 'plain') return 0;
  const e = o.tileEpisodes;
  const act = align4(e * tileStride(256));
  const a = align4(act + e);
  const episodes = align4(a + e * tileStride(NUM_ACTIONS));
  const bytes = align4(episodes + e * 20) * 4;
  return bytes > CUDA_STATIC_SHARED ? bytes + e * tileStride(256) * 4 : bytes;
}

export function collectDqnSpec(o: CollectDqnOptions): KernelSpec {
  checkDqnOptions(o);
  const q = duelingLayout(o.head, o.atoms, o.iqnEmbed);
  const c = curiosityLayout();
  if (o.variant === 'cluster') {
    const cluster = o.cluster ?? DEFAULT_CLUSTER;
    const bytes = cudaClusterSharedBytes(o);
    return {
      name: 'collect_dqn_cluster',
      sharedBytes: bytes,
      cluster: [cluster, 1, 1],
      bindings: COLLECT_BINDINGS,
      uniforms: [...DQN_UNIFORMS],
      workgroupSize: [o.threads, 1, 1],
      constants: {
        HEAD: HeadCode.plain,
        CLUSTER: cluster,
        TF32: o.tf32 ? 1 : 0,
        TILE_E: o.tileEpisodes,
        DYN_SMEM_BYTES: bytes,
        ...commonConstants(),
        ...envStateConstants(),
        ...netConstants('NET_Q', q, 0),
        ...netConstants('NET_C', c, q.size),
        ...outputConstants(DQN_OUTPUT),
      },
    };
  }
  // Past 48 KiB the CUDA twin takes its plan from dynamic shared memory (the WGSL twin never
  // gets such a tile: its workgroup memory limit rejects it first).
  const shared = cudaDqnSharedBytes(o);
  const dynamic: Record<string, number> = shared > CUDA_STATIC_SHARED ? { DYN_SMEM_BYTES: shared } : {};
  return {
    name: 'collect_dqn',
    ...(shared > CUDA_STATIC_SHARED ? { sharedBytes: shared } : {}),
    bindings: COLLECT_BINDINGS,
    uniforms: [...DQN_UNIFORMS],
    workgroupSize: [o.threads, 1, 1],
    constants: {
      HEAD: HeadCode[o.head],
      ATOMS: o.head === 'c51' ? o.atoms : 1,
      IQN_EMBED: o.iqnEmbed,
      ACT_TAUS: o.actTaus,
      SEED_VARIANT: o.variant === 'seed' ? 1 : 0,
      TILE_E: episodesPerGroup(o),
      ...dqnTileConstants(o),
      ...commonConstants(),
      ...envStateConstants(),
      // Heads without an IQN embedding still name it (offset 0, never read) so that one
      // shader source compiles for every head.
      ...(o.head === 'iqn' ? {} : { NET_Q_TAU_EMBED_W: 0, NET_Q_TAU_EMBED_B: 0 }),
      ...netConstants('NET_Q', q, 0),
      ...netConstants('NET_C', c, q.size),
      ...outputConstants(DQN_OUTPUT),
      ...dynamic,
    },
  };
}

/** Floats of the nets buffer: online, curiosity. */
export function dqnNetsSize(o: Pick<CollectDqnOptions, 'head' | 'atoms' | 'iqnEmbed'>): number {
  return duelingLayout(o.head, o.atoms, o.iqnEmbed).size + curiosityLayout().size;
}

/** The launch over all N episodes: buffers in COLLECT_BINDINGS order, uniforms complete. */
export function collectDqnDispatch(
  spec: KernelSpec,
  buffers: DeviceBuffer[],
  uniforms: Record<string, number>,
): Dispatch {
  const perGroup = spec.constants!.TILE_E;
  const cluster = spec.cluster?.[0];
  // Clusters are consecutive blocks along x, so their grid stays one-dimensional.
  if (cluster !== undefined)
    return { kernel: spec, buffers, uniforms, groups: [Math.ceil(uniforms.n / perGroup) * cluster, 1, 1] };
  return { kernel: spec, buffers, uniforms, groups: grid1d(Math.ceil(uniforms.n / perGroup)) };
}

const HEADS: QHead[] = ['plain', 'c51', 'iqn'];

/**
 * The CPU twin: the reference collector (src/collect/dqn.ts) run on views of the bindings, so
 * episode state and outputs land exactly where the GPU twins keep them. It always steps all N
 * episodes (collectDqnDispatch's grid covers them).
 */
function collectDqnReference(buffers: TypedArray[], u: Record<string, number>): void {
  const [features, ohlc, spread, entropy, nets, envF, envI, window, outF, outI] = buffers;
  const head = HEADS[u.head];
  if (!head) throw new Error(`collect_dqn: unknown head code ${u.head}`);
  const layout = duelingLayout(head, u.atoms, u.iqnEmbed);
  const cur = curiosityLayout();
  const q = layout.size;
  const env = envFromBuffers(u, envF as Float32Array, envI as Int32Array, window as Int32Array);
  const market = marketFromBuffers(features as Float32Array, ohlc as Float32Array, spread as Float32Array);
  const params = envParamsFromUniforms(u, entropy as Float32Array);
  const f32 = nets as Float32Array;
  const dqnNets: DqnNets = {
    head,
    layout,
    online: f32.subarray(0, q),
    support: { vMin: u.vMin, vMax: u.vMax, atoms: u.atoms },
    actTaus: u.actTaus,
  };
  const curiosity = u.curiosity ? { layout: cur, params: f32.subarray(q, q + cur.size) } : null;
  const v = sectionViews(DQN_OUTPUT, outF as Float32Array, outI as Int32Array, u.n, u.steps);
  const rollout: DqnRollout = {
    n: u.n,
    steps: u.steps,
    states: v.states as Float32Array,
    actions: v.actions as Int32Array,
    rewards: v.rewards as Float32Array,
    nextStates: v.nextStates as Float32Array,
    dones: v.dones as Int32Array,
    truncateds: v.truncateds as Int32Array,
    components: v.components as Float32Array,
  };
  collectDqn(
    env,
    market,
    params,
    dqnNets,
    curiosity,
    { steps: u.steps, epsilon: u.epsilon, stepBase: u.stepBase },
    rollout,
  );
}

/** The cluster variant's kernel: its own CUDA source, the same CPU twin. */
export const collectDqnClusterKernel: Kernel = {
  spec: collectDqnSpec({
    head: 'plain',
    atoms: 51,
    iqnEmbed: 64,
    actTaus: 32,
    variant: 'cluster',
    cluster: DEFAULT_CLUSTER,
    tileEpisodes: 8,
    threads: 128,
    tj: 32,
    kt: 8,
    tauRows: 1,
  }),
  reference: collectDqnReference,
};

export const collectDqnKernel: Kernel = {
  spec: collectDqnSpec({
    head: 'plain',
    atoms: 51,
    iqnEmbed: 64,
    actTaus: 32,
    variant: 'tiled',
    tileEpisodes: 32,
    threads: 256,
    tj: 32,
    kt: 8,
    tauRows: 32,
  }),
  reference: collectDqnReference,
};

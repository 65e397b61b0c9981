/**
 * collect_ppo: L steps of N episodes in one launch (SPEC 6, 9): per step build the 54-float
 * state, run the actor, sample the action from the softmax of its logits (Philox), record its
 * log-probability and the critic's value, step the simulator (src/env/step.ts), write the
 * experience and restart finished episodes; after the last step, the critic's value of each
 * episode's next state bootstraps GAE, computed in the kernel by a backward scan over the
 * episode's L steps (advantages, returns = advantages + values).
 *
 * Bindings, uniform block and output layout: src/kernels/collect_layout.ts. Own uniforms:
 *   n, steps        N episodes, L steps
 *   stepBase        global step of the launch's first step (Philox action counter word 2)
 *   gamma, lambda   GAE
 *   curiosity       1: the curiosity bonus is on, 0: bonus 0
 * nets: actor at NET_A_BASE, critic at NET_V_BASE, curiosity at NET_C_BASE.
 *
 * Variants (constant SEED_VARIANT): 0 tiled, 1 the seed's one thread per episode (benchmark).
 */

import { collectPpo, type PpoNets } from '../collect/ppo.js';
import type { PpoRollout } from '../collect/rollout.js';
import { curiosityLayout, NUM_ACTIONS, ppoActorLayout, ppoCriticLayout, STATE_DIM } from '../nets/layout.js';
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

/**
 * Per-step outputs of collect_ppo: the fields of PpoRollout (src/collect/rollout.ts), same
 * names, same index (episode * L + step) and trailing dimension within each section.
 */
export const PPO_OUTPUT = outputLayout([
  { name: 'states', type: 'f32', width: 54 },
  { name: 'logProbs', type: 'f32', width: 1 },
  { name: 'values', type: 'f32', width: 1 },
  { name: 'rewards', type: 'f32', width: 1 },
  { name: 'advantages', type: 'f32', width: 1 },
  { name: 'returns', type: 'f32', width: 1 },
  { name: 'components', type: 'f32', width: 5 },
  { name: 'actions', type: 'i32', width: 1 },
  { name: 'dones', type: 'i32', width: 1 },
  { name: 'truncateds', type: 'i32', width: 1 },
]);

export interface CollectPpoOptions {
  variant: 'tiled' | 'seed';
  /** Episodes per workgroup (tiled); the seed variant has one per thread. */
  tileEpisodes: number;
  threads: number;
  /** WGSL tile engine: threads across a layer's outputs (the rest split the rows). */
  tj: number;
  /** WGSL tile engine: inputs per weight slice staged in workgroup memory (a multiple of 4). */
  kt: number;
  /** WGSL tile engine, 0 (default) or 2: see CollectDqnOptions.engine. */
  engine?: number;
}

/** The WGSL tile engine's shape (collect_tile.wgsl): rows, strides, widest layer, accumulators. */
export function ppoTileConstants(o: CollectPpoOptions): Record<string, number> {
  if (o.variant === 'seed')
    return {
      TJ: o.threads,
      KT: 4,
      ROWS: 1,
      ACT_W: 4,
      QW: 4,
      WS_OUT: 4,
      MJ_MAX: 1,
      ENGINE: 0,
      MQ: 1,
    };
  return {
    TJ: o.tj,
    KT: o.kt,
    ...tileEngineConstants(o.engine ?? 0, o.tileEpisodes, o.threads, o.tj, 512),
    ACT_W: 512,
    QW: 48,
    WS_OUT: 512,
    MJ_MAX: Math.ceil(512 / o.tj),
  };
}

/** Workgroup memory the WGSL kernel declares for these options, in bytes. */
export function ppoWorkgroupBytes(o: CollectPpoOptions): number {
  const c = ppoTileConstants(o);
  const e = o.variant === 'seed' ? o.threads : o.tileEpisodes;
  // The engine's activation array, plus the other engine's one-element array (a vec4 or a f32).
  return (
    (c.ROWS * c.ACT_W + (isQuadEngine(c.ENGINE) ? 1 : 4) + c.KT * c.WS_OUT + c.ROWS * c.QW + e * 8 + 1) * 4
  );
}

export function checkPpoOptions(o: CollectPpoOptions): void {
  if (o.variant !== 'tiled') return;
  if (o.threads % o.tj !== 0) throw new Error(`collect_ppo: tj ${o.tj} must divide threads ${o.threads}`);
  if (o.kt % 4 !== 0) throw new Error(`collect_ppo: kt ${o.kt} must be a multiple of 4`);
  if (o.tileEpisodes > o.threads)
    throw new Error('collect_ppo: a tile cannot own more episodes than threads');
  checkEngine('collect_ppo', o.engine ?? 0, o.threads, 512);
}

export const PPO_UNIFORMS = [
  { name: 'n', type: 'u32' },
  { name: 'steps', type: 'u32' },
  { name: 'stepBase', type: 'u32' },
  { name: 'gamma', type: 'f32' },
  { name: 'lambda', type: 'f32' },
  { name: 'curiosity', type: 'u32' },
  ...ENV_UNIFORMS,
] as const satisfies KernelSpec['uniforms'];

/** Row stride of a CUDA shared activation buffer (cuda/mlp_tile.cuh tile_stride). */
const tileStride = (width: number) => {
  const w = Math.ceil(width / 16) * 16;
  return w % 32 === 16 ? w : w + 16;
};
const align4 = (floats: number) => Math.ceil(floats / 4) * 4;
/** Static shared memory a CUDA block may declare; larger plans use dynamic shared memory. */
const CUDA_STATIC_SHARED = 48 * 1024;

/**
 * Bytes of the CUDA tiled kernel's shared-memory plan (cuda/collect_ppo.cu: xs [E, LD_STATE], act
 * [E, LD_CRITIC], logits [E, LD_Q], value [E], one flag, the episodes' 20-word simulator state),
 * or 0 for the seed variant. Past 48 KiB (more than 16 episodes) the kernel takes it from dynamic
 * shared memory and asserts that its own sum equals this number.
 */
export function cudaPpoSharedBytes(o: Pick<CollectPpoOptions, 'variant' | 'tileEpisodes'>): number {
  if (o.variant === 'seed') return 0;
  const e = o.tileEpisodes;
  const act = align4(e * tileStride(STATE_DIM));
  const logits = align4(act + e * tileStride(512));
  const value = align4(logits + e * tileStride(NUM_ACTIONS));
  const flag = align4(value + e);
  const episodes = align4(flag + 1);
  return align4(episodes + e * 20) * 4;
}

export function collectPpoSpec(o: CollectPpoOptions): KernelSpec {
  checkPpoOptions(o);
  const a = ppoActorLayout();
  const v = ppoCriticLayout();
  const c = curiosityLayout();
  // Past 48 KiB the CUDA twin takes its plan from dynamic shared memory (the WGSL twin never
  // gets such a tile: its workgroup memory limit rejects it first).
  const shared = cudaPpoSharedBytes(o);
  const dynamic = shared > CUDA_STATIC_SHARED;
  return {
    name: 'collect_ppo',
    ...(dynamic ? { sharedBytes: shared } : {}),
    bindings: COLLECT_BINDINGS,
    uniforms: [...PPO_UNIFORMS],
    workgroupSize: [o.threads, 1, 1],
    constants: {
      SEED_VARIANT: o.variant === 'seed' ? 1 : 0,
      TILE_E: o.variant === 'seed' ? o.threads : o.tileEpisodes,
      ...(dynamic ? { DYN_SMEM_BYTES: shared } : {}),
      ...ppoTileConstants(o),
      ...commonConstants(),
      ...envStateConstants(),
      ...netConstants('NET_A', a, 0),
      ...netConstants('NET_V', v, a.size),
      ...netConstants('NET_C', c, a.size + v.size),
      ...outputConstants(PPO_OUTPUT),
    },
  };
}

/** Floats of the nets buffer: actor, critic, curiosity. */
export function ppoNetsSize(): number {
  return ppoActorLayout().size + ppoCriticLayout().size + curiosityLayout().size;
}

/** The launch over all N episodes: buffers in COLLECT_BINDINGS order, uniforms complete. */
export function collectPpoDispatch(
  spec: KernelSpec,
  buffers: DeviceBuffer[],
  uniforms: Record<string, number>,
): Dispatch {
  return { kernel: spec, buffers, uniforms, groups: grid1d(Math.ceil(uniforms.n / spec.constants!.TILE_E)) };
}

/**
 * The CPU twin: the reference collector (src/collect/ppo.ts, GAE included) run on views of the
 * bindings. It always steps all N episodes (collectPpoDispatch's grid covers them).
 */
function collectPpoReference(buffers: TypedArray[], u: Record<string, number>): void {
  const [features, ohlc, spread, entropy, nets, envF, envI, window, outF, outI] = buffers;
  const actorLayout = ppoActorLayout();
  const criticLayout = ppoCriticLayout();
  const cur = curiosityLayout();
  const a = actorLayout.size;
  const v = criticLayout.size;
  const f32 = nets as Float32Array;
  const env = envFromBuffers(u, envF as Float32Array, envI as Int32Array, window as Int32Array);
  const market = marketFromBuffers(features as Float32Array, ohlc as Float32Array, spread as Float32Array);
  const params = envParamsFromUniforms(u, entropy as Float32Array);
  const ppoNets: PpoNets = {
    actorLayout,
    actor: f32.subarray(0, a),
    criticLayout,
    critic: f32.subarray(a, a + v),
  };
  const curiosity = u.curiosity ? { layout: cur, params: f32.subarray(a + v, a + v + cur.size) } : null;
  const s = sectionViews(PPO_OUTPUT, outF as Float32Array, outI as Int32Array, u.n, u.steps);
  const rollout: PpoRollout = {
    n: u.n,
    steps: u.steps,
    states: s.states as Float32Array,
    actions: s.actions as Int32Array,
    logProbs: s.logProbs as Float32Array,
    values: s.values as Float32Array,
    rewards: s.rewards as Float32Array,
    dones: s.dones as Int32Array,
    truncateds: s.truncateds as Int32Array,
    advantages: s.advantages as Float32Array,
    returns: s.returns as Float32Array,
    components: s.components as Float32Array,
  };
  collectPpo(
    env,
    market,
    params,
    ppoNets,
    curiosity,
    { steps: u.steps, stepBase: u.stepBase, gamma: u.gamma, lambda: u.lambda },
    rollout,
  );
}

export const collectPpoKernel: Kernel = {
  spec: collectPpoSpec({ variant: 'tiled', tileEpisodes: 16, threads: 256, tj: 32, kt: 4 }),
  reference: collectPpoReference,
};

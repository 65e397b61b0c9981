/**
 * collect_dqn: L steps of N episodes in one launch (SPEC 6, 9): per step build the 54-float
 * state, run the online dueling net, choose the action epsilon-greedily (Philox), step the
 * simulator (src/env/step.ts), run the target net on the next state for the TD error, write the
 * experience, restart finished episodes. Episode state persists in env_f / env_i / div_window.
 *
 * Bindings, uniform block and output layout: src/kernels/collect_layout.ts. Own uniforms:
 *   n, steps        N episodes, L steps
 *   stepBase        global step of the launch's first step (Philox action counter word 2 is
 *                   stepBase + t: consecutive launches continue the streams)
 *   epsilon, gamma  exploration rate, discount of the TD error
 *   vMin, vMax      C51 support (ignored by the other heads)
 *   curiosity       1: the curiosity bonus is on (its net is in `nets`), 0: bonus 0
 *   head, atoms, actTaus  the head as data for the CPU twin; the GPU twins use the equal constants
 * nets: online dueling net at NET_Q_BASE, target at NET_T_BASE (same layout), curiosity at
 * NET_C_BASE.
 *
 * Variants (constant SEED_VARIANT): 0, the tiled kernel (a workgroup owns TILE_E episodes and
 * runs each layer as a small matrix product with the weights staged in workgroup memory);
 * 1, the seed design (one thread per episode, every weight read from global memory), kept only
 * for the benchmark.
 */
import type { DeviceBuffer, Dispatch, KernelSpec } from '../backend/types.js';
import { curiosityLayout, duelingLayout, type QHead } from '../nets/layout.js';
import {
  COLLECT_BINDINGS,
  ENV_UNIFORMS,
  envStateConstants,
  netConstants,
  outputConstants,
  outputLayout,
} from './collect_layout.js';
import { grid1d } from './grid.js';

export const HeadCode: Record<QHead, number> = { plain: 0, c51: 1, iqn: 2 };

/** Per-step outputs of collect_dqn (index = episode * L + step within each section). */
export const DQN_OUTPUT = outputLayout([
  { name: 'states', type: 'f32', width: 54 },
  { name: 'nextStates', type: 'f32', width: 54 },
  { name: 'rewards', type: 'f32', width: 1 },
  { name: 'tdErrors', type: 'f32', width: 1 },
  { name: 'pnl', type: 'f32', width: 1 },
  { name: 'barrier', type: 'f32', width: 1 },
  { name: 'risk', type: 'f32', width: 1 },
  { name: 'diversity', type: 'f32', width: 1 },
  { name: 'curiosity', type: 'f32', width: 1 },
  { name: 'actions', type: 'i32', width: 1 },
  { name: 'dones', type: 'i32', width: 1 },
  { name: 'truncated', type: 'i32', width: 1 },
]);

export interface CollectDqnOptions {
  head: QHead;
  /** C51 atoms per action. */
  atoms: number;
  /** IQN cosine features. */
  iqnEmbed: number;
  /** IQN taus per acting decision (K). */
  actTaus: number;
  /** `tiled` (the kernel) or `seed` (one thread per episode, benchmark only). */
  variant: 'tiled' | 'seed';
  /** Episodes per workgroup (tiled); the seed variant has one per thread. */
  tileEpisodes: number;
  /** Threads per workgroup. */
  threads: number;
}

export const DQN_UNIFORMS = [
  { name: 'n', type: 'u32' },
  { name: 'steps', type: 'u32' },
  { name: 'stepBase', type: 'u32' },
  { name: 'epsilon', type: 'f32' },
  { name: 'gamma', type: 'f32' },
  { name: 'vMin', type: 'f32' },
  { name: 'vMax', type: 'f32' },
  { name: 'curiosity', type: 'u32' },
  { name: 'head', type: 'u32' },
  { name: 'atoms', type: 'u32' },
  { name: 'actTaus', type: 'u32' },
  ...ENV_UNIFORMS,
] as const satisfies KernelSpec['uniforms'];

/** Episodes one workgroup owns. */
export function episodesPerGroup(o: Pick<CollectDqnOptions, 'variant' | 'tileEpisodes' | 'threads'>): number {
  return o.variant === 'seed' ? o.threads : o.tileEpisodes;
}

export function collectDqnSpec(o: CollectDqnOptions): KernelSpec {
  const q = duelingLayout(o.head, o.atoms, o.iqnEmbed);
  const c = curiosityLayout();
  return {
    name: 'collect_dqn',
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
      ...envStateConstants(),
      ...netConstants('NET_Q', q, 0),
      ...netConstants('NET_T', q, q.size),
      ...netConstants('NET_C', c, 2 * q.size),
      ...outputConstants(DQN_OUTPUT),
    },
  };
}

/** Floats of the nets buffer: online, target, curiosity. */
export function dqnNetsSize(o: Pick<CollectDqnOptions, 'head' | 'atoms' | 'iqnEmbed'>): number {
  return 2 * duelingLayout(o.head, o.atoms, o.iqnEmbed).size + curiosityLayout().size;
}

/** The launch over all N episodes: buffers in COLLECT_BINDINGS order, uniforms complete. */
export function collectDqnDispatch(
  spec: KernelSpec,
  buffers: DeviceBuffer[],
  uniforms: Record<string, number>,
): Dispatch {
  const perGroup = spec.constants!.TILE_E;
  return { kernel: spec, buffers, uniforms, groups: grid1d(Math.ceil(uniforms.n / perGroup)) };
}

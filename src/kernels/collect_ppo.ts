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
import type { DeviceBuffer, Dispatch, KernelSpec } from '../backend/types.js';
import { curiosityLayout, ppoActorLayout, ppoCriticLayout } from '../nets/layout.js';
import {
  COLLECT_BINDINGS,
  ENV_UNIFORMS,
  envStateConstants,
  netConstants,
  outputConstants,
  outputLayout,
} from './collect_layout.js';
import { grid1d } from './grid.js';

/** Per-step outputs of collect_ppo (index = episode * L + step within each section). */
export const PPO_OUTPUT = outputLayout([
  { name: 'states', type: 'f32', width: 54 },
  { name: 'logProbs', type: 'f32', width: 1 },
  { name: 'values', type: 'f32', width: 1 },
  { name: 'rewards', type: 'f32', width: 1 },
  { name: 'advantages', type: 'f32', width: 1 },
  { name: 'returns', type: 'f32', width: 1 },
  { name: 'pnl', type: 'f32', width: 1 },
  { name: 'barrier', type: 'f32', width: 1 },
  { name: 'risk', type: 'f32', width: 1 },
  { name: 'diversity', type: 'f32', width: 1 },
  { name: 'curiosity', type: 'f32', width: 1 },
  { name: 'actions', type: 'i32', width: 1 },
  { name: 'dones', type: 'i32', width: 1 },
  { name: 'truncated', type: 'i32', width: 1 },
]);

export interface CollectPpoOptions {
  variant: 'tiled' | 'seed';
  /** Episodes per workgroup (tiled); the seed variant has one per thread. */
  tileEpisodes: number;
  threads: number;
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

export function collectPpoSpec(o: CollectPpoOptions): KernelSpec {
  const a = ppoActorLayout();
  const v = ppoCriticLayout();
  const c = curiosityLayout();
  return {
    name: 'collect_ppo',
    bindings: COLLECT_BINDINGS,
    uniforms: [...PPO_UNIFORMS],
    workgroupSize: [o.threads, 1, 1],
    constants: {
      SEED_VARIANT: o.variant === 'seed' ? 1 : 0,
      TILE_E: o.variant === 'seed' ? o.threads : o.tileEpisodes,
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

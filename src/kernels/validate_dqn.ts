/**
 * validate_dqn: the validation backtest (src/eval/backtest.ts) of a DQN-family greedy policy as
 * one launch (the DQN twin of validate_policy.ts: same bindings, episode, outputs and trace). One
 * workgroup of 256 threads runs the dueling net of `duelingLayout` (src/nets/layout.ts) per step:
 * the trunk 54 -> 256 -> 256 and both streams' hidden layers one output per thread, the streams'
 * output layers in groups of four outputs per thread (C51's 45 x atoms advantages loop), then
 *   plain  Q = V + A - mean A, first argmax (forward.ts forwardDueling's f32 order);
 *   c51    per action the softmax over atoms of V + A - mean_a A, Q = expectation over the
 *          support vMin .. vMax, first argmax (forwardC51's order);
 * and thread 0 steps the simulator (wgsl/validate_env.wgsl, cuda/validate_env.cuh). IQN is not
 * supported (its greedy policy averages 32 tau passes): the device engine validates IQN on the host.
 *
 * Bindings: collect_ppo's / collect_dqn's (src/kernels/collect_layout.ts); the online net is read
 * from `nets` at float `netBase` (the device DQN engine passes the collector's nets buffer, which
 * holds the online net at 0 after every train epoch: no copy). Own uniforms:
 *   n (1), steps (splitEnd - splitStart - 1), netBase, vMin, vMax (the C51 support, f32),
 *   head (0 plain, 1 c51) and atoms: the head as data for the CPU twin (the GPU twins use the
 *   equal constants HEAD, ATOMS),
 * then ENV_UNIFORMS with barrierTerminates 0 and episodeBars = steps (backtestParams).
 * Outputs: VALIDATE_OUTPUT (values, exposure, traded, actions; see validate_policy.ts).
 */

import type { SplitRange } from '../data/types.js';
import type { EnvParams } from '../env/params.js';
import { backtestParams } from '../eval/backtest.js';
import { dqnGreedyPolicy } from '../eval/policies.js';
import { duelingLayout, layerByName, NUM_ACTIONS, type QHead, STATE_DIM } from '../nets/layout.js';
import { seedToKey } from '../rng/philox.js';
import {
  COLLECT_BINDINGS,
  commonConstants,
  ENV_UNIFORMS,
  envStateConstants,
  envUniforms,
  netConstants,
  outputConstants,
} from './collect_layout.js';
import type { Kernel, TypedArray } from './reference.js';
import type { DeviceBuffer, Dispatch, KernelSpec } from './spec.js';
import { VALIDATE_OUTPUT, validateReference, validateSteps } from './validate_policy.js';

/** Threads of the workgroup: one per output of the trunk's layers (256). */
export const VALIDATE_DQN_THREADS = 256;

/** Workgroup memory WebGPU guarantees (maxComputeWorkgroupStorageSize), which the plan must fit. */
const WORKGROUP_BYTES = 16384;

export const VALIDATE_DQN_UNIFORMS = [
  { name: 'n', type: 'u32' },
  { name: 'steps', type: 'u32' },
  { name: 'netBase', type: 'u32' },
  { name: 'vMin', type: 'f32' },
  { name: 'vMax', type: 'f32' },
  { name: 'head', type: 'u32' },
  { name: 'atoms', type: 'u32' },
  ...ENV_UNIFORMS,
] as const satisfies KernelSpec['uniforms'];

/** The head of the validated net: plain or C51 with `atoms` atoms per action. */
export interface ValidateDqnHead {
  head: QHead;
  atoms: number;
}

/** Floats of the kernels' workgroup plan: layer input, streams' hidden, V and A, mean over actions, Q. */
function planFloats(atoms: number): number {
  return 2 * VALIDATE_DQN_THREADS + atoms * (NUM_ACTIONS + 1) + atoms + 48;
}

/** Why validate_dqn cannot run this head, or null when it can. */
export function validateDqnUnsupported(o: ValidateDqnHead): string | null {
  if (o.head === 'iqn') return 'validate_dqn runs the plain and C51 heads only, not IQN';
  if (o.head === 'c51') {
    if (!Number.isInteger(o.atoms) || o.atoms < 2)
      return `validate_dqn: C51 atoms ${o.atoms} must be an integer >= 2`;
    const bytes = 4 * planFloats(o.atoms) + 16;
    if (bytes > WORKGROUP_BYTES)
      return `validate_dqn: C51 with ${o.atoms} atoms needs ${bytes} bytes of workgroup memory (> ${WORKGROUP_BYTES}); at most 75 atoms`;
  }
  return null;
}

export function validateDqnSpec(o: ValidateDqnHead = { head: 'plain', atoms: 51 }): KernelSpec {
  const why = validateDqnUnsupported(o);
  if (why) throw new Error(why);
  const atoms = o.head === 'c51' ? o.atoms : 1;
  const layout = duelingLayout(o.head, atoms);
  const W = VALIDATE_DQN_THREADS;
  const width = (name: string) => layerByName(layout, name).out;
  const t0 = width('shared_layers.0');
  const t1 = width('shared_layers.1');
  if (layerByName(layout, 'shared_layers.0').in !== STATE_DIM || t0 > W || t1 > W)
    throw new Error(`validate_dqn: the trunk's layers must be at most ${W} wide`);
  if (width('value_stream.0') + width('advantage_stream.0') > W)
    throw new Error(`validate_dqn: the streams' hidden layers together must be at most ${W} wide`);
  return {
    name: 'validate_dqn',
    bindings: COLLECT_BINDINGS,
    uniforms: [...VALIDATE_DQN_UNIFORMS],
    workgroupSize: [W, 1, 1],
    constants: {
      ENGINE: 0,
      ...commonConstants(),
      ...envStateConstants(),
      ...netConstants('NET_Q', layout, 0),
      ...outputConstants(VALIDATE_OUTPUT),
      HEAD: o.head === 'c51' ? 1 : 0,
      ATOMS: atoms,
      HEAD_OUT: atoms * (NUM_ACTIONS + 1),
    },
  };
}

/** Where the online net is and the C51 support (ignored by the plain head). */
export interface ValidateDqnNet extends ValidateDqnHead {
  /** Float offset of the online net in the nets buffer. */
  netBase: number;
  vMin: number;
  vMax: number;
}

/** The launch's uniforms for the backtest over `split` with the simulator parameters `params`. */
export function validateDqnUniforms(
  params: EnvParams,
  split: SplitRange,
  net: ValidateDqnNet,
): Record<string, number> {
  const steps = validateSteps(split);
  if (!Number.isInteger(net.netBase) || net.netBase < 0 || net.netBase % 4 !== 0)
    throw new Error(
      `validate_dqn: netBase ${net.netBase} must be an integer >= 0 and a multiple of 4 (16-byte loads)`,
    );
  return {
    n: 1,
    steps,
    netBase: net.netBase,
    vMin: net.vMin,
    vMax: net.vMax,
    head: net.head === 'c51' ? 1 : 0,
    atoms: net.head === 'c51' ? net.atoms : 1,
    // The key only seeds restarts, which the backtest never reaches (it stops at a collapse).
    ...envUniforms(backtestParams(params, steps), split, seedToKey(0)),
  };
}

/** One workgroup runs the whole backtest. */
export function validateDqnDispatch(
  spec: KernelSpec,
  buffers: DeviceBuffer[],
  uniforms: Record<string, number>,
): Dispatch {
  return { kernel: spec, buffers, uniforms, groups: [1, 1, 1] };
}

/** The CPU twin: the host backtest's rollout with dqnGreedyPolicy (validateReference). */
function validateDqnReference(buffers: TypedArray[], u: Record<string, number>): void {
  const head: QHead = u.head === 1 ? 'c51' : 'plain';
  const layout = duelingLayout(head, u.atoms);
  const support = { vMin: u.vMin, vMax: u.vMax, atoms: u.atoms };
  validateReference(buffers, u, (nets) => {
    const online = nets.subarray(u.netBase, u.netBase + layout.size);
    if (online.length !== layout.size)
      throw new Error(
        `validate_dqn: nets holds ${nets.length} floats, the net at ${u.netBase} needs ${layout.size}`,
      );
    return dqnGreedyPolicy(head, layout, online, support, 1);
  });
}

export const validateDqnKernel: Kernel = {
  spec: validateDqnSpec(),
  reference: validateDqnReference,
};

/**
 * validate_policy: the validation backtest (src/eval/backtest.ts) as a sequence of launches of at
 * most validateChunkSteps steps each (validateChunks). One workgroup runs PPO's greedy policy (the
 * argmax of the actor's logits, src/eval/policies.ts) over the split [splitStart, splitEnd) as one
 * episode: it starts flat at splitStart, decides at every bar up to splitEnd - 2, barriers close
 * positions without ending it, no truncation, and a collapse (V <= collapseFraction * V_0) stops
 * trading with the rest of the curve flat. Per step the
 * threads share the actor's layers (one output each, f32 sums in the reference order), then one
 * thread steps the simulator (wgsl/collect_env.wgsl, cuda/collect_env.cuh).
 *
 * Chunks: a launch runs steps [stepBegin, stepEnd) of the episode. The first (stepBegin 0) starts
 * the episode; every launch leaves the episode in env_f / env_i (collect_env's layout, slot 0) and
 * the stop flag (1 after a collapse) at env_i[ENV_I], past the episode's fields, and the next
 * launch resumes from there, so any chunking gives the one-launch trace bit for bit. A launch whose
 * episode has stopped (or stops) writes the flat tail of its own steps.
 *
 * Bindings: those of collect_ppo (src/kernels/collect_layout.ts), so the training collector's
 * market and nets buffers serve as they are (actor at NET_A_BASE = 0). env_f (ENV_F floats),
 * env_i (ENV_I + 1 ints: the stop flag last) and div_window are the validation's own one-episode
 * state. Outputs, N = 1 and L = steps (section * L + step):
 *   values    f32  V after the step (equity[k + 1] of the backtest; equity[0] = V_0)
 *   exposure  f32  position_norm of the step's units at close_{t+1} (the backtest's, in f32)
 *   traded    f32  notional traded in the step: the order's and a barrier exit's (the backtest
 *                  sums |units| * price in f64; CUDA the same products in f32, WGSL |cash change +
 *                  fee change| of each phase: both within f32 rounding of it)
 *   actions   i32  the greedy action (0 after a collapse, as the backtest leaves it)
 * Uniforms: n (1), steps (splitEnd - splitStart - 1), stepBegin and stepEnd (the launch's steps),
 * then ENV_UNIFORMS with barrierTerminates 0 and episodeBars = steps (backtestParams).
 */

import type { Market, SplitRange } from '../data/types.js';
import type { EnvParams } from '../env/params.js';
import { ENV_I } from '../env/state.js';
import { backtestParams, policyRollout } from '../eval/backtest.js';
import type { EquityTrace } from '../eval/metrics.js';
import { type Policy, ppoGreedyPolicy } from '../eval/policies.js';
import { ppoActorLayout } from '../nets/layout.js';
import { seedToKey } from '../rng/philox.js';
import {
  COLLECT_BINDINGS,
  commonConstants,
  ENV_UNIFORMS,
  envParamsFromUniforms,
  envStateConstants,
  envUniforms,
  marketFromBuffers,
  netConstants,
  outputConstants,
  outputLayout,
  sectionViews,
} from './collect_layout.js';
import type { Kernel, TypedArray } from './reference.js';
import type { DeviceBuffer, Dispatch, KernelSpec } from './spec.js';

export const VALIDATE_OUTPUT = outputLayout([
  { name: 'values', type: 'f32', width: 1 },
  { name: 'exposure', type: 'f32', width: 1 },
  { name: 'traded', type: 'f32', width: 1 },
  { name: 'actions', type: 'i32', width: 1 },
]);

/** Ints of the validation's env_i: the episode's ENV_I, then the stop flag (1 after a collapse). */
export const VALIDATE_ENV_INTS = ENV_I + 1;

/** Threads of the workgroup: at least the widest actor layer (128 outputs). */
export const VALIDATE_THREADS = 128;

export const VALIDATE_UNIFORMS = [
  { name: 'n', type: 'u32' },
  { name: 'steps', type: 'u32' },
  { name: 'stepBegin', type: 'u32' },
  { name: 'stepEnd', type: 'u32' },
  ...ENV_UNIFORMS,
] as const satisfies KernelSpec['uniforms'];

export function validatePolicySpec(): KernelSpec {
  const a = ppoActorLayout();
  const widest = Math.max(...a.layers.map((l) => l.out));
  if (widest > VALIDATE_THREADS)
    throw new Error(
      `validate_policy: the actor's widest layer (${widest}) exceeds ${VALIDATE_THREADS} threads`,
    );
  // The CUDA twin stages the actor in dynamic shared memory (its plan, then each layer's weights
  // and bias); the WGSL twin reads the nets buffer and ignores the constant.
  const sharedBytes = 4 * (196 + a.layers.reduce((n, l) => n + (l.in + 1) * l.out, 0));
  return {
    name: 'validate_policy',
    sharedBytes,
    bindings: COLLECT_BINDINGS,
    uniforms: [...VALIDATE_UNIFORMS],
    workgroupSize: [VALIDATE_THREADS, 1, 1],
    constants: {
      ENGINE: 0,
      DYN_SMEM_BYTES: sharedBytes,
      ...commonConstants(),
      ...envStateConstants(),
      ...netConstants('NET_A', a, 0),
      ...outputConstants(VALIDATE_OUTPUT),
    },
  };
}

/** Steps of the backtest over `split` (one decision per bar but the last). */
export function validateSteps(split: SplitRange): number {
  const steps = split.end - split.start - 1;
  if (steps < 1)
    throw new Error(
      `validate_policy: split [${split.start}, ${split.end}) has no step (it needs at least 2 bars)`,
    );
  return steps;
}

/**
 * The uniforms of the backtest over `split` with the simulator parameters `params`, as one launch
 * (stepBegin 0, stepEnd steps); validateChunks splits them.
 */
export function validateUniforms(params: EnvParams, split: SplitRange): Record<string, number> {
  const steps = validateSteps(split);
  // The key only seeds restarts, which the backtest never reaches (it stops at a collapse).
  return {
    n: 1,
    steps,
    stepBegin: 0,
    stepEnd: steps,
    ...envUniforms(backtestParams(params, steps), split, seedToKey(0)),
  };
}

/**
 * Steps of one validation launch at most on WebGPU (and the CPU). One workgroup walks the bars in
 * order, and a GPU without preemption inside a workgroup (many integrated ones) cannot run
 * anything else until the launch ends: Windows resets a device that does not answer for 2 s
 * (TDR), browsers lose it. At ~300 us a bar (C51 on an integrated GPU, the slowest head) 512
 * steps are ~0.15 s a launch.
 */
export const VALIDATE_CHUNK_STEPS = 512;

/**
 * Steps of one validation launch at most on CUDA. There the DQN family's validation runs beside
 * the next epoch's collection and train phase as a cluster of whole SMs, and every launch waits
 * for 16 SMs to drain: at 512 steps the C51 epoch on an H100 alternated 123 and 185 ms (the
 * validation 87 to 151 ms; docs/BENCHMARKS.md). 8,192 steps are two launches for the synthetic
 * market's split, ~0.1 s each for C51 on an H100.
 */
export const VALIDATE_CUDA_CHUNK_STEPS = 8192;

/** The launches' steps at most on a backend of this kind. */
export function validateChunkSteps(kind: string): number {
  return kind === 'cuda' ? VALIDATE_CUDA_CHUNK_STEPS : VALIDATE_CHUNK_STEPS;
}

/**
 * The launches' uniforms of a backtest whose one-launch uniforms are `u`: steps [0, steps) in
 * consecutive chunks of `chunkSteps` (the last one shorter), one launch where steps <= chunkSteps.
 */
export function validateChunks(
  u: Record<string, number>,
  chunkSteps = VALIDATE_CHUNK_STEPS,
): Record<string, number>[] {
  if (!Number.isInteger(chunkSteps) || chunkSteps < 1)
    throw new Error(`validate: chunkSteps ${chunkSteps} must be an integer >= 1`);
  const chunks: Record<string, number>[] = [];
  for (let begin = 0; begin < u.steps; begin += chunkSteps)
    chunks.push({ ...u, stepBegin: begin, stepEnd: Math.min(begin + chunkSteps, u.steps) });
  return chunks;
}

/** One workgroup runs the launch's steps of the backtest. */
export function validatePolicyDispatch(
  spec: KernelSpec,
  buffers: DeviceBuffer[],
  uniforms: Record<string, number>,
): Dispatch {
  return { kernel: spec, buffers, uniforms, groups: [1, 1, 1] };
}

/** Bytes of out_f and out_i for a backtest of `steps` steps. */
export function validateOutputBytes(steps: number): { f: number; i: number } {
  return { f: VALIDATE_OUTPUT.floatsPerStep * steps * 4, i: VALIDATE_OUTPUT.intsPerStep * steps * 4 };
}

/** The backtest's trace from the downloaded outputs (equity[0] = V_0, f64 as computeMetrics takes). */
export function traceFromOutputs(
  outF: Float32Array,
  outI: Int32Array,
  steps: number,
  initialCapital: number,
): { trace: EquityTrace; actions: Int32Array } {
  const s = sectionViews(VALIDATE_OUTPUT, outF, outI, 1, steps);
  const equity = new Float64Array(steps + 1);
  equity[0] = initialCapital;
  equity.set(s.values, 1);
  return {
    trace: { equity, exposure: Float64Array.from(s.exposure), traded: Float64Array.from(s.traded) },
    actions: Int32Array.from(s.actions),
  };
}

/**
 * The CPU twin of both validation kernels: the host backtest's rollout (policyRollout) with the
 * policy `policyOf` builds from the nets buffer, written out in f32 as the kernels write it. The
 * whole backtest runs in the first launch (stepBegin 0: the CPU has no launch time limit), the
 * later launches of a chunked backtest leave the outputs as they are; env_f and env_i are not
 * written.
 */
export function validateReference(
  buffers: TypedArray[],
  u: Record<string, number>,
  policyOf: (nets: Float32Array) => Policy,
): void {
  if (u.stepBegin !== 0) return;
  const [features, ohlc, spread, entropy, nets, , , , outF, outI] = buffers;
  const market: Market = marketFromBuffers(
    features as Float32Array,
    ohlc as Float32Array,
    spread as Float32Array,
  );
  const params = envParamsFromUniforms(u, entropy as Float32Array);
  const split = { start: u.splitStart, end: u.splitEnd };
  const { trace, actions } = policyRollout(market, split, params, policyOf(nets as Float32Array));
  const s = sectionViews(VALIDATE_OUTPUT, outF as Float32Array, outI as Int32Array, 1, u.steps);
  s.values.set(trace.equity.subarray(1));
  s.exposure.set(trace.exposure);
  s.traded.set(trace.traded);
  s.actions.set(actions);
}

function validatePolicyReference(buffers: TypedArray[], u: Record<string, number>): void {
  const actor = ppoActorLayout();
  validateReference(buffers, u, (nets) => ppoGreedyPolicy(nets.subarray(0, actor.size), actor));
}

export const validatePolicyKernel: Kernel = {
  spec: validatePolicySpec(),
  reference: validatePolicyReference,
};

/**
 * validate_dqn: the validation backtest (src/eval/backtest.ts) of a DQN-family greedy policy as a
 * sequence of launches of at most VALIDATE_CHUNK_STEPS steps (the DQN twin of validate_policy.ts:
 * same bindings, episode, chunks, outputs and trace). One
 * workgroup runs the dueling net of `duelingLayout` (src/nets/layout.ts) per step: of 256 threads
 * (what WebGPU guarantees), or 1024 where the device allows them (validateDqnThreads). The trunk
 * 54 -> 256 -> 256 and both streams' hidden layers one output per 256 threads, each output's inputs
 * in TRUNK_PARTS = threads / 256 parts added in order; the streams' output layers one output per
 * thread in rounds (C51), or, for the plain and IQN heads' 46 outputs, in OUT_PARTS parts of their
 * inputs a thread, added in order (validateOutputParts), then
 *   plain  Q = V + A - mean A, first argmax (forward.ts forwardDueling's f32 order);
 *   c51    per action the softmax over atoms of V + A - mean_a A, Q = expectation over the
 *          support vMin .. vMax, first argmax (forwardC51's order);
 *   iqn    per act tau t < K (K = dqn.iqnActTau, the host's fixed quadrature
 *          tau_t = f32((t + 0.5) / K) of dqnGreedyPolicy, no random draws) phi = relu(tau_embed(
 *          cos features of tau_t)), h = trunk * phi, the streams on h and the plain combination
 *          Q_t; Q = (sum_t Q_t in order) / K, first argmax (forwardIqn's order). phi of every
 *          act tau is computed by the first launch into the scratch past the transposed net, and
 *          the taus go through the streams eight at a time (one read of the streams' weights a group);
 * and thread 0 steps the simulator (wgsl/validate_env.wgsl, cuda/validate_env.cuh).
 *
 * Bindings: collect_ppo's / collect_dqn's (src/kernels/collect_layout.ts); the online net is read
 * from `nets` at float `netBase` (the device DQN engine passes the collector's nets buffer, which
 * holds the online net at 0 after every train epoch: no copy). Own uniforms:
 *   n (1), steps (splitEnd - splitStart - 1), stepBegin and stepEnd (the launch's steps, as
 *   validate_policy's), netBase, vMin, vMax (the C51 support, f32),
 *   head (0 plain, 1 c51, 2 iqn), atoms, actTaus and iqnEmbed: the head as data for the CPU twin
 *   (the GPU twins use the equal constants HEAD, ATOMS, IQN_TAUS, IQN_EMBED),
 * then ENV_UNIFORMS with barrierTerminates 0 and episodeBars = steps (backtestParams).
 * Outputs: VALIDATE_OUTPUT (values, exposure, traded, actions; see validate_policy.ts). validate_dqn
 * also takes out_f past the trace (float OUT_F_STRIDE * steps, validateDqnScratchFloats more) as its
 * scratch: the first launch (stepBegin 0) copies the net's weights there transposed, [n_in, n_out]
 * a layer, so that the invocations' loads of one input's weights, one output each, coalesce, and
 * (IQN) phi of every act tau after them; the later launches of the backtest read those (the CPU
 * twin and validate_dqn_cluster leave the scratch alone; the trace is all that is read back).
 * Limits (validateDqnUnsupported): C51 atoms must fit the 16 KiB workgroup plan, IQN's K at most
 * 128 (the WGSL twin rounds tau_t in u32 arithmetic).
 * CUDA runs validate_dqn_cluster (validateDqnClusterSpec): the net in one thread-block cluster's
 * shared memory, limited by 16 CTAs' 227 KiB instead.
 *
 * Speculation (uniform `mode`, in the build speculateSpec makes: SPECULATE 1 includes
 * wgsl/validate_speculate.wgsl; WebGPU on a GPU, src/backend/tuning.ts): the backtest as rounds of
 * a guess launch (`window` workgroups) and a roll launch (one workgroup). The roll commits the
 * steps of the last window whose guessed action the net confirmed, up to the first it did not
 * (whose state came from confirmed actions, so the net's action there is the sequential loop's:
 * it becomes the next window's first guess), then rolls the simulator over the next `window` steps
 * with guessed actions on one invocation, keeping the episode before each step and the step's
 * trace; guess runs the net on every kept state side
 * by side, with the sequential loop's code. The trace is the sequential launches' bit for bit; the
 * rounds pay off because a trained policy's action rarely hangs on the exact account value (a
 * C51 net 6 epochs into configs/cpu-c51.json: 8,945 steps in 115 rounds of 128). Guesses: the
 * net's actions of the last window from its first miss on, then the previous backtest's actions
 * still in the trace. State (speculateFloats): env_f / env_i episode 2 + s before step s of the
 * window, env_i's SPECULATE_HEADER, the window's trace past the scratch in out_f, the guessed and
 * the net's actions past the trace in out_i. DeviceValidator runs batches of rounds and reads the
 * header between them; the CPU twin's first roll runs the whole backtest.
 */

import type { BackendCaps } from '../backend/caps.js';
import type { SplitRange } from '../data/types.js';
import type { EnvParams } from '../env/params.js';
import { ENV_I } from '../env/state.js';
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
/**
 * Threads of the wide build, where the device allows them (maxComputeInvocationsPerWorkgroup and
 * maxComputeWorkgroupSizeX, above WebGPU's guaranteed 256): each hidden output's inputs in four
 * parts on otherwise idle invocations, and C51's output layer in three rounds instead of ten.
 */
export const VALIDATE_DQN_WIDE_THREADS = 1024;
/** Floats of the layer input and the streams' hidden layers (the kernels' `act`). */
const ACT_FLOATS = 2 * VALIDATE_DQN_THREADS;

/** Workgroup memory WebGPU guarantees (maxComputeWorkgroupStorageSize), which the plan must fit. */
const WORKGROUP_BYTES = 16384;

export const VALIDATE_DQN_UNIFORMS = [
  { name: 'n', type: 'u32' },
  { name: 'steps', type: 'u32' },
  { name: 'stepBegin', type: 'u32' },
  { name: 'stepEnd', type: 'u32' },
  { name: 'netBase', type: 'u32' },
  { name: 'vMin', type: 'f32' },
  { name: 'vMax', type: 'f32' },
  { name: 'head', type: 'u32' },
  { name: 'atoms', type: 'u32' },
  { name: 'actTaus', type: 'u32' },
  { name: 'iqnEmbed', type: 'u32' },
  { name: 'mode', type: 'u32' },
  { name: 'window', type: 'u32' },
  ...ENV_UNIFORMS,
] as const satisfies KernelSpec['uniforms'];

/** The `mode` uniform: the sequential loop, or a speculative round's guess or roll launch. */
export const VALIDATE_MODE = { sequential: 0, guess: 1, roll: 2 } as const;

/**
 * Where env_i keeps the speculation's state: the stop flag, the committed steps, the rolled
 * window's steps, the windows rolled so far.
 */
export const SPECULATE_HEADER = {
  stop: ENV_I,
  steps: ENV_I + 1,
  count: ENV_I + 2,
  rounds: ENV_I + 3,
} as const;

/**
 * The buffers speculation adds for a window of `window` steps: episodes in env_f / env_i (the
 * committed one, the header's, and one before each step of the window and after its last), floats
 * past the net's scratch in out_f (value, exposure, traded and the collapse flag a step) and ints
 * past the trace in out_i (the guessed actions, then the net's).
 */
export function speculateFloats(window: number): { episodes: number; outF: number; outI: number } {
  return { episodes: 3 + window, outF: 4 * window, outI: 2 * window };
}

/** IQN's act taus when a head leaves them out (the config's default dqn.iqnActTau). */
export const VALIDATE_IQN_ACT_TAUS = 32;
/** IQN's cosine embedding when a head leaves it out (the config's default dqn.iqnEmbed). */
export const VALIDATE_IQN_EMBED = 64;
/** Most IQN act taus: the WGSL twin rounds (2t + 1) / 2K in u32, which holds for 2K <= 256. */
const MAX_ACT_TAUS = 128;

/**
 * The head of the validated net: plain, C51 with `atoms` atoms per action, or IQN averaging
 * `actTaus` taus over `iqnEmbed` cosine features (both ignored by the other heads).
 */
export interface ValidateDqnHead {
  head: QHead;
  atoms: number;
  actTaus?: number;
  iqnEmbed?: number;
}

/** The kernels' HEAD constant and the `head` uniform. */
const HEAD_CODE: Record<QHead, number> = { plain: 0, c51: 1, iqn: 2 };

/** The head's sizes as the kernels' constants: atoms (1 unless C51), K and embed (1 unless IQN). */
function headSizes(o: ValidateDqnHead): { atoms: number; taus: number; embed: number } {
  const iqn = o.head === 'iqn';
  return {
    atoms: o.head === 'c51' ? o.atoms : 1,
    taus: iqn ? (o.actTaus ?? VALIDATE_IQN_ACT_TAUS) : 1,
    embed: iqn ? (o.iqnEmbed ?? VALIDATE_IQN_EMBED) : 1,
  };
}

/**
 * Parts the WGSL build splits each output of the streams' output layers into (OUT_PARTS): as many
 * as the workgroup's invocations hold for `headOut` outputs, at most 8 (plain and IQN: 46 outputs, 5 parts of
 * the 128 inputs; C51: 1). The parts run side by side on otherwise idle invocations and are added
 * in order: the output layers were a third of a plain-head bar with one invocation an output.
 */
export function validateOutputParts(headOut: number, threads = VALIDATE_DQN_THREADS): number {
  const fit = Math.min(Math.floor(threads / headOut), Math.floor(ACT_FLOATS / headOut));
  return Math.max(1, Math.min(8, fit));
}

/**
 * IQN's taus per pass through the streams in the WGSL build (its TAU_GROUP): the group's hidden
 * layers are 256 floats a tau of workgroup memory, and a group reads the streams' weights once.
 */
const IQN_TAU_GROUP = 8;

/** Floats of IQN's group buffers in the WGSL plan (hbuf; iqn_out: outputs and means), 1 each for the other heads. */
function iqnGroupFloats(iqn: boolean, headOut: number): { hbuf: number; outs: number } {
  return iqn
    ? { hbuf: IQN_TAU_GROUP * VALIDATE_DQN_THREADS, outs: IQN_TAU_GROUP * (headOut + 1) }
    : { hbuf: 1, outs: 1 };
}

/**
 * Floats of the kernels' workgroup plan at `threads`: layer input (the output layers' parts while
 * those run), streams' hidden, V and A (at least `threads` floats in the wide build: the hidden
 * layers' parts), mean over actions, Q, and IQN's group buffers.
 */
function planFloats(atoms: number, iqn: boolean, threads = VALIDATE_DQN_THREADS): number {
  const g = iqnGroupFloats(iqn, atoms * (NUM_ACTIONS + 1));
  return ACT_FLOATS + headsFloats(atoms, threads) + atoms + 48 + g.hbuf + g.outs;
}

/** Workgroup bytes of the build of `o` at `threads`: its plan and 16 for validate_env.wgsl's flags. */
function planBytes(o: ValidateDqnHead, threads: number): number {
  return 4 * planFloats(headSizes(o).atoms, o.head === 'iqn', threads) + 16;
}

/** Floats of the kernels' `heads`: V and A, and in the wide build the hidden layers' parts. */
function headsFloats(atoms: number, threads: number): number {
  const headOut = atoms * (NUM_ACTIONS + 1);
  return threads > VALIDATE_DQN_THREADS ? Math.max(headOut, threads) : headOut;
}

/**
 * What decides validate_dqn's build: the backend kind, whether it has thread-block clusters, and
 * (WebGPU) how many invocations a workgroup may have.
 */
export type ValidateDqnTarget = Pick<BackendCaps, 'kind'> &
  Partial<Pick<BackendCaps, 'software'>> & {
    features: Pick<BackendCaps['features'], 'clusters'>;
    limits?: Pick<BackendCaps['limits'], 'invocationsPerWorkgroup' | 'workgroupSizeX' | 'sharedOptinBytes'>;
  };

/**
 * The WGSL build's threads on `target`: the wide build where the device allows 1024 invocations
 * and its plan fits the 16 KiB every build is held to, else 256 (validateDqnUnsupported's limits
 * are the 256 build's, so a head validates on the device wherever it did).
 */
export function validateDqnThreads(o: ValidateDqnHead, target?: ValidateDqnTarget): number {
  const W = VALIDATE_DQN_WIDE_THREADS;
  const lim = target?.limits;
  if (!lim || (lim.invocationsPerWorkgroup ?? 0) < W || (lim.workgroupSizeX ?? 0) < W)
    return VALIDATE_DQN_THREADS;
  return planBytes(o, W) <= WORKGROUP_BYTES ? W : VALIDATE_DQN_THREADS;
}

/**
 * validate_dqn's build for a backend: on CUDA the cluster kernel (validateDqnClusterSpec), elsewhere
 * the one-workgroup kernel (WGSL, and the CPU reference).
 */
export function validateDqnSpecFor(o: ValidateDqnHead, target: ValidateDqnTarget): KernelSpec {
  return target.kind === 'cuda'
    ? validateDqnClusterSpec(o, target.limits?.sharedOptinBytes)
    : validateDqnSpec(o, validateDqnThreads(o, target), target.software ? SOFTWARE_LOADS : GPU_LOADS);
}

/**
 * Why validate_dqn cannot run this head (on `target`, default a WebGPU device), or null when it can.
 * CUDA runs the cluster kernel: it needs sm_90 and a net that fits 16 CTAs' shared memory.
 */
export function validateDqnUnsupported(o: ValidateDqnHead, target?: ValidateDqnTarget): string | null {
  if (target?.kind === 'cuda') {
    if (!target.features.clusters)
      return 'validate_dqn on CUDA runs in a thread-block cluster, which needs compute capability 9.0 or newer';
    if (o.head === 'c51' && (!Number.isInteger(o.atoms) || o.atoms < 2))
      return `validate_dqn: C51 atoms ${o.atoms} must be an integer >= 2`;
    if (validateDqnClusterSize(o) === null)
      return `validate_dqn: the ${o.head} net does not fit the shared memory of ${CLUSTER_SIZES.at(-1)} CTAs`;
    return null;
  }
  if (o.head === 'iqn') {
    const { taus, embed } = headSizes(o);
    if (!Number.isInteger(taus) || taus < 1 || taus > MAX_ACT_TAUS)
      return `validate_dqn: IQN act taus ${taus} must be an integer in 1 .. ${MAX_ACT_TAUS}`;
    if (!Number.isInteger(embed) || embed < 1)
      return `validate_dqn: IQN embedding ${embed} must be an integer >= 1`;
  }
  if (o.head === 'c51') {
    if (!Number.isInteger(o.atoms) || o.atoms < 2)
      return `validate_dqn: C51 atoms ${o.atoms} must be an integer >= 2`;
    const bytes = 4 * planFloats(o.atoms, false) + 16;
    if (bytes > WORKGROUP_BYTES)
      return `validate_dqn: C51 with ${o.atoms} atoms needs ${bytes} bytes of workgroup memory (> ${WORKGROUP_BYTES}); at most 75 atoms`;
  }
  return null;
}

/**
 * Weight loads an invocation has in flight in the dense layers (LOADS): 64 on a GPU (12% faster
 * than 16 on an H100); 16 on a software adapter, whose compiler (lavapipe's LLVM) took 48 s for
 * the plain head's sequential build with the 64-load block and 7 s without it. The sums are the
 * same.
 */
export const GPU_LOADS = 64;
export const SOFTWARE_LOADS = 16;

/**
 * The WGSL build at `threads` (256, or 1024 where validateDqnThreads allows it) with `loads` weight
 * loads in flight (GPU_LOADS or SOFTWARE_LOADS).
 */
export function validateDqnSpec(
  o: ValidateDqnHead = { head: 'plain', atoms: 51 },
  threads = VALIDATE_DQN_THREADS,
  loads = GPU_LOADS,
): KernelSpec {
  const why = validateDqnUnsupported(o);
  if (why) throw new Error(why);
  if (threads !== VALIDATE_DQN_THREADS && threads !== VALIDATE_DQN_WIDE_THREADS)
    throw new Error(
      `validate_dqn: ${threads} threads; the builds have ${VALIDATE_DQN_THREADS} or ${VALIDATE_DQN_WIDE_THREADS}`,
    );
  const bytes = planBytes(o, threads);
  if (bytes > WORKGROUP_BYTES)
    throw new Error(
      `validate_dqn: the ${threads}-thread build of this head needs ${bytes} bytes of workgroup memory (> ${WORKGROUP_BYTES})`,
    );
  if (loads !== GPU_LOADS && loads !== SOFTWARE_LOADS)
    throw new Error(
      `validate_dqn: ${loads} loads in flight; the builds have ${GPU_LOADS} or ${SOFTWARE_LOADS}`,
    );
  return dqnValidateSpec(o, threads, loads);
}

/** The spec of any build, its limits checked by the caller. */
function dqnValidateSpec(o: ValidateDqnHead, threads = VALIDATE_DQN_THREADS, loads = GPU_LOADS): KernelSpec {
  const { atoms, taus, embed } = headSizes(o);
  const layout = duelingLayout(o.head, atoms, embed);
  const W = VALIDATE_DQN_THREADS;
  const width = (name: string) => layerByName(layout, name).out;
  const t0 = width('shared_layers.0');
  const t1 = width('shared_layers.1');
  if (layerByName(layout, 'shared_layers.0').in !== STATE_DIM || t0 > W || t1 > W)
    throw new Error(`validate_dqn: the trunk's layers must be at most ${W} wide`);
  if (o.head === 'iqn' && width('tau_embed') !== t1)
    throw new Error(`validate_dqn: tau_embed must be as wide as the trunk (${t1})`);
  if (width('value_stream.0') + width('advantage_stream.0') > W)
    throw new Error(`validate_dqn: the streams' hidden layers together must be at most ${W} wide`);
  return {
    name: 'validate_dqn',
    bindings: COLLECT_BINDINGS,
    uniforms: [...VALIDATE_DQN_UNIFORMS],
    workgroupSize: [threads, 1, 1],
    constants: {
      ENGINE: 0,
      ...commonConstants(),
      ...envStateConstants(),
      // Heads without an IQN embedding still name it (offset 0, never read) so that one
      // shader source compiles for every head.
      ...(o.head === 'iqn' ? {} : { NET_Q_TAU_EMBED_W: 0, NET_Q_TAU_EMBED_B: 0 }),
      ...netConstants('NET_Q', layout, 0),
      ...outputConstants(VALIDATE_OUTPUT),
      HEAD: HEAD_CODE[o.head],
      ATOMS: atoms,
      IQN_TAUS: taus,
      IQN_EMBED: embed,
      HEAD_OUT: atoms * (NUM_ACTIONS + 1),
      HEADS_LEN: headsFloats(atoms, threads),
      IQN_HBUF: iqnGroupFloats(o.head === 'iqn', atoms * (NUM_ACTIONS + 1)).hbuf,
      IQN_OUTS: iqnGroupFloats(o.head === 'iqn', atoms * (NUM_ACTIONS + 1)).outs,
      TRUNK_PARTS: threads / W,
      OUT_PARTS: validateOutputParts(atoms * (NUM_ACTIONS + 1), threads),
      LOADS: loads,
      // The sequential build; speculateSpec's runs the rounds instead (validate_speculate.wgsl).
      SPECULATE: 0,
    },
  };
}

/**
 * The build of `spec` (validate_dqn's WGSL) that runs the speculative rounds (`mode` 1 and 2)
 * instead of the sequential launches (`mode` 0, which `spec` runs): either build inlines the net's
 * code once, which lavapipe compiles in a fraction of the time a build with both took.
 */
export function speculateSpec(spec: KernelSpec): KernelSpec {
  return { ...spec, constants: { ...spec.constants, SPECULATE: 1 } };
}

/** Cluster sizes validate_dqn_cluster tries, smallest first (16 is a non-portable size on sm_90). */
const CLUSTER_SIZES = [4, 8, 16] as const;
/** Opt-in shared memory of an sm_90 block. */
const CLUSTER_SMEM_BYTES = 227 * 1024;

const al4 = (n: number) => Math.ceil(n / 4) * 4;

/**
 * Floats of validate_dqn_cluster's shared-memory plan per CTA at `c` CTAs a cluster: the same
 * arithmetic as the plan in cuda/validate_dqn_cluster.cu (which checks it against DYN_SMEM_BYTES).
 */
export function clusterPlanFloats(o: ValidateDqnHead, c: number): number {
  const { atoms, taus, embed } = headSizes(o);
  const iqn = o.head === 'iqn';
  const rows = iqn ? taus : 1;
  const layout = duelingLayout(o.head, atoms, embed);
  const out = (name: string) => layerByName(layout, name).out;
  const s0 = out('shared_layers.0');
  const s1 = out('shared_layers.1');
  const v0 = out('value_stream.0');
  const hOut = v0 + out('advantage_stream.0');
  const headOut = atoms * (NUM_ACTIONS + 1);
  const ldw = (n: number) => (al4(n) % 32 === 0 ? al4(n) + 4 : al4(n));
  const slice = (inputs: number, outputs: number) => {
    const sl = Math.ceil(outputs / c);
    return sl * ldw(inputs) + al4(sl);
  };
  const msg = al4(STATE_DIM + 1);
  return (
    STATE_DIM * s0 +
    al4(s0) +
    slice(s0, s1) +
    slice(s1, hOut) +
    slice(v0, headOut) +
    2 * msg +
    al4(s0) +
    al4(s1) +
    (iqn ? rows * ldw(s1) + rows * al4(s1) + al4(rows * embed) : 0) +
    rows * ldw(hOut) +
    rows * al4(headOut) +
    al4(rows * atoms) +
    al4(NUM_ACTIONS) +
    4 +
    al4(2 * 4)
  );
}

/** CTAs of validate_dqn_cluster's cluster for this head: the fewest whose plan fits, or null. */
export function validateDqnClusterSize(o: ValidateDqnHead): number | null {
  return CLUSTER_SIZES.find((c) => 4 * clusterPlanFloats(o, c) <= CLUSTER_SMEM_BYTES) ?? null;
}

/**
 * validate_dqn's CUDA build for sm_90 (cuda/validate_dqn_cluster.cu): the same bindings, uniforms,
 * outputs and reference, run by one thread-block cluster whose CTAs keep the online net in their
 * shared memory (CLUSTER CTAs, ROWS rows per bar: IQN's act taus, else 1). With `smBytes` (the
 * device's opt-in shared memory a block) each CTA launches with that much, more than its plan
 * (DYN_SMEM_BYTES) uses, so that no other kernel's block shares its SM: the validation runs beside
 * the collection and the train phase, and blocks beside its CTAs slowed its bars (docs/DQN.md).
 */
export function validateDqnClusterSpec(
  o: ValidateDqnHead = { head: 'plain', atoms: 51 },
  smBytes?: number,
): KernelSpec {
  const why = validateDqnUnsupported(o, { kind: 'cuda', features: { clusters: true } });
  if (why) throw new Error(why);
  const base = dqnValidateSpec(o);
  const c = validateDqnClusterSize(o) as number;
  const { taus } = headSizes(o);
  const sharedBytes = 4 * clusterPlanFloats(o, c);
  return {
    ...base,
    name: 'validate_dqn_cluster',
    cluster: [c, 1, 1],
    sharedBytes: Math.max(sharedBytes, smBytes ?? 0),
    constants: {
      ...base.constants,
      CLUSTER: c,
      ROWS: o.head === 'iqn' ? taus : 1,
      DYN_SMEM_BYTES: sharedBytes,
    },
  };
}

/**
 * Floats validate_dqn's out_f holds past the trace: the transposed copy of the net's weights, then
 * (IQN) phi of every act tau, [taus, trunk width].
 */
export function validateDqnScratchFloats(o: ValidateDqnHead): number {
  const { atoms, taus, embed } = headSizes(o);
  const layout = duelingLayout(o.head, atoms, embed);
  return layout.size + (o.head === 'iqn' ? taus * layerByName(layout, 'shared_layers.1').out : 0);
}

/** Where the online net is and the C51 support (ignored by the plain head). */
export interface ValidateDqnNet extends ValidateDqnHead {
  /** Float offset of the online net in the nets buffer. */
  netBase: number;
  vMin: number;
  vMax: number;
}

/**
 * The uniforms of the backtest over `split` with the simulator parameters `params`, as one launch
 * (stepBegin 0, stepEnd steps); validateChunks splits them.
 */
export function validateDqnUniforms(
  params: EnvParams,
  split: SplitRange,
  net: ValidateDqnNet,
): Record<string, number> {
  const steps = validateSteps(split);
  const sizes = headSizes(net);
  if (!Number.isInteger(net.netBase) || net.netBase < 0 || net.netBase % 4 !== 0)
    throw new Error(
      `validate_dqn: netBase ${net.netBase} must be an integer >= 0 and a multiple of 4 (16-byte loads)`,
    );
  return {
    n: 1,
    steps,
    stepBegin: 0,
    stepEnd: steps,
    netBase: net.netBase,
    vMin: net.vMin,
    vMax: net.vMax,
    head: HEAD_CODE[net.head],
    atoms: sizes.atoms,
    actTaus: sizes.taus,
    iqnEmbed: sizes.embed,
    mode: VALIDATE_MODE.sequential,
    window: 0,
    // The key only seeds restarts, which the backtest never reaches (it stops at a collapse).
    ...envUniforms(backtestParams(params, steps), split, seedToKey(0)),
  };
}

/** One workgroup (validate_dqn_cluster: one cluster) runs the launch's steps of the backtest. */
export function validateDqnDispatch(
  spec: KernelSpec,
  buffers: DeviceBuffer[],
  uniforms: Record<string, number>,
): Dispatch {
  return { kernel: spec, buffers, uniforms, groups: [spec.cluster?.[0] ?? 1, 1, 1] };
}

/**
 * The CPU twin: the host backtest's rollout with dqnGreedyPolicy (validateReference). Speculation's
 * first roll runs the whole backtest and leaves the header saying it is done; its other launches
 * leave the buffers alone.
 */
function validateDqnReference(buffers: TypedArray[], u: Record<string, number>): void {
  if (u.mode === VALIDATE_MODE.guess || (u.mode === VALIDATE_MODE.roll && u.stepBegin !== 0)) return;
  if (u.mode === VALIDATE_MODE.roll) {
    const envI = buffers[6] as Int32Array;
    envI[SPECULATE_HEADER.stop] = 0;
    envI[SPECULATE_HEADER.steps] = u.steps;
    envI[SPECULATE_HEADER.count] = 0;
    envI[SPECULATE_HEADER.rounds] = 1;
  }
  const head: QHead = u.head === 2 ? 'iqn' : u.head === 1 ? 'c51' : 'plain';
  const layout = duelingLayout(head, u.atoms, u.iqnEmbed);
  const support = { vMin: u.vMin, vMax: u.vMax, atoms: u.atoms };
  validateReference(buffers, u, (nets) => {
    const online = nets.subarray(u.netBase, u.netBase + layout.size);
    if (online.length !== layout.size)
      throw new Error(
        `validate_dqn: nets holds ${nets.length} floats, the net at ${u.netBase} needs ${layout.size}`,
      );
    return dqnGreedyPolicy(head, layout, online, support, u.actTaus);
  });
}

export const validateDqnKernel: Kernel = {
  spec: validateDqnSpec(),
  reference: validateDqnReference,
};

export const validateDqnClusterKernel: Kernel = {
  spec: validateDqnClusterSpec(),
  reference: validateDqnReference,
};

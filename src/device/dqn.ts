/**
 * One DQN-family train step on a device (dueling double DQN with Huber, C51 or IQN; the TS
 * reference is src/learn/dqn_update.ts steps 2-6 and 8), on a batch already sampled into device
 * buffers in the replay row layout (src/learn/replay.ts) with i32 actions and PER importance
 * weights. One submission of 16 launches (17 when the target net updates), no readback:
 *
 *   dqn_inputs        rows -> input rows [s; s'] (2B rows)
 *   mlp_forward x 4   online net on the 2B rows: trunk.0, trunk.1, value.0 + adv.0, value.1 + adv.1
 *   mlp_forward x 4   target net (its own params buffer) on the s' half
 *   dqn_loss          the dueling combination of the three nets' streams (Q or C51 logits, kept in
 *                     workgroup memory), the loss, each row's priority signal and weighted loss
 *                     (`td`), and the combination's backward: the streams' output deltas
 *   mlp_backward x 4  value.1 + adv.1, value.0 + adv.0 (dX into two trunk delta rows), trunk.1, trunk.0
 *                     (WebGPU: one more where the last one splits its dW tiles, to add their slices)
 *   delta_sum         (between the stream and trunk launches) trunk deltas = sum of the two streams'
 *   adam_step         global-norm clip dqn.maxGradNorm, Adam dqn.lr
 *   dqn_target_update hard copy after every dqn.targetEvery-th step, or Polyak every step
 *
 * Each matmul launch takes the k-groups (1 or the backend's kSplitFor) and, for mlp_backward, the
 * dW batch slices that matmulShape (src/device/learn_mlp.ts) finds cheapest for its tiles and K
 * loops: at batch 512 on a GPU the K = 256 layers run 4 k-groups, C51's 2,295-output layer 1
 * forward and 4 backward (its dX tiles run K = 2,295), and the first layer's 8 dW tiles 8 slices.
 *
 * IQN (T = dqn.iqnTau taus a sample; rows r = b T + t): iqn_taus first writes the step's taus
 * (Philox of the step in the `tauStep` buffer + the slot) and their cosines, [2 B T, iqnEmbed];
 * each forward runs tau_embed on its T rows a trunk row and iqn_mix (h = trunk * e) before the
 * streams, which run on B T rows (online 2 B T: s with the online taus, s' with the target taus;
 * target B T); iqn_loss replaces dqn_loss; backward sums the streams' deltas of h (delta_sum),
 * iqn_mix backward gives the trunk's and tau_embed's deltas, mlp_backward of tau_embed: 26
 * launches (27 with the target update). The activations grow with B T (batch 512 x 64 taus: about
 * 360 MB); an arena past 2^31 floats or the device's binding limit is refused in one line.
 *
 * `td` holds [B] priority signals (|.| + eps is PER's update) then [B] weighted losses.
 *
 * Several steps in one submission (the device DQN engine's epoch): construct with `maxSteps`,
 * `uploadSchedule(count)` once, record `stepDispatches(batch, k)` for k < count, run, `advance(count)`.
 */
import { capsOf } from '../backend/caps.js';
import type { Backend, DeviceBuffer, Dispatch } from '../backend/types.js';
import type { DqnConfig, Precision } from '../config.js';
import { adamBiasCorrection, adamStepDispatch } from '../kernels/adam_step.js';
import { deltaSumDispatch } from '../kernels/delta_sum.js';
import { dqnInputsDispatch } from '../kernels/dqn_inputs.js';
import { dqnLossDispatch } from '../kernels/dqn_loss.js';
import { dqnTargetUpdateDispatch } from '../kernels/dqn_target_update.js';
import { duelingCombineBackwardDispatch, duelingCombineDispatch } from '../kernels/dueling_combine.js';
import { IQN_MAX_TAU, iqnLossDispatch } from '../kernels/iqn_loss.js';
import { iqnMixBackwardDispatch, iqnMixDispatch } from '../kernels/iqn_mix.js';
import { iqnTausDispatch } from '../kernels/iqn_taus.js';
import {
  type BackwardJob,
  DW_SLOT_FLOATS,
  dxTiles,
  gradTiles,
  mlpBackwardDispatch,
  NO_DX,
} from '../kernels/mlp_backward.js';
import { type ForwardJob, tilesOf as forwardTiles, mlpForwardDispatch } from '../kernels/mlp_forward.js';
import {
  type Layer,
  layerByName,
  type NetLayout,
  NUM_ACTIONS,
  type QHead,
  STATE_DIM,
} from '../nets/layout.js';
import { withPdl } from './learn.js';
import { dwHandoffFor, dwSplitBudgetFor, kSplitFor, matmulShape } from './learn_mlp.js';

/** A sampled batch on the device: `[B, REPLAY_F]` rows, `[B]` i32 actions, `[B]` f32 weights. */
export interface DqnBatchBuffers {
  rows: DeviceBuffer;
  actions: DeviceBuffer;
  weights: DeviceBuffer;
}

export interface DeviceDqnInit {
  backend: Backend;
  /** 'plain' (Huber), 'c51' or 'iqn'. */
  head: QHead;
  cfg: DqnConfig;
  /** A dueling layout (src/nets/layout.ts `duelingLayout`, any widths) and its online params. */
  layout: NetLayout;
  params: Float32Array;
  /** Most train steps recorded into one submission (`stepDispatches` slots; default 1). */
  maxSteps?: number;
  /** Philox key of the IQN taus (`seedToKey(seed)`); IQN only. */
  key?: readonly [number, number];
  /**
   * Launch the step's kernels with Programmatic Dependent Launch (default true; CUDA sm_90, each
   * kernel waits for its predecessor first, so results are unchanged; elsewhere plain launches).
   */
  pdl?: boolean;
  /**
   * The matmuls' arithmetic: 'exact' (default, f32, the parity mode) or 'tf32' (CUDA only:
   * mlp_forward / mlp_backward's TF32 tensor-core builds, operands rounded to 10-bit mantissas).
   */
  precision?: Precision;
}

const NAMES = {
  t0: 'shared_layers.0',
  t1: 'shared_layers.1',
  v0: 'value_stream.0',
  v1: 'value_stream.1',
  a0: 'advantage_stream.0',
  a1: 'advantage_stream.1',
  e: 'tau_embed',
} as const;
type Part = keyof typeof NAMES;
/** The parts every head has (IQN adds `e`). */
const PARTS = ['t0', 't1', 'v0', 'v1', 'a0', 'a1'] as Part[];

/** Most floats of one arena: the kernels index them with u32 (and WebGPU binds them whole). */
const MAX_ARENA = 2 ** 31;

/** Bump allocator of float offsets. */
function arena() {
  let size = 0;
  return {
    take(n: number): number {
      const at = size;
      size += n;
      return at;
    },
    get size() {
      return size;
    },
  };
}

type ActsAt = {
  /** The states s then s' ([2 B, STATE_DIM]). */
  input: number;
  /** The same in the target arena (plain and C51; IQN: `input`, one arena). */
  targetInput: number;
  /** IQN: the cosine features of the online then the target taus ([2 B T, iqnEmbed]). */
  cos: number;
  online: Record<Part | 'h', number>;
  /** In the target arena. */
  target: Record<Part | 'h', number>;
  /** IQN: the head outputs of online s and s' (plain and C51: unused, 0). */
  q: number;
  qTarget: number;
};
type DeltaAt = Record<Part | 'q' | 't1v' | 't1a', number>;

/**
 * Where the learner's activations and deltas sit for B samples x T taus, and each arena's floats;
 * `scratchSlots` split dW tiles' scratch slots (mlp_backward) at the end of the delta arena.
 */
function learnerArenas(
  L: Record<Part, Layer>,
  parts: Part[],
  B: number,
  T: number,
  atoms: number,
  scratchSlots: number,
) {
  const iqn = parts.includes('e');
  const wide = NUM_ACTIONS * atoms;
  // Rows of each part: the trunk a row per state, tau_embed and the streams T rows a state.
  const rowsOf = (p: Part) => (p === 't0' || p === 't1' ? 1 : T);
  const acts = arena();
  // The target net's activations in an arena of their own (plain and C51), so its forward pass
  // conflicts with the online net's on no buffer (a parallel branch of the CUDA graph). IQN keeps
  // one arena: both nets read the taus' cosine features in it.
  const targetActs = iqn ? acts : arena();
  const input = acts.take(2 * B * STATE_DIM);
  const targetInput = iqn ? input : targetActs.take(2 * B * STATE_DIM);
  const cos = iqn ? acts.take(2 * B * T * L.e.in) : 0;
  const netActs = (from: typeof acts, states: number) => {
    const at = Object.fromEntries(parts.map((p) => [p, from.take(states * rowsOf(p) * L[p].out)])) as Record<
      Part | 'h',
      number
    >;
    at.h = iqn ? from.take(states * T * L.t1.out) : at.t1;
    return at;
  };
  const online = netActs(acts, 2 * B);
  // The head outputs and their gradient rows: IQN only (dqn_loss keeps the plain and C51 ones in
  // workgroup memory).
  const q = iqn ? acts.take(2 * B * T * wide) : 0;
  const target = netActs(targetActs, B);
  const qTarget = iqn ? acts.take(B * T * wide) : 0;
  const deltas = arena();
  const deltaAt = {
    q: iqn ? deltas.take(B * T * wide) : 0,
    ...(Object.fromEntries(parts.map((p) => [p, deltas.take(B * rowsOf(p) * L[p].out)])) as Record<
      Part,
      number
    >),
    t1v: deltas.take(B * T * L.t1.out),
    t1a: deltas.take(B * T * L.t1.out),
  };
  const actsAt: ActsAt = { input, targetInput, cos, online, target, q, qTarget };
  const scratchAt = scratchSlots > 0 ? Math.ceil(deltas.size / 4) * 4 : 0;
  const deltaFloats = scratchSlots > 0 ? scratchAt + scratchSlots * DW_SLOT_FLOATS : deltas.size;
  return {
    actsAt,
    deltaAt: deltaAt as DeltaAt,
    acts: acts.size,
    targetActs: iqn ? 0 : targetActs.size,
    deltas: deltaFloats,
    scratchAt,
  };
}

/** Why the arenas of B x T rows cannot be allocated (u32 indexing; WebGPU binds each whole), or null. */
function arenaRefusal(
  plan: { acts: number; targetActs: number; deltas: number },
  bindingBytes: number,
  B: number,
  T: number,
): string | null {
  const most = Math.min(MAX_ARENA, Math.floor(bindingBytes / 4));
  for (const [what, size] of [
    ['activation', plan.acts],
    ['target activation', plan.targetActs],
    ['delta', plan.deltas],
  ] as const)
    if (size > most)
      return `the ${what} arena needs ${4 * size} bytes (dqn.batch ${B} x ${T} taus), above this device's ${4 * most}`;
  return null;
}

/** dW tiles (and partials) of each part, in `parts` order from 0, and their total. */
function partialsOf(L: Record<Part, Layer>, parts: Part[]): { at: Record<Part, number>; count: number } {
  let count = 0;
  const at = Object.fromEntries(
    parts.map((p) => {
      const first = count;
      count += gradTiles(L[p].in, L[p].out);
      return [p, first];
    }),
  ) as Record<Part, number>;
  return { at, count };
}

/**
 * The largest batch, at most `batch`, whose learner arenas fit a device binding of `bindingBytes`
 * (IQN's activations grow with batch x taus; the delta arena counted with the split dW scratch a
 * GPU plans); 0 when not even one sample fits.
 */
export function largestLearnerBatch(
  layout: NetLayout,
  batch: number,
  taus: number,
  bindingBytes: number,
): number {
  const iqn = layout.layers.some((l) => l.name === NAMES.e);
  const parts = iqn ? [...PARTS, 'e' as Part] : PARTS;
  const L = Object.fromEntries(parts.map((p) => [p, layerByName(layout, NAMES[p])])) as Record<Part, Layer>;
  const atoms = L.v1.out;
  const T = iqn ? taus : 1;
  const slots = partialsOf(L, parts).count;
  const fits = (b: number) =>
    arenaRefusal(learnerArenas(L, parts, b, T, atoms, slots), bindingBytes, b, T) === null;
  if (fits(batch)) return batch;
  let lo = 0;
  let hi = batch;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (fits(mid)) lo = mid;
    else hi = mid;
  }
  return lo;
}

export class DeviceDqnLearner {
  readonly backend: Backend;
  readonly batch: number;
  readonly atoms: number;
  /** Taus per sample (IQN: dqn.iqnTau), else 1. */
  readonly taus: number;
  /** Train steps taken (the target schedule and Adam's bias correction). */
  step = 0;
  readonly buffers: Record<
    | 'params'
    | 'target'
    | 'grads'
    | 'moments'
    | 'acts'
    | 'targetActs'
    | 'deltas'
    | 'partials'
    | 'sched'
    | 'stats'
    | 'td'
    | 'tauStep'
    | 'tauValues',
    DeviceBuffer
  >;
  private readonly init: DeviceDqnInit;
  private readonly layers: Record<Part, Layer>;
  private readonly parts: Part[];
  private readonly actsAt: ActsAt;
  private readonly deltaAt: DeltaAt;
  private readonly partAt: Record<Part, number>;
  private readonly partialCount: number;
  private readonly maxSteps: number;
  /** DeviceDqnInit.precision is 'tf32'. */
  readonly tf32: boolean;
  /** DeviceDqnInit.pdl. */
  readonly pdl: boolean;
  /**
   * How the matmul launches are shaped (matmulShape, launch by launch): the backend's k-groups
   * (kSplitFor), split-dW budget (dwSplitBudgetFor; 0: never split) and hand-off (dwHandoffFor),
   * and where the split tiles' scratch slots start in `deltas`.
   */
  private readonly shape: { kSplit: number; budget: number; handoff: 'last' | 'later'; scratchAt: number };

  constructor(init: DeviceDqnInit) {
    const { backend, head, cfg, layout } = init;
    const precision = init.precision ?? 'exact';
    if (precision !== 'exact' && precision !== 'tf32')
      throw new Error(`device dqn: precision must be 'exact' or 'tf32', got '${String(precision)}'`);
    if (precision === 'tf32' && !capsOf(backend).features.tf32TensorCores)
      throw new Error(
        `device dqn: precision 'tf32' (tensor cores) needs the CUDA backend, not ${backend.kind}; use precision 'exact'`,
      );
    this.tf32 = precision === 'tf32';
    this.pdl = init.pdl ?? true;
    if (init.params.length !== layout.size)
      throw new Error(
        `device dqn: ${init.params.length} params, the ${layout.kind} layout needs ${layout.size}`,
      );
    if (!Number.isInteger(cfg.batch) || cfg.batch < 1)
      throw new Error(`device dqn: batch ${cfg.batch} must be >= 1`);
    this.backend = backend;
    this.init = init;
    this.batch = cfg.batch;
    this.atoms = head === 'c51' ? cfg.atoms : 1;
    const iqn = head === 'iqn';
    const T = iqn ? cfg.iqnTau : 1;
    this.taus = T;
    if (iqn && !(Number.isInteger(T) && T >= 1 && T <= IQN_MAX_TAU))
      throw new Error(`device dqn: dqn.iqnTau ${T} must be 1..${IQN_MAX_TAU} (iqn_loss's limit)`);
    if (iqn && !init.key) throw new Error('device dqn: IQN needs the Philox key of its taus (init.key)');
    this.parts = iqn ? [...PARTS, 'e'] : PARTS;
    this.maxSteps = init.maxSteps ?? 1;
    if (!Number.isInteger(this.maxSteps) || this.maxSteps < 1)
      throw new Error(`device dqn: maxSteps ${this.maxSteps} must be an integer >= 1`);
    const hasEmbed = layout.layers.some((l) => l.name === NAMES.e);
    if (hasEmbed !== iqn)
      throw new Error(`device dqn: ${layout.kind} is not a dueling ${head} layout with ${this.atoms} atoms`);
    this.layers = Object.fromEntries(this.parts.map((p) => [p, layerByName(layout, NAMES[p])])) as Record<
      Part,
      Layer
    >;
    const L = this.layers;
    const wide = NUM_ACTIONS * this.atoms;
    if (L.t0.in !== STATE_DIM || L.v1.out !== this.atoms || L.a1.out !== wide)
      throw new Error(`device dqn: ${layout.kind} is not a dueling ${head} layout with ${this.atoms} atoms`);
    if (iqn && (L.e.out !== L.t1.out || L.e.in !== cfg.iqnEmbed))
      throw new Error(`device dqn: ${layout.kind}'s tau_embed is not ${cfg.iqnEmbed} -> ${L.t1.out}`);
    const B = this.batch;
    const partials = partialsOf(L, this.parts);
    this.partAt = partials.at;
    this.partialCount = partials.count;
    const budget = dwSplitBudgetFor(backend);
    const plan = learnerArenas(L, this.parts, B, T, this.atoms, budget > 0 ? partials.count : 0);
    this.shape = {
      kSplit: kSplitFor(backend),
      budget,
      handoff: dwHandoffFor(backend),
      scratchAt: plan.scratchAt,
    };
    this.actsAt = plan.actsAt;
    this.deltaAt = plan.deltaAt;
    const why = arenaRefusal(
      plan,
      Number(backend.info.limits.maxStorageBufferBindingSize ?? Number.POSITIVE_INFINITY),
      B,
      T,
    );
    if (why) throw new Error(`device dqn: ${why}; lower dqn.batch${iqn ? ' or dqn.iqnTau' : ''}`);
    const P = layout.size;
    const make = (floats: number, label: string) =>
      backend.createBuffer(4 * Math.max(1, floats), `dqn.${label}`);
    const acts = make(plan.acts, 'acts');
    this.buffers = {
      params: make(P, 'params'),
      target: make(P, 'target'),
      grads: make(P, 'grads'),
      moments: make(2 * P, 'moments'),
      acts,
      targetActs: iqn ? acts : make(plan.targetActs, 'target acts'),
      deltas: make(plan.deltas, 'deltas'),
      partials: make(partials.count, 'partials'),
      sched: make(2 * this.maxSteps, 'schedule'),
      stats: make(1, 'stats'),
      td: make(2 * B, 'td'),
      tauStep: make(1, 'tau step'),
      tauValues: make(2 * B * T, 'taus'),
    };
    backend.upload(this.buffers.params, init.params);
    backend.upload(this.buffers.target, init.params);
    backend.upload(this.buffers.moments, new Float32Array(2 * P));
    backend.upload(this.buffers.stats, new Float32Array(1));
  }

  /** The net on `rows` states at `inputAt` of `acts` (IQN: their T taus' cosines at `cosAt`). */
  private forward(
    params: DeviceBuffer,
    acts: DeviceBuffer,
    rows: number,
    inputAt: number,
    at: Record<Part | 'h', number>,
    cosAt: number,
  ): Dispatch[] {
    const L = this.layers;
    const job = (p: Part, xOff: number): ForwardJob => ({ layer: L[p], netBase: 0, xOff, yOff: at[p] });
    const { deltas } = this.buffers;
    const T = this.taus;
    // Each launch with the k-groups matmulShape finds cheapest for its tiles and K.
    const fwd = (n: number, jobs: [ForwardJob] | [ForwardJob, ForwardJob]): Dispatch => {
      const { kSplit } = matmulShape({
        kSplit: this.shape.kSplit,
        budget: this.shape.budget,
        batch: n,
        dw: 0,
        other: jobs.reduce((t, j) => t + forwardTiles(j.layer.out, n), 0),
        otherK: Math.max(...jobs.map((j) => j.layer.in)),
      });
      return mlpForwardDispatch(params, acts, n, jobs, kSplit, this.tf32);
    };
    const mix: Dispatch[] =
      this.init.head === 'iqn'
        ? [
            fwd(rows * T, [job('e', cosAt)]),
            iqnMixDispatch({
              acts,
              deltas,
              batch: rows,
              nTau: T,
              width: L.t1.out,
              trunkOff: at.t1,
              embedOff: at.e,
              outOff: at.h,
            }),
          ]
        : [];
    return [
      fwd(rows, [job('t0', inputAt)]),
      fwd(rows, [job('t1', at.t0)]),
      ...mix,
      fwd(rows * T, [job('v0', at.h), job('a0', at.h)]),
      fwd(rows * T, [job('v1', at.v0), job('a1', at.a0)]),
    ];
  }

  private backward(): Dispatch[] {
    const L = this.layers;
    const on = this.actsAt.online;
    const d = this.deltaAt;
    const b = this.buffers;
    const bufs = { params: b.params, acts: b.acts, deltas: b.deltas, grads: b.grads, partials: b.partials };
    const job = (p: Part, xOff: number, prev: BackwardJob['prev']): BackwardJob => ({
      layer: L[p],
      netBase: 0,
      xOff,
      dOff: d[p],
      prev,
      partBase: this.partAt[p],
    });
    const B = this.batch;
    const T = this.taus;
    const iqn = this.init.head === 'iqn';
    const { kSplit, budget, handoff, scratchAt } = this.shape;
    // Each launch shaped by matmulShape. Hand-off 'later' (WGSL): the split dW tiles a launch
    // leaves are finished by the next mlp_backward launch's first workgroups, the last launch's by
    // one more launch (the dispatches between them touch neither those gradients nor the slots).
    let pending: { jobs: BackwardJob[]; splits: number } | undefined;
    const bw = (rows: number, jobs: BackwardJob[]): Dispatch => {
      const sumGroups = pending?.jobs.reduce((n, j) => n + gradTiles(j.layer.in, j.layer.out), 0) ?? 0;
      const withDx = jobs.filter((j) => j.prev);
      const shape = matmulShape(
        {
          kSplit,
          budget,
          batch: rows,
          dw: jobs.reduce((n, j) => n + gradTiles(j.layer.in, j.layer.out), 0),
          other: jobs.reduce((n, j) => n + dxTiles(j.layer.in, rows, j.prev ? 0 : NO_DX), 0),
          otherK: Math.max(0, ...withDx.map((j) => j.layer.out)),
        },
        sumGroups,
      );
      const launch = mlpBackwardDispatch(
        bufs,
        rows,
        jobs,
        shape.kSplit,
        { splits: shape.splits, scratchAt, handoff, sum: pending },
        this.tf32,
      );
      pending = handoff === 'later' && shape.splits > 1 ? { jobs, splits: shape.splits } : undefined;
      return launch;
    };
    // IQN: the streams' input is h = trunk * e (no activation of its own); iqn_mix backward turns
    // the summed deltas of h (in place at t1v) into the trunk's and tau_embed's deltas.
    const hAct = iqn ? 'none' : L.t1.act;
    const out: Dispatch[] = [
      bw(B * T, [
        job('v1', on.v0, { dOff: d.v0, act: L.v0.act }),
        job('a1', on.a0, { dOff: d.a0, act: L.a0.act }),
      ]),
      bw(B * T, [job('v0', on.h, { dOff: d.t1v, act: hAct }), job('a0', on.h, { dOff: d.t1a, act: hAct })]),
      deltaSumDispatch({
        deltas: b.deltas,
        count: B * T * L.t1.out,
        aOff: d.t1v,
        bOff: d.t1a,
        outOff: iqn ? d.t1v : d.t1,
      }),
    ];
    if (iqn) {
      out.push(
        iqnMixBackwardDispatch({
          acts: b.acts,
          deltas: b.deltas,
          batch: B,
          nTau: T,
          width: L.t1.out,
          trunkOff: on.t1,
          embedOff: on.e,
          dOff: d.t1v,
          dTrunkOff: d.t1,
          dEmbedOff: d.e,
          trunkAct: L.t1.act,
          embedAct: L.e.act,
        }),
        bw(B * T, [job('e', this.actsAt.cos, null)]),
      );
    }
    out.push(
      bw(B, [job('t1', on.t0, { dOff: d.t0, act: L.t0.act })]),
      bw(B, [job('t0', this.actsAt.input, null)]),
    );
    if (pending)
      out.push(
        mlpBackwardDispatch(bufs, B, [], 1, { splits: 1, scratchAt, handoff, sum: pending }, this.tf32),
      );
    return out;
  }

  /**
   * The launches of train step `this.step + 1 + slot` on `batch`, reading its Adam schedule at
   * sched slot `slot` (upload it first: `uploadSchedule`). `step` is not advanced (`advance`).
   */
  stepDispatches(batch: DqnBatchBuffers, slot = 0): Dispatch[] {
    const { cfg, head, layout } = this.init;
    if (!Number.isInteger(slot) || slot < 0 || slot >= this.maxSteps)
      throw new Error(`device dqn: step slot ${slot} outside [0, ${this.maxSteps})`);
    const b = this.buffers;
    const B = this.batch;
    const T = this.taus;
    const n = this.atoms;
    const wide = NUM_ACTIONS * n;
    const at = this.actsAt;
    const steps = this.step + 1 + slot;
    const E = this.layers.e?.in ?? 0;
    const iqn = head === 'iqn';
    const taus: Dispatch[] = iqn
      ? [
          iqnTausDispatch({
            state: b.tauStep,
            taus: b.tauValues,
            acts: b.acts,
            batch: B,
            nTau: T,
            embed: E,
            stateAt: 0,
            stepSlot: slot,
            key: this.init.key as readonly [number, number],
            tauOff: 0,
            cosOff: at.cos,
          }),
        ]
      : [];
    const loss: Dispatch = iqn
      ? iqnLossDispatch({
          online: b.acts,
          targetNet: b.targetActs,
          taus: b.tauValues,
          rows: batch.rows,
          actions: batch.actions,
          weights: batch.weights,
          dOut: b.deltas,
          td: b.td,
          batch: B,
          nTau: T,
          nTarget: T,
          kappa: cfg.huberKappa,
          qOff: at.q,
          nextOff: at.q + B * T * wide,
          targetOff: at.qTarget,
          dOutOff: this.deltaAt.q,
          tauOff: 0,
        })
      : dqnLossDispatch({
          acts: b.acts,
          targetActs: b.targetActs,
          rows: batch.rows,
          actions: batch.actions,
          weights: batch.weights,
          deltas: b.deltas,
          td: b.td,
          batch: B,
          head:
            head === 'c51'
              ? { kind: 'c51', support: { vMin: cfg.vMin, vMax: cfg.vMax, atoms: n } }
              : { kind: 'huber', kappa: cfg.huberKappa },
          online: { v: at.online.v1, a: at.online.a1 },
          next: { v: at.online.v1 + B * n, a: at.online.a1 + B * wide },
          target: { v: at.target.v1, a: at.target.a1 },
          dVOff: this.deltaAt.v1,
          dAOff: this.deltaAt.a1,
        });
    const target: Dispatch[] = [];
    if (cfg.targetEvery === 0 || steps % cfg.targetEvery === 0) {
      target.push(
        dqnTargetUpdateDispatch({
          online: b.params,
          targetNet: b.target,
          count: layout.size,
          onlineOff: 0,
          targetOff: 0,
          update: cfg.targetEvery > 0 ? 'copy' : cfg.polyakTau,
        }),
      );
    }
    return [
      dqnInputsDispatch({ rows: batch.rows, acts: b.acts, batch: B, outOff: at.input }),
      ...(b.targetActs === b.acts
        ? []
        : [dqnInputsDispatch({ rows: batch.rows, acts: b.targetActs, batch: B, outOff: at.targetInput })]),
      ...taus,
      ...this.forward(b.params, b.acts, 2 * B, at.input, at.online, at.cos),
      ...this.forward(
        b.target,
        b.targetActs,
        B,
        at.targetInput + B * STATE_DIM,
        at.target,
        at.cos + B * T * E,
      ),
      ...(iqn
        ? [
            duelingCombineDispatch({
              acts: b.acts,
              deltas: b.deltas,
              rows: 2 * B * T,
              atoms: n,
              vOff: at.online.v1,
              aOff: at.online.a1,
              outOff: at.q,
            }),
            duelingCombineDispatch({
              acts: b.acts,
              deltas: b.deltas,
              rows: B * T,
              atoms: n,
              vOff: at.target.v1,
              aOff: at.target.a1,
              outOff: at.qTarget,
            }),
            loss,
            duelingCombineBackwardDispatch({
              acts: b.acts,
              deltas: b.deltas,
              rows: B * T,
              atoms: n,
              dOutOff: this.deltaAt.q,
              dVOff: this.deltaAt.v1,
              dAOff: this.deltaAt.a1,
            }),
          ]
        : [loss]),
      ...this.backward(),
      adamStepDispatch(
        {
          params: b.params,
          grads: b.grads,
          moments: b.moments,
          partials: b.partials,
          sched: b.sched,
          stats: b.stats,
          n: layout.size,
          nPartials: this.partialCount,
          normAt: 0,
        },
        { lr: cfg.lr, maxGradNorm: cfg.maxGradNorm },
        2 * slot,
      ),
      ...target,
    ].map((d) => (this.pdl ? withPdl(d) : d));
  }

  /**
   * Uploads Adam's bias corrections of steps `this.step + 1 .. this.step + count` to slots
   * 0 .. count - 1, and the Philox step of slot 0's IQN taus (`this.step`; slot k adds k).
   */
  uploadSchedule(count: number): void {
    if (!Number.isInteger(count) || count < 1 || count > this.maxSteps)
      throw new Error(`device dqn: ${count} scheduled steps, this learner records 1 .. ${this.maxSteps}`);
    const sched = new Float32Array(2 * count);
    for (let k = 0; k < count; k++)
      sched.set(adamBiasCorrection({ lr: this.init.cfg.lr }, this.step + 1 + k), 2 * k);
    this.backend.upload(this.buffers.sched, sched);
    this.backend.upload(this.buffers.tauStep, Uint32Array.of(this.step >>> 0));
  }

  /** Counts `count` recorded steps as taken. */
  advance(count: number): void {
    this.step += count;
  }

  /** One train step on `batch` (no readback: `td` and the params stay on the device). */
  train(batch: DqnBatchBuffers): void {
    this.uploadSchedule(1);
    this.backend.run(this.stepDispatches(batch));
    this.advance(1);
  }

  async read(which: 'params' | 'target'): Promise<Float32Array> {
    return new Float32Array(await this.backend.download(this.buffers[which], 0, 4 * this.init.layout.size));
  }

  /** Replaces the online or target params (e.g. from a checkpoint). */
  write(which: 'params' | 'target', data: Float32Array): void {
    const size = this.init.layout.size;
    if (data.length !== size)
      throw new Error(`device dqn: ${which} has ${data.length} floats, expected ${size}`);
    this.backend.upload(this.buffers[which], data);
  }

  /** Adam's first and second moments (`m`, `v`, each one float per param). */
  async readMoments(): Promise<{ m: Float32Array; v: Float32Array }> {
    const P = this.init.layout.size;
    const all = new Float32Array(await this.backend.download(this.buffers.moments, 0, 8 * P));
    return { m: all.slice(0, P), v: all.slice(P) };
  }

  writeMoments(m: Float32Array, v: Float32Array): void {
    const P = this.init.layout.size;
    if (m.length !== P || v.length !== P)
      throw new Error(`device dqn: Adam moments have ${m.length} and ${v.length} floats, expected ${P} each`);
    const all = new Float32Array(2 * P);
    all.set(m);
    all.set(v, P);
    this.backend.upload(this.buffers.moments, all);
  }

  /** Device copy of the online params to `dst` at `dstByteOffset` (no readback). */
  copyOnlineTo(dst: DeviceBuffer, dstByteOffset = 0): void {
    this.backend.copy(this.buffers.params, dst, 4 * this.init.layout.size, 0, dstByteOffset);
  }

  /** Sum of the global gradient norms since the last `resetNormSum` (0 when dqn.maxGradNorm is 0). */
  async readNormSum(): Promise<number> {
    return new Float32Array(await this.backend.download(this.buffers.stats, 0, 4))[0];
  }

  resetNormSum(): void {
    this.backend.upload(this.buffers.stats, new Float32Array(1));
  }

  /** The last step's priority signals `[B]` and weighted losses `[B]`. */
  async readTd(): Promise<Float32Array> {
    return new Float32Array(await this.backend.download(this.buffers.td, 0, 8 * this.batch));
  }

  destroy(): void {
    for (const buf of new Set(Object.values(this.buffers))) this.backend.destroyBuffer(buf);
  }
}

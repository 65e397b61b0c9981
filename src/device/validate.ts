/**
 * The validation backtest on a device over a split, reading the market and the net from buffers
 * already on the device (the training collector's), and only the per-step trace comes back. It
 * runs as launches of at most validateChunkSteps steps each (512; CUDA 8,192; one where the split
 * is shorter),
 * enqueued together, the episode carried from one to the next in the validator's env_f / env_i
 * (src/kernels/validate_policy.ts), so that no launch runs long enough for a display driver's
 * watchdog. Metrics are computed on the host from the trace with src/eval/metrics.ts, as the host
 * backtest does. The greedy policy is PPO's actor (validate_policy, src/kernels/validate_policy.ts:
 * actor at float 0 of the nets buffer) or a DQN-family online net (validate_dqn,
 * src/kernels/validate_dqn.ts: plain, C51 or IQN, at float `netBase`).
 */
import { capsOf } from '../backend/caps.js';
import { tuningFor } from '../backend/tuning.js';
import type { Backend, DeviceBuffer, Dispatch, KernelSpec } from '../backend/types.js';
import type { Market, SplitRange } from '../data/types.js';
import type { EnvParams } from '../env/params.js';
import { ENV_F, ENV_I } from '../env/state.js';
import type { BacktestResult } from '../eval/backtest.js';
import { computeMetrics } from '../eval/metrics.js';
import {
  SPECULATE_HEADER,
  speculateFloats,
  speculateSpec,
  VALIDATE_MODE,
  type ValidateDqnNet,
  validateDqnDispatch,
  validateDqnScratchFloats,
  validateDqnSpecFor,
  validateDqnUniforms,
} from '../kernels/validate_dqn.js';
import {
  traceFromOutputs,
  VALIDATE_CHUNK_STEPS,
  VALIDATE_ENV_INTS,
  validateChunkSteps,
  validateChunks,
  validateOutputBytes,
  validatePolicyDispatch,
  validatePolicySpec,
  validateUniforms,
} from '../kernels/validate_policy.js';

/** Which greedy policy a DeviceValidator backtests: PPO's actor, or a DQN-family online net. */
export type ValidatedPolicy = { kind: 'ppo' } | ({ kind: 'dqn' } & ValidateDqnNet);

/** The read-only bindings validate_policy and validate_dqn share with the collector: features, ohlc, spread, entropy, nets. */
export type SharedValidateBuffers = readonly [
  DeviceBuffer,
  DeviceBuffer,
  DeviceBuffer,
  DeviceBuffer,
  DeviceBuffer,
];

/** The shared bindings uploaded from the host: a market, the simulator's entropy table and a nets buffer (probes, tests). */
export function uploadValidateBuffers(
  backend: Backend,
  market: Market,
  entropyTable: Float32Array,
  nets: Float32Array,
): SharedValidateBuffers {
  const make = (a: Float32Array, label: string) => {
    const b = backend.createBuffer(a.byteLength, `validate ${label}`);
    backend.upload(b, a);
    return b;
  };
  return [
    make(market.features, 'features'),
    make(market.ohlc, 'ohlc'),
    make(market.spreadBps, 'spread'),
    make(entropyTable, 'entropy'),
    make(nets, 'nets'),
  ];
}

/** Test hooks of a DeviceValidator. */
export interface DeviceValidatorOptions {
  /** Steps a launch at most (default validateChunkSteps of the backend's kind). */
  chunkSteps?: number;
  /**
   * validate_dqn's speculation window (steps a round; 0: the sequential launches). Default: the
   * device class's (src/backend/tuning.ts: WebGPU on a GPU, else none), none beside (runBeside).
   */
  window?: number;
}

/** Speculative rounds enqueued between two reads of the header. */
export const SPECULATE_ROUNDS = 32;
/**
 * Steps a round of `window` must commit on average, over a batch of rounds, for the speculation to
 * go on; below it the rest of the backtest runs as the sequential launches. A round costs about one
 * step of the sequential loop (the guesses side by side) plus the roll of its window on one
 * invocation, each rolled step an eighth of a sequential one at most (docs/DQN.md).
 */
export function speculateMinSteps(window: number): number {
  return 1 + window / 8;
}

export class DeviceValidator {
  readonly steps: number;
  private readonly spec: KernelSpec;
  private readonly own: DeviceBuffer[];
  private readonly uniforms: Record<string, number>;
  /** Bytes of the trace at the start of out_f. */
  private readonly outBytes: number;
  /** The launches of one backtest, in order (the same objects every run). */
  private readonly launches: Dispatch[];
  /** validate_dqn's speculation: the first batch of rounds and every later one (null: sequential). */
  private readonly speculation: { first: Dispatch[]; more: Dispatch[] } | null = null;
  /** The speculation's window (0: none). */
  readonly window: number;
  /**
   * The last run(): the windows it rolled (0: the sequential launches only), the step it first fell
   * back to the sequential launches at (-1: never) and the steps they ran.
   */
  lastRun = { rounds: 0, fellBackAt: -1, sequentialSteps: 0 };

  constructor(
    private readonly backend: Backend,
    private readonly shared: SharedValidateBuffers,
    params: EnvParams,
    split: SplitRange,
    policy: ValidatedPolicy = { kind: 'ppo' },
    options: DeviceValidatorOptions = {},
  ) {
    if (policy.kind === 'dqn') {
      this.spec = validateDqnSpecFor(policy, capsOf(backend));
      this.uniforms = validateDqnUniforms(params, split, policy);
    } else {
      this.spec = validatePolicySpec();
      this.uniforms = validateUniforms(params, split);
    }
    this.steps = this.uniforms.steps;
    const out = validateOutputBytes(this.steps);
    this.outBytes = out.f;
    // validate_dqn's scratch past the trace (the net transposed; validate_dqn.ts).
    const dqn = this.spec.name === 'validate_dqn' && policy.kind === 'dqn';
    const scratch = dqn ? validateDqnScratchFloats(policy) : 0;
    // Rounds read the device between batches: a backend that validates beside later work
    // (runBeside) keeps the sequential launches, which need no host.
    const window = dqn
      ? (options.window ?? (backend.runBeside ? 0 : tuningFor(backend).validate.speculateWindow))
      : 0;
    if (!Number.isInteger(window) || window < 0)
      throw new Error(`validate: speculation window ${window} must be an integer >= 0`);
    this.window = window;
    const spec = window > 0 ? speculateFloats(window) : { episodes: 1, outF: 0, outI: 0 };
    const make = (bytes: number, label: string) =>
      backend.createBuffer(Math.max(4, bytes), `validate ${label}`);
    this.own = [
      make(spec.episodes * ENV_F * 4, 'env_f'),
      make(Math.max(VALIDATE_ENV_INTS, spec.episodes * ENV_I) * 4, 'env_i'),
      make(params.diversityWindow * 4, 'div_window'),
      make(out.f + 4 * (scratch + spec.outF), 'out_f'),
      make(out.i + 4 * spec.outI, 'out_i'),
    ];
    const dispatch = this.spec.name === 'validate_policy' ? validatePolicyDispatch : validateDqnDispatch;
    const buffers = [...this.shared, ...this.own];
    const chunk = options.chunkSteps ?? validateChunkSteps(backend.kind);
    this.launches = validateChunks(this.uniforms, chunk).map((u) => dispatch(this.spec, buffers, u));
    if (window > 0) {
      const u = { ...this.uniforms, mode: VALIDATE_MODE.roll, window };
      const rounds = speculateSpec(this.spec);
      const roll = dispatch(rounds, buffers, { ...u, stepBegin: 1 });
      const guess: Dispatch = {
        kernel: rounds,
        buffers,
        uniforms: { ...u, mode: VALIDATE_MODE.guess },
        groups: [window, 1, 1],
      };
      const more = Array.from({ length: SPECULATE_ROUNDS }, () => [guess, roll]).flat();
      this.speculation = { first: [dispatch(rounds, buffers, u), ...more], more };
    }
  }

  /** The backtest's launches in order, all of them one backtest (for backend.time). */
  dispatches(): Dispatch[] {
    return this.launches;
  }

  /** Enqueues the backtest beside later work where the backend can (Backend.runBeside), its launches in order. */
  launch(): void {
    const b = this.backend;
    if (b.runBeside) b.runBeside(this.launches);
    else b.run(this.launches);
  }

  /**
   * validate_dqn's speculative rounds (src/kernels/validate_dqn.ts): batches of SPECULATE_ROUNDS,
   * the header read after each, until the backtest is done. Where a batch commits fewer than
   * speculateMinSteps a round, the next VALIDATE_CHUNK_STEPS steps run as the sequential launches
   * (twice as many at each later fallback of the backtest), then the rounds resume from there.
   */
  private async speculate(sp: { first: Dispatch[]; more: Dispatch[] }): Promise<void> {
    const b = this.backend;
    let batch = sp.first;
    let done = 0;
    let span = VALIDATE_CHUNK_STEPS;
    this.lastRun = { rounds: 0, fellBackAt: -1, sequentialSteps: 0 };
    for (;;) {
      b.run(batch);
      const h = new Int32Array(await b.download(this.own[1], 4 * ENV_I, 16));
      const steps = h[SPECULATE_HEADER.steps - ENV_I];
      this.lastRun.rounds = h[SPECULATE_HEADER.rounds - ENV_I];
      if (h[SPECULATE_HEADER.stop - ENV_I] !== 0 || steps >= this.steps) return;
      const committed = steps - done;
      done = steps;
      batch = sp.more;
      if (committed >= speculateMinSteps(this.window) * SPECULATE_ROUNDS) continue;
      // The next `span` steps as the sequential launches, the episode resumed where the rounds
      // left it; then the header says where the rounds go on (the stop flag as those left it).
      const end = Math.min(this.steps, steps + span);
      if (this.lastRun.fellBackAt < 0) this.lastRun.fellBackAt = steps;
      this.lastRun.sequentialSteps += end - steps;
      b.run(
        this.launches
          .filter((d) => d.uniforms.stepEnd > steps && d.uniforms.stepBegin < end)
          .map((d) => ({
            ...d,
            uniforms: {
              ...d.uniforms,
              stepBegin: Math.max(d.uniforms.stepBegin, steps),
              stepEnd: Math.min(d.uniforms.stepEnd, end),
            },
          })),
      );
      if (end >= this.steps) return;
      b.upload(this.own[1], Int32Array.of(end, 0), 4 * SPECULATE_HEADER.steps);
      done = end;
      span *= 2;
    }
  }

  /** Runs the backtest of the net now in the nets buffer; returns its metrics, trace and actions. */
  async run(barsPerYear: number): Promise<BacktestResult> {
    if (this.speculation) await this.speculate(this.speculation);
    else this.launch();
    const [f, i] = await Promise.all([
      this.backend.download(this.own[3], 0, this.outBytes),
      this.backend.download(this.own[4]),
    ]);
    const { trace, actions } = traceFromOutputs(
      new Float32Array(f),
      new Int32Array(i),
      this.steps,
      this.uniforms.initialCapital,
    );
    return { metrics: computeMetrics(trace, barsPerYear), trace, actions };
  }

  destroy(): void {
    for (const b of this.own) this.backend.destroyBuffer(b);
  }
}

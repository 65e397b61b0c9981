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
import type { Backend, DeviceBuffer, Dispatch, KernelSpec } from '../backend/types.js';
import type { SplitRange } from '../data/types.js';
import type { EnvParams } from '../env/params.js';
import { ENV_F } from '../env/state.js';
import type { BacktestResult } from '../eval/backtest.js';
import { computeMetrics } from '../eval/metrics.js';
import {
  type ValidateDqnNet,
  validateDqnDispatch,
  validateDqnScratchFloats,
  validateDqnSpecFor,
  validateDqnUniforms,
} from '../kernels/validate_dqn.js';
import {
  traceFromOutputs,
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

/** Test hooks of a DeviceValidator. */
export interface DeviceValidatorOptions {
  /** Steps a launch at most (default validateChunkSteps of the backend's kind). */
  chunkSteps?: number;
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
    const scratch =
      this.spec.name === 'validate_dqn' && policy.kind === 'dqn' ? validateDqnScratchFloats(policy) : 0;
    const make = (bytes: number, label: string) =>
      backend.createBuffer(Math.max(4, bytes), `validate ${label}`);
    this.own = [
      make(ENV_F * 4, 'env_f'),
      make(VALIDATE_ENV_INTS * 4, 'env_i'),
      make(params.diversityWindow * 4, 'div_window'),
      make(out.f + 4 * scratch, 'out_f'),
      make(out.i, 'out_i'),
    ];
    const dispatch = this.spec.name === 'validate_policy' ? validatePolicyDispatch : validateDqnDispatch;
    const buffers = [...this.shared, ...this.own];
    const chunk = options.chunkSteps ?? validateChunkSteps(backend.kind);
    this.launches = validateChunks(this.uniforms, chunk).map((u) => dispatch(this.spec, buffers, u));
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

  /** Runs the backtest of the net now in the nets buffer; returns its metrics, trace and actions. */
  async run(barsPerYear: number): Promise<BacktestResult> {
    this.launch();
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

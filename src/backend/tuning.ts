/**
 * The tuning table: one row per device class (./caps.ts DeviceClass) of the numbers the kernels'
 * plans are chosen with, and why (the measurements behind them: one NVIDIA H200, docs/BENCHMARKS.md).
 * The rules that apply them are in src/device/tile_choice.ts (collection tiles) and
 * src/device/learn_mlp.ts (the learner's launch plan). Nothing here changes what a kernel
 * computes, only its launch shape.
 */
import { PPO_GATHER_CUDA_ROWS } from '../kernels/ppo_gather.js';
import { type BackendCaps, capsOf, type DeviceClass } from './caps.js';
import type { Backend } from './types.js';

export interface CollectTuning {
  /**
   * Workgroups (blocks) the tile choice aims for: N / this episodes per workgroup, a power of two.
   * CUDA blocks run one per SM (255 registers x 256 threads): ~128 blocks for the H200's 132 SMs, so
   * N = 128 gets one episode per block, each layer spread over all 256 threads. WebGPU follows the
   * same rule: a small-N workgroup streams every weight each step whatever its rows, and 64
   * workgroups of 2 episodes (the earlier choice) left half of an H200's SMs idle.
   */
  workgroups: number;
  /**
   * Tiles past the 48 KiB static plan, in opt-in dynamic shared memory where it holds them: the
   * plain DQN head's 64 episodes (each weight read from L2 serves twice the rows) and TF32 PPO's 32
   * (half the weight bytes per env step of the 16-episode static plan; the exact build keeps 16).
   */
  dynamicSharedTiles: boolean;
  /**
   * TF32 tiles of at least the algorithm's `tf32WideThreadsFrom` episodes (DQN 64, PPO 32) get this
   * many threads (16 warps at 128 registers instead of 8 at up to 255): H200, N = 65,536, DQN 49.45M
   * env-steps/s against 40.47M at 256 threads; wide layers hold half the accumulators per thread
   * while twice the warps hide L2 latency. Undefined: 256 threads.
   */
  tf32WideThreads?: number;
  /**
   * The WGSL quad engine (2) from QUAD_ENGINE_MIN_ROWS rows, for the plain DQN head and PPO. H200 at
   * ff1baad, N = 65,536: DQN 18.1M env-steps/s with engine 2 (engine 0 13.9M); PPO 6.73M (engine 0
   * 4.67M). C51 and IQN are unmeasured; a software adapter (lavapipe) ran the quad engines slower
   * than engine 0.
   */
  quadEngines: boolean;
  /**
   * The plain DQN head's thread-block cluster kernel (devices with clusters: caps.features.clusters)
   * runs up to this N, the tiled kernel above; undefined: never. H200, env-steps/s: TF32 cluster
   * 12.64M / 10.15M / 12.06M at N = 128 / 256 / 512, tiled TF32 3.03M at 128 and 22.23M at 1,024
   * (73b93ff, 5a53ce1); exact cluster 3.86M against tiled exact 1.07M at 128 (5a53ce1, ff1baad),
   * unmeasured above, so exact keeps the measured bound. The crossover sweep:
   * `node dist/dev/bench.js collect --algo dqn --backend cuda --variant tiled,cluster ...`.
   */
  clusterUpTo?: { tf32: number; exact: number };
}

export interface LearnTuning {
  /**
   * k-groups per matmul workgroup (mlp_forward, mlp_backward): a number (CUDA: 4, 512 threads and
   * 26 KiB of shared memory), or 'limits': as many (4, 2, 1) as the invocation and workgroup-memory
   * limits allow (2 at WebGPU's defaults of 256 and 16 KiB), 1 where the backend states none (the
   * CPU, where it changes only the reduction order).
   */
  kSplit: number | 'limits';
  /** ppo_gather samples per workgroup: narrow on the GPUs (>= 128 workgroups a 512-sample minibatch). */
  gatherRows: number | 'workgroup';
  /**
   * Split-dW budget in workgroups per launch where the backend states no SM count (else two
   * 512-thread matmul workgroups per SM): WebGPU about two per SM of a large discrete GPU (the H200
   * has 132); the CPU never splits (0).
   */
  dwSplitBudget: number;
  /** Where a split dW tile is finished: by its last slice (CUDA, CPU), or in a later launch (WGSL). */
  dwHandoff: 'last' | 'later';
  /**
   * The backward's input deltas of the top layers in one mlp_delta_chain launch by default: CUDA
   * (H200, 64,000 samples: 0.133 s an update against 0.161 s); on WebGPU it measured slower (0.367 s
   * against 0.285 s with one mlp_backward per stage).
   */
  deltaChain: boolean;
  /**
   * Programmatic Dependent Launch's early trigger for the kernels that allow it (CUDA; other
   * backends launch plainly whatever the learner asks).
   */
  pdlEarlyTrigger: boolean;
}

export interface ValidateTuning {
  /**
   * validate_dqn's speculation window (src/kernels/validate_dqn.ts; 0: the sequential launches).
   * A round runs the net on `window` states side by side, one workgroup each: a GPU does them in
   * about one sequential step's time, a software adapter (or the CPU) one after another. CUDA's
   * cluster kernel has no rounds.
   */
  speculateWindow: number;
}

export interface Tuning {
  collect: CollectTuning;
  learn: LearnTuning;
  validate: ValidateTuning;
}

/** validate_dqn's speculation window on a WebGPU GPU (docs/DQN.md). */
export const SPECULATE_WINDOW = 128;

/** Samples per ppo_gather workgroup on the GPUs: 128 workgroups per 512-sample minibatch. */
export const GPU_GATHER_ROWS = PPO_GATHER_CUDA_ROWS;

/** Split-dW budget of WebGPU, which reports no SM count. */
export const WEBGPU_SPLIT_BUDGET = 256;

/** One row per device class. */
export const TUNING: Readonly<Record<DeviceClass, Tuning>> = {
  cuda: {
    collect: {
      workgroups: 128,
      dynamicSharedTiles: true,
      tf32WideThreads: 512,
      quadEngines: false,
      clusterUpTo: { tf32: 512, exact: 128 },
    },
    learn: {
      kSplit: 4,
      gatherRows: GPU_GATHER_ROWS,
      dwSplitBudget: 0,
      dwHandoff: 'last',
      deltaChain: true,
      pdlEarlyTrigger: true,
    },
    validate: { speculateWindow: 0 },
  },
  webgpu: {
    collect: { workgroups: 128, dynamicSharedTiles: false, quadEngines: true },
    learn: {
      kSplit: 'limits',
      gatherRows: GPU_GATHER_ROWS,
      dwSplitBudget: WEBGPU_SPLIT_BUDGET,
      dwHandoff: 'later',
      deltaChain: false,
      pdlEarlyTrigger: false,
    },
    validate: { speculateWindow: SPECULATE_WINDOW },
  },
  'webgpu-software': {
    collect: { workgroups: 128, dynamicSharedTiles: false, quadEngines: false },
    learn: {
      kSplit: 'limits',
      gatherRows: GPU_GATHER_ROWS,
      dwSplitBudget: WEBGPU_SPLIT_BUDGET,
      dwHandoff: 'later',
      deltaChain: false,
      pdlEarlyTrigger: false,
    },
    validate: { speculateWindow: 0 },
  },
  cpu: {
    // The CPU runs the references whatever the engine; it takes WebGPU's shapes (quad engines too),
    // so a CPU run and a WebGPU run of one config plan the same tiles.
    collect: { workgroups: 128, dynamicSharedTiles: false, quadEngines: true },
    learn: {
      kSplit: 'limits',
      gatherRows: 'workgroup',
      dwSplitBudget: 0,
      dwHandoff: 'last',
      deltaChain: false,
      pdlEarlyTrigger: false,
    },
    validate: { speculateWindow: 0 },
  },
};

/** The tuning row of a backend (or of caps already derived). */
export function tuningFor(
  backend: (Pick<Backend, 'kind'> & { info?: Backend['info'] }) | BackendCaps,
): Tuning {
  const caps = 'deviceClass' in backend ? backend : capsOf(backend);
  return TUNING[caps.deviceClass];
}

/**
 * The CUDA thread-block cluster collector's shape (sm_90; src/device/collect.ts clusterOptions).
 * H200 measurements, env-steps/s.
 */
export const CLUSTER_TUNING = {
  /** CTAs the clusters of a launch fill at most (before residentClusterEpisodes raises the episodes). */
  targetCtas: 128,
  /** Threads per CTA unless a warp per episode needs more. */
  threads: 256,
  /**
   * From this many episodes per cluster each gets a warp for its decision (every CTA takes all E
   * decisions; with 8 warps the ninth row doubled warp 0's share), up to maxThreads: N = 128 as 15
   * clusters of 9, 11.70M at 256 threads, 12.57M at 288, 12.41M at 320.
   */
  warpPerEpisodeFrom: 9,
  maxThreads: 320,
  /** The TF32 build holds one m16 tile of rows: at most this many episodes per cluster. */
  tf32MaxEpisodes: 16,
  /** Opt-in shared memory per block on sm_90 (227 KiB), the only architecture with clusters today. */
  sharedBytes: 227 * 1024,
} as const;

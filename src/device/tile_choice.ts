/**
 * The tile shape of the collection kernels (collect_dqn, collect_ppo tiled and seed variants):
 * episodes and threads per workgroup, threads across outputs (TJ), the weight slice (KT), IQN's
 * tau rows and the WGSL tile engine. Two tables decide it:
 * - ALGO_TILES: what each algorithm's networks allow (layer width, the largest tile of the static
 *   shared-memory plan and of the dynamic one);
 * - the device class's CollectTuning (src/backend/tuning.ts): workgroups aimed for, dynamic shared
 *   memory, TF32 wide threads, quad engines;
 * Then the first tile, from the widest down by halves, whose workgroup memory fits. Overrides are
 * taken as given (an impossible one is an error). The table test (test/unit/device/tile-choice.test.ts)
 * proves it chooses what the nested conditionals before it chose.
 */
import { capsOf } from '../backend/caps.js';
import { tuningFor } from '../backend/tuning.js';
import type { Backend } from '../backend/types.js';
import { cudaDqnSharedBytes } from '../kernels/collect_dqn.js';
import { QUAD_MQ, QUAD2_MAX_ROWS, sliceCandidates } from '../kernels/collect_engine.js';
import { cudaPpoSharedBytes } from '../kernels/collect_ppo.js';

export type CollectAlgo = 'dqn' | 'c51' | 'iqn' | 'ppo';

/** The tile shape of a kernel (see CollectDqnOptions); missing fields are chosen per backend. */
export interface TileShape {
  tileEpisodes: number;
  threads: number;
  tj: number;
  kt: number;
  tauRows: number;
  /** WGSL tile engine (CollectDqnOptions.engine): 0 scalar, 2 quad blocks; CUDA ignores it. */
  engine?: number;
}

/**
 * Rows per tile from which WebGPU takes the quad engine (2, where its rows per thread fit): with fewer rows its
 * quads of 4 outputs leave threads idle (a 256-wide layer has 64 quads), so small tiles keep
 * engine 0, which spreads single outputs over every thread.
 */
export const QUAD_ENGINE_MIN_ROWS = 16;

/** Threads of a TF32 wide tile (CollectTuning.tf32WideThreads on CUDA). */
export const CUDA_TF32_WIDE_THREADS = 512;

/** Threads per workgroup unless a rule below says otherwise. */
const DEFAULT_THREADS = 256;

/** A tile holds at most as many episodes as it has threads (default this many). */
const MAX_THREADS = 512;

interface AlgoTiles {
  /** The widest layer: threads across outputs and quad groups are planned for it. */
  width: number;
  /** Episodes per tile at most in the static plan (48 KiB of workgroup memory). */
  staticEpisodes: number;
  /** Episodes per tile at most in dynamic shared memory (CollectTuning.dynamicSharedTiles): exact, TF32. */
  dynamicEpisodes: { exact: number; tf32: number };
  /** TF32 tiles from this many episodes take CollectTuning.tf32WideThreads. */
  tf32WideThreadsFrom: number;
  /** The quad engines (CollectTuning.quadEngines) where rows per thread fit engine 2, and else. */
  quad?: { unrolled: number; otherwise: number };
  /** Rows are episode x tau pairs (IQN): tau rows per episode are chosen too. */
  tauRows: boolean;
}

/**
 * Per algorithm. PPO's critic is twice as wide as the DQN nets; IQN's rows are episode x tau
 * pairs (2 episodes); C51's 51-atom head and IQN keep their static tiles and engine 0 (unmeasured).
 */
export const ALGO_TILES: Readonly<Record<CollectAlgo, AlgoTiles>> = {
  dqn: {
    width: 256,
    staticEpisodes: 32,
    dynamicEpisodes: { exact: 64, tf32: 64 },
    tf32WideThreadsFrom: 64,
    quad: { unrolled: 2, otherwise: 0 },
    tauRows: false,
  },
  c51: {
    width: 256,
    staticEpisodes: 32,
    dynamicEpisodes: { exact: 32, tf32: 32 },
    tf32WideThreadsFrom: 64,
    tauRows: false,
  },
  iqn: {
    width: 256,
    staticEpisodes: 2,
    dynamicEpisodes: { exact: 2, tf32: 2 },
    tf32WideThreadsFrom: 64,
    tauRows: true,
  },
  ppo: {
    width: 512,
    staticEpisodes: 16,
    dynamicEpisodes: { exact: 16, tf32: 32 },
    tf32WideThreadsFrom: 32,
    quad: { unrolled: 2, otherwise: 0 },
    tauRows: false,
  },
};

/** Power of two <= x (x >= 1). */
const pow2floor = (x: number) => 2 ** Math.floor(Math.log2(Math.max(1, x)));

/**
 * How many groups of rows a workgroup's threads form (threads / TJ): each thread keeps
 * ceil(e / groups) rows x ceil(width / TJ) outputs in registers and loads that many activations
 * and weights per input, so the sum is minimised (ties: more groups, fewer weight loads);
 * a warp never spans two groups.
 */
function rowGroups(e: number, threads: number, width: number): number {
  let best = 1;
  let cost = Number.POSITIVE_INFINITY;
  for (let g = 1; g <= Math.min(e, threads / 32); g *= 2) {
    const c = Math.ceil(e / g) + Math.ceil(width / (threads / g));
    if (c <= cost) {
      best = g;
      cost = c;
    }
  }
  return best;
}

/** Whether the device's opt-in shared memory holds the CUDA plan of `e` episodes (plain head or PPO). */
function dynamicSharedFits(optin: number | undefined, algo: CollectAlgo, e: number): boolean {
  const need =
    algo === 'ppo'
      ? cudaPpoSharedBytes({ variant: 'tiled', tileEpisodes: e })
      : cudaDqnSharedBytes({ head: 'plain', variant: 'tiled', tileEpisodes: e });
  return optin !== undefined && need <= optin;
}

/** Tau rows per episode tried (IQN: divisors of the acting taus, up to 32 rows a tile). */
function tauRowCandidates(algo: CollectAlgo, e: number, actTaus: number, override?: number): number[] {
  if (override !== undefined) return [override];
  if (!ALGO_TILES[algo].tauRows) return [1];
  const list: number[] = [];
  for (let r = Math.min(actTaus, pow2floor(32 / e)); r >= 1; r /= 2) if (actTaus % r === 0) list.push(r);
  return list;
}

/**
 * The tile shape for N episodes of `algo` on `backend` (IQN: `actTaus` acting taus), `fits` the
 * kernel's workgroup-memory check, `tf32` the CUDA tensor-core build. Episodes per workgroup:
 * N / the device's workgroups (a power of two), at most the algorithm's tile, then halved until
 * the workgroup memory fits (or, with dynamic shared memory, the opt-in shared memory).
 */
export function chooseTile(
  algo: CollectAlgo,
  n: number,
  backend: Pick<Backend, 'kind' | 'info'>,
  actTaus: number,
  override: Partial<TileShape> = {},
  fits: (t: TileShape) => boolean = () => true,
  tf32 = false,
): TileShape {
  const caps = capsOf(backend);
  const device = tuningFor(caps).collect;
  const a = ALGO_TILES[algo];
  const dynamicMax = device.dynamicSharedTiles
    ? tf32
      ? a.dynamicEpisodes.tf32
      : a.dynamicEpisodes.exact
    : 0;
  // Past the static plan only where the dynamic plan is wider and the opt-in memory holds it.
  const dynamic = (e: number) =>
    dynamicMax > a.staticEpisodes &&
    e > a.staticEpisodes &&
    dynamicSharedFits(caps.limits.sharedOptinBytes, algo, e);
  const maxEpisodes = Math.min(override.threads ?? MAX_THREADS, Math.max(a.staticEpisodes, dynamicMax));
  const first = override.tileEpisodes ?? Math.min(maxEpisodes, pow2floor(n / device.workgroups));
  const wideThreads = (e: number) =>
    tf32 && device.tf32WideThreads !== undefined && e >= a.tf32WideThreadsFrom
      ? device.tf32WideThreads
      : undefined;
  for (let e = first; e >= 1; e = override.tileEpisodes === undefined ? e / 2 : 0) {
    const threads = override.threads ?? wideThreads(e) ?? DEFAULT_THREADS;
    const tj = override.tj ?? threads / rowGroups(e, threads, a.width);
    for (const tauRows of tauRowCandidates(algo, e, actTaus, override.tauRows)) {
      const rows = e * tauRows;
      const quadGroups = threads / (a.width / (4 * QUAD_MQ));
      const quad = device.quadEngines && a.quad && rows >= QUAD_ENGINE_MIN_ROWS ? a.quad : undefined;
      const auto = quad
        ? Math.ceil(rows / quadGroups) <= QUAD2_MAX_ROWS
          ? quad.unrolled
          : quad.otherwise
        : 0;
      const engine = override.engine ?? auto;
      for (const kt of override.kt !== undefined ? [override.kt] : sliceCandidates(override.engine ?? 0)) {
        const shape: TileShape = { tileEpisodes: e, threads, tj, kt, tauRows, engine };
        if (fits(shape) || dynamic(e)) return shape;
      }
    }
  }
  throw new Error(
    `collect ${algo}: no tile fits this device's ${caps.limits.workgroupStorageBytes} bytes of workgroup memory${
      override.tileEpisodes === undefined ? '' : ` with ${override.tileEpisodes} episodes per workgroup`
    }; use another backend`,
  );
}

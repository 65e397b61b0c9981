/**
 * The collection tile choice as a table (src/device/tile_choice.ts) gives the same tile as the
 * nested conditionals it replaced, kept here as `chooseTileBefore` (main at 24625e6, verbatim but for
 * the rules of the retired WebGPU f16 engines 4 and 5), for
 * every device class (CUDA sm_90 and sm_89, WebGPU on a GPU and on a software adapter, with 48 and
 * 16 KiB of workgroup memory, the CPU), algorithm, N, precision and engine or tile override, with
 * the collectors' own workgroup-memory checks.
 */
import { describe, expect, it } from 'vitest';
import { createCpuBackend } from '../../../src/backend/cpu/index.js';
import type { Backend } from '../../../src/backend/types.js';
import {
  type CollectAlgo,
  chooseTile,
  clusterEpisodes,
  clusterThreads,
  residentClusterEpisodes,
  type TileShape,
} from '../../../src/device/collect.js';
import {
  cudaClusterSharedBytes,
  cudaDqnSharedBytes,
  dqnWorkgroupBytes,
  type HeadCode,
} from '../../../src/kernels/collect_dqn.js';
import { QUAD_MQ, QUAD2_MAX_ROWS, sliceCandidates } from '../../../src/kernels/collect_engine.js';
import { cudaPpoSharedBytes, ppoWorkgroupBytes } from '../../../src/kernels/collect_ppo.js';

// ---- the choice before the table (src/device/collect.ts at 24625e6), verbatim but for the f16 engines ----
const QUAD_ENGINE_MIN_ROWS = 16;
const CUDA_TF32_WIDE_THREADS = 512;
const cudaTf32WideFrom = (algo: CollectAlgo) => (algo === 'ppo' ? 32 : 64);
const pow2floor = (x: number) => 2 ** Math.floor(Math.log2(Math.max(1, x)));
function workgroupBytes(backend: Backend): number {
  const v = backend.info.limits.maxComputeWorkgroupStorageSize;
  return typeof v === 'number' ? v : 48 * 1024;
}
function cudaSharedFits(backend: Backend, algo: CollectAlgo, e: number): boolean {
  const optin = backend.info.limits.maxSharedPerBlockOptin;
  const need =
    algo === 'ppo'
      ? cudaPpoSharedBytes({ variant: 'tiled', tileEpisodes: e })
      : cudaDqnSharedBytes({ head: 'plain', variant: 'tiled', tileEpisodes: e });
  return typeof optin === 'number' && need <= optin;
}
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

function chooseTileBefore(
  algo: CollectAlgo,
  n: number,
  backend: Backend,
  actTaus: number,
  override: Partial<TileShape> = {},
  fits: (t: TileShape) => boolean = () => true,
  tf32 = false,
): TileShape {
  const limit = workgroupBytes(backend);
  // CUDA, plain head: 64 episodes per block in dynamic shared memory (the WGSL budget below does
  // not apply to it), so each weight read from L2 serves twice the rows. CUDA blocks are one per
  // SM (255 registers x 256 threads), so aim for ~128 blocks (132 SMs on an H200): N = 128 gets
  // one episode per block instead of two, doubling the SMs that stream weights. WebGPU follows
  // the same rule: a small-N workgroup streams every weight each step whatever its rows, so
  // 64 workgroups of 2 episodes (the old choice) left half of an H200's SMs idle.
  const cuda = backend.kind === 'cuda';
  const software = backend.info.limits.software === 'yes';
  // CUDA TF32 PPO: 32 episodes per block in dynamic shared memory, half the weight bytes per env
  // step of the 16-episode static plan; the exact (parity) build keeps 16.
  const cudaWide = cuda && (algo === 'dqn' || (algo === 'ppo' && tf32));
  const staticMax = algo === 'ppo' ? 16 : 32;
  const maxE = Math.min(
    override.threads ?? CUDA_TF32_WIDE_THREADS,
    algo === 'iqn' ? 2 : cudaWide ? 2 * staticMax : staticMax,
  );
  const first = override.tileEpisodes ?? Math.min(maxE, pow2floor(n / 128));
  for (let e = first; e >= 1; e = override.tileEpisodes === undefined ? e / 2 : 0) {
    const threads =
      override.threads ?? (cuda && tf32 && e >= cudaTf32WideFrom(algo) ? CUDA_TF32_WIDE_THREADS : 256);
    const tj = override.tj ?? threads / rowGroups(e, threads, algo === 'ppo' ? 512 : 256);
    const tauCandidates: number[] = [];
    if (override.tauRows !== undefined) tauCandidates.push(override.tauRows);
    else if (algo !== 'iqn') tauCandidates.push(1);
    else
      for (let r = Math.min(actTaus, pow2floor(32 / e)); r >= 1; r /= 2)
        if (actTaus % r === 0) tauCandidates.push(r);
    for (const tauRows of tauCandidates) {
      for (const kt of override.kt !== undefined ? [override.kt] : sliceCandidates(override.engine ?? 0)) {
        // The unrolled quad engine (2) where it measured fastest: the plain DQN head and PPO on a
        // GPU with the rows for it (QUAD_ENGINE_MIN_ROWS) and at most QUAD2_MAX_ROWS rows per
        // thread (else engine 0). H200 at ff1baad, N = 65,536: DQN 18.1M env-steps/s (engine 0
        // 13.9M); PPO 6.73M (engine 0 4.67M). C51 and IQN are unmeasured, and a
        // software adapter (lavapipe, a CPU) ran the quad engines slower: engine 0 there.
        const rows = e * tauRows;
        const quad = (algo === 'dqn' || algo === 'ppo') && !cuda && !software && rows >= QUAD_ENGINE_MIN_ROWS;
        const quadGroups = threads / ((algo === 'ppo' ? 512 : 256) / (4 * QUAD_MQ));
        const unrolled = Math.ceil(rows / quadGroups) <= QUAD2_MAX_ROWS;
        const engine = override.engine ?? (quad && unrolled ? 2 : 0);
        const shape: TileShape = { tileEpisodes: e, threads, tj, kt, tauRows, engine };
        if (fits(shape) || (cudaWide && e > staticMax && cudaSharedFits(backend, algo, e))) return shape;
      }
    }
  }
  throw new Error(
    `collect ${algo}: no tile fits this device's ${limit} bytes of workgroup memory${
      override.tileEpisodes === undefined ? '' : ` with ${override.tileEpisodes} episodes per workgroup`
    }; use another backend`,
  );
}

// ---- end of the choice before the table ----

type Head = keyof typeof HeadCode;
const HEAD: Record<Exclude<CollectAlgo, 'ppo'>, Head> = { dqn: 'plain', c51: 'c51', iqn: 'iqn' };

/** A backend that reports `kind` and `limits` (the CPU backend under another name). */
function deviceOf(kind: Backend['kind'], limits: Record<string, string | number>): Backend {
  const cpu = createCpuBackend();
  Object.defineProperty(cpu, 'kind', { value: kind });
  Object.defineProperty(cpu, 'info', { value: { ...cpu.info, kind, limits } });
  return cpu;
}

const DEVICES: [string, Backend][] = [
  [
    'cuda sm_90',
    deviceOf('cuda', { computeCapability: '9.0', maxSharedPerBlock: 49152, maxSharedPerBlockOptin: 232448 }),
  ],
  [
    'cuda sm_89',
    deviceOf('cuda', { computeCapability: '8.9', maxSharedPerBlock: 49152, maxSharedPerBlockOptin: 101376 }),
  ],
  ['cuda, no opt-in', deviceOf('cuda', { maxSharedPerBlock: 49152 })],
  ['webgpu gpu 48k', deviceOf('webgpu', { software: 'no', maxComputeWorkgroupStorageSize: 49152 })],
  ['webgpu gpu 16k', deviceOf('webgpu', { software: 'no', maxComputeWorkgroupStorageSize: 16384 })],
  ['webgpu software 32k', deviceOf('webgpu', { software: 'yes', maxComputeWorkgroupStorageSize: 32768 })],
  ['cpu', createCpuBackend()],
];

const ALGOS: CollectAlgo[] = ['dqn', 'c51', 'iqn', 'ppo'];
const NS = [
  1, 2, 5, 8, 100, 128, 200, 256, 300, 512, 513, 1024, 2048, 2049, 4096, 8192, 16384, 32767, 32768, 65536,
];
const OVERRIDES: Partial<TileShape>[] = [
  {},
  { engine: 0 },
  { engine: 2 },
  { threads: 64 },
  { threads: 256 },
  { threads: 512 },
  { tileEpisodes: 4 },
  { tileEpisodes: 64 },
  { tileEpisodes: 2, threads: 128, tj: 64 },
  { kt: 4 },
  { tauRows: 2 },
];

/** The collectors' check: the WGSL twin's workgroup memory within the device's (as in device.ts). */
function fitsFor(algo: CollectAlgo, backend: Backend, seed: boolean): (t: TileShape) => boolean {
  const limit = workgroupBytes(backend);
  if (algo === 'ppo') return (t) => ppoWorkgroupBytes({ variant: seed ? 'seed' : 'tiled', ...t }) <= limit;
  const base = {
    head: HEAD[algo],
    atoms: 51,
    iqnEmbed: 64,
    actTaus: 32,
    variant: seed ? ('seed' as const) : ('tiled' as const),
  };
  return (t) => dqnWorkgroupBytes({ ...base, ...t }) <= limit;
}

const outcome = (f: () => TileShape): TileShape | string => {
  try {
    return f();
  } catch (err) {
    return (err as Error).message;
  }
};

describe('collection tile table', () => {
  it('chooses what the conditionals chose, everywhere in the grid', () => {
    let cases = 0;
    const diffs: string[] = [];
    for (const [name, backend] of DEVICES)
      for (const algo of ALGOS)
        for (const tf32 of [false, true])
          for (const seed of [false, true])
            for (const override of seed ? [{ threads: 64 }, { threads: 64, tileEpisodes: 2 }] : OVERRIDES)
              for (const n of NS) {
                const fits = fitsFor(algo, backend, seed);
                const taus = algo === 'iqn' ? 32 : 1;
                const before = outcome(() => chooseTileBefore(algo, n, backend, taus, override, fits, tf32));
                const now = outcome(() => chooseTile(algo, n, backend, taus, override, fits, tf32));
                cases++;
                if (JSON.stringify(before) !== JSON.stringify(now))
                  diffs.push(
                    `${name} ${algo} N=${n} tf32=${tf32} seed=${seed} ${JSON.stringify(override)}: ${JSON.stringify(before)} -> ${JSON.stringify(now)}`,
                  );
              }
    expect(diffs.slice(0, 10)).toEqual([]);
    expect(cases).toBeGreaterThan(10_000);
  });
});

// ---- the cluster shape before CLUSTER_TUNING (src/device/collect.ts at 24625e6), verbatim ----
const CLUSTER_THREADS = 256;
const SM90_SHARED = 227 * 1024;
const clusterThreadsBefore = (e: number) => (e > 8 ? Math.min(32 * e, 320) : CLUSTER_THREADS);
function residentBefore(
  n: number,
  e: number,
  resident: number | undefined,
  cluster = 8,
  tf32 = false,
  threads = 256,
) {
  if (resident === undefined || resident <= 0 || Math.ceil(n / e) <= resident) return e;
  const fewer = Math.ceil(n / resident);
  if (tf32 && fewer > 16) return e;
  if (cudaClusterSharedBytes({ tileEpisodes: fewer, cluster, tf32, threads }) > SM90_SHARED) return e;
  return fewer;
}
function clusterEpisodesBefore(n: number, cluster = 8, override?: number, tf32 = false, threads = 256) {
  if (override !== undefined) return override;
  let e = Math.ceil(n / Math.max(1, Math.floor(128 / cluster)));
  if (tf32) e = Math.min(e, 16);
  while (e > 1 && cudaClusterSharedBytes({ tileEpisodes: e, cluster, tf32, threads }) > SM90_SHARED)
    e = Math.ceil(e / 2);
  return e;
}

describe('cluster shape table', () => {
  it('chooses what the constants in the code chose', () => {
    for (let e = 1; e <= 40; e++) expect(clusterThreads(e)).toBe(clusterThreadsBefore(e));
    for (const n of [1, 8, 100, 128, 256, 512, 1024, 4096])
      for (const cluster of [2, 4, 8, 16])
        for (const tf32 of [false, true])
          for (const threads of [256, 288, 320]) {
            const e = clusterEpisodes(n, cluster, undefined, tf32, threads);
            expect(e).toBe(clusterEpisodesBefore(n, cluster, undefined, tf32, threads));
            for (const resident of [undefined, 0, 8, 15, 16, 64])
              expect(residentClusterEpisodes(n, e, resident, cluster, tf32, threads)).toBe(
                residentBefore(n, e, resident, cluster, tf32, threads),
              );
          }
  });
});

/**
 * cuda/collect_dqn_cluster.cu (the DQN collection kernel on sm_90 thread-block clusters), compiled
 * as the backend compiles it (generated preamble + source) and run on the CPU emulator, whose
 * clusters run their CTAs' threads together (cluster barrier, distributed shared memory), against
 * the TS reference on the same bindings: several launches in a row (episodes persist, restart,
 * truncate, hit barriers; curiosity on, off, on), N not filling the last cluster. The exact build is
 * f32 exact, so every output and the episode state must be bit-identical.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createCpuBackend } from '../../../src/backend/cpu/index.js';
import {
  compileOptions,
  findCompiler,
  nvccCandidates,
  nvccVersion,
} from '../../../src/backend/cuda/compile.js';
import { loadNative } from '../../../src/backend/cuda/native.js';
import { cudaPreamble } from '../../../src/backend/cuda/preamble.js';
import { kernelSource } from '../../../src/backend/cuda/sources.js';
import type { KernelSpec } from '../../../src/backend/types.js';
import { packUniforms, uniformBytes } from '../../../src/backend/uniforms.js';
import { argmaxQ } from '../../../src/collect/dqn.js';
import { cloneDefaults, SPEC_REWARD_TERMS } from '../../../src/config.js';
import type { Market } from '../../../src/data/types.js';
import {
  clusterEpisodes,
  clusterFits,
  clusterThreads,
  DqnDeviceCollector,
  residentClusterEpisodes,
} from '../../../src/device/collect.js';
import { envParams } from '../../../src/env/params.js';
import { createEnv } from '../../../src/env/state.js';
import {
  collectDqnDispatch,
  collectDqnSpec,
  cudaClusterSharedBytes,
  DQN_OUTPUT,
  dqnNetsSize,
  HeadCode,
} from '../../../src/kernels/collect_dqn.js';
import { envUniforms, outputBytes, sectionView } from '../../../src/kernels/collect_layout.js';
import type { TypedArray } from '../../../src/kernels/reference.js';
import { kernels } from '../../../src/kernels/registry.js';
import { forwardDueling, initParams } from '../../../src/nets/forward.js';
import { curiosityLayout, duelingLayout, NUM_ACTIONS, STATE_DIM } from '../../../src/nets/layout.js';
import { buildEmu, compare, emuUnavailable, runEmu, writeGenerated } from '../../emu/emu.js';
import { randomMarket } from '../env/fixtures.js';

const SEED = 77;
const N = 10;
// 3 launches of 10 steps: the 12-bar episodes truncate and restart in the second launch.
const STEPS = 10;
const LAUNCHES = 3;
const market: Market = randomMarket(400, 5);
const split = { start: 0, end: 400 };
const cfg = { ...cloneDefaults().env, ...SPEC_REWARD_TERMS };
// Short episodes and tight barriers: truncations, barrier exits and restarts within a launch.
cfg.episodeBars = 12;
cfg.profitTargetBps = 40;
cfg.stopLossBps = 30;
const params = envParams(cfg);

function clusterSpec(cluster: number, tileEpisodes: number, threads: number, tf32 = false): KernelSpec {
  return collectDqnSpec({
    tf32,
    head: 'plain',
    atoms: 51,
    iqnEmbed: 64,
    actTaus: 8,
    variant: 'cluster',
    cluster,
    tileEpisodes,
    threads,
    tj: 32,
    kt: 8,
    tauRows: 1,
  });
}

const layout = duelingLayout('plain', 51, 64);
const online = initParams(layout, 0, SEED);

function nets(): Float32Array {
  const parts = [online, initParams(curiosityLayout(), 4, SEED)];
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

const uniforms = (launch: number, steps = STEPS, epsilon = 0.3): Record<string, number> => ({
  n: N,
  steps,
  stepBase: launch * steps,
  epsilon,
  vMin: -10,
  vMax: 10,
  curiosity: launch === 1 ? 0 : 1,
  head: HeadCode.plain,
  atoms: 51,
  actTaus: 8,
  iqnEmbed: 64,
  ...envUniforms(params, split, [SEED, 0]),
});

/** The launch as kernel_harness reads it: ten buffers, the packed uniforms, the grid. */
function pack(spec: KernelSpec, buffers: TypedArray[], u: Record<string, number>): Uint8Array {
  const ubytes = new Uint8Array(uniformBytes(spec));
  packUniforms({ kernel: spec, buffers: [], uniforms: u, groups: [1, 1, 1] }, new DataView(ubytes.buffer));
  const { groups } = collectDqnDispatch(spec, [], u);
  const u32 = (x: number) => new Uint8Array(new Uint32Array([x]).buffer);
  const parts: Uint8Array[] = [];
  for (const b of buffers)
    parts.push(u32(b.byteLength), new Uint8Array(b.buffer, b.byteOffset, b.byteLength));
  parts.push(u32(ubytes.byteLength), ubytes, new Uint8Array(new Uint32Array(groups).buffer));
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

const NAMES = ['env_f', 'env_i', 'div_window', 'out_f', 'out_i'];
const nvcc = nvccCandidates().find((p) => nvccVersion(p) !== undefined);

describe.skipIf(!nvcc)(
  'collect_dqn_cluster with the compiler the backend finds here (skipped: no CUDA toolkit)',
  () => {
    // NVRTC where the toolkit has it (the GPU machine's path), for sm_90 as an H100 / H200 gets it,
    // at the 16-CTA cluster of N = 128 and the portable 8-CTA one.
    it.each([
      [16, 16, 128, false],
      [8, 8, 128, false],
      [8, 8, 256, true],
      [8, 8, 512, true],
      [16, 16, 256, true],
      [8, 9, 288, true],
    ])('compiles %i CTAs x %i episodes x %i threads (TF32 %s) for sm_90', (cluster, e, threads, tf32) => {
      const spec = clusterSpec(cluster, e, threads, tf32);
      const compiler = findCompiler(loadNative());
      const { source, headers } = kernelSource(spec.name);
      const cubin = compiler.compile(spec.name, cudaPreamble(spec) + source, headers, compileOptions(9, 0));
      expect(Buffer.from(cubin).includes(Buffer.from('\0collect_dqn_cluster\0'))).toBe(true);
    });
  },
);
const unavailable = emuUnavailable();

/**
 * Builds `spec` for the emulator and runs `launches` launches of `steps` steps beside the TS reference
 * on the same fresh bindings (episodes persisting between launches); `check` sees each launch's
 * reference and emulator buffers (env_f, env_i, div_window, out_f, out_i).
 */
function emuLaunches(
  spec: KernelSpec,
  tag: string,
  steps: number,
  launches: number,
  u: (launch: number) => Record<string, number>,
  check: (launch: number, ref: TypedArray[], emu: TypedArray[], u: Record<string, number>) => void,
): void {
  const source = readFileSync(new URL('../../../cuda/collect_dqn_cluster.cu', import.meta.url), 'utf8');
  const gen = writeGenerated(`${tag}.cu`, cudaPreamble(spec) + source);
  const binary = buildEmu('kernel_harness.cpp', { KERNEL_SOURCE: `"${gen}"`, KERNEL_NAME: spec.name });
  const env = createEnv(market, split, params, N, SEED);
  const ro = [market.features, market.ohlc, market.spreadBps, params.entropyTable, nets()];
  expect(ro[4].length).toBe(dqnNetsSize({ head: 'plain', atoms: 51, iqnEmbed: 64 }));
  const bytes = outputBytes(DQN_OUTPUT, N, steps);
  const fresh = (): TypedArray[] => [
    env.f.slice(),
    env.i.slice(),
    env.window.slice(),
    new Float32Array(bytes.f / 4),
    new Int32Array(bytes.i / 4),
  ];
  let ref = fresh();
  let emu = fresh();
  for (let launch = 0; launch < launches; launch++) {
    const ul = u(launch);
    ref = ref.map((b, i) => (i >= 3 ? b.fill(0) : b));
    emu = emu.map((b, i) => (i >= 3 ? b.fill(0) : b));
    kernels.collect_dqn_cluster.reference([...ro, ...ref], ul, [1, 1, 1]);
    const raw = new Uint8Array(runEmu(binary, ['@in', '@out'], pack(spec, [...ro, ...emu], ul)).buffer);
    let at = 0;
    emu = emu.map((b) => {
      const ctor = b.constructor as Float32ArrayConstructor | Int32ArrayConstructor;
      const copy = new ctor(raw.slice(at, at + b.byteLength).buffer);
      at += b.byteLength;
      return copy;
    });
    check(launch, ref, emu, ul);
  }
}

describe('collect_dqn cluster variant descriptor', () => {
  it('gives each of up to 10 episodes per cluster a warp of its own for the decisions', () => {
    expect(clusterThreads(8)).toBe(256);
    expect(clusterThreads(9)).toBe(288);
    expect(clusterThreads(10)).toBe(320);
    expect(clusterThreads(16)).toBe(320);
  });

  it('takes more episodes per cluster where the GPU holds fewer clusters at once than N needs', () => {
    // H200, 8-CTA clusters: 15 resident, so N = 128 runs as 15 clusters of 9, not 16 of 8 (two waves).
    expect(residentClusterEpisodes(128, 8, 15, 8, true, 256)).toBe(9);
    expect(residentClusterEpisodes(128, 8, 16, 8, true, 256)).toBe(8);
    expect(residentClusterEpisodes(128, 8, undefined, 8, true, 256)).toBe(8);
    // Not where the rows outgrow one m16 tile (TF32) or the shared-memory plan (exact, 64 rows).
    expect(residentClusterEpisodes(256, 16, 15, 8, true, 256)).toBe(16);
    expect(residentClusterEpisodes(128, 8, 10, 8, false, 256)).toBe(13);
    expect(residentClusterEpisodes(128, 8, 9, 8, false, 256)).toBe(15);
    expect(residentClusterEpisodes(128, 8, 2, 8, false, 256)).toBe(8);
  });

  it('launches CLUSTER blocks per TILE_E episodes in clusters along x, with the plan as dynamic shared memory', () => {
    const spec = clusterSpec(8, 4, 64);
    expect(spec.name).toBe('collect_dqn_cluster');
    expect(spec.cluster).toEqual([8, 1, 1]);
    expect(spec.sharedBytes).toBe(cudaClusterSharedBytes({ tileEpisodes: 4, cluster: 8 }));
    expect(spec.constants?.DYN_SMEM_BYTES).toBe(spec.sharedBytes);
    expect(collectDqnDispatch(spec, [], { n: 10 }).groups).toEqual([24, 1, 1]);
    expect(kernels.collect_dqn_cluster.spec.name).toBe('collect_dqn_cluster');
  });

  it('is refused off CUDA by the device collector and by the CPU backend', () => {
    const full = cloneDefaults();
    full.rollout.episodes = 4;
    full.rollout.steps = 2;
    const backend = createCpuBackend();
    const init = { backend, market, split, cfg: full, algo: 'dqn' as const, variant: 'cluster' as const };
    expect(() => new DqnDeviceCollector(init)).toThrow(
      /cluster variant runs on CUDA \(sm_90\+\) only, not on cpu/,
    );
    const spec = clusterSpec(8, 4, 64);
    const buffers = spec.bindings.map((b) => backend.createBuffer(16, b.name));
    const u = { ...uniforms(0), n: 4 };
    expect(() => backend.run([collectDqnDispatch(spec, buffers, u)])).toThrow(
      /thread-block clusters .* no CPU twin/,
    );
    backend.destroy();
  });

  it('fills ~128 CTAs at N = 128 and keeps the plan within 227 KiB at large N', () => {
    expect(clusterEpisodes(128, 8)).toBe(8);
    expect(clusterEpisodes(128, 16)).toBe(16);
    expect(clusterEpisodes(128, 8, 4)).toBe(4);
    for (const c of [8, 16])
      expect(
        cudaClusterSharedBytes({ tileEpisodes: clusterEpisodes(8192, c), cluster: c }),
      ).toBeLessThanOrEqual(227 * 1024);
    expect(clusterFits(65536, 8)).toBe(true);
    // 262,144 episodes need more than 65,535 blocks: the bench skips the variant there.
    expect(clusterFits(262144, 8)).toBe(false);
  });

  it('refuses other heads and plans past 227 KiB of shared memory', () => {
    expect(() => clusterSpec(1, 16, 64)).toThrow(/shared memory per CTA/);
    expect(() => clusterSpec(17, 16, 64)).toThrow(/from 1 to 16/);
    expect(() =>
      collectDqnSpec({
        head: 'c51',
        atoms: 51,
        iqnEmbed: 64,
        actTaus: 8,
        variant: 'cluster',
        tileEpisodes: 8,
        threads: 64,
        tj: 32,
        kt: 8,
        tauRows: 1,
      }),
    ).toThrow(/plain head only/);
  });
});

describe.skipIf(unavailable !== null)(
  `collect_dqn_cluster on the CPU emulator${unavailable ? ` (skipped: ${unavailable})` : ''}`,
  () => {
    // [name, CTAs per cluster, episodes per cluster, threads]; every exchange is asynchronous stores
    // counted on the receivers' mbarriers. Mutations tried at N = 10 x 10 steps x 3 launches (each
    // made the cases marked fail): R, truncated episodes not restarted (`restarts = active &&
    // so.done` in the kernel's step); O, the helper warps' restart row one bar late (`ep.bar + 1` in
    // owner_step).
    const cases: [string, number, number, number][] = [
      ['8 CTAs x 8 episodes (one each, the second cluster partly empty)', 8, 8, 32], // R fails
      ['8 CTAs x 10 episodes (CTAs 0 and 1 own two)', 8, 10, 64], // R fails
      ['16 CTAs x 4 episodes (idle owners, output slices of 0 rows)', 16, 4, 32], // R fails
      // 4 warps: the owners' simulator step beside the curiosity model (warps 1-3), as at 256
      // threads on the GPU.
      ['helper warps, 8 CTAs x 10 episodes x 128 threads', 8, 10, 128], // O fails
    ];
    for (const [name, cluster, e, threads] of cases) {
      it(`${name}: bit-identical to the TS reference over ${LAUNCHES} launches`, () => {
        const spec = clusterSpec(cluster, e, threads);
        const ends = { dones: false, truncateds: false };
        emuLaunches(
          spec,
          `cluster_${cluster}_${e}_${threads}`,
          STEPS,
          LAUNCHES,
          uniforms,
          (launch, ref, emu) => {
            for (const k of ['dones', 'truncateds'] as const)
              ends[k] ||= sectionView(DQN_OUTPUT, ref[4] as Int32Array, k, N, STEPS).includes(1);
            for (let b = 0; b < NAMES.length; b++) {
              const bad = ref[b].findIndex((x, i) => !Object.is(x, emu[b][i]));
              expect(
                bad,
                `launch ${launch} ${NAMES[b]}: first mismatch at ${bad}: emu ${emu[b][bad]} vs ref ${ref[b][bad]}`,
              ).toBe(-1);
            }
          },
        );
        expect(ends, 'the launches exercise episode ends of both kinds').toEqual({
          dones: true,
          truncateds: true,
        });
      });
    }
  },
);

describe.skipIf(unavailable !== null)(
  `collect_dqn_cluster TF32 build on the CPU emulator${unavailable ? ` (skipped: ${unavailable})` : ''}`,
  () => {
    // Epsilon 1 makes every action the Philox draw, so TF32 Q-values cannot fork the trajectories on
    // near ties: the simulator state, the states and every integer output must match the reference
    // bit for bit, and with curiosity the rewards within TF32 rounding. Greedy (epsilon 0), each
    // action must be a best action of the f32 reference's Q on the state the kernel saw, within
    // TF32 rounding. [name, CTAs, episodes per cluster, threads]: 64 threads give each warp two
    // column tiles (WN = 2); 16 CTAs x 4 episodes leave most CTAs without an episode. The N = 128
    // plan (8 x 8 at 256 threads) is the parity case "collect_dqn plain cluster TF32". 2 launches
    // of 8 steps: the 12-bar episodes truncate in the second.
    const steps = 8;
    const launches = 2;
    const cases: [string, number, number, number][] = [
      // Mutations R and O as in the exact cases above, at N = 10 x 8 steps x 2 launches.
      ['8 CTAs x 6 episodes x 64 threads', 8, 6, 64], // R fails
      ['16 CTAs x 4 episodes x 64 threads', 16, 4, 64], // R fails
      // CTAs 0 and 1 own two episodes (two owner warps).
      ['8 CTAs x 10 episodes x 256 threads', 8, 10, 256], // O fails
      // N = 128 on an H200: 15 clusters of 9, a warp per episode (9 warps).
      ['8 CTAs x 9 episodes x 288 threads', 8, 9, 288], // O fails
    ];
    for (const [name, cluster, e, threads] of cases) {
      it(`${name}: matches the TS reference over ${launches} launches at epsilon 1, greedy within TF32`, () => {
        const spec = clusterSpec(cluster, e, threads, true);
        expect(spec.constants?.TF32).toBe(1);
        let truncated = false;
        // Curiosity on in the first launch, off in the second.
        const u = (launch: number) => ({ ...uniforms(launch, steps, 1), curiosity: launch === 0 ? 1 : 0 });
        emuLaunches(
          spec,
          `cluster_tf32_${cluster}_${e}_${threads}`,
          steps,
          launches,
          u,
          (launch, ref, emu, u) => {
            truncated ||= sectionView(DQN_OUTPUT, ref[4] as Int32Array, 'truncateds', N, steps).includes(1);
            for (let b = 0; b < NAMES.length; b++) {
              const r = ref[b];
              const x = emu[b];
              if (b !== 3 || u.curiosity === 0) {
                const bad = r.findIndex((v, k) => !Object.is(v, x[k]));
                expect(
                  bad,
                  `launch ${launch} ${NAMES[b]}: first mismatch at ${bad}: ${x[bad]} vs ${r[bad]}`,
                ).toBe(-1);
                continue;
              }
              const rf = r as Float32Array;
              const ef = x as Float32Array;
              const scale = rf.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
              const all = compare(ef, rf, 1e-2 * scale, 1e-2);
              expect(all.firstBad, `launch ${launch} out_f: ${ef[all.firstBad]} vs ${rf[all.firstBad]}`).toBe(
                -1,
              );
            }
          },
        );
        expect(truncated, 'the launches truncate episodes').toBe(true);
        // Greedy: the kernel's action against the reference Q of the kernel's own state.
        let exact = 0;
        emuLaunches(
          spec,
          `cluster_tf32_${cluster}_${e}_${threads}`,
          steps,
          launches,
          (launch) => uniforms(launch, steps, 0),
          (launch, _ref, emu) => {
            const states = sectionView(
              DQN_OUTPUT,
              emu[3] as Float32Array,
              'states',
              N,
              steps,
            ) as Float32Array;
            const actions = sectionView(DQN_OUTPUT, emu[4] as Int32Array, 'actions', N, steps);
            const q = new Float32Array(NUM_ACTIONS);
            for (let r = 0; r < N * steps; r++) {
              forwardDueling(layout, online, states.subarray(r * STATE_DIM, (r + 1) * STATE_DIM), q);
              const best = argmaxQ(q);
              const scale = q.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
              const short = q[best] - q[actions[r]];
              expect(
                short,
                `launch ${launch} row ${r}: action ${actions[r]}, best ${best}`,
              ).toBeLessThanOrEqual(1e-2 * scale);
              if (actions[r] === best) exact++;
            }
          },
        );
        // Most decisions are clear; a few near ties may go either way under TF32.
        expect(exact).toBeGreaterThanOrEqual(0.9 * N * steps * launches);
      });
    }
  },
);

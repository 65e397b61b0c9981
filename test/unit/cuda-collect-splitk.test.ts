/**
 * collect_dqn's small-N TF32 engine (constant SPLITK = 1: cuda/mlp_splitk.cuh, cuda/collect_splitk.cuh)
 * and the bench-only env-alone build (SKIP_NETS = 1), compiled as the backend compiles them and run on
 * the CPU emulator (mma.sync emulated per warp) against the TS reference on the same bindings, over
 * several launches (episodes persist, restart, truncate). Epsilon 1 makes every action the Philox
 * draw, so the trajectories cannot part where TF32 Q-values would break a near tie differently: the
 * split-K build must then give the reference's simulator state and integer outputs bit for bit, and
 * its floats (TD errors from the TF32 Q-values, curiosity rewards from the TF32 model) within TF32
 * rounding. The env-alone build must give everything but the TD errors bit for bit (curiosity off).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { nvccCandidates, nvccVersion } from '../../src/backend/cuda/compile.js';
import { cudaPreamble } from '../../src/backend/cuda/preamble.js';
import type { KernelSpec } from '../../src/backend/types.js';
import { packUniforms, uniformBytes } from '../../src/backend/uniforms.js';
import { cloneDefaults, SPEC_REWARD_TERMS } from '../../src/config.js';
import type { Market } from '../../src/data/types.js';
import { envParams } from '../../src/env/params.js';
import { createEnv } from '../../src/env/state.js';
import { collectDqnSpec, DQN_OUTPUT, HeadCode } from '../../src/kernels/collect_dqn.js';
import { envUniforms, outputBytes, sectionView } from '../../src/kernels/collect_layout.js';
import { grid1d } from '../../src/kernels/grid.js';
import type { TypedArray } from '../../src/kernels/reference.js';
import { kernels } from '../../src/kernels/registry.js';
import { initParams } from '../../src/nets/forward.js';
import { curiosityLayout, duelingLayout } from '../../src/nets/layout.js';
import { buildEmu, compare, emuUnavailable, runEmu, writeGenerated } from './cuda-collect/emu.js';
import { randomMarket } from './env.fixtures.js';

const SEED = 77;
const market: Market = randomMarket(400, 5);
const split = { start: 0, end: 400 };
const cfg = { ...cloneDefaults().env, ...SPEC_REWARD_TERMS };
// Short episodes and tight barriers: truncations, barrier exits and restarts within a launch.
cfg.episodeBars = 12;
cfg.profitTargetBps = 40;
cfg.stopLossBps = 30;
const params = envParams(cfg);

function spec(tileEpisodes: number, threads: number, extra: Record<string, number>): KernelSpec {
  const s = collectDqnSpec({
    head: 'plain',
    atoms: 51,
    iqnEmbed: 64,
    actTaus: 8,
    variant: 'tiled',
    tileEpisodes,
    threads,
    tj: 32,
    kt: 8,
    tauRows: 1,
  });
  return { ...s, constants: { ...s.constants, ...extra } };
}

const SPLITK = { TF32: 1, SPLITK: 1 };
const SKIP = { SKIP_NETS: 1 };

function nets(): Float32Array {
  const layout = duelingLayout('plain', 51, 64);
  const parts = [
    initParams(layout, 0, SEED),
    initParams(layout, 1, SEED),
    initParams(curiosityLayout(), 4, SEED),
  ];
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

const uniforms = (n: number, steps: number, launch: number, curiosity: boolean): Record<string, number> => ({
  n,
  steps,
  stepBase: launch * steps,
  // Every action is the Philox draw (a unit float is < 1).
  epsilon: 1,
  gamma: 0.99,
  vMin: -10,
  vMax: 10,
  curiosity: curiosity && launch !== 1 ? 1 : 0,
  head: HeadCode.plain,
  atoms: 51,
  actTaus: 8,
  iqnEmbed: 64,
  ...envUniforms(params, split, [SEED, 0]),
});

function pack(s: KernelSpec, buffers: TypedArray[], u: Record<string, number>): Uint8Array {
  const ubytes = new Uint8Array(uniformBytes(s));
  packUniforms({ kernel: s, buffers: [], uniforms: u, groups: [1, 1, 1] }, new DataView(ubytes.buffer));
  const grid = grid1d(Math.ceil(u.n / s.constants!.TILE_E));
  const u32 = (x: number) => new Uint8Array(new Uint32Array([x]).buffer);
  const parts: Uint8Array[] = [];
  for (const b of buffers)
    parts.push(u32(b.byteLength), new Uint8Array(b.buffer, b.byteOffset, b.byteLength));
  parts.push(u32(ubytes.byteLength), ubytes, new Uint8Array(new Uint32Array(grid).buffer));
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

const NAMES = ['env_f', 'env_i', 'div_window', 'out_f', 'out_i'];
const TD = DQN_OUTPUT.sections.find((s) => s.name === 'tdErrors')!;

/** Index range of the TD-error section in out_f. */
function tdRange(n: number, steps: number): [number, number] {
  const start = TD.offset * n * steps;
  return [start, start + n * steps];
}

const nvcc = nvccCandidates().find((p) => nvccVersion(p) !== undefined);

describe.skipIf(!nvcc)(
  'collect_dqn split-K and env-alone builds with nvcc (skipped: no CUDA toolkit)',
  () => {
    const dir = mkdtempSync(join(tmpdir(), 'foxhunt-splitk-'));
    it.each([
      ['split-K, 1 episode x 512 threads', spec(1, 512, SPLITK)],
      ['split-K, 2 episodes x 512 threads', spec(2, 512, SPLITK)],
      ['split-K, 1 episode x 1024 threads', spec(1, 1024, SPLITK)],
      ['split-K, 8 episodes x 256 threads', spec(8, 256, SPLITK)],
      ['env alone, 1 episode x 256 threads', spec(1, 256, SKIP)],
    ])('%s compiles for sm_90 with warnings as errors', (_name, s) => {
      const tag = `k${s.constants!.TILE_E}_${s.workgroupSize[0]}_${s.constants!.SPLITK ?? 0}`;
      const src = join(dir, `${tag}.cu`);
      writeFileSync(
        src,
        cudaPreamble(s) + readFileSync(new URL('../../cuda/collect_dqn.cu', import.meta.url), 'utf8'),
      );
      const r = spawnSync(
        nvcc!,
        [
          '-cubin',
          '--gpu-architecture=sm_90',
          '--std=c++17',
          '-Werror',
          'all-warnings',
          '-I',
          join(dir),
          '-I',
          new URL('../../cuda', import.meta.url).pathname,
          '-o',
          join(dir, `${tag}.cubin`),
          src,
        ],
        { encoding: 'utf8' },
      );
      expect(r.status, r.stderr).toBe(0);
    });
  },
);

const unavailable = emuUnavailable();

describe.skipIf(unavailable !== null)(
  `collect_dqn split-K / env-alone on the CPU emulator${unavailable ? ` (skipped: ${unavailable})` : ''}`,
  () => {
    // [name, kernel, curiosity, N, steps, launches]: the emulator runs every thread of a block as a
    // fiber and meets each warp at every mma (~0.1 s per block step here), so the split-K cases
    // run one block for two short launches (curiosity on, then off); the env-alone case runs long
    // enough for episodes to end both ways and restart.
    const cases: [string, KernelSpec, boolean, number, number, number][] = [
      [
        'split-K TF32, 1 episode x 512 threads (K split in two in the output layer)',
        spec(1, 512, SPLITK),
        true,
        1,
        14,
        2,
      ],
      ['split-K TF32, 6 episodes x 256 threads', spec(6, 256, SPLITK), true, 6, 14, 2],
      ['env alone (SKIP_NETS), 2 episodes x 64 threads', spec(2, 64, SKIP), false, 10, 30, 3],
    ];
    for (const [name, s, curiosity, N, STEPS, LAUNCHES] of cases) {
      it(`${name}: matches the TS reference over ${LAUNCHES} launches at epsilon 1`, () => {
        const source = readFileSync(new URL('../../cuda/collect_dqn.cu', import.meta.url), 'utf8');
        const gen = writeGenerated(`${name.replace(/\W+/g, '_')}.cu`, cudaPreamble(s) + source);
        const binary = buildEmu('kernel_harness.cpp', { KERNEL_SOURCE: `"${gen}"`, KERNEL_NAME: s.name });
        const env = createEnv(market, split, params, N, SEED);
        const ro = [market.features, market.ohlc, market.spreadBps, params.entropyTable, nets()];
        const bytes = outputBytes(DQN_OUTPUT, N, STEPS);
        const fresh = (): TypedArray[] => [
          env.f.slice(),
          env.i.slice(),
          env.window.slice(),
          new Float32Array(bytes.f / 4),
          new Int32Array(bytes.i / 4),
        ];
        let ref = fresh();
        let emu = fresh();
        const ends = { dones: false, truncateds: false };
        let tdErr = 0;
        const [tdLo, tdHi] = tdRange(N, STEPS);
        for (let launch = 0; launch < LAUNCHES; launch++) {
          const u = uniforms(N, STEPS, launch, curiosity);
          ref = ref.map((b, i) => (i >= 3 ? b.fill(0) : b));
          emu = emu.map((b, i) => (i >= 3 ? b.fill(0) : b));
          kernels.collect_dqn.reference([...ro, ...ref], u, [1, 1, 1]);
          const raw = new Uint8Array(runEmu(binary, ['@in', '@out'], pack(s, [...ro, ...emu], u)).buffer);
          let at = 0;
          emu = emu.map((b) => {
            const ctor = b.constructor as Float32ArrayConstructor | Int32ArrayConstructor;
            const copy = new ctor(raw.slice(at, at + b.byteLength).buffer);
            at += b.byteLength;
            return copy;
          });
          for (const k of ['dones', 'truncateds'] as const)
            ends[k] ||= sectionView(DQN_OUTPUT, ref[4] as Int32Array, k, N, STEPS).includes(1);
          for (let b = 0; b < NAMES.length; b++) {
            const r = ref[b];
            const e = emu[b];
            if (b !== 3) {
              const bad = r.findIndex((x, i) => !Object.is(x, e[i]));
              expect(
                bad,
                `launch ${launch} ${NAMES[b]}: first mismatch at ${bad}: ${e[bad]} vs ${r[bad]}`,
              ).toBe(-1);
              continue;
            }
            // out_f: the TD errors (and, with curiosity, the rewards) come from the networks.
            const rf = r as Float32Array;
            const ef = e as Float32Array;
            const exact = (i: number) => (i < tdLo || i >= tdHi) && !curiosity;
            if (s.constants!.SKIP_NETS) {
              const bad = rf.findIndex((x, i) => exact(i) && !Object.is(x, ef[i]));
              expect(bad, `launch ${launch} out_f: first mismatch at ${bad}: ${ef[bad]} vs ${rf[bad]}`).toBe(
                -1,
              );
            } else {
              const scale = rf.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
              const { maxErr, firstBad } = compare(ef, rf, 1e-2 * scale, 1e-2);
              expect(
                firstBad,
                `launch ${launch} out_f: first mismatch at ${firstBad}: ${ef[firstBad]} vs ${rf[firstBad]}`,
              ).toBe(-1);
              expect(maxErr).toBeLessThan(1e-2 * scale);
              // The TD errors on their own scale (the states dominate out_f's): TF32 rounding of Q.
              const td = rf.subarray(tdLo, tdHi);
              const tdScale = td.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
              const t = compare(ef.subarray(tdLo, tdHi), td, 1e-2 * tdScale, 1e-2);
              expect(
                t.firstBad,
                `launch ${launch} TD error ${t.firstBad}: max err ${t.maxErr} (scale ${tdScale})`,
              ).toBe(-1);
              tdErr = Math.max(tdErr, t.maxErr);
            }
          }
        }
        // The env-alone case ends episodes both ways; the short split-K runs at least truncate.
        expect(ends, 'the launches end episodes').toEqual(
          s.constants!.SKIP_NETS
            ? { dones: true, truncateds: true }
            : { dones: ends.dones, truncateds: true },
        );
        // TF32 loses 13 mantissa bits: TD errors equal to the f32 reference's would mean the mma path did not run.
        if (!s.constants!.SKIP_NETS) expect(tdErr).toBeGreaterThan(0);
      });
    }
  },
);

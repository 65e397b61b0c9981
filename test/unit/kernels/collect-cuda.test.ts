/**
 * The CUDA collection kernels (cuda/collect_dqn.cu, cuda/collect_ppo.cu), compiled exactly as the
 * backend compiles them (generated preamble + source) but run on the CPU emulator, against the CPU
 * twin of their descriptors (the TS reference collectors on the same bindings): several launches in
 * a row over N episodes that do not fill the last block, so that episodes persist, restart, truncate
 * and hit barriers. Exact mode: the plain head and PPO's integer outputs and everything the
 * simulator computes are bit-identical; exp / log / cos (C51, IQN, PPO sampling) may move floats by
 * ulps, never an action on these inputs.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { cudaPreamble } from '../../../src/backend/cuda/preamble.js';
import type { KernelSpec } from '../../../src/backend/types.js';
import { packUniforms, uniformBytes } from '../../../src/backend/uniforms.js';
import { cloneDefaults, SPEC_REWARD_TERMS } from '../../../src/config.js';
import type { Market } from '../../../src/data/types.js';
import { envParams } from '../../../src/env/params.js';
import { createEnv } from '../../../src/env/state.js';
import { collectDqnSpec, DQN_OUTPUT, dqnNetsSize, HeadCode } from '../../../src/kernels/collect_dqn.js';
import {
  envUniforms,
  type OutputLayout,
  outputBytes,
  sectionView,
} from '../../../src/kernels/collect_layout.js';
import { collectPpoSpec, PPO_OUTPUT, ppoNetsSize } from '../../../src/kernels/collect_ppo.js';
import { grid1d } from '../../../src/kernels/grid.js';
import type { TypedArray } from '../../../src/kernels/reference.js';
import { kernels } from '../../../src/kernels/registry.js';
import { initParams } from '../../../src/nets/forward.js';
import {
  curiosityLayout,
  duelingLayout,
  ppoActorLayout,
  ppoCriticLayout,
  type QHead,
} from '../../../src/nets/layout.js';
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

interface Job {
  spec: KernelSpec;
  nets: Float32Array;
  uniforms: (launch: number) => Record<string, number>;
  output: OutputLayout;
}

function concat(parts: Float32Array[]): Float32Array {
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function dqnJob(head: QHead, tileEpisodes: number, extra: Record<string, number> = {}, threads = 64): Job {
  const o = {
    head,
    atoms: 51,
    iqnEmbed: 64,
    actTaus: 8,
    variant: 'tiled' as const,
    tileEpisodes,
    threads,
    tj: 32,
    kt: 8,
    tauRows: 1,
  };
  const spec = collectDqnSpec(o);
  const layout = duelingLayout(head, 51, 64);
  const nets = concat([initParams(layout, 0, SEED), initParams(curiosityLayout(), 4, SEED)]);
  expect(nets.length).toBe(dqnNetsSize(o));
  return {
    spec: { ...spec, constants: { ...spec.constants, ...extra } },
    nets,
    output: DQN_OUTPUT,
    uniforms: (launch) => ({
      n: N,
      steps: STEPS,
      stepBase: launch * STEPS,
      epsilon: 0.3,
      vMin: -10,
      vMax: 10,
      curiosity: launch === 1 ? 0 : 1,
      head: HeadCode[head],
      atoms: 51,
      actTaus: 8,
      iqnEmbed: 64,
      ...envUniforms(params, split, [SEED, 0]),
    }),
  };
}

function ppoJob(tileEpisodes: number, threads = 64): Job {
  const spec = collectPpoSpec({ variant: 'tiled', tileEpisodes, threads, tj: 32, kt: 4 });
  const nets = concat([
    initParams(ppoActorLayout(), 2, SEED),
    initParams(ppoCriticLayout(), 3, SEED),
    initParams(curiosityLayout(), 4, SEED),
  ]);
  expect(nets.length).toBe(ppoNetsSize());
  return {
    spec,
    nets,
    output: PPO_OUTPUT,
    uniforms: (launch) => ({
      n: N,
      steps: STEPS,
      stepBase: launch * STEPS,
      gamma: 0.99,
      lambda: 0.95,
      curiosity: launch === 1 ? 0 : 1,
      ...envUniforms(params, split, [SEED, 0]),
    }),
  };
}

/** The launch as the harness reads it: ten buffers, the packed uniforms, the grid. */
function pack(spec: KernelSpec, buffers: TypedArray[], uniforms: Record<string, number>): Uint8Array {
  const ubytes = new Uint8Array(uniformBytes(spec));
  packUniforms({ kernel: spec, buffers: [], uniforms, groups: [1, 1, 1] }, new DataView(ubytes.buffer));
  const grid = grid1d(Math.ceil(N / spec.constants!.TILE_E));
  const parts: Uint8Array[] = [];
  const u32 = (x: number) => new Uint8Array(new Uint32Array([x]).buffer);
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

function buildKernel(spec: KernelSpec, tag: string): string {
  const source = readFileSync(new URL(`../../../cuda/${spec.name}.cu`, import.meta.url), 'utf8');
  const gen = writeGenerated(`${tag}.cu`, cudaPreamble(spec) + source);
  return buildEmu('kernel_harness.cpp', { KERNEL_SOURCE: `"${gen}"`, KERNEL_NAME: spec.name });
}

/**
 * Runs LAUNCHES launches of `job` on the reference and on the emulated kernel from the same start;
 * returns both sides' read-write buffers after every launch.
 */
function runBoth(job: Job, binary: string): { ref: TypedArray[][]; emu: TypedArray[][] } {
  const env = createEnv(market, split, params, N, SEED);
  const ro = [market.features, market.ohlc, market.spreadBps, params.entropyTable, job.nets];
  const bytes = outputBytes(job.output, N, STEPS);
  const fresh = (): TypedArray[] => [
    env.f.slice(),
    env.i.slice(),
    env.window.slice(),
    new Float32Array(bytes.f / 4),
    new Int32Array(bytes.i / 4),
  ];
  let refState = fresh();
  let emuState = fresh();
  const ref: TypedArray[][] = [];
  const emu: TypedArray[][] = [];
  const reference = kernels[job.spec.name].reference;
  for (let launch = 0; launch < LAUNCHES; launch++) {
    const u = job.uniforms(launch);
    refState = refState.map((b, i) => (i >= 3 ? b.fill(0) : b));
    emuState = emuState.map((b, i) => (i >= 3 ? b.fill(0) : b));
    reference([...ro, ...refState], u, grid1d(Math.ceil(N / job.spec.constants!.TILE_E)));
    const raw = runEmu(binary, ['@in', '@out'], pack(job.spec, [...ro, ...emuState], u));
    const words = new Uint8Array(raw.buffer);
    let at = 0;
    emuState = emuState.map((b) => {
      const copy = new (b.constructor as Float32ArrayConstructor | Int32ArrayConstructor)(
        words.slice(at, at + b.byteLength).buffer,
      );
      at += b.byteLength;
      return copy;
    });
    ref.push(refState.map((b) => b.slice()));
    emu.push(emuState.map((b) => b.slice()));
  }
  return { ref, emu };
}

const NAMES = ['env_f', 'env_i', 'div_window', 'out_f', 'out_i'];

function expectSame(ref: TypedArray[][], emu: TypedArray[][], floatTol: number): void {
  for (let launch = 0; launch < ref.length; launch++) {
    for (let b = 0; b < NAMES.length; b++) {
      const r = ref[launch][b];
      const e = emu[launch][b];
      const where = `launch ${launch} ${NAMES[b]}`;
      if (r instanceof Int32Array || floatTol === 0) {
        const bad = r.findIndex((x, i) => !Object.is(x, e[i]));
        expect(bad, `${where}: first mismatch at ${bad}: emu ${e[bad]} vs ref ${r[bad]}`).toBe(-1);
      } else {
        const { maxErr, firstBad } = compare(e as Float32Array, r as Float32Array, floatTol, floatTol);
        expect(
          firstBad,
          `${where}: first mismatch at ${firstBad}: emu ${e[firstBad]} vs ref ${r[firstBad]} (max err ${maxErr})`,
        ).toBe(-1);
      }
    }
  }
}

const unavailable = emuUnavailable();

describe.skipIf(unavailable !== null)(
  `CUDA collection kernels on the CPU emulator${unavailable ? ` (skipped: ${unavailable})` : ''}`,
  () => {
    // Mutations tried at N = 10 x 10 steps x 3 launches, each failing the cases marked: E,
    // collect_dqn.cu's tiled step restarting only `if (so.done)` (truncations not restarted); P, collect_ppo.cu's
    // bootstrap without `so.truncated`; B, collect_env.cuh truncating at `step > episode_bars`. The
    // plain head at 4 episodes per block is the parity case "collect_dqn plain tiled" (E fails it
    // on emu), so it is not repeated here; E and P pass the C51, IQN, PPO and seed parity cases.
    const cases: [string, () => Job, number][] = [
      ['collect_dqn plain, 1 episode per block', () => dqnJob('plain', 1), 0], // E fails
      // Past 48 KiB: dynamic shared memory and the out-of-place stream layers (N < TILE_E here).
      ['collect_dqn plain, 64 episodes per block', () => dqnJob('plain', 64, {}, 256), 0], // E fails
      // The TF32 default plan's shape (64 x 512): two row groups per output in the exact path.
      ['collect_dqn plain, 64 episodes x 512 threads', () => dqnJob('plain', 64, {}, 512), 0], // E fails
      ['collect_dqn c51', () => dqnJob('c51', 4), 1e-5], // E fails
      ['collect_dqn iqn', () => dqnJob('iqn', 4), 1e-5], // E fails
      [
        'collect_dqn seed variant', // B fails
        () => ({
          ...dqnJob('plain', 4),
          spec: collectDqnSpec({
            head: 'plain',
            atoms: 51,
            iqnEmbed: 64,
            actTaus: 8,
            variant: 'seed',
            tileEpisodes: 32,
            threads: 32,
            tj: 32,
            kt: 4,
            tauRows: 1,
          }),
        }),
        0,
      ],
      ['collect_ppo, 4 episodes per block', () => ppoJob(4), 1e-5], // P fails
      // Past 48 KiB: the TF32 default plan's shape (32 x 512) in dynamic shared memory.
      ['collect_ppo, 32 episodes x 512 threads', () => ppoJob(32, 512), 1e-5], // P fails
      [
        'collect_ppo seed variant', // P, B fail
        () => ({
          ...ppoJob(4),
          spec: collectPpoSpec({ variant: 'seed', tileEpisodes: 32, threads: 32, tj: 32, kt: 4 }),
        }),
        1e-5,
      ],
    ];
    for (const [name, make, tol] of cases) {
      it(`${name}: matches the TS reference over ${LAUNCHES} launches`, () => {
        const job = make();
        const binary = buildKernel(job.spec, name.replace(/\W+/g, '_'));
        const { ref, emu } = runBoth(job, binary);
        // The launches exercise episode ends of both kinds (dones and truncations sections).
        for (const name of ['dones', 'truncateds']) {
          const hits = ref.some((l) =>
            sectionView(job.output, l[4] as Int32Array, name, N, STEPS).includes(1),
          );
          expect(hits, `no step of the test sets ${name}`).toBe(true);
        }
        expectSame(ref, emu, tol);
      });
    }
  },
);

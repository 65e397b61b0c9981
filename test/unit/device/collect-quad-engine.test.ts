/**
 * The WGSL quad engine's shape (collect_tile.wgsl ENGINE 2): when the collectors choose it, the
 * rows and workgroup memory it implies, and the shapes it rejects. That it computes the
 * reference's results is the parity suite's `quad2 engine` cases (src/parity/collect_cases.ts).
 */
import { describe, expect, it } from 'vitest';
import { createCpuBackend } from '../../../src/backend/cpu/index.js';
import type { Backend } from '../../../src/backend/types.js';
import { chooseTile, QUAD_ENGINE_MIN_ROWS } from '../../../src/device/collect.js';
import {
  type CollectDqnOptions,
  collectDqnSpec,
  dqnTileConstants,
  dqnWorkgroupBytes,
} from '../../../src/kernels/collect_dqn.js';
import { collectPpoSpec, ppoTileConstants, ppoWorkgroupBytes } from '../../../src/kernels/collect_ppo.js';

function backendOf(kind: 'cuda' | 'webgpu', software = 'no'): Backend {
  const cpu = createCpuBackend();
  Object.defineProperty(cpu, 'kind', { value: kind });
  const limits =
    kind === 'cuda'
      ? { maxSharedPerBlock: 48 * 1024, maxSharedPerBlockOptin: 232448 }
      : { maxComputeWorkgroupStorageSize: 48 * 1024, software };
  Object.defineProperty(cpu, 'info', { value: { ...cpu.info, kind, limits } });
  return cpu;
}

const dqn = (
  tileEpisodes: number,
  engine: number,
  head: CollectDqnOptions['head'] = 'plain',
): CollectDqnOptions => ({
  head,
  atoms: 51,
  iqnEmbed: 64,
  actTaus: 32,
  variant: 'tiled',
  tileEpisodes,
  threads: 256,
  tj: 32,
  kt: 8,
  tauRows: 1,
  engine,
});

describe('WGSL quad engine', () => {
  it('plain DQN and PPO on a WebGPU GPU take the unrolled quad engine from 16 rows; small tiles, CUDA, software, C51 keep 0', () => {
    const gpu = backendOf('webgpu');
    const fits = (t: { tileEpisodes: number; kt: number; engine?: number }) =>
      dqnWorkgroupBytes({ ...dqn(t.tileEpisodes, t.engine ?? 0), kt: t.kt }) <= 48 * 1024;
    const big = chooseTile('dqn', 65536, gpu, 32, {}, fits);
    expect(big).toMatchObject({ tileEpisodes: 32, engine: 2, kt: 8 });
    // H200 at ff1baad, N = 65,536: engine 2 fastest for DQN and PPO. PPO at 16 rows (4 a thread)
    // takes it; with more rows a thread than engine 2 holds, DQN and PPO keep 0.
    expect(chooseTile('ppo', 65536, gpu, 32, {}, (t) => t.tileEpisodes <= 16).engine).toBe(2);
    expect(chooseTile('ppo', 65536, gpu, 32, { tileEpisodes: 32 }, () => true).engine).toBe(0);
    expect(chooseTile('c51', 65536, gpu, 51).engine).toBe(0);
    expect(chooseTile('dqn', 128, gpu, 32, {}, fits).engine).toBe(0);
    expect(QUAD_ENGINE_MIN_ROWS).toBe(16);
    expect(chooseTile('dqn', 65536, backendOf('cuda'), 32).engine).toBe(0);
    // A software adapter (lavapipe) keeps engine 0, which runs faster on a CPU.
    expect(chooseTile('dqn', 65536, backendOf('webgpu', 'yes'), 32, {}, fits).engine).toBe(0);
    // An override is taken as given, so a benchmark can run either engine at any N.
    expect(chooseTile('dqn', 128, gpu, 32, { engine: 2 }, fits).engine).toBe(2);
    expect(chooseTile('dqn', 65536, gpu, 32, { threads: 128 }, fits)).toMatchObject({
      tileEpisodes: 32,
      engine: 0,
    });
    expect(chooseTile('dqn', 65536, gpu, 32, { engine: 0 }, fits).engine).toBe(0);
  });

  it('the full DQN and PPO tiles fit 48 KiB with the same rows and slices as engine 0', () => {
    // 32 rows x 256: 32 threads across 64 output quads (2 each), 8 row groups of 4 rows.
    expect(dqnWorkgroupBytes(dqn(32, 2))).toBeLessThanOrEqual(48 * 1024);
    expect(dqnWorkgroupBytes(dqn(32, 0))).toBeLessThanOrEqual(48 * 1024);
    // A small tile pads its rows up to the engine's row groups (8 for DQN at 256 threads).
    expect(dqnTileConstants(dqn(2, 2)).ROWS).toBe(8);
    expect(collectDqnSpec(dqn(32, 0)).constants).toMatchObject({ ENGINE: 0, ROWS: 32 });
  });

  it('rejects engines it does not have and thread counts its quads cannot divide', () => {
    expect(() => collectDqnSpec(dqn(32, 6))).toThrow(/engine 6 must be 0, 2/);
    // The retired engines 1 (quad blocks), 3 (small tiles), 4 and 5 (f16) are refused.
    expect(() => collectDqnSpec(dqn(32, 1))).toThrow(/engine 1 must be 0, 2/);
    expect(() => collectDqnSpec(dqn(1, 3))).toThrow(/engine 3 must be 0, 2/);
    expect(() => collectDqnSpec(dqn(32, 4))).toThrow(/engine 4 must be 0, 2/);
    expect(() =>
      collectPpoSpec({ variant: 'tiled', tileEpisodes: 4, threads: 256, tj: 64, kt: 4, engine: 5 }),
    ).toThrow(/engine 5 must be 0, 2/);
    expect(() => collectDqnSpec({ ...dqn(4, 2), threads: 48, tj: 48 })).toThrow(/multiple of 32/);
    expect(() =>
      collectPpoSpec({ variant: 'tiled', tileEpisodes: 4, threads: 32, tj: 32, kt: 4, engine: 2 }),
    ).toThrow(/multiple of 64/);
  });

  it('engine 2 takes the quad shapes with at most 4 rows a thread and declares no more memory', () => {
    expect(dqnTileConstants(dqn(32, 2))).toMatchObject({ ROWS: 32, ENGINE: 2, MQ: 2, KT: 8 });
    expect(dqnWorkgroupBytes(dqn(32, 2))).toBeLessThanOrEqual(48 * 1024);
    const ppo = { variant: 'tiled' as const, tileEpisodes: 16, threads: 256, tj: 64, kt: 4 };
    expect(ppoTileConstants({ ...ppo, engine: 2 })).toMatchObject({ ROWS: 16, ENGINE: 2, MQ: 2 });
    expect(ppoWorkgroupBytes({ ...ppo, engine: 2 })).toBeLessThanOrEqual(48 * 1024);
    expect(collectDqnSpec(dqn(32, 2)).constants).toMatchObject({ ENGINE: 2, MQ: 2, ROWS: 32 });
    // 64 rows over 8 row groups would need 8 accumulator rows a thread: engine 0 only.
    expect(() => collectDqnSpec(dqn(64, 2))).toThrow(/at most 4 rows per thread, this tile needs 8/);
    // An override reaches the shader through chooseTile as given.
    expect(chooseTile('dqn', 65536, backendOf('webgpu'), 32, { engine: 2 }).engine).toBe(2);
  });
});

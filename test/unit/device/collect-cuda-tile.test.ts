/**
 * The CUDA tile choice of the collection kernels and the dynamic shared memory it implies: the
 * plain DQN head takes 64 episodes per block at large N (a plan past 48 KiB, launched with
 * KernelSpec.sharedBytes), small N gets ~128 blocks (one per SM of an H200), and other backends
 * keep their workgroup-memory-bound tiles. That the 64-episode kernel computes the reference
 * results is checked in test/unit/kernels/collect-cuda.test.ts, that it compiles in cuda-collect-compile.
 */
import { describe, expect, it } from 'vitest';
import { createCpuBackend } from '../../../src/backend/cpu/index.js';
import type { Backend } from '../../../src/backend/types.js';
import { chooseTile } from '../../../src/device/collect.js';
import {
  type CollectDqnOptions,
  collectDqnSpec,
  cudaDqnSharedBytes,
  dqnWorkgroupBytes,
} from '../../../src/kernels/collect_dqn.js';
import { collectPpoSpec, cudaPpoSharedBytes, ppoWorkgroupBytes } from '../../../src/kernels/collect_ppo.js';

/** A backend that reports itself as `kind` with 48 KiB of workgroup memory (CUDA: `optin` opt-in). */
function backendOf(kind: 'cuda' | 'webgpu', optin = 232448): Backend {
  const cpu = createCpuBackend();
  Object.defineProperty(cpu, 'kind', { value: kind });
  const limits =
    kind === 'cuda'
      ? { maxSharedPerBlock: 48 * 1024, maxSharedPerBlockOptin: optin }
      : { maxComputeWorkgroupStorageSize: 48 * 1024 };
  Object.defineProperty(cpu, 'info', { value: { ...cpu.info, kind, limits } });
  return cpu;
}

const dqn = (tileEpisodes: number, head: CollectDqnOptions['head'] = 'plain'): CollectDqnOptions => ({
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
});

/** The collector's check (src/device/collect.ts): the WGSL twin's workgroup memory within 48 KiB. */
const fits = (t: Omit<CollectDqnOptions, 'head' | 'atoms' | 'iqnEmbed' | 'actTaus' | 'variant'>) =>
  dqnWorkgroupBytes({ ...dqn(t.tileEpisodes), ...t }) <= 48 * 1024;
const ppoFits = (t: { tileEpisodes: number; threads: number; tj: number; kt: number }) =>
  ppoWorkgroupBytes({ variant: 'tiled', ...t }) <= 48 * 1024;
const tileOf = (n: number, backend: Backend) => chooseTile('dqn', n, backend, 32, {}, fits).tileEpisodes;

describe('CUDA collection tiles', () => {
  it('CUDA: one episode per block at N = 128, ~128 blocks at mid N, 64 per block at large N (plain head)', () => {
    const cuda = backendOf('cuda');
    expect(tileOf(128, cuda)).toBe(1);
    expect(tileOf(1024, cuda)).toBe(8);
    expect(tileOf(8192, cuda)).toBe(64);
    expect(tileOf(65536, cuda)).toBe(64);
    // The other heads keep their static-shared-memory limits.
    expect(chooseTile('ppo', 65536, cuda, 32).tileEpisodes).toBe(16);
    expect(chooseTile('iqn', 65536, cuda, 32).tileEpisodes).toBe(2);
  });

  it('CUDA TF32: 64 x 512 threads at large N (plain head), PPO 32 x 512 in dynamic shared memory', () => {
    const cuda = backendOf('cuda');
    const tf32 = (algo: 'dqn' | 'ppo', n: number, override = {}) =>
      chooseTile(algo, n, cuda, 32, override, algo === 'dqn' ? fits : ppoFits, true);
    for (const n of [8192, 65536]) {
      expect(tf32('dqn', n)).toMatchObject({ tileEpisodes: 64, threads: 512 });
      expect(tf32('ppo', n)).toMatchObject({ tileEpisodes: 32, threads: 512 });
    }
    // Smaller tiles keep 256 threads; the exact build keeps its plans.
    expect(tf32('dqn', 1024)).toMatchObject({ tileEpisodes: 8, threads: 256 });
    expect(tf32('ppo', 2048)).toMatchObject({ tileEpisodes: 16, threads: 256 });
    expect(chooseTile('dqn', 65536, cuda, 32, {}, fits).threads).toBe(256);
    expect(chooseTile('ppo', 65536, cuda, 32)).toMatchObject({ tileEpisodes: 16, threads: 256 });
    // The old plans stay selectable.
    expect(tf32('dqn', 65536, { threads: 256 })).toMatchObject({ tileEpisodes: 64, threads: 256 });
    expect(tf32('ppo', 65536, { tileEpisodes: 16, threads: 256 })).toMatchObject({
      tileEpisodes: 16,
      threads: 256,
    });
    // A device without the opt-in shared memory for 32 PPO episodes falls back to 16.
    expect(chooseTile('ppo', 65536, backendOf('cuda', 48 * 1024), 32, {}, ppoFits, true).tileEpisodes).toBe(
      16,
    );
  });

  it('CUDA devices with less opt-in shared memory (sm_89: 99 KiB) stay at 32 episodes per block', () => {
    expect(tileOf(65536, backendOf('cuda', 101376))).toBe(32);
  });

  it('WebGPU keeps its tiles (64 episodes never reach a WGSL twin)', () => {
    const gpu = backendOf('webgpu');
    expect(tileOf(128, gpu)).toBe(1);
    expect(tileOf(65536, gpu)).toBe(32);
  });

  it('a plain tile past 48 KiB launches with dynamic shared memory sized by the kernel plan', () => {
    const wide = collectDqnSpec(dqn(64));
    expect(wide.sharedBytes).toBe(cudaDqnSharedBytes(dqn(64)));
    expect(wide.constants!.DYN_SMEM_BYTES).toBe(wide.sharedBytes);
    expect(wide.sharedBytes!).toBeGreaterThan(48 * 1024);
    expect(wide.sharedBytes!).toBeLessThanOrEqual(227 * 1024);
    // Within 48 KiB the kernel keeps static shared memory, exactly as before.
    const ppo32 = collectPpoSpec({ variant: 'tiled', tileEpisodes: 32, threads: 512, tj: 32, kt: 4 });
    expect(ppo32.sharedBytes).toBe(cudaPpoSharedBytes({ variant: 'tiled', tileEpisodes: 32 }));
    expect(ppo32.constants!.DYN_SMEM_BYTES).toBe(ppo32.sharedBytes);
    expect(ppo32.sharedBytes!).toBeGreaterThan(48 * 1024);
    const ppo16 = collectPpoSpec({ variant: 'tiled', tileEpisodes: 16, threads: 256, tj: 32, kt: 4 });
    for (const spec of [collectDqnSpec(dqn(32)), collectDqnSpec(dqn(16, 'c51')), ppo16]) {
      expect(spec.sharedBytes).toBeUndefined();
      expect(spec.constants!.DYN_SMEM_BYTES).toBeUndefined();
    }
  });
});

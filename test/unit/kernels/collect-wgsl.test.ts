/**
 * The collection shaders are valid WGSL for every tile shape the collectors choose, not only the
 * small one the parity cases run, and so are validate_dqn's GPU builds (lavapipe runs the software
 * build, without the 64-load block): Tint (Dawn's front end) checks each generated module. Only the
 * front end runs here (no pipeline: lavapipe's LLVM would take minutes per shape); the parity
 * suite runs the kernels.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KernelSpec } from '../../../src/backend/types.js';
import { wgslPreamble } from '../../../src/backend/webgpu/preamble.js';
import { type CollectDqnOptions, collectDqnSpec } from '../../../src/kernels/collect_dqn.js';
import { type CollectPpoOptions, collectPpoSpec } from '../../../src/kernels/collect_ppo.js';
import { wgslSources } from '../../../src/kernels/sources.js';
import { GPU_LOADS, type ValidateDqnHead, validateDqnSpec } from '../../../src/kernels/validate_dqn.js';

let device: GPUDevice | undefined;
let gpu: GPU | undefined;
let unavailable = '';

beforeAll(async () => {
  try {
    const { create, globals } = await import('webgpu');
    Object.assign(globalThis, globals);
    // The instance is kept: Dawn aborts (std::system_error in its threads) when a GPU instance
    // is garbage-collected while its device compiles.
    gpu = create([]);
    const adapter = await gpu.requestAdapter();
    if (!adapter) throw new Error('no WebGPU adapter');
    device = await adapter.requestDevice();
  } catch (err) {
    if (process.env.FOXHUNT_REQUIRE_WEBGPU === '1') throw err;
    unavailable = (err as Error).message;
  }
});
afterAll(() => device?.destroy());

const dqnBase: Omit<CollectDqnOptions, 'head' | 'tileEpisodes' | 'tj' | 'kt'> = {
  atoms: 51,
  iqnEmbed: 64,
  actTaus: 32,
  variant: 'tiled',
  threads: 256,
  tauRows: 16,
};

const shapes: [string, KernelSpec][] = [
  [
    'dqn plain, full tile (48 KiB)',
    collectDqnSpec({ ...dqnBase, head: 'plain', tileEpisodes: 32, tj: 32, kt: 8 }),
  ],
  [
    'dqn plain, N = 128 tile',
    collectDqnSpec({ ...dqnBase, head: 'plain', tileEpisodes: 2, tj: 128, kt: 32 }),
  ],
  ['dqn c51', collectDqnSpec({ ...dqnBase, head: 'c51', tileEpisodes: 16, tj: 32, kt: 8 })],
  ['dqn iqn', collectDqnSpec({ ...dqnBase, head: 'iqn', tileEpisodes: 2, tj: 128, kt: 8 })],
  [
    'dqn seed',
    collectDqnSpec({
      ...dqnBase,
      head: 'plain',
      variant: 'seed',
      threads: 64,
      tileEpisodes: 64,
      tj: 64,
      kt: 4,
    }),
  ],
  ...(
    [
      ['ppo, full tile', { variant: 'tiled', tileEpisodes: 16, threads: 256, tj: 64, kt: 4 }],
      ['ppo, N = 128 tile', { variant: 'tiled', tileEpisodes: 2, threads: 256, tj: 128, kt: 16 }],
      ['ppo seed', { variant: 'seed', tileEpisodes: 64, threads: 64, tj: 64, kt: 4 }],
    ] as [string, CollectPpoOptions][]
  ).map(([name, o]): [string, KernelSpec] => [name, collectPpoSpec(o)]),
  ...(
    [
      ['validate plain, GPU 1024 threads', { head: 'plain', atoms: 1 }, 1024],
      ['validate c51 at 75 atoms, GPU 256 threads', { head: 'c51', atoms: 75 }, 256],
      ['validate iqn, GPU 1024 threads', { head: 'iqn', atoms: 1, actTaus: 32, iqnEmbed: 64 }, 1024],
    ] as [string, ValidateDqnHead, number][]
  ).map(([name, o, threads]): [string, KernelSpec] => [name, validateDqnSpec(o, threads, GPU_LOADS)]),
];

describe('collection and validation WGSL', () => {
  for (const [name, spec] of shapes) {
    it(`${spec.name} compiles: ${name}`, async (ctx) => {
      if (!device)
        return ctx.skip(`WebGPU unavailable: ${unavailable} (FOXHUNT_REQUIRE_WEBGPU=1 fails instead)`);
      // Every engine's blocks (the source unresolved).
      const module = device.createShaderModule({ code: wgslPreamble(spec) + wgslSources[spec.name] });
      const info = await module.getCompilationInfo();
      const errors = info.messages.filter((m) => m.type === 'error').map((m) => `${m.lineNum}: ${m.message}`);
      expect(errors).toEqual([]);
    });
  }
});

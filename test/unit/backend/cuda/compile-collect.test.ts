/**
 * Every variant of the collection kernels compiles with nvcc as the backend compiles it (generated
 * preamble + cuda/<name>.cu + headers, warnings as errors): the heads, the tensor-core mode (constant
 * TF32 = 1), the seed variant, for sm_90 (H100/H200) and sm_89. test/unit/backend/cuda/compile-kernels.test.ts compiles each
 * kernel's default descriptor; this covers the constants a benchmark or trainer may pick.
 */
import { describe, expect, it } from 'vitest';
import { nvccCandidates, nvccVersion } from '../../../../src/backend/cuda/compile.js';
import type { KernelSpec } from '../../../../src/backend/types.js';
import { type CollectDqnOptions, collectDqnSpec } from '../../../../src/kernels/collect_dqn.js';
import { collectPpoSpec } from '../../../../src/kernels/collect_ppo.js';
import { nvccCubin } from '../../../support/nvcc.js';

const nvcc = nvccCandidates().find((p) => nvccVersion(p) !== undefined);

const dqn = (o: Partial<CollectDqnOptions>): KernelSpec =>
  collectDqnSpec({
    head: 'plain',
    atoms: 51,
    iqnEmbed: 64,
    actTaus: 32,
    variant: 'tiled',
    tileEpisodes: 32,
    threads: 256,
    tj: 32,
    kt: 8,
    tauRows: 1,
    ...o,
  });

const withTf32 = (spec: KernelSpec): KernelSpec => ({ ...spec, constants: { ...spec.constants, TF32: 1 } });

const variants: [string, KernelSpec, string][] = [
  ['dqn plain, 32 episodes per block', dqn({}), 'sm_90'],
  ['dqn plain, TF32', withTf32(dqn({})), 'sm_90'],
  ['dqn plain, 1 episode per block (small N)', withTf32(dqn({ tileEpisodes: 1 })), 'sm_90'],
  ['dqn plain, 64 episodes per block (dynamic shared memory)', dqn({ tileEpisodes: 64 }), 'sm_90'],
  ['dqn plain, 64 episodes per block, TF32', withTf32(dqn({ tileEpisodes: 64 })), 'sm_90'],
  ['dqn plain, 64 episodes x 512 threads, TF32', withTf32(dqn({ tileEpisodes: 64, threads: 512 })), 'sm_90'],
  ['dqn c51, 16 episodes per block', dqn({ head: 'c51', tileEpisodes: 16 }), 'sm_90'],
  ['dqn c51, TF32', withTf32(dqn({ head: 'c51', tileEpisodes: 16 })), 'sm_90'],
  ['dqn iqn, 8 episodes per block', dqn({ head: 'iqn', tileEpisodes: 8 }), 'sm_90'],
  ['dqn iqn, TF32', withTf32(dqn({ head: 'iqn', tileEpisodes: 16 })), 'sm_90'],
  ['dqn seed variant', dqn({ variant: 'seed', threads: 128 }), 'sm_90'],
  ['dqn plain TF32 on sm_89', withTf32(dqn({})), 'sm_89'],
  [
    'ppo, 16 episodes per block',
    collectPpoSpec({ variant: 'tiled', tileEpisodes: 16, threads: 256, tj: 32, kt: 4 }),
    'sm_90',
  ],
  [
    'ppo, TF32',
    withTf32(collectPpoSpec({ variant: 'tiled', tileEpisodes: 16, threads: 256, tj: 32, kt: 4 })),
    'sm_90',
  ],
  [
    'ppo, 32 episodes x 512 threads, TF32 (dynamic shared memory)',
    withTf32(collectPpoSpec({ variant: 'tiled', tileEpisodes: 32, threads: 512, tj: 32, kt: 4 })),
    'sm_90',
  ],
  [
    'ppo seed variant',
    collectPpoSpec({ variant: 'seed', tileEpisodes: 128, threads: 128, tj: 32, kt: 4 }),
    'sm_90',
  ],
];

describe.skipIf(!nvcc)('collection kernel variants compile with nvcc (skipped: nvcc not found)', () => {
  // Two at a time: each nvcc is single-threaded and CI has two cores.
  const results = new Map<string, Promise<string>>();
  let chain: Promise<unknown>[] = [Promise.resolve(), Promise.resolve()];
  variants.forEach(([name, spec, arch], i) => {
    const slot = i % 2;
    const job = chain[slot].then(async () => (await nvccCubin(nvcc!, spec, arch)).error ?? '');
    chain[slot] = job;
    results.set(name, job);
  });
  chain = [];

  it.each(variants.map(([name]) => name))(
    '%s',
    async (name) => {
      expect(await results.get(name)).toBe('');
    },
    600_000,
  );
});

/**
 * Rules of NVRTC, the compiler the GPU machine uses, that the nvcc fallback of a machine without
 * libnvrtc does not enforce: in JIT mode a function without __device__ (or __host__ __device__) is a
 * host function and device code may not call it, even a constexpr one (a split-K helper failed on
 * the H200 this way after passing every nvcc build here). So: every constexpr function in cuda/
 * says where it runs, and the small-N tiled collect_dqn builds compile with the compiler the backend
 * finds (NVRTC where the toolkit has it; the cluster kernel's are in test/unit/kernels/collect-dqn-cluster-cuda.test.ts).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  compileOptions,
  findCompiler,
  nvccCandidates,
  nvccVersion,
} from '../../../../src/backend/cuda/compile.js';
import { loadNative } from '../../../../src/backend/cuda/native.js';
import { cudaPreamble } from '../../../../src/backend/cuda/preamble.js';
import { kernelSource } from '../../../../src/backend/cuda/sources.js';
import type { KernelSpec } from '../../../../src/backend/types.js';
import { collectDqnSpec } from '../../../../src/kernels/collect_dqn.js';

const cudaDir = join(import.meta.dirname, '..', '..', '..', '..', 'cuda');

/** `file:line: text` of constexpr function declarations without an execution-space annotation. */
function hostOnlyConstexpr(files: Record<string, string>): string[] {
  const bad: string[] = [];
  for (const [file, text] of Object.entries(files)) {
    text.split('\n').forEach((line, i) => {
      const code = line.replace(/\/\/.*$/, '');
      // A declaration `[static] constexpr T name(` (an initialiser `= f(...)` is a call, not one).
      if (!/constexpr[^=;]*\b[A-Za-z_]\w*\s*\(/.test(code)) return;
      if (/__device__|COLLECT_DEVICE|COLLECT_FN|COLLECT_MEMBER/.test(code)) return;
      bad.push(`${file}:${i + 1}: ${line.trim()}`);
    });
  }
  return bad;
}

describe('constexpr functions in cuda/', () => {
  it('all carry __device__ (NVRTC rejects device calls to host-only functions)', () => {
    const files: Record<string, string> = {};
    for (const f of readdirSync(cudaDir).filter((n) => n.endsWith('.cu') || n.endsWith('.cuh'))) {
      files[f] = readFileSync(join(cudaDir, f), 'utf8');
    }
    expect(Object.keys(files).length).toBeGreaterThan(10);
    expect(hostOnlyConstexpr(files)).toEqual([]);
  });

  it('the check finds the host-only helper that failed on the H200', () => {
    const broken =
      'struct Net {\n  static constexpr int max2(int a, int b) { return a > b ? a : b; }\n  static constexpr int P = max2(1, 2);\n};';
    expect(hostOnlyConstexpr({ 'x.cuh': broken })).toEqual([
      'x.cuh:2: static constexpr int max2(int a, int b) { return a > b ? a : b; }',
    ]);
    expect(
      hostOnlyConstexpr({
        'y.cuh': broken.replace('static constexpr', '__host__ __device__ static constexpr'),
      }),
    ).toEqual([]);
  });
});

const nvcc = nvccCandidates().find((p) => nvccVersion(p) !== undefined);

function tiledSpec(tileEpisodes: number, threads: number, extra: Record<string, number>): KernelSpec {
  const spec = collectDqnSpec({
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
  return { ...spec, constants: { ...spec.constants, ...extra } };
}

describe.skipIf(!nvcc)(
  'collect_dqn small-N builds with the backend compiler (skipped: no CUDA toolkit)',
  () => {
    it.each([
      ['TF32, 1 episode x 256 threads', 1, 256, { TF32: 1 }],
      ['exact, 2 episodes x 256 threads', 2, 256, {}],
    ] as const)('compiles %s for sm_90', (_name, e, threads, extra) => {
      const spec = tiledSpec(e, threads, extra);
      const compiler = findCompiler(loadNative());
      const { source, headers } = kernelSource(spec.name);
      const cubin = compiler.compile(spec.name, cudaPreamble(spec) + source, headers, compileOptions(9, 0));
      expect(Buffer.from(cubin).includes(Buffer.from('\0collect_dqn\0'))).toBe(true);
    });
  },
);

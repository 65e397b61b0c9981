/**
 * Every CUDA kernel compiles with nvcc, exactly as the backend would compile it (generated preamble
 * + `cuda/<name>.cu` + the shared headers), so syntax and type errors show up on machines without a
 * GPU. Also checks that every driver symbol the addon resolves is one cuda.h declares.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  compileOptions,
  findCompiler,
  nvccCandidates,
  nvccVersion,
} from '../../../../src/backend/cuda/compile.js';
import { loadNative, packageRoot } from '../../../../src/backend/cuda/native.js';
import { cudaPreamble } from '../../../../src/backend/cuda/preamble.js';
import { kernelSource } from '../../../../src/backend/cuda/sources.js';
import { mlpBackwardSpecFor } from '../../../../src/kernels/mlp_backward.js';
import { mlpForwardSpecFor } from '../../../../src/kernels/mlp_forward.js';
import { kernels } from '../../../../src/kernels/registry.js';
import { validateDqnClusterSpec } from '../../../../src/kernels/validate_dqn.js';
import { nvccCubin } from '../../../support/nvcc.js';

const root = packageRoot();
const cudaDir = join(root, 'cuda');
const kernelFiles = readdirSync(cudaDir).filter((f) => f.endsWith('.cu'));
const nvcc = nvccCandidates().find((p) => nvccVersion(p) !== undefined);
const cudaH = [
  '/usr/local/cuda/include/cuda.h',
  join(process.env.CUDA_HOME ?? '/nonexistent', 'include/cuda.h'),
].find(existsSync);

describe('CUDA kernel sources', () => {
  it('has a descriptor for every cuda/<name>.cu', () => {
    expect(kernelFiles.length).toBeGreaterThanOrEqual(3);
    for (const f of kernelFiles)
      expect(kernels[f.replace(/\.cu$/, '')], `${f} has no KernelSpec`).toBeDefined();
  });

  describe.skipIf(!nvcc)('compiled with nvcc for sm_90 (skipped: nvcc not found)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'foxhunt-nvcc-test-'));
    for (const f of readdirSync(cudaDir).filter((n) => n.endsWith('.cuh'))) {
      writeFileSync(join(dir, f), readFileSync(join(cudaDir, f)));
    }
    it.each(kernelFiles)('%s', async (file) => {
      const name = file.replace(/\.cu$/, '');
      const r = await nvccCubin(nvcc!, kernels[name].spec, 'sm_90');
      expect(r.error).toBeUndefined();
      // The exported entry point has the kernel's unmangled name (extern "C"), as cuModuleGetFunction needs.
      expect(readFileSync(r.cubin!).includes(Buffer.from(`\0${name}\0`))).toBe(true);
    });
    // Builds the registry's default spec does not cover.
    it.each([
      ['validate_dqn_cluster c51 head', validateDqnClusterSpec({ head: 'c51', atoms: 51 })],
      [
        'validate_dqn_cluster iqn head',
        validateDqnClusterSpec({ head: 'iqn', atoms: 51, actTaus: 32, iqnEmbed: 64 }),
      ],
    ] as const)('%s', async (_tag, spec) => {
      expect((await nvccCubin(nvcc!, spec, 'sm_90')).error).toBeUndefined();
    });
    // The learner's TF32 tensor-core builds (constant TF32 = 1, train.precision tf32): they compile
    // for sm_90 without warnings, keep their register budgets without spilling (mlp_backward: 64
    // registers, 2 blocks of 512 threads per SM), and really issue TF32 mma.sync.
    it.each([
      ['mlp_forward', mlpForwardSpecFor(4, 0, 1)],
      ['mlp_forward SPLIT_IN', mlpForwardSpecFor(4, 1, 1)],
      ['mlp_backward', mlpBackwardSpecFor(4, 1)],
    ] as const)('%s, TF32 build', (tag, spec) => {
      const file = `${tag.replace(/\W/g, '_')}_tf32`;
      const src = join(dir, `${file}.cu`);
      writeFileSync(src, cudaPreamble(spec) + readFileSync(join(cudaDir, `${spec.name}.cu`), 'utf8'));
      // The PTX, then the cubin assembled from it (the cubin nvcc builds from the source).
      const build = (kind: 'cubin' | 'ptx', input: string) => {
        const out = join(dir, `${file}.${kind}`);
        const res = spawnSync(
          nvcc!,
          [
            `-${kind}`,
            ...compileOptions(9, 0),
            '-Xptxas',
            '-v',
            '-Werror',
            'all-warnings',
            '-I',
            dir,
            '-o',
            out,
            input,
          ],
          { encoding: 'utf8' },
        );
        expect(res.status, `${res.stderr}${res.stdout}`).toBe(0);
        return { out, log: `${res.stderr}${res.stdout}` };
      };
      const ptx = build('ptx', src);
      const cubin = build('cubin', ptx.out);
      expect(readFileSync(cubin.out).includes(Buffer.from(`\0${spec.name}\0`))).toBe(true);
      expect(cubin.log).toMatch(/0 bytes spill stores, 0 bytes spill loads/);
      expect(readFileSync(ptx.out, 'utf8')).toMatch(
        /mma\.sync\.aligned\.m16n8k8\.row\.col\.f32\.tf32\.tf32\.f32/,
      );
    });
    it('adam_step begins with the PDL wait, and with LEARN_PDL_TRIGGER (--pdl early) also triggers its dependents', () => {
      const ptxOf = (constants: Record<string, number>) => {
        const src = join(dir, 'adam_step_pdl.cu');
        const spec = {
          ...kernels.adam_step.spec,
          constants: { ...kernels.adam_step.spec.constants, ...constants },
        };
        writeFileSync(src, cudaPreamble(spec) + readFileSync(join(cudaDir, 'adam_step.cu'), 'utf8'));
        const out = join(dir, 'adam_step_pdl.ptx');
        const res = spawnSync(
          nvcc!,
          ['-ptx', ...compileOptions(9, 0), '-Werror', 'all-warnings', '-I', dir, '-o', out, src],
          { encoding: 'utf8' },
        );
        expect(res.status, `${res.stderr}${res.stdout}`).toBe(0);
        return readFileSync(out, 'utf8');
      };
      const plain = ptxOf({});
      expect(plain).toMatch(/griddepcontrol\.wait;/);
      expect(plain).not.toMatch(/griddepcontrol\.launch_dependents;/);
      expect(ptxOf({ LEARN_PDL_TRIGGER: 1 })).toMatch(
        /griddepcontrol\.wait;\s+griddepcontrol\.launch_dependents;/,
      );
    });
  });
});

describe.skipIf(!nvcc)('the compiler the backend finds here (skipped: nvcc not found)', () => {
  it('turns a kernel into a cubin that exports it under its own name', () => {
    // NVRTC where the toolkit has it, else the nvcc fallback: the path a GPU machine takes.
    const compiler = findCompiler(loadNative());
    expect(compiler.id).toMatch(/^(nvrtc|nvcc) \d+\.\d+$/);
    const { source, headers } = kernelSource('philox_stream');
    const cubin = compiler.compile(
      'philox_stream',
      cudaPreamble(kernels.philox_stream.spec) + source,
      headers,
      [...compileOptions(9, 0)],
    );
    expect(Array.from(cubin.subarray(0, 4))).toEqual([0x7f, 0x45, 0x4c, 0x46]); // ELF
    expect(Buffer.from(cubin).includes(Buffer.from('\0philox_stream\0'))).toBe(true);
    expect(() => compiler.compile('broken', 'this is not C++', headers, compileOptions(9, 0))).toThrow(
      /^CUDA kernel broken failed to compile \((NVRTC|nvcc)\)/,
    );
  });
});

describe.skipIf(!cudaH)('the addon driver symbols (skipped: no cuda.h)', () => {
  it('are all declared by cuda.h', () => {
    const header = readFileSync(cudaH!, 'utf8');
    const loader = readFileSync(join(root, 'cuda/addon/loader.cc'), 'utf8');
    const names = [...loader.matchAll(/"(cu[A-Z]\w+)"/g)].map((m) => m[1]);
    expect(names.length).toBeGreaterThan(30);
    for (const name of names) {
      // Declared directly, or the target of one of cuda.h's versioning macros.
      const declared = new RegExp(
        `CUDAAPI ${name}\\(|#define \\w+\\s+(__CUDA_API_PTS[ZD]\\()?${name}\\b`,
      ).test(header);
      expect(declared, `${name} is not in cuda.h`).toBe(true);
    }
  });
});

/**
 * The CUDA backend's pure-TS parts (no GPU needed): the launch parameter block, the generated
 * preamble, the compile cache and its key, compiler discovery, error translation; and the addon
 * itself on a machine where the driver is missing.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  type Compiler,
  cacheDir,
  cacheKey,
  compileCached,
  compileOptions,
  nvrtcCandidates,
} from '../../../../src/backend/cuda/compile.js';
import { driverVersionText, translateError } from '../../../../src/backend/cuda/index.js';
import { ADDON_PATH, type CudaNative, packageRoot } from '../../../../src/backend/cuda/native.js';
import { packParams, paramBytes } from '../../../../src/backend/cuda/params.js';
import { cudaPreamble } from '../../../../src/backend/cuda/preamble.js';
import { chooseBackend, createBackend } from '../../../../src/backend/index.js';
import {
  BackendUnavailableError,
  DeviceLostError,
  type Dispatch,
  type KernelSpec,
} from '../../../../src/backend/types.js';

const spec: KernelSpec = {
  name: 'demo',
  bindings: [
    { name: 'src', type: 'f32', access: 'read' },
    { name: 'dst', type: 'u32', access: 'read_write' },
  ],
  uniforms: [
    { name: 'n', type: 'u32' },
    { name: 'shift', type: 'i32' },
    { name: 'scale', type: 'f32' },
  ],
  workgroupSize: [128, 2, 1],
  constants: { TILE: 32, EPS: 1e-5, NEG: -3 },
};
const buf = { size: 64, label: 'b' };
const dispatch: Dispatch = {
  kernel: spec,
  buffers: [buf, buf],
  uniforms: { n: 0xffffffff, shift: -7, scale: 0.1 },
  groups: [1, 1, 1],
};

describe('CUDA launch parameter block', () => {
  it('puts 8-byte pointers first, then the 4-byte uniform fields, little-endian', () => {
    expect(paramBytes(dispatch)).toBe(2 * 8 + 3 * 4);
    const bytes = packParams(dispatch, [0x7f00_1234_5600n, 0xffff_ffff_0000_0100n]);
    const v = new DataView(bytes.buffer);
    expect(bytes.byteLength).toBe(28);
    expect(v.getBigUint64(0, true)).toBe(0x7f00_1234_5600n);
    expect(v.getBigUint64(8, true)).toBe(0xffff_ffff_0000_0100n);
    expect(v.getUint32(16, true)).toBe(0xffffffff);
    expect(v.getInt32(20, true)).toBe(-7);
    expect(v.getFloat32(24, true)).toBe(Math.fround(0.1));
  });

  it('is just the struct without bindings and just the pointers without uniforms', () => {
    const noBind: Dispatch = { ...dispatch, kernel: { ...spec, bindings: [] }, buffers: [] };
    expect(Array.from(packParams(noBind, []))).toHaveLength(12);
    const noUni: Dispatch = { ...dispatch, kernel: { ...spec, uniforms: [] }, uniforms: {} };
    expect(packParams(noUni, [1n, 2n])).toHaveLength(16);
  });

  it('refuses a pointer count that does not match the bindings', () => {
    expect(() => packParams(dispatch, [1n])).toThrow(/kernel demo: expected 2 buffer pointers, got 1/);
  });
});

describe('CUDA preamble', () => {
  it('declares the block shape, the constants, the uniform struct and the parameter list of the spec', () => {
    const text = cudaPreamble(spec);
    expect(text).toContain('#define WG_X 128\n#define WG_Y 2\n#define WG_Z 1\n');
    expect(text).toContain('#define TILE 32\n#define EPS (0.00001f)\n#define NEG (-3)\n');
    expect(text).toContain('struct Uniforms {\n  unsigned int n;\n  int shift;\n  float scale;\n};');
    expect(text).toContain(
      '#define KERNEL_ARGS const float* __restrict__ src, unsigned int* __restrict__ dst, const Uniforms u\n',
    );
    expect(text.endsWith('#line 1 "demo.cu"\n')).toBe(true);
  });

  it('leaves the struct out when a kernel has no uniforms', () => {
    const text = cudaPreamble({ ...spec, uniforms: [] });
    expect(text).not.toContain('struct Uniforms');
    expect(text).toContain(
      '#define KERNEL_ARGS const float* __restrict__ src, unsigned int* __restrict__ dst\n',
    );
  });

  it('rejects constants that are not C identifiers or not finite', () => {
    expect(() => cudaPreamble({ ...spec, constants: { 'A-B': 1 } })).toThrow(/bad constant name "A-B"/);
    expect(() => cudaPreamble({ ...spec, constants: { A: Number.NaN } })).toThrow(
      /constant A must be finite/,
    );
  });
});

describe('CUDA compile cache', () => {
  const headers = { 'philox.cuh': 'P', 'grid.cuh': 'G' };
  const opts = compileOptions(9, 0);

  it('keys on compiler, name, source, headers and options, not on header order', () => {
    const base = cacheKey('nvrtc 13.0', 'k', 'src', headers, opts);
    expect(base).toMatch(/^[0-9a-f]{64}$/);
    expect(cacheKey('nvrtc 13.0', 'k', 'src', { 'grid.cuh': 'G', 'philox.cuh': 'P' }, opts)).toBe(base);
    const variants = [
      cacheKey('nvrtc 13.1', 'k', 'src', headers, opts),
      cacheKey('nvrtc 13.0', 'k2', 'src', headers, opts),
      cacheKey('nvrtc 13.0', 'k', 'src ', headers, opts),
      cacheKey('nvrtc 13.0', 'k', 'src', { ...headers, 'grid.cuh': 'G2' }, opts),
      cacheKey('nvrtc 13.0', 'k', 'src', headers, compileOptions(8, 9)),
      // Field boundaries are length-prefixed: moving a character between fields changes the key.
      cacheKey('nvrtc 13.0', 'ks', 'rc', headers, opts),
    ];
    expect(new Set([base, ...variants]).size).toBe(variants.length + 1);
  });

  it('keys on the constants through the preamble', () => {
    const a = cacheKey('c', 'demo', cudaPreamble(spec), {}, opts);
    const b = cacheKey(
      'c',
      'demo',
      cudaPreamble({ ...spec, constants: { ...spec.constants, TILE: 64 } }),
      {},
      opts,
    );
    expect(a).not.toBe(b);
  });

  it('compiles once, then serves the binary from disk', () => {
    const dir = mkdtempSync(join(tmpdir(), 'foxhunt-cache-'));
    let calls = 0;
    const compiler: Compiler = {
      id: 'fake 1.0',
      compile: (name, source) => {
        calls++;
        return new TextEncoder().encode(`${name}:${source}`);
      },
    };
    const first = compileCached(compiler, 'k', 'src', headers, opts, dir);
    const again = compileCached(compiler, 'k', 'src', headers, opts, dir);
    expect(calls).toBe(1);
    expect(new TextDecoder().decode(again)).toBe('k:src');
    expect(again).toEqual(first);
    compileCached(compiler, 'k', 'other', headers, opts, dir);
    expect(calls).toBe(2);
    expect(readdirSync(dir).filter((f) => f.endsWith('.cubin'))).toHaveLength(2);
    expect(readdirSync(dir).some((f) => f.endsWith('.tmp'))).toBe(false);
  });

  it('still returns the binary when the cache cannot be written', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'foxhunt-cache-')), 'not-a-dir');
    writeFileSync(file, 'x');
    const compiler: Compiler = { id: 'fake', compile: () => new Uint8Array([1, 2, 3]) };
    expect(Array.from(compileCached(compiler, 'k', 's', {}, opts, join(file, 'sub')))).toEqual([1, 2, 3]);
  });

  it('lives in FOXHUNT_CACHE_DIR, else under XDG_CACHE_HOME', () => {
    expect(cacheDir({ FOXHUNT_CACHE_DIR: '/x/y' })).toBe('/x/y');
    expect(cacheDir({ XDG_CACHE_HOME: '/c' })).toBe('/c/foxhunt/cuda');
  });
});

describe('NVRTC discovery', () => {
  it('tries FOXHUNT_NVRTC first, then the toolkit folder newest version first, then sonames', () => {
    const home = mkdtempSync(join(tmpdir(), 'foxhunt-cuda-home-'));
    mkdirSync(join(home, 'lib64'));
    for (const f of ['libnvrtc.so.12', 'libnvrtc.so.13.0.48', 'libnvrtc.so.9', 'libnvrtc-builtins.so.13']) {
      writeFileSync(join(home, 'lib64', f), '');
    }
    const got = nvrtcCandidates({ FOXHUNT_NVRTC: '/opt/nvrtc.so', CUDA_HOME: home });
    expect(got[0]).toBe('/opt/nvrtc.so');
    expect(got.slice(1, 4)).toEqual([
      join(home, 'lib64/libnvrtc.so.13.0.48'),
      join(home, 'lib64/libnvrtc.so.12'),
      join(home, 'lib64/libnvrtc.so.9'),
    ]);
    expect(got).not.toContain(join(home, 'lib64/libnvrtc-builtins.so.13'));
    expect(got.slice(-3)).toEqual(['libnvrtc.so.13', 'libnvrtc.so.12', 'libnvrtc.so']);
  });
});

describe('CUDA errors', () => {
  it('turns context-killing driver errors into DeviceLostError and passes the rest through', () => {
    const lost = Object.assign(new Error('cuStreamSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS (...)'), {
      code: 'CUDA_ERROR_ILLEGAL_ADDRESS',
    });
    expect(translateError(lost)).toBeInstanceOf(DeviceLostError);
    expect(translateError(lost).message).toBe(lost.message);
    const oom = Object.assign(new Error('oom'), { code: 'CUDA_ERROR_OUT_OF_MEMORY' });
    expect(translateError(oom)).toBe(oom);
  });

  it('prints the driver version as CUDA major.minor', () => {
    expect(driverVersionText(13000)).toBe('CUDA 13.0');
    expect(driverVersionText(12040)).toBe('CUDA 12.4');
  });
});

const addonFile = join(packageRoot(), ADDON_PATH);

describe('the CUDA addon without a driver', () => {
  it('was built by npm ci and loads without CUDA installed', async () => {
    expect(existsSync(addonFile), `${ADDON_PATH} missing: run npm run build:addon`).toBe(true);
    const native = (await import('node:module')).createRequire(import.meta.url)(addonFile) as CudaNative;
    // Every verb the TS declaration lists, and nothing else.
    const declared = [
      ...readFileSync(join(packageRoot(), 'src/backend/cuda/native.ts'), 'utf8')
        .split('export interface CudaNative {')[1]
        .split('\n}')[0]
        .matchAll(/^ {2}(\w+)\(/gm),
    ].map((m) => m[1]);
    expect(Object.keys(native).sort()).toEqual([...declared].sort());
    expect(() => native.memAlloc(4)).toThrow('CUDA is not initialised: call init() first');
  });

  it('says which driver is missing and what to do, as one line', async () => {
    const native = (await import('node:module')).createRequire(import.meta.url)(addonFile) as CudaNative;
    const run = () => native.init(0, '/nonexistent/libcuda.so.1');
    expect(run).toThrow(
      /^no CUDA driver \(libcuda\.so\.1 not found\): install the NVIDIA driver or use --backend webgpu\|cpu \(cannot open \/nonexistent\/libcuda\.so\.1: /,
    );
    // The failure leaves nothing half-initialised: the same answer the second time.
    expect(run).toThrow(/^no CUDA driver/);
  });

  it('makes createBackend("cuda") fail with one clear line and auto fall through', async () => {
    const saved = process.env.FOXHUNT_LIBCUDA;
    process.env.FOXHUNT_LIBCUDA = '/nonexistent/libcuda.so.1';
    try {
      const err = await createBackend('cuda').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(BackendUnavailableError);
      expect((err as Error).message).toMatch(
        /^backend cuda unavailable: no CUDA driver \(libcuda\.so\.1 not found\)/,
      );
      expect((err as Error).message).not.toContain('\n');
      const choice = await chooseBackend('auto');
      expect(choice.skipped[0]).toMatchObject({ kind: 'cuda' });
      expect(choice.skipped[0].reason).toMatch(/^no CUDA driver/);
      choice.backend.destroy();
    } finally {
      if (saved === undefined) delete process.env.FOXHUNT_LIBCUDA;
      else process.env.FOXHUNT_LIBCUDA = saved;
    }
  });
});

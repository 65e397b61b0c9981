/**
 * CUDA C -> cubin for the device's architecture, cached on disk. The main compiler is NVRTC
 * (in-process, through the addon); where the toolkit's libnvrtc is missing but nvcc is installed,
 * nvcc is run instead. The compiled text starts with the kernel's generated preamble
 * (preamble.ts: block shape and constants as `#define`s), so those are part of the cache key;
 * runtime sizes are uniforms and never are.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CudaNative } from './native.js';

export interface KernelSource {
  /** The kernel's `.cu` text. */
  source: string;
  /** Every `.cuh` it may include, by include name (`philox.cuh`). */
  headers: Record<string, string>;
}

export interface Compiler {
  /** `nvrtc 13.0` / `nvcc 13.0`: part of the cache key (a new compiler recompiles everything). */
  readonly id: string;
  compile(name: string, source: string, headers: Record<string, string>, options: string[]): Uint8Array;
}

/** NVRTC / nvcc options for a device of compute capability major.minor. */
export function compileOptions(computeMajor: number, computeMinor: number): string[] {
  return [`--gpu-architecture=sm_${computeMajor}${computeMinor}`, '--std=c++17'];
}

/** sha256 over everything that changes the binary; no runtime sizes. */
export function cacheKey(
  compilerId: string,
  name: string,
  source: string,
  headers: Record<string, string>,
  options: string[],
): string {
  const h = createHash('sha256');
  const field = (s: string) => h.update(`${s.length}:${s}`);
  field(compilerId);
  field(name);
  field(source);
  for (const k of Object.keys(headers).sort()) {
    field(k);
    field(headers[k]);
  }
  for (const o of options) field(o);
  return h.digest('hex');
}

/** `FOXHUNT_CACHE_DIR`, else `$XDG_CACHE_HOME/foxhunt/cuda`, else `~/.cache/foxhunt/cuda`. */
export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.FOXHUNT_CACHE_DIR) return env.FOXHUNT_CACHE_DIR;
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'foxhunt', 'cuda');
}

/**
 * The cubin of `source`, from the cache when a previous run compiled the same thing. A cache that
 * cannot be written (read-only home) only costs a recompile next time.
 */
export function compileCached(
  compiler: Compiler,
  name: string,
  source: string,
  headers: Record<string, string>,
  options: string[],
  dir = cacheDir(),
): Uint8Array {
  const file = join(dir, `${name}-${cacheKey(compiler.id, name, source, headers, options)}.cubin`);
  if (existsSync(file)) return new Uint8Array(readFileSync(file));
  const cubin = compiler.compile(name, source, headers, options);
  try {
    mkdirSync(dir, { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, cubin);
    renameSync(tmp, file);
  } catch {
    // Caching is an optimisation; the compiled binary is still returned.
  }
  return cubin;
}

/** libnvrtc candidates, most specific first: FOXHUNT_NVRTC, toolkit folders (newest first), sonames. */
export function nvrtcCandidates(env: NodeJS.ProcessEnv = process.env): string[] {
  const out: string[] = [];
  if (env.FOXHUNT_NVRTC) out.push(env.FOXHUNT_NVRTC);
  const dirs = [env.CUDA_HOME, env.CUDA_PATH, '/usr/local/cuda']
    .filter((d): d is string => !!d)
    .flatMap((d) => [join(d, 'lib64'), join(d, 'targets/x86_64-linux/lib')]);
  for (const dir of [...dirs, '/usr/lib/x86_64-linux-gnu']) {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      continue;
    }
    const libs = names.filter((n) => /^libnvrtc\.so\.\d+(\.\d+)*$/.test(n));
    libs.sort((a, b) => versionOf(b) - versionOf(a));
    out.push(...libs.map((n) => join(dir, n)));
  }
  out.push('libnvrtc.so.13', 'libnvrtc.so.12', 'libnvrtc.so');
  return [...new Set(out)];
}

function versionOf(soname: string): number {
  const parts = soname
    .replace(/^libnvrtc\.so\.?/, '')
    .split('.')
    .map(Number);
  return (parts[0] ?? 0) * 1e6 + (parts[1] ?? 0) * 1e3 + (parts[2] ?? 0);
}

function nvrtcCompiler(native: CudaNative, version: [number, number]): Compiler {
  return {
    id: `nvrtc ${version[0]}.${version[1]}`,
    compile(name, source, headers, options) {
      const names = Object.keys(headers).sort();
      try {
        return native.nvrtcCompile(
          source,
          `${name}.cu`,
          names.map((n) => headers[n]),
          names,
          options,
        );
      } catch (err) {
        throw new Error(`CUDA kernel ${name} failed to compile (NVRTC): ${(err as Error).message}`);
      }
    },
  };
}

/** nvcc candidates: FOXHUNT_NVCC, PATH, the toolkit folders. */
export function nvccCandidates(env: NodeJS.ProcessEnv = process.env): string[] {
  const out: string[] = [];
  if (env.FOXHUNT_NVCC) out.push(env.FOXHUNT_NVCC);
  for (const d of (env.PATH ?? '').split(':')) if (d) out.push(join(d, 'nvcc'));
  for (const d of [env.CUDA_HOME, env.CUDA_PATH, '/usr/local/cuda']) if (d) out.push(join(d, 'bin/nvcc'));
  return [...new Set(out)];
}

/** `nvcc --version` -> `13.0`, or undefined if `path` is not a working nvcc. */
export function nvccVersion(path: string): string | undefined {
  if (!existsSync(path)) return undefined;
  const res = spawnSync(path, ['--version'], { encoding: 'utf8' });
  return res.status === 0 ? /release (\d+\.\d+)/.exec(res.stdout)?.[1] : undefined;
}

function nvccCompiler(path: string, version: string): Compiler {
  return {
    id: `nvcc ${version}`,
    compile(name, source, headers, options) {
      const dir = mkdtempSync(join(tmpdir(), 'foxhunt-nvcc-'));
      try {
        for (const [n, text] of Object.entries(headers)) writeFileSync(join(dir, n), text);
        writeFileSync(join(dir, `${name}.cu`), source);
        const out = join(dir, `${name}.cubin`);
        const res = spawnSync(path, ['-cubin', ...options, '-I', dir, '-o', out, join(dir, `${name}.cu`)], {
          encoding: 'utf8',
        });
        if (res.status !== 0) {
          throw new Error(`CUDA kernel ${name} failed to compile (nvcc):\n${res.stderr}${res.stdout}`);
        }
        return new Uint8Array(readFileSync(out));
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

/**
 * NVRTC if a libnvrtc opens, else nvcc if one runs; throws the one line that says what to install.
 */
export function findCompiler(native: CudaNative, env: NodeJS.ProcessEnv = process.env): Compiler {
  for (const path of nvrtcCandidates(env)) {
    try {
      return nvrtcCompiler(native, native.loadNvrtc(path));
    } catch {
      // Not this one: try the next candidate.
    }
  }
  for (const path of nvccCandidates(env)) {
    const version = nvccVersion(path);
    if (version) return nvccCompiler(path, version);
  }
  throw new Error(
    'no CUDA compiler: neither libnvrtc.so (CUDA toolkit >= 11.1) nor nvcc was found; install the toolkit or set FOXHUNT_NVRTC / FOXHUNT_NVCC',
  );
}

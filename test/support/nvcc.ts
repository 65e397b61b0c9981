/**
 * nvcc -cubin of a kernel as the backend compiles it (generated preamble + cuda/<name>.cu, the
 * `.cuh` headers as NVRTC's header table has them, warnings as errors), through the build cache of
 * build-cache.ts: the compile tests share their identical compiles (a collection kernel takes ~5 s).
 */
import { spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { packageRoot } from '../../src/backend/cuda/native.js';
import { cudaPreamble } from '../../src/backend/cuda/preamble.js';
import type { KernelSpec } from '../../src/backend/types.js';
import { buildKey, cachedPath, dirParts, storeBuild, toolVersion } from './build-cache.js';

const cudaDir = join(packageRoot(), 'cuda');
let headerDir: string | undefined;

/** A folder with cuda/'s `.cuh` files only (no `.cu` can be included by accident), once per process. */
function headers(): string {
  if (!headerDir) {
    headerDir = mkdtempSync(join(tmpdir(), 'foxhunt-nvcc-headers-'));
    for (const f of readdirSync(cudaDir).filter((n) => n.endsWith('.cuh'))) {
      writeFileSync(join(headerDir, f), readFileSync(join(cudaDir, f)));
    }
  }
  return headerDir;
}

function run(nvcc: string, args: string[]): Promise<{ code: number | null; log: string }> {
  return new Promise((resolve) => {
    const p = spawn(nvcc, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    p.stdout.on('data', (d) => {
      log += d;
    });
    p.stderr.on('data', (d) => {
      log += d;
    });
    p.on('close', (code) => resolve({ code, log }));
  });
}

/**
 * Compiles `spec` with `nvcc -cubin --gpu-architecture=<arch> --std=c++17 -Werror all-warnings`:
 * `cubin` is the cubin's path (an identical earlier compile's where there was one), or `error` says
 * how nvcc failed (failures are not cached).
 */
export async function nvccCubin(
  nvcc: string,
  spec: KernelSpec,
  arch: string,
): Promise<{ cubin: string; error?: undefined } | { cubin?: undefined; error: string }> {
  const source = cudaPreamble(spec) + readFileSync(join(cudaDir, `${spec.name}.cu`), 'utf8');
  const flags = ['-cubin', `--gpu-architecture=${arch}`, '--std=c++17', '-Werror', 'all-warnings'];
  const key = buildKey([
    'nvcc',
    toolVersion(nvcc),
    ...flags,
    spec.name,
    source,
    ...dirParts(cudaDir, (n) => n.endsWith('.cuh')),
  ]);
  const known = cachedPath(key, '.cubin');
  if (known) return { cubin: known };
  const dir = headers();
  const src = join(mkdtempSync(join(dir, `${spec.name}-`)), `${spec.name}.cu`);
  writeFileSync(src, source);
  const out = `${src}.cubin`;
  const r = await run(nvcc, [...flags, '-I', dir, '-o', out, src]);
  if (r.code !== 0) return { error: `exit ${r.code}\n${r.log}` };
  return { cubin: storeBuild(key, '.cubin', (tmp) => copyFileSync(out, tmp)) };
}

// Shared by the learn-*.test.ts suites: deterministic test data, a finite-difference checker and
// an nvcc PTX helper.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { compileOptions } from '../../../src/backend/cuda/compile.js';
import { packageRoot } from '../../../src/backend/cuda/native.js';
import { cudaPreamble } from '../../../src/backend/cuda/preamble.js';
import type { KernelSpec } from '../../../src/backend/types.js';
import { philox4x32, u32ToUnitFloat } from '../../../src/rng/philox.js';
import { Stream } from '../../../src/rng/streams.js';

/** Deterministic uniforms in [lo, hi) for test data. */
export function uniforms(n: number, stream: number, lo = -1, hi = 1): Float64Array {
  const out = new Float64Array(n);
  const w = new Uint32Array(4);
  for (let i = 0; i < n; i++) {
    philox4x32(Stream.Test, stream, i >> 2, 0, 99, 0, w);
    out[i] = lo + (hi - lo) * u32ToUnitFloat(w[i & 3]);
  }
  return out;
}

/**
 * Central differences on the given parameter indices; returns the worst relative error
 * |g - fd| / max(|g|, |fd|) over those whose gradient is not negligibly small, and how many
 * indices had a non-negligible gradient.
 */
export function checkGradient(
  params: Float64Array,
  grad: Float64Array,
  indices: number[],
  loss: (p: Float64Array) => number,
  eps = 1e-5,
): { worst: number; live: number } {
  let worst = 0;
  let live = 0;
  for (const k of indices) {
    const saved = params[k];
    params[k] = saved + eps;
    const up = loss(params);
    params[k] = saved - eps;
    const down = loss(params);
    params[k] = saved;
    const fd = (up - down) / (2 * eps);
    const scale = Math.max(Math.abs(fd), Math.abs(grad[k]));
    if (scale < 1e-7) continue;
    live++;
    worst = Math.max(worst, Math.abs(fd - grad[k]) / scale);
  }
  return { worst, live };
}

/**
 * Compiles cuda/<spec.name>.cu with `spec`'s generated preamble to PTX for sm_90 with nvcc (warnings
 * as errors) in `dir`: `body` is the PTX from the kernel's `.entry` on, `ok` false with nvcc's
 * message in `log` if it failed; `ptxas()` assembles that PTX to a cubin with `-Xptxas -v`
 * (registers and spills in its `log`): the cubin nvcc builds from the source, without running the
 * front end a second time.
 */
export function ptxEntry(
  nvcc: string,
  dir: string,
  spec: KernelSpec,
  tag: string,
): { ok: boolean; log: string; body: string; ptxas: () => { ok: boolean; log: string } } {
  const cuda = join(packageRoot(), 'cuda');
  const src = join(dir, `${tag}.cu`);
  writeFileSync(src, cudaPreamble(spec) + readFileSync(join(cuda, `${spec.name}.cu`), 'utf8'));
  const out = join(dir, `${tag}.ptx`);
  const args = [...compileOptions(9, 0), '-Werror', 'all-warnings', '-I', cuda];
  const ptx = spawnSync(nvcc, ['-ptx', ...args, '-o', out, src], { encoding: 'utf8' });
  if (ptx.status !== 0) {
    return {
      ok: false,
      log: ptx.stderr,
      body: '',
      ptxas: () => ({ ok: false, log: `${src}: ${ptx.stderr}` }),
    };
  }
  const ptxas = () => {
    const r = spawnSync(nvcc, ['-cubin', '-Xptxas', '-v', ...args, '-o', join(dir, `${tag}.cubin`), out], {
      encoding: 'utf8',
    });
    return { ok: r.status === 0, log: `${src}: ${r.stderr}` };
  };
  const text = readFileSync(out, 'utf8');
  return { ok: true, log: ptx.stderr, body: text.slice(text.indexOf(`.entry ${spec.name}`)), ptxas };
}

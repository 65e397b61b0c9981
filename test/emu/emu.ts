/**
 * Builds and runs the CUDA collection sources on the CPU emulator (collect_emu.cuh) with g++, so
 * the unit tests check the very kernel code against the TS reference on a machine with no GPU.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');

/** Why the emulator cannot run here, or null when g++ is available. */
export function emuUnavailable(): string | null {
  const r = spawnSync('g++', ['--version'], { encoding: 'utf8' });
  return r.status === 0 ? null : 'g++ is not installed (apt-get install g++)';
}

const workDir = mkdtempSync(join(tmpdir(), 'foxhunt-cuda-emu-'));

/**
 * Compiles test/emu/<source> with the given -D defines (numbers, or strings passed
 * verbatim); returns the binary path.
 */
export function buildEmu(source: string, defines: Record<string, number | string> = {}): string {
  const tag = Object.entries(defines)
    .map(([k, v]) => `${k}${v}`.replace(/\W/g, ''))
    .join('_');
  const out = join(workDir, `${source.replace(/\W/g, '_')}_${tag}`);
  execFileSync(
    'g++',
    [
      '-std=c++17',
      '-O2',
      '-ffp-contract=off',
      '-fno-strict-aliasing',
      '-DFOXHUNT_EMU',
      '-U_FORTIFY_SOURCE',
      ...Object.entries(defines).map(([k, v]) => `-D${k}=${v}`),
      `-I${join(root, 'cuda')}`,
      `-I${here}`,
      join(here, source),
      '-o',
      out,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  return out;
}

/** Writes `text` into the build directory (for generated sources); returns its path. */
export function writeGenerated(name: string, text: string): string {
  const path = join(workDir, name);
  writeFileSync(path, text);
  return path;
}

/** Runs `binary args...` with `input` in a file (passed as the argument `@in`) and returns `@out`'s floats. */
export function runEmu(binary: string, args: string[], input: ArrayBufferView): Float32Array {
  const inPath = join(workDir, `in_${process.pid}.bin`);
  const outPath = join(workDir, `out_${process.pid}.bin`);
  writeFileSync(inPath, new Uint8Array(input.buffer, input.byteOffset, input.byteLength));
  execFileSync(
    binary,
    args.map((a) => (a === '@in' ? inPath : a === '@out' ? outPath : a)),
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const bytes = readFileSync(outPath);
  return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4).slice();
}

/** Max |a - b| and the first index where |a - b| > atol + rtol * |b| (-1 if none). */
export function compare(
  a: Float32Array,
  b: Float32Array,
  atol: number,
  rtol: number,
): { maxErr: number; firstBad: number } {
  let maxErr = 0;
  let firstBad = a.length === b.length ? -1 : 0;
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const err = Math.abs(a[i] - b[i]);
    if (!(err <= maxErr)) maxErr = err;
    if (firstBad < 0 && !(err <= atol + rtol * Math.abs(b[i]))) firstBad = i;
  }
  return { maxErr, firstBad };
}

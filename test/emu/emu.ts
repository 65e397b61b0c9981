/**
 * Builds and runs the CUDA collection sources on the CPU emulator (collect_emu.cuh) with g++, so
 * the unit tests check the very kernel code against the TS reference on a machine with no GPU.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { emuCompile } from './build.js';

const here = dirname(fileURLToPath(import.meta.url));

/** Why the emulator cannot run here, or null when g++ is available. */
export function emuUnavailable(): string | null {
  const r = spawnSync('g++', ['--version'], { encoding: 'utf8' });
  return r.status === 0 ? null : 'g++ is not installed (apt-get install g++)';
}

const workDir = mkdtempSync(join(tmpdir(), 'foxhunt-cuda-emu-'));

/**
 * Compiles test/emu/<source> with the given -D defines (numbers, or strings passed verbatim; a
 * string `"path"` naming a file, such as KERNEL_SOURCE's generated source, counts by its content);
 * returns the binary path (shared with identical builds of other test files: test/emu/build.ts).
 */
export function buildEmu(source: string, defines: Record<string, number | string> = {}): string {
  const flags = Object.entries(defines).map(([k, v]) => `-D${k}=${v}`);
  const content: string[] = [];
  const keyFlags = Object.entries(defines).map(([k, v]) => {
    const file = typeof v === 'string' ? /^"(.+)"$/.exec(v)?.[1] : undefined;
    if (file === undefined || !existsSync(file)) return `-D${k}=${v}`;
    content.push(readFileSync(file, 'utf8'));
    return `-D${k}=<file ${content.length - 1}>`;
  });
  return emuCompile([...flags, join(here, source)], [...keyFlags, source], content);
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

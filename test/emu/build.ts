/**
 * g++ builds of the emulator binaries, through the build cache of test/support/build-cache.ts: the
 * parity suite and the unit files build many of the same kernels (one vitest fork each), ~2 s a
 * build on the CI machine.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildKey, cachedBuild, dirParts, toolVersion } from '../support/build-cache.js';

const here = dirname(fileURLToPath(import.meta.url));
const cudaDir = join(here, '..', '..', 'cuda');

/** The flags of every emulator build (no fused multiply-adds; see collect_emu.cuh for the rest). */
export const EMU_FLAGS = [
  '-std=c++17',
  '-O2',
  '-ffp-contract=off',
  '-fno-strict-aliasing',
  '-DFOXHUNT_EMU',
  '-U_FORTIFY_SOURCE',
  `-I${cudaDir}`,
  `-I${here}`,
];

let headers: (string | Uint8Array)[] | undefined;

/** What a build may include besides its own sources: cuda/'s and test/emu/'s files, read once. */
function headerParts(): (string | Uint8Array)[] {
  headers ??= [
    ...dirParts(cudaDir, (n) => /\.(cuh|cu|h)$/.test(n)),
    ...dirParts(here, (n) => /\.(cuh|cpp|h)$/.test(n)),
  ];
  return headers;
}

let learnPch: string | undefined;

/**
 * A folder holding learn_emu.cuh.gch: the header the CUDA twins' harnesses include first,
 * precompiled with EMU_FLAGS and `-w` (those builds' flags), once per run. Listed with -iquote,
 * g++ reads it in place of the header (a fifth of a build's time; the binary is the same), or the
 * header itself where the PCH does not fit the build.
 */
function learnPchDir(): string {
  if (!learnPch) {
    const flags = [...EMU_FLAGS, '-w', '-x', 'c++-header'];
    const key = buildKey(['g++ pch', toolVersion('g++'), ...flags, ...headerParts()]);
    const gch = cachedBuild(key, '.gch', (tmp) => {
      execFileSync('g++', [...flags, join(here, 'learn_emu.cuh'), '-o', tmp], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    });
    learnPch = mkdtempSync(join(tmpdir(), 'foxhunt-emu-pch-'));
    symlinkSync(gch, join(learnPch, 'learn_emu.cuh.gch'));
  }
  return learnPch;
}

/**
 * Builds `g++ EMU_FLAGS ...args -o <binary>` and returns the binary's path, or the path of an
 * identical earlier build: `content` must name whatever `args` point at that headerParts() does
 * not cover (generated sources, the define values of files), and `keyArgs` is `args` with those
 * paths left out. `learnHarness`: the source includes learn_emu.cuh first and `args` start with
 * `-w` (the PCH applies).
 */
export function emuCompile(
  args: string[],
  keyArgs: string[],
  content: (string | Uint8Array)[],
  learnHarness = false,
): string {
  const key = buildKey(['g++', toolVersion('g++'), ...EMU_FLAGS, ...keyArgs, ...headerParts(), ...content]);
  return cachedBuild(key, '.emu', (tmp) => {
    const pch = learnHarness ? ['-iquote', learnPchDir()] : [];
    execFileSync('g++', [...EMU_FLAGS, ...pch, ...args, '-o', tmp], { stdio: ['ignore', 'pipe', 'pipe'] });
  });
}

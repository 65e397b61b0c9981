/**
 * A content-addressed cache of build outputs (g++ emulator binaries, nvcc cubins), shared by the
 * test processes of a run and by later runs: several test files build the same kernels, each in
 * its own vitest fork. The caller's key covers everything the output depends on (sources, every
 * header they may include, flags, the compiler's version). An output is written under a temporary
 * name and renamed into place, so forks building the same key at once each end with a whole file.
 */
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
} from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';

const shared = join(tmpdir(), `foxhunt-build-cache-${process.getuid?.() ?? userInfo().username}`);
let dir: string | undefined;

/** Entries unused this long are removed (once per process): edited kernels leave stale builds. */
const MAX_AGE_MS = 7 * 24 * 3600 * 1000;

/**
 * The cache directory, one for every fork of every run of this user (made private to the user); a
 * private one of this process where another user owns that path (its binaries are run).
 */
function cacheDir(): string {
  if (dir) return dir;
  mkdirSync(shared, { recursive: true, mode: 0o700 });
  const st = lstatSync(shared);
  const mine = st.isDirectory() && (process.getuid === undefined || st.uid === process.getuid());
  dir = mine && (st.mode & 0o022) === 0 ? shared : mkdtempSync(join(tmpdir(), 'foxhunt-build-cache-'));
  const now = Date.now();
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    try {
      if (now - statSync(path).mtimeMs > MAX_AGE_MS) rmSync(path, { force: true });
    } catch {
      // Removed by another process meanwhile.
    }
  }
  return dir;
}

/** sha256 over the parts, each length-prefixed (no two part lists hash alike by concatenation). */
export function buildKey(parts: (string | Uint8Array)[]): string {
  const h = createHash('sha256');
  for (const p of parts) {
    h.update(`${p.length}:`);
    h.update(p);
  }
  return h.digest('hex');
}

/** Every file directly in `dir` whose name passes `keep`, names and contents (for a key). */
export function dirParts(dir: string, keep: (name: string) => boolean): (string | Uint8Array)[] {
  return readdirSync(dir)
    .filter(keep)
    .sort()
    .flatMap((name) => [name, readFileSync(join(dir, name))]);
}

const versions = new Map<string, string>();

/** `tool --version`'s output (stdout and stderr), once per process and tool. */
export function toolVersion(tool: string): string {
  let v = versions.get(tool);
  if (v === undefined) {
    const r = spawnSync(tool, ['--version'], { encoding: 'utf8' });
    v = `${r.status} ${r.stdout} ${r.stderr}`;
    versions.set(tool, v);
  }
  return v;
}

/** The path of the output `<key><suffix>` an earlier build stored, or undefined. */
export function cachedPath(key: string, suffix: string): string | undefined {
  const file = join(cacheDir(), `${key}${suffix}`);
  if (!existsSync(file)) return undefined;
  try {
    const now = new Date();
    utimesSync(file, now, now);
  } catch {
    // Pruned by another process meanwhile: it stays usable where already open.
  }
  return file;
}

/**
 * Stores what `write(tmp)` writes at a temporary path as the output `<key><suffix>`; returns its
 * path. Nothing is stored if `write` throws (a failed build).
 */
export function storeBuild(key: string, suffix: string, write: (tmp: string) => void): string {
  const file = join(cacheDir(), `${key}${suffix}`);
  const tmp = join(cacheDir(), `${key}.${process.pid}.${randomBytes(4).toString('hex')}.tmp${suffix}`);
  try {
    write(tmp);
    renameSync(tmp, file);
  } finally {
    rmSync(tmp, { force: true });
  }
  return file;
}

/** The output `<key><suffix>`: an earlier build's, else what `build(tmp)` writes at `tmp`. */
export function cachedBuild(key: string, suffix: string, build: (tmp: string) => void): string {
  return cachedPath(key, suffix) ?? storeBuild(key, suffix, build);
}

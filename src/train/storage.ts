/**
 * Where a run keeps its files: the trainer (src/train, src/engine, src/eval) reads and writes only through
 * this interface, so the same loop runs in Node (src/node/storage.ts: files) and in a browser
 * (OPFS or IndexedDB behind the same verbs), and in tests (MemoryStorage).
 *
 * Paths are '/'-separated strings (`runs/latest/last/actor.safetensors`); an implementation maps
 * them onto its own namespace. Directories exist implicitly: writing a file creates its parents.
 *
 * Durability contract, which the checkpoint protocol (commitDir) builds on:
 *   write    replaces the whole file atomically: a reader sees the old bytes or the new, and once
 *            the promise resolves the new bytes survive a crash;
 *   append   adds text at the end; a crash may leave a torn last line, never lose earlier ones;
 *   rename   moves a file or a whole directory atomically; the target must not exist;
 *   remove   deletes a file or a directory with everything under it; a missing path is no error.
 */
export interface Storage {
  /** The file's bytes, or null when there is no such file. */
  read(path: string): Promise<Uint8Array | null>;
  write(path: string, data: Uint8Array | string): Promise<void>;
  append(path: string, text: string): Promise<void>;
  /** Names (not paths) of the entries directly under `dir`, sorted; [] when it does not exist. */
  list(dir: string): Promise<string[]>;
  /** Whether a file or a directory exists at `path`. */
  exists(path: string): Promise<boolean>;
  rename(from: string, to: string): Promise<void>;
  remove(path: string): Promise<void>;
}

/** Joins path parts with '/', dropping empty parts and repeated or trailing separators. */
export function joinPath(...parts: string[]): string {
  const joined = parts.filter((p) => p !== '').join('/');
  return joined.replace(/\/+/g, '/').replace(/(.)\/$/, '$1');
}

const utf8 = new TextEncoder();
const utf8Decoder = new TextDecoder('utf-8', { fatal: false });

export const encodeText = (text: string): Uint8Array => utf8.encode(text);

/** A UTF-8 file as text, or null when it does not exist. */
export async function readText(storage: Storage, path: string): Promise<string | null> {
  const bytes = await storage.read(path);
  return bytes === null ? null : utf8Decoder.decode(bytes);
}

/** Suffix of a directory being written (never read as a checkpoint). */
export const PENDING = '.pending';
/** Suffix of the previous directory while a commit swaps the new one in. */
export const PREVIOUS = '.previous';

/**
 * Makes the complete directory `staged` the directory `dest`, replacing the old one. At every
 * instant a reader that goes through `committedDir` finds either the whole old directory or the
 * whole new one:
 *   1. rename dest -> dest.previous (skipped when dest does not exist or a crash already did it)
 *   2. rename staged -> dest
 *   3. remove dest.previous
 * A crash between 1 and 2 leaves only dest.previous, which committedDir returns.
 */
export async function commitDir(storage: Storage, staged: string, dest: string): Promise<void> {
  const previous = dest + PREVIOUS;
  if (await storage.exists(dest)) {
    // A previous that survived a crash after step 2 is older than dest: drop it first.
    await storage.remove(previous);
    await storage.rename(dest, previous);
  }
  await storage.rename(staged, dest);
  await storage.remove(previous);
}

/** The directory a reader should use for `dest`: itself, or its previous copy after a crash mid-commit. */
export async function committedDir(storage: Storage, dest: string): Promise<string | null> {
  if (await storage.exists(dest)) return dest;
  if (await storage.exists(dest + PREVIOUS)) return dest + PREVIOUS;
  return null;
}

/**
 * Finishes what a crash interrupted around `dest`: puts dest.previous back when dest is missing,
 * drops it when dest is whole, and drops a half-written dest.pending. A resume calls it first.
 */
export async function settleDir(storage: Storage, dest: string): Promise<void> {
  const previous = dest + PREVIOUS;
  if (await storage.exists(previous)) {
    if (await storage.exists(dest)) await storage.remove(previous);
    else await storage.rename(previous, dest);
  }
  await storage.remove(dest + PENDING);
}

/** SHA-256 (hex) with WebCrypto, which Node 20+ and every browser provide as globalThis.crypto. */
export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}

const norm = (path: string): string => joinPath(...path.replace(/^\.\//, '').split('/'));

/** Everything in memory: for tests, and for a browser tab that keeps nothing. */
export class MemoryStorage implements Storage {
  /** Files by normalised path. */
  readonly files = new Map<string, Uint8Array>();

  async read(path: string): Promise<Uint8Array | null> {
    const bytes = this.files.get(norm(path));
    return bytes === undefined ? null : bytes.slice();
  }

  async write(path: string, data: Uint8Array | string): Promise<void> {
    this.files.set(norm(path), typeof data === 'string' ? encodeText(data) : data.slice());
  }

  async append(path: string, text: string): Promise<void> {
    const p = norm(path);
    const old = this.files.get(p) ?? new Uint8Array(0);
    const add = encodeText(text);
    const next = new Uint8Array(old.length + add.length);
    next.set(old);
    next.set(add, old.length);
    this.files.set(p, next);
  }

  async list(dir: string): Promise<string[]> {
    const prefix = `${norm(dir)}/`;
    const names = new Set<string>();
    for (const p of this.files.keys())
      if (p.startsWith(prefix)) names.add(p.slice(prefix.length).split('/')[0]);
    return [...names].sort();
  }

  async exists(path: string): Promise<boolean> {
    const p = norm(path);
    if (this.files.has(p)) return true;
    for (const k of this.files.keys()) if (k.startsWith(`${p}/`)) return true;
    return false;
  }

  async rename(from: string, to: string): Promise<void> {
    const [f, t] = [norm(from), norm(to)];
    if (!(await this.exists(f))) throw new Error(`${from}: no such file or directory`);
    if (this.files.has(t) || (await this.list(t)).length) throw new Error(`${to}: already exists`);
    for (const [k, v] of [...this.files]) {
      if (k === f || k.startsWith(`${f}/`)) {
        this.files.delete(k);
        this.files.set(t + k.slice(f.length), v);
      }
    }
  }

  async remove(path: string): Promise<void> {
    const p = norm(path);
    for (const k of [...this.files.keys()]) if (k === p || k.startsWith(`${p}/`)) this.files.delete(k);
  }
}

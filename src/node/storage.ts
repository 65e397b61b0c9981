/**
 * The trainer's Storage (src/train/storage.ts) on the local file system, for the CLI. Paths are
 * file-system paths (relative ones against the working directory).
 *
 * write: temp file in the same directory, fsync, rename over the target, fsync the directory (a
 * reader sees the old file or the complete new one, and the rename survives a power loss).
 * rename: fs.rename, then fsync of both parent directories.
 */
import { mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Storage } from '../train/storage.js';

let tmpCounter = 0;

export class NodeStorage implements Storage {
  async read(path: string): Promise<Uint8Array | null> {
    try {
      return await readFile(path);
    } catch (err) {
      // ENOTDIR: a path under a file (`--checkpoint run/log.jsonl`) holds nothing either.
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return null;
      throw err;
    }
  }

  async write(path: string, data: Uint8Array | string): Promise<void> {
    const dir = dirname(path);
    await mkdir(dir, { recursive: true });
    const tmp = join(dir, `.${basename(path)}.${process.pid}.${tmpCounter++}.tmp`);
    try {
      const fd = await open(tmp, 'w');
      try {
        await fd.writeFile(data);
        await fd.sync();
      } finally {
        await fd.close();
      }
      await rename(tmp, path);
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
    await fsyncDir(dir);
  }

  async append(path: string, text: string): Promise<void> {
    await mkdir(dirname(path), { recursive: true });
    const fd = await open(path, 'a');
    try {
      await fd.writeFile(text);
      await fd.sync();
    } finally {
      await fd.close();
    }
  }

  async list(dir: string): Promise<string[]> {
    try {
      return (await readdir(dir)).sort();
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return [];
      throw err;
    }
  }

  async exists(path: string): Promise<boolean> {
    try {
      await stat(path);
      return true;
    } catch {
      return false;
    }
  }

  async rename(from: string, to: string): Promise<void> {
    if (await this.exists(to)) throw new Error(`${to}: already exists`);
    await mkdir(dirname(to), { recursive: true });
    await rename(from, to);
    await fsyncDir(dirname(to));
    if (dirname(from) !== dirname(to)) await fsyncDir(dirname(from));
  }

  async remove(path: string): Promise<void> {
    await rm(path, { recursive: true, force: true });
  }
}

async function fsyncDir(dir: string): Promise<void> {
  const fd = await open(dir, 'r');
  try {
    await fd.sync();
  } finally {
    await fd.close();
  }
}

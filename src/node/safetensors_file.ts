/** safetensors files on the local file system (src/nets/safetensors.ts has the format itself). */
import { open, readFile, rename, unlink } from 'node:fs/promises';
import {
  decodeSafetensors,
  encodeSafetensors,
  type NamedTensor,
  type Safetensors,
} from '../nets/safetensors.js';

/**
 * Writes atomically: to `path.tmp-<pid>`, fsync, then rename over `path`, so a crash leaves
 * either the old checkpoint or the new one, never a torn file.
 */
export async function saveSafetensors(
  path: string,
  tensors: NamedTensor[],
  metadata?: Record<string, string>,
): Promise<void> {
  const bytes = encodeSafetensors(tensors, metadata);
  const tmp = `${path}.tmp-${process.pid}`;
  try {
    const handle = await open(tmp, 'w');
    try {
      await handle.writeFile(bytes);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, path);
  } catch (err) {
    await unlink(tmp).catch(() => {});
    throw new Error(`${path}: could not write checkpoint: ${(err as Error).message}`);
  }
}

export async function loadSafetensors(path: string): Promise<Safetensors> {
  let bytes: Uint8Array;
  try {
    bytes = await readFile(path);
  } catch (err) {
    throw new Error(`${path}: could not read checkpoint: ${(err as Error).message}`);
  }
  return decodeSafetensors(bytes, path);
}

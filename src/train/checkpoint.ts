/**
 * A checkpoint directory (`<outDir>/last/`, `<outDir>/best/`): one safetensors file per group of tensors
 * (`actor`, `critic`, `curiosity`, `optimizer`, `env`, ...) and `state.json`, the record.
 *
 * A checkpoint is written as a whole: every file into `<dir>.pending/`, state.json last, then
 * the directory is swapped in for the old one (storage.commitDir), so the previous checkpoint
 * stays whole until the new one is complete. state.json also names every file with its SHA-256,
 * so a reader still tells a complete checkpoint from a damaged one.
 */
import { decodeSafetensors, encodeSafetensors, type NamedTensor } from '../nets/safetensors.js';
import { commitDir, committedDir, joinPath, PENDING, readText, type Storage, sha256Hex } from './storage.js';

export const STATE_FILE = 'state.json';

/** A missing, torn or foreign checkpoint; the message names the file and what to do. */
export class CheckpointError extends Error {
  override name = 'CheckpointError';
}
/** The latest checkpoint of a run: what --resume continues. */
export const lastDir = (outDir: string): string => joinPath(outDir, 'last');
/** The checkpoint of the epoch with the best validation score (src/eval/verdict.ts). */
export const bestDir = (outDir: string): string => joinPath(outDir, 'best');

export interface CheckpointRecord<S> {
  /** Format version of this record. */
  version: 1;
  /** Tensor files of this checkpoint: file name -> SHA-256 (hex) of its bytes. */
  files: Record<string, string>;
  /** The algorithm's own state (epoch, config, counters, ...). */
  state: S;
}

/**
 * Writes `groups` (name -> tensors, saved as `<name>.safetensors`) and then the record.
 * `metadata` goes into every safetensors header (e.g. epoch, algo) for tools that read one file.
 */
export async function writeCheckpoint<S>(
  storage: Storage,
  dir: string,
  groups: Record<string, NamedTensor[]>,
  state: S,
  metadata: Record<string, string> = {},
): Promise<void> {
  const staged = dir + PENDING;
  await storage.remove(staged);
  const files: Record<string, string> = {};
  for (const [name, tensors] of Object.entries(groups)) {
    const file = `${name}.safetensors`;
    const bytes = encodeSafetensors(tensors, metadata);
    await storage.write(joinPath(staged, file), bytes);
    files[file] = await sha256Hex(bytes);
  }
  const record: CheckpointRecord<S> = { version: 1, files, state };
  await storage.write(joinPath(staged, STATE_FILE), `${JSON.stringify(record, null, 1)}\n`);
  await commitDir(storage, staged, dir);
}

export interface LoadedCheckpoint<S> {
  state: S;
  /** Tensors by group (file) name. */
  groups: Record<string, NamedTensor[]>;
}

/**
 * Reads and verifies a checkpoint (the previous copy, when a crash came in the middle of
 * replacing it); every failure names the directory and says what to do.
 */
export async function readCheckpoint<S>(storage: Storage, dir: string): Promise<LoadedCheckpoint<S>> {
  const found = await committedDir(storage, dir);
  const statePath = joinPath(found ?? dir, STATE_FILE);
  const text = found === null ? null : await readText(storage, statePath);
  if (text === null) {
    throw new CheckpointError(
      `${dir}: no checkpoint here (missing ${STATE_FILE}); train first, or check the path`,
    );
  }
  dir = found as string;
  let record: CheckpointRecord<S>;
  try {
    record = JSON.parse(text);
  } catch (err) {
    // The parser quotes the start of the text, newlines and all: keep the message one line.
    throw new CheckpointError(
      `${statePath}: not valid JSON (${(err as Error).message.replace(/\s+/g, ' ')})`,
    );
  }
  if (record?.version !== 1 || typeof record.files !== 'object' || record.state === undefined) {
    throw new CheckpointError(`${statePath}: not a foxhunt checkpoint record (version 1 expected)`);
  }
  const groups: Record<string, NamedTensor[]> = {};
  for (const [file, hash] of Object.entries(record.files)) {
    const path = joinPath(dir, file);
    const bytes = await storage.read(path);
    if (bytes === null)
      throw new CheckpointError(`${path}: missing, but ${STATE_FILE} lists it; the checkpoint is incomplete`);
    if ((await sha256Hex(bytes)) !== hash) {
      throw new CheckpointError(
        `${path}: contents differ from ${STATE_FILE} (a crash while a checkpoint was written?); ` +
          "this checkpoint cannot be loaded: use the run's other one (best/ or last/), or train again (--force replaces the run)",
      );
    }
    try {
      groups[file.replace(/\.safetensors$/, '')] = decodeSafetensors(bytes, path).tensors;
    } catch (err) {
      throw new CheckpointError((err as Error).message);
    }
  }
  return { state: record.state, groups };
}

/** The tensors of one group, or an error naming the checkpoint and the missing file. */
export function groupOf(ckpt: LoadedCheckpoint<unknown>, dir: string, group: string): NamedTensor[] {
  const g = ckpt.groups[group];
  if (!g) throw new CheckpointError(`${dir}: checkpoint has no ${group}.safetensors`);
  return g;
}

/** A tensor of a loaded group, or an error naming the checkpoint, group and tensor. */
export function tensorOf(
  ckpt: LoadedCheckpoint<unknown>,
  dir: string,
  group: string,
  name: string,
): Float32Array {
  const t = groupOf(ckpt, dir, group).find((x) => x.name === name);
  if (!t) throw new CheckpointError(`${dir}: checkpoint has no tensor ${name} in ${group}.safetensors`);
  return t.data;
}

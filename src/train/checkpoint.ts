/**
 * Checkpoint directory `<outDir>/checkpoint/`: one safetensors file per group of tensors
 * (`actor`, `critic`, `curiosity`, `optimizer`, `env`, ...) and `state.json`, the commit record.
 *
 * Write order: every safetensors file atomically (temp file, fsync, rename, directory fsync),
 * then `state.json` atomically, LAST. state.json names every file with its SHA-256, so a reader
 * can tell a complete checkpoint from one torn by a crash between the files and the record.
 * A run that stops on a NaN never starts writing, so the previous checkpoint stays whole.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeSafetensors, encodeSafetensors, type NamedTensor } from '../nets/safetensors.js';
import { writeFileAtomic } from './atomic.js';

export const STATE_FILE = 'state.json';

/** A missing, torn or foreign checkpoint; the message names the file and what to do. */
export class CheckpointError extends Error {
  override name = 'CheckpointError';
}
export const checkpointDir = (outDir: string): string => join(outDir, 'checkpoint');

export interface CheckpointRecord<S> {
  /** Format version of this record. */
  version: 1;
  /** Tensor files of this checkpoint: file name -> SHA-256 (hex) of its bytes. */
  files: Record<string, string>;
  /** The algorithm's own state (epoch, config, counters, ...). */
  state: S;
}

const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/**
 * Writes `groups` (name -> tensors, saved as `<name>.safetensors`) and then the record.
 * `metadata` goes into every safetensors header (e.g. epoch, algo) for tools that read one file.
 */
export function writeCheckpoint<S>(
  dir: string,
  groups: Record<string, NamedTensor[]>,
  state: S,
  metadata: Record<string, string> = {},
): void {
  mkdirSync(dir, { recursive: true });
  const files: Record<string, string> = {};
  for (const [name, tensors] of Object.entries(groups)) {
    const file = `${name}.safetensors`;
    const bytes = encodeSafetensors(tensors, metadata);
    writeFileAtomic(join(dir, file), bytes);
    files[file] = sha256(bytes);
  }
  const record: CheckpointRecord<S> = { version: 1, files, state };
  writeFileAtomic(join(dir, STATE_FILE), `${JSON.stringify(record, null, 1)}\n`);
}

export interface LoadedCheckpoint<S> {
  state: S;
  /** Tensors by group (file) name. */
  groups: Record<string, NamedTensor[]>;
}

/** Reads and verifies a checkpoint; every failure names the directory and says what to do. */
export function readCheckpoint<S>(dir: string): LoadedCheckpoint<S> {
  const statePath = join(dir, STATE_FILE);
  if (!existsSync(statePath)) {
    throw new CheckpointError(
      `${dir}: no checkpoint here (missing ${STATE_FILE}); train first, or check the path`,
    );
  }
  let record: CheckpointRecord<S>;
  try {
    record = JSON.parse(readFileSync(statePath, 'utf8'));
  } catch (err) {
    throw new CheckpointError(`${statePath}: not valid JSON (${(err as Error).message})`);
  }
  if (record?.version !== 1 || typeof record.files !== 'object' || record.state === undefined) {
    throw new CheckpointError(`${statePath}: not a foxhunt checkpoint record (version 1 expected)`);
  }
  const groups: Record<string, NamedTensor[]> = {};
  for (const [file, hash] of Object.entries(record.files)) {
    const path = join(dir, file);
    if (!existsSync(path))
      throw new CheckpointError(`${path}: missing, but ${STATE_FILE} lists it; the checkpoint is incomplete`);
    const bytes = readFileSync(path);
    if (sha256(bytes) !== hash) {
      throw new CheckpointError(
        `${path}: contents differ from ${STATE_FILE} (a crash while a checkpoint was written?); ` +
          'this checkpoint cannot be resumed, start the run again',
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

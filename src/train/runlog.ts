/**
 * The run log: `<outDir>/log.jsonl`, one JSON object per finished epoch (fields documented in
 * docs/TRAINING.md), and after the last epoch one summary line (`"summary": true`: best/ and its
 * test-split report). Lines are appended after the epoch's checkpoints are committed, so a crash
 * loses at most the line of an epoch that a resume will redo; `trimLog` drops lines past the
 * checkpoint on resume so the log never holds an epoch twice.
 */
import type { ValidationReport } from '../eval/metrics.js';
import { joinPath, readText, type Storage } from './storage.js';

export type { ValidationReport } from '../eval/metrics.js';

export interface EpochRecord {
  epoch: number;
  algo: string;
  backend: string;
  /** Mean losses of the epoch's update (PPO: policy, value, entropy, total, approxKl, clipFrac, gradNorm). */
  losses: Record<string, number>;
  /** Mean per-step reward components of the epoch's rollout. */
  reward: Record<string, number>;
  /** Mean policy entropy over the update (PPO), nats. */
  entropy?: number;
  /** Exploration epsilon of the epoch's collection (DQN family). */
  epsilon?: number;
  /** Experiences collected per second and samples learned from per second (gradient passes). */
  throughput: { envStepsPerSec: number; samplesPerSec: number };
  /** Wall-clock milliseconds per phase. */
  timeMs: { collect: number; update: number; curiosity: number; validate: number; checkpoint: number };
  validation: ValidationReport;
  /** Validation score of the epoch (src/eval/verdict.ts), what best/ is chosen by. */
  score: number;
}

/** The last line of a finished run. */
export interface RunSummary {
  summary: true;
  algo: string;
  backend: string;
  /** The last epoch trained (last/). */
  epochs: number;
  /** best/: its epoch, score and validation report. */
  best: { epoch: number; score: number; validation: ValidationReport };
  /** best/ on the test split, evaluated once, here. */
  test: ValidationReport;
  /** The verdict sentences on validation and on test (src/eval/verdict.ts). */
  verdict: { validation: string; test: string };
}

/** A log.jsonl that cannot be read (a line that is not JSON): the CLI prints it as one line. */
export class LogError extends Error {
  override name = 'LogError';
}

export const logPath = (outDir: string): string => joinPath(outDir, 'log.jsonl');

export async function appendLog(
  storage: Storage,
  outDir: string,
  record: EpochRecord | RunSummary,
): Promise<void> {
  await storage.append(logPath(outDir), `${JSON.stringify(record)}\n`);
}

/**
 * The log's records. `tornTail` drops a last line that is cut short (no newline, not JSON): the
 * trace of a crash in the middle of an append, which a resume is about to redo anyway.
 */
export async function readLog(storage: Storage, outDir: string, tornTail = false): Promise<EpochRecord[]> {
  return (await readLines(storage, outDir, tornTail)).filter((r): r is EpochRecord => !('summary' in r));
}

/** The summary line of a finished run, or null; `tornTail` as in readLog. */
export async function readSummary(
  storage: Storage,
  outDir: string,
  tornTail = false,
): Promise<RunSummary | null> {
  const lines = await readLines(storage, outDir, tornTail);
  return (lines.findLast((r): r is RunSummary => 'summary' in r) as RunSummary | undefined) ?? null;
}

async function readLines(
  storage: Storage,
  outDir: string,
  tornTail: boolean,
): Promise<(EpochRecord | RunSummary)[]> {
  const path = logPath(outDir);
  const text = await readText(storage, path);
  if (text === null) return [];
  const lines = text.split('\n');
  const records: (EpochRecord | RunSummary)[] = [];
  lines.forEach((line, i) => {
    if (line.trim() === '') return;
    try {
      records.push(JSON.parse(line));
    } catch {
      if (tornTail && i === lines.length - 1) return;
      throw new LogError(
        `${path}: line ${i + 1} is not valid JSON (a torn write?); delete that line to resume`,
      );
    }
  });
  return records;
}

/**
 * Makes the log end exactly at `epoch` (the checkpoint's): drops later lines and the summary of
 * an earlier finish (a resume that trains further writes a new one), and re-appends the
 * checkpoint's own record when a crash came between the checkpoint and its log line.
 */
export async function trimLog(
  storage: Storage,
  outDir: string,
  epoch: number,
  checkpointRecord: EpochRecord | null,
): Promise<void> {
  const kept = (await readLog(storage, outDir, true)).filter((r) => r.epoch <= epoch);
  if (checkpointRecord && !kept.some((r) => r.epoch === epoch)) kept.push(checkpointRecord);
  await storage.write(logPath(outDir), kept.map((r) => `${JSON.stringify(r)}\n`).join(''));
}

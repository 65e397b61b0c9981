/**
 * The end of one epoch, the same for the PPO and DQN-family loops: 5. checkpoints (best/ when the
 * validation score improved, last/ every train.checkpointEvery epochs and at the last), then 6. the
 * log line (the record inside a checkpoint lets a resume restore a lost line), the caller's
 * callback, and a stop the caller asked for through its AbortSignal.
 */
import { bestDir, lastDir } from './checkpoint.js';
import { appendLog, type EpochRecord } from './runlog.js';
import type { Storage } from './storage.js';

export type Phase = 'collect' | 'update' | 'curiosity' | 'validate' | 'checkpoint';

/** The caller's signal stopped the run between epochs; --resume (resumeConfig) continues it. */
export class RunStoppedError extends Error {
  override name = 'RunStoppedError';
}

/** A loop's state across epochs: what is on disk so far. */
export interface EpochLoop {
  storage: Storage;
  outDir: string;
  epochs: number;
  checkpointEvery: number;
  /** The epoch last/ holds (0: none yet). */
  lastSaved: number;
  /** The score of best/ (-Infinity: none yet). */
  bestScore: number;
  onPhase?: (epoch: number, phase: Phase) => void | Promise<void>;
  onEpoch?: (record: EpochRecord) => void | Promise<void>;
  signal?: AbortSignal;
}

/**
 * Ends `record`'s epoch. `checkpoint` takes the engine's snapshot once and returns the writer of
 * one checkpoint directory; it is called only when a checkpoint is due.
 */
export async function endEpoch(
  loop: EpochLoop,
  record: EpochRecord,
  checkpoint: () => Promise<(dir: string) => Promise<void>>,
): Promise<void> {
  const { epoch } = record;
  const saveLast = epoch % loop.checkpointEvery === 0 || epoch === loop.epochs;
  const saveBest = record.score > loop.bestScore;
  if (saveLast || saveBest) {
    await loop.onPhase?.(epoch, 'checkpoint');
    const t0 = performance.now();
    const write = await checkpoint();
    // best/ first: a resume from an older last/ redoes this epoch and finds best/ already equal.
    if (saveBest) await write(bestDir(loop.outDir));
    if (saveLast) await write(lastDir(loop.outDir));
    // Added to what the loop spent on the snapshot before (if it took one).
    record.timeMs.checkpoint += performance.now() - t0;
    if (saveLast) loop.lastSaved = epoch;
    if (saveBest) loop.bestScore = record.score;
  }
  await appendLog(loop.storage, loop.outDir, record);
  await loop.onEpoch?.(record);
  if (loop.signal?.aborted && epoch < loop.epochs) {
    throw new RunStoppedError(
      `stopped after epoch ${epoch}; ` +
        (loop.lastSaved > 0
          ? `a resume continues from last/ (epoch ${loop.lastSaved})`
          : 'no checkpoint was written'),
    );
  }
}

/**
 * The end of an epoch that runs beside the next one (its validation on a second stream): `defer`
 * keeps it, `start` runs it once (a rejection is held until `settle`, not left unhandled), and
 * `settle` starts it if it has not started and waits for it, rethrowing its error.
 */
export class EpochTail<T> {
  private deferred: (() => Promise<T>) | null = null;
  private running: Promise<T> | null = null;

  defer(end: () => Promise<T>): void {
    this.deferred = end;
  }

  start(): void {
    if (!this.deferred) return;
    this.running = this.deferred();
    this.deferred = null;
    this.running.catch(() => undefined);
  }

  async settle(): Promise<T | undefined> {
    this.start();
    const running = this.running;
    this.running = null;
    return running ? await running : undefined;
  }
}

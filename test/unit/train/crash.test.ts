/**
 * Nothing lost: a run killed at any storage operation (before every file write, append, rename
 * and remove of its checkpoints and log; an append or a directory removal cut in half) and then
 * resumed ends with the same last/, best/, log and verdict as a run that was never interrupted.
 * A crash before the first checkpoint leaves nothing to resume: the run starts again (force).
 *
 * The run is deterministic, so a crash at operation k leaves exactly the storage the
 * uninterrupted run had before operation k (plus the half of an append or a removal): the test
 * records those states in one run and resumes from each, instead of training up to each point.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { applyFlags, type Config, cloneDefaults, validateConfig } from '../../../src/config.js';
import { bestDir, CheckpointError, lastDir } from '../../../src/train/checkpoint.js';
import { loadPpoCheckpoint, type PpoCheckpoint } from '../../../src/train/ppo_checkpoint.js';
import { resumeConfig, runTraining } from '../../../src/train/run.js';
import { type EpochRecord, readLog, readSummary } from '../../../src/train/runlog.js';
import { MemoryStorage, type Storage } from '../../../src/train/storage.js';

const OUT = 'runs/crash';
const cfg = (extra: Record<string, string>): Config =>
  validateConfig(
    applyFlags(cloneDefaults(), {
      'data.synthBars': '1500',
      'env.episodeBars': '24',
      'env.curiosityBatch': '16',
      'rollout.episodes': '2',
      'rollout.steps': '8',
      'ppo.minibatch': '16',
      'ppo.updateEpochs': '1',
      'train.backend': 'cpu',
      'train.outDir': OUT,
      ...extra,
    }),
  );

type Files = Map<string, Uint8Array>;

/**
 * A MemoryStorage that keeps the files as they were before each mutating operation, and the
 * latest epoch whose last/ had been committed by then (a resume must never go back past it).
 */
class RecordingStorage extends MemoryStorage {
  /** Before operation k: the files, the state a crash halfway through operation k leaves. */
  readonly before: { files: Files; torn: Files | null; op: string; committed: number }[] = [];
  private committed = 0;
  private record(op: string, torn: Files | null) {
    const state = this.files.get(`${lastDir(OUT)}/state.json`);
    if (state)
      this.committed = Math.max(this.committed, JSON.parse(new TextDecoder().decode(state)).state.epoch);
    this.before.push({ files: new Map(this.files), torn, op, committed: this.committed });
  }
  override async write(p: string, data: Uint8Array | string) {
    this.record(`write ${p}`, null);
    return super.write(p, data);
  }
  override async append(p: string, text: string) {
    const half = new MemoryStorage();
    for (const [k, v] of this.files) half.files.set(k, v);
    await half.append(p, text.slice(0, text.length >> 1));
    this.record(`append ${p}`, half.files);
    return super.append(p, text);
  }
  override async rename(from: string, to: string) {
    this.record(`rename ${from} ${to}`, null);
    return super.rename(from, to);
  }
  override async remove(p: string) {
    const doomed = [...this.files.keys()].filter((k) => k === p || k.startsWith(`${p}/`));
    const half = new Map(this.files);
    for (const k of doomed.slice(0, doomed.length >> 1)) half.delete(k);
    this.record(`remove ${p}`, doomed.length > 1 ? half : null);
    return super.remove(p);
  }
}

const storageOf = (files: Files): MemoryStorage => {
  const s = new MemoryStorage();
  for (const [k, v] of files) s.files.set(k, v);
  return s;
};

/**
 * What the user does after the crash: --resume, or when no checkpoint was committed, --force.
 * Returns the epoch it resumed from (0: started again).
 */
async function recover(storage: Storage, fresh: Config): Promise<number> {
  let resume: Awaited<ReturnType<typeof resumeConfig>> | null = null;
  try {
    resume = await resumeConfig(storage, OUT, (base) => base);
  } catch (err) {
    if (!(err instanceof CheckpointError && /no checkpoint here/.test(err.message))) throw err;
  }
  await runTraining({
    cfg: resume?.cfg ?? fresh,
    storage,
    resume: resume?.checkpoint ?? null,
    force: resume === null,
  });
  return resume?.checkpoint.state.epoch ?? 0;
}

const deterministic = ({ timeMs: _t, throughput: _p, ...rest }: EpochRecord) => rest;

async function outcome(storage: Storage) {
  const last = await loadPpoCheckpoint(storage, lastDir(OUT));
  const best = await loadPpoCheckpoint(storage, bestDir(OUT));
  // SHA-256 of every tensor's bytes: exact, and cheap to compare (a deep equality over millions
  // of floats would take seconds per case).
  const hash = (a: Float32Array | Int32Array) =>
    createHash('sha256')
      .update(new Uint8Array(a.buffer, a.byteOffset, a.byteLength))
      .digest('hex');
  const bytes = (c: PpoCheckpoint) => [
    ...Object.values(c.snapshot.params).map(hash),
    ...Object.values(c.snapshot.optim).flatMap((o) => [hash(o.m), hash(o.v), o.step]),
    hash(c.snapshot.env.f),
    hash(c.snapshot.env.i),
  ];
  return {
    last: { epoch: last.state.epoch, tensors: bytes(last) },
    best: { epoch: best.state.epoch, tensors: bytes(best) },
    log: (await readLog(storage, OUT)).map(deterministic),
    summary: await readSummary(storage, OUT),
    leftovers: (await storage.list(OUT)).filter((n) => n.includes('.')),
  };
}

describe('a crash at any storage operation loses nothing', () => {
  // Seed 1: best/ improves every epoch (so best/ and last/ are swapped in the same epoch);
  // seed 7 with last/ every 2 epochs: best/ is written without last/ (epoch 1), and a resume
  // from last/ at epoch 2 must keep best/ of epoch 2.
  it.each([
    { 'train.seed': '1', 'train.epochs': '2', 'train.checkpointEvery': '1' },
    { 'train.seed': '7', 'train.epochs': '3', 'train.checkpointEvery': '2' },
  ])(
    'kill at each operation, resume: identical checkpoints, log and verdict (%o)',
    async (extra) => {
      const run = cfg(extra);
      const clean = new RecordingStorage();
      await runTraining({ cfg: run, storage: clean, resume: null });
      const expected = await outcome(clean);
      expect(expected.log.map((r) => r.epoch)).toEqual(
        Array.from({ length: run.train.epochs }, (_, i) => i + 1),
      );
      expect(expected.leftovers).toEqual(['log.jsonl']);
      const improved = expected.log.filter((r, i) =>
        expected.log.slice(0, i).every((q) => r.score > q.score),
      );
      expect(improved.length).toBeGreaterThan(1);
      expect(clean.before.filter((b) => b.op.startsWith('rename')).length).toBeGreaterThan(4);

      let cases = 0;
      for (const [k, { files, torn, op, committed }] of clean.before.entries()) {
        for (const state of torn ? [files, torn] : [files]) {
          const storage = storageOf(state);
          const from = await recover(storage, run);
          const at = `killed at operation ${k} (${op})${state === torn ? ', halfway' : ''}`;
          // The previous good checkpoint stays until the new one is complete.
          expect(from, at).toBeGreaterThanOrEqual(committed);
          expect(await outcome(storage), at).toEqual(expected);
          cases++;
        }
      }
      expect(cases).toBeGreaterThan(clean.before.length);
    },
    600_000,
  );
});

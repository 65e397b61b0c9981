import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { applyFlags, type Config, cloneDefaults, validateConfig } from '../../../src/config.js';
import { NodeStorage } from '../../../src/node/storage.js';
import { lastDir, STATE_FILE } from '../../../src/train/checkpoint.js';
import { loadPpoCheckpoint } from '../../../src/train/ppo_checkpoint.js';
import { type RunOptions, resumeConfig, runTraining } from '../../../src/train/run.js';
import { type EpochRecord, readLog as readLogOf } from '../../../src/train/runlog.js';

const storage = new NodeStorage();
const run = (opts: Omit<RunOptions, 'storage'>) => runTraining({ storage, ...opts });
const readLog = (dir: string) => readLogOf(storage, dir);

/** A CPU-sized run: a short synthetic market, 4 episodes x 16 steps, 2 passes of 32-sample minibatches. */
const TINY: Record<string, string> = {
  'data.synthBars': '2000',
  'env.episodeBars': '24',
  'env.curiosityBatch': '32',
  // The SPEC reward terms (off by default) on, so that the curiosity model's state is covered too.
  'env.curiosityScale': '1',
  'env.diversityPenalty': '-0.1',
  'env.barrierTerminates': 'true',
  'rollout.episodes': '4',
  'rollout.steps': '16',
  'ppo.minibatch': '32',
  'ppo.updateEpochs': '2',
  'train.backend': 'cpu',
  'train.seed': '11',
};

const root = mkdtempSync(join(tmpdir(), 'foxhunt-resume-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function config(outDir: string, extra: Record<string, string> = {}): Config {
  return validateConfig(applyFlags(cloneDefaults(), { ...TINY, 'train.outDir': outDir, ...extra }));
}

/** A log record without the wall-clock fields, which no two runs share. */
function deterministic(r: EpochRecord): Omit<EpochRecord, 'timeMs' | 'throughput'> {
  const { timeMs: _t, throughput: _p, ...rest } = r;
  return rest;
}

describe('checkpoint and resume (cpu)', () => {
  it('2 epochs straight equal 1 epoch + resume 1 epoch, bit for bit', async () => {
    const straight = join(root, 'straight');
    await run({ cfg: config(straight, { 'train.epochs': '2' }), resume: null });

    const split = join(root, 'split');
    await run({ cfg: config(split, { 'train.epochs': '1' }), resume: null });
    const { cfg, checkpoint } = await resumeConfig(storage, split, (base) =>
      validateConfig(applyFlags(base, { 'train.epochs': '2' })),
    );
    expect(checkpoint.state.epoch).toBe(1);
    await run({ cfg, resume: checkpoint });

    const a = await loadPpoCheckpoint(storage, lastDir(straight));
    const b = await loadPpoCheckpoint(storage, lastDir(split));
    expect(b.state.epoch).toBe(2);
    for (const net of ['actor', 'critic', 'curiosity'] as const) {
      expect(
        Buffer.from(b.snapshot.params[net].buffer).equals(Buffer.from(a.snapshot.params[net].buffer)),
      ).toBe(true);
      expect(
        Buffer.from(b.snapshot.optim[net].v.buffer).equals(Buffer.from(a.snapshot.optim[net].v.buffer)),
      ).toBe(true);
      expect(b.snapshot.optim[net].step).toBe(a.snapshot.optim[net].step);
    }
    expect(Array.from(b.snapshot.env.f)).toEqual(Array.from(a.snapshot.env.f));
    expect(Array.from(b.snapshot.env.i)).toEqual(Array.from(a.snapshot.env.i));

    const logA = await readLog(straight);
    const logB = await readLog(split);
    expect(logA.map((r) => r.epoch)).toEqual([1, 2]);
    expect(logB.map(deterministic)).toEqual(logA.map(deterministic));
  });

  it('trims log lines past the checkpoint on resume', async () => {
    const dir = join(root, 'trim');
    await run({
      cfg: config(dir, { 'train.epochs': '2', 'train.checkpointEvery': '5' }),
      resume: null,
    });
    // Checkpoints only at the last epoch (2); make the directory look like epoch 1's: rerun 1 epoch.
    await run({ cfg: config(dir, { 'train.epochs': '1' }), resume: null, force: true });
    expect((await readLog(dir)).map((r) => r.epoch)).toEqual([1]);
    const { cfg, checkpoint } = await resumeConfig(storage, dir, (base) =>
      validateConfig(applyFlags(base, { 'train.epochs': '2' })),
    );
    await run({ cfg, resume: checkpoint });
    expect((await readLog(dir)).map((r) => r.epoch)).toEqual([1, 2]);
  });

  it('resumes a checkpoint written before train.precision existed in exact f32, as it trained', async () => {
    const dir = join(root, 'old-precision');
    await run({ cfg: config(dir, { 'train.epochs': '1' }), resume: null });
    const statePath = join(lastDir(dir), STATE_FILE);
    const record = JSON.parse(readFileSync(statePath, 'utf8'));
    expect(record.state.config.train.precision).toBe('auto');
    delete record.state.config.train.precision;
    writeFileSync(statePath, JSON.stringify(record));
    const { cfg } = await resumeConfig(storage, dir, (base) =>
      validateConfig(applyFlags(base, { 'train.epochs': '2' })),
    );
    expect(cfg.train.precision).toBe('exact');
    await expect(
      resumeConfig(storage, dir, (base) =>
        validateConfig(applyFlags(base, { 'train.epochs': '2', 'train.precision': 'auto' })),
      ),
    ).rejects.toThrow(/train\.precision differs/);
  });

  it('resumes a run written before last/ and best/ existed (its checkpoint/ directory)', async () => {
    const dir = join(root, 'legacy');
    await run({ cfg: config(dir, { 'train.epochs': '1' }), resume: null });
    renameSync(lastDir(dir), join(dir, 'checkpoint'));
    rmSync(join(dir, 'best'), { recursive: true });
    const { cfg, checkpoint } = await resumeConfig(storage, dir, (base) =>
      validateConfig(applyFlags(base, { 'train.epochs': '2' })),
    );
    expect(checkpoint.state.epoch).toBe(1);
    const { summary } = await run({ cfg, resume: checkpoint });
    expect(summary.best.epoch).toBe(2);
    expect((await readLog(dir)).map((r) => r.epoch)).toEqual([1, 2]);
  });

  it('refuses a resume that changes the run', async () => {
    const dir = join(root, 'strict');
    await run({ cfg: config(dir, { 'train.epochs': '1' }), resume: null });
    await expect(
      resumeConfig(storage, dir, (base) =>
        validateConfig(applyFlags(base, { 'train.epochs': '2', 'ppo.lr': '0.001' })),
      ),
    ).rejects.toThrow(/ppo\.lr differs/);
    await expect(resumeConfig(storage, dir, (base) => base)).rejects.toThrow(/already finished epoch 1 of 1/);
  });

  it('stops on a NaN loss, naming the epoch, and keeps the last good checkpoint', async () => {
    const dir = join(root, 'nan');
    await run({ cfg: config(dir, { 'train.epochs': '1' }), resume: null });
    const before = readFileSync(join(lastDir(dir), STATE_FILE));
    const { cfg, checkpoint } = await resumeConfig(storage, dir, (base) =>
      validateConfig(applyFlags(base, { 'train.epochs': '3' })),
    );
    // An absurd learning rate is the poisoned update: the parameters blow up within the epoch.
    cfg.ppo.lr = 1e30;
    await expect(run({ cfg, resume: checkpoint })).rejects.toThrow(
      /epoch 2: .* is (NaN|Infinity|-Infinity); the run stopped and the last good checkpoint \(epoch 1\)/,
    );
    expect(readFileSync(join(lastDir(dir), STATE_FILE)).equals(before)).toBe(true);
    expect((await readLog(dir)).map((r) => r.epoch)).toEqual([1]);
    expect(existsSync(join(lastDir(dir), 'actor.safetensors'))).toBe(true);
  });
});

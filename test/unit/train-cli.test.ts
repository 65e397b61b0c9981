import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main.js';
import { readLog } from '../../src/train/runlog.js';

const TINY = [
  '--data.synthBars',
  '2000',
  '--env.episodeBars',
  '24',
  '--env.curiosityBatch',
  '32',
  '--rollout.episodes',
  '4',
  '--rollout.steps',
  '16',
  '--ppo.minibatch',
  '32',
  '--ppo.updateEpochs=1',
];

const root = mkdtempSync(join(tmpdir(), 'foxhunt-cli-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Runs the CLI and captures stdout and stderr. */
async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((...a) => void out.push(a.join(' ')));
  const error = vi.spyOn(console, 'error').mockImplementation((...a) => void err.push(a.join(' ')));
  try {
    const code = await main(args);
    return { code, out: out.join('\n'), err: err.join('\n') };
  } finally {
    log.mockRestore();
    error.mockRestore();
  }
}

describe('foxhunt train / backtest', () => {
  const dir = join(root, 'run');

  it('trains on the synthetic market, logs each epoch and prints the validation table', async () => {
    const r = await cli([
      'train',
      '--algo',
      'ppo',
      '--backend',
      'cpu',
      '--epochs',
      '2',
      '--seed',
      '3',
      '--out',
      dir,
      ...TINY,
    ]);
    expect(r.code).toBe(0);
    expect(r.err).toMatch(/^epoch 1\/2 .*\nepoch 2\/2 /m);
    expect(r.out).toMatch(/policy .*\nbuy-and-hold .*\nrandom /);
    expect(existsSync(join(dir, 'checkpoint', 'state.json'))).toBe(true);
    expect(readLog(dir).map((x) => x.epoch)).toEqual([1, 2]);
  });

  it('backtest of the checkpoint on the validation split matches the last logged validation', async () => {
    const r = await cli(['backtest', '--checkpoint', dir, '--split', 'val', '--json']);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.out);
    const last = readLog(dir).at(-1)!;
    expect(report.epoch).toBe(2);
    expect(report.policy).toEqual(last.validation.policy);
    expect(report.buyHold).toEqual(last.validation.buyHold);
    expect(report.random).toEqual(last.validation.random);
  });

  it('prints the table for the test split', async () => {
    const r = await cli(['backtest', '--checkpoint', join(dir, 'checkpoint')]);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/test split: bars \[\d+, 2000\)\n.*return.*sharpe/);
  });

  it('gives one clear line for user errors', async () => {
    const dqn = await cli([
      'train',
      '--algo',
      'dqn',
      '--backend',
      'cuda',
      '--out',
      join(root, 'dqn'),
      ...TINY,
    ]);
    expect(dqn.code).toBe(1);
    expect(dqn.err).toMatch(/--algo dqn --backend cuda: .* not built yet; use --backend cpu/);
    expect(dqn.err.split('\n')).toHaveLength(1);

    const flag = await cli(['train', '--ppo.lr', 'fast']);
    expect(flag.code).toBe(1);
    expect(flag.err).toMatch(/ppo\.lr: expected a number/);

    const missing = await cli(['backtest', '--checkpoint', join(root, 'nowhere')]);
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/no checkpoint here/);

    const resume = await cli(['train', '--resume', '--out', dir, '--epochs', '3', '--ppo.lr', '0.01']);
    expect(resume.code).toBe(1);
    expect(resume.err).toMatch(/ppo\.lr differs/);
  });
});

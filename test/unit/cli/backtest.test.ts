import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ONE_EPOCH_CPU, runCli } from '../../support/cli.js';

const root = mkdtempSync(join(tmpdir(), 'foxhunt-backtest-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const small = ONE_EPOCH_CPU;

const run = join(root, 'run');
const synth = join(root, 'synth.csv');
beforeAll(async () => {
  expect((await runCli(['train', ...small, '--out', run])).code).toBe(0);
  expect((await runCli(['data', 'synth', '--bars', '1000', '--out', synth])).code).toBe(0);
});

/** The first `bars` bars of the synthetic CSV, as a file. */
function firstBars(bars: number): string {
  const path = join(root, `first-${bars}.csv`);
  const lines = readFileSync(synth, 'utf8').split('\n');
  writeFileSync(path, `${lines.slice(0, bars + 1).join('\n')}\n`);
  return path;
}

describe('backtest --split all', () => {
  it('needs only the warm-up and a step, not room for the three splits', async () => {
    const r = await runCli(['backtest', '--checkpoint', run, '--data', firstBars(130), '--split', 'all']);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toContain('all split: bars [120, 130)');
    expect(
      (await runCli(['backtest', '--checkpoint', run, '--data', firstBars(122), '--split', 'all'])).code,
    ).toBe(0);
  });

  it('refuses data without a step after the warm-up in one line', async () => {
    const file = firstBars(121);
    const r = await runCli(['backtest', '--checkpoint', run, '--data', file, '--split', 'all']);
    expect(r.code).toBe(1);
    expect(r.err).toBe(
      'foxhunt backtest: data too short for a backtest: 121 bars, of which the first 120 are the warm-up ' +
        "(the checkpoint's data.maxLookback); --split all needs at least 122 (the warm-up, a state and its next bar)",
    );
  });

  it('says that --split all needs fewer bars when a named split does not fit', async () => {
    const r = await runCli(['backtest', '--checkpoint', run, '--data', firstBars(130), '--split', 'test']);
    expect(r.code).toBe(1);
    expect(r.err.split('\n')).toHaveLength(1);
    expect(r.err).toMatch(
      /^foxhunt backtest: data too short for the config: 130 bars .*; --split all backtests every bar after the warm-up$/,
    );
  });
});

describe('backtest DIR', () => {
  it('takes the checkpoint directory without --checkpoint, the same backtest, and refuses two', async () => {
    const flag = await runCli(['backtest', '--checkpoint', run, '--split', 'val', '--json']);
    const bare = await runCli(['backtest', run, '--split', 'val', '--json']);
    expect(bare.code).toBe(0);
    expect(JSON.parse(bare.out)).toEqual(JSON.parse(flag.out));
    const two = await runCli(['backtest', '--checkpoint', run, join(root, 'other')]);
    expect(two.code).toBe(1);
    expect(two.err).toMatch(/^foxhunt backtest: give one checkpoint directory, got ".*run" and ".*other"/);
    expect((await runCli(['backtest'])).err).toMatch(/^foxhunt backtest: --checkpoint DIR is required/);
  });
});

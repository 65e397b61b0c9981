import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { NodeStorage } from '../../../src/node/storage.js';
import { readLog as readLogOf, readSummary } from '../../../src/train/runlog.js';
import { runCli } from '../../support/cli.js';

const readLog = (dir: string) => readLogOf(new NodeStorage(), dir);

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

const cli = runCli;

describe('foxhunt train / backtest', () => {
  const dir = join(root, 'run');

  it('trains on the synthetic market, logs each epoch, keeps best/ and last/, ends with the verdict', async () => {
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
    expect(r.err).toMatch(/^epoch 1\/2 .* elapsed, ETA \d+s\nepoch 2\/2 .* elapsed, ETA 0s$/m);
    // Not a terminal: the first epoch's phases, a line each (collect first), none of the second's.
    expect(r.err).toMatch(/^epoch 1\/2 \[-{20}\] collect +\d+s elapsed$/m);
    expect(r.err).not.toMatch(/^epoch 2\/2 \[/m);
    expect(r.out).toMatch(/validation split:\n.*\npolicy .*\nbuy-and-hold .*\nrandom /);
    expect(r.out).toMatch(/test split \(best\/, evaluated once, at the end\):\n.*\npolicy /);
    expect(existsSync(join(dir, 'last', 'state.json'))).toBe(true);
    expect(existsSync(join(dir, 'best', 'state.json'))).toBe(true);
    const log = await readLog(dir);
    expect(log.map((x) => x.epoch)).toEqual([1, 2]);
    // best/ is the first epoch with the highest validation Sharpe.
    const bestEpoch = log.reduce((b, x) => (x.score > b.score ? x : b)).epoch;
    const summary = (await readSummary(new NodeStorage(), dir))!;
    expect(summary.best.epoch).toBe(bestEpoch);
    expect(summary.best.validation).toEqual(log[bestEpoch - 1].validation);
    const lines = r.out.split('\n');
    expect(lines.at(-2)).toBe(summary.verdict.validation);
    expect(lines.at(-1)).toBe(summary.verdict.test);
    expect(summary.verdict.validation).toMatch(
      new RegExp(`^best/ \\(epoch ${bestEpoch} of 2\\) (beat|did NOT beat) .* on the validation split`),
    );
  });

  it('backtest of a run directory is best/: its validation and test figures are the logged ones', async () => {
    const summary = (await readSummary(new NodeStorage(), dir))!;
    const val = JSON.parse((await cli(['backtest', '--checkpoint', dir, '--split', 'val', '--json'])).out);
    expect(val.epoch).toBe(summary.best.epoch);
    expect({ policy: val.policy, buyHold: val.buyHold, random: val.random }).toEqual(summary.best.validation);
    const test = JSON.parse((await cli(['backtest', '--checkpoint', dir, '--json'])).out);
    expect({ policy: test.policy, buyHold: test.buyHold, random: test.random }).toEqual(summary.test);
  });

  it('backtest of last/ matches the last logged validation, and prints the table for the test split', async () => {
    const r = await cli(['backtest', '--checkpoint', join(dir, 'last'), '--split', 'val', '--json']);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.out);
    const last = (await readLog(dir)).at(-1)!;
    expect(report.epoch).toBe(2);
    expect(report.policy).toEqual(last.validation.policy);
    const t = await cli(['backtest', '--checkpoint', join(dir, 'last')]);
    expect(t.code).toBe(0);
    expect(t.out).toMatch(/test split: bars \[\d+, 2000\)\n.*return.*sharpe/);
  });

  it('refuses to start a fresh run over an earlier one unless --force', async () => {
    const before = readFileSync(join(dir, 'last', 'state.json'));
    const again = await cli(['train', '--backend', 'cpu', '--epochs', '1', '--out', dir, ...TINY]);
    expect(again.code).toBe(1);
    expect(again.err).toMatch(/already holds a run \(last, best, log\.jsonl\); --resume continues it/);
    expect(again.err.split('\n')).toHaveLength(1);
    expect(readFileSync(join(dir, 'last', 'state.json')).equals(before)).toBe(true);

    const other = join(root, 'forced');
    await cli(['train', '--backend', 'cpu', '--epochs', '2', '--out', other, ...TINY]);
    const forced = await cli([
      'train',
      '--backend',
      'cpu',
      '--epochs',
      '1',
      '--out',
      other,
      '--force',
      ...TINY,
    ]);
    expect(forced.code).toBe(0);
    expect((await readLog(other)).map((x) => x.epoch)).toEqual([1]);
    expect((await readSummary(new NodeStorage(), other))!.epochs).toBe(1);
  });

  it('gives one clear line for user errors', async () => {
    const dqn = await cli([
      'train',
      '--algo',
      'iqn',
      '--dqn.iqnTau',
      '0',
      '--out',
      join(root, 'dqn'),
      ...TINY,
    ]);
    expect(dqn.code).toBe(1);
    expect(dqn.err).toMatch(/config: dqn\.iqnTau: must be an integer in \[1, 64\]/);
    expect(dqn.err.split('\n')).toHaveLength(1);

    const flag = await cli(['train', '--ppo.lr', 'fast']);
    expect(flag.code).toBe(1);
    expect(flag.err).toMatch(/ppo\.lr: expected a decimal number, got "fast"/);

    const missing = await cli(['backtest', '--checkpoint', join(root, 'nowhere')]);
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/no checkpoint here/);

    const resume = await cli(['train', '--resume', '--out', dir, '--epochs', '3', '--ppo.lr', '0.01']);
    expect(resume.code).toBe(1);
    expect(resume.err).toMatch(/ppo\.lr differs/);
  });
});

describe('foxhunt train / backtest --drop-invalid, --fill-gaps', () => {
  it('trains on a file with a broken row or missing bars only when asked to repair it, and says what changed', async () => {
    const clean = join(root, 'bars.csv');
    expect((await cli(['data', 'synth', '--bars', '2000', '--seed', '4', '--out', clean])).code).toBe(0);
    const lines = readFileSync(clean, 'utf8').trimEnd().split('\n');
    const dup = join(root, 'dup.csv');
    writeFileSync(dup, `${[...lines.slice(0, 900), lines[899], ...lines.slice(900)].join('\n')}\n`);
    const gaps = join(root, 'gaps.csv');
    writeFileSync(gaps, `${[...lines.slice(0, 700), ...lines.slice(703)].join('\n')}\n`);
    const run = (data: string, out: string, ...more: string[]) =>
      cli([
        'train',
        '--backend',
        'cpu',
        '--epochs',
        '1',
        '--data',
        data,
        '--out',
        join(root, out),
        ...more,
        ...TINY,
      ]);

    const refused = await run(dup, 'dup-refused');
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(
      /dup\.csv: data row 900 \(line 901\): duplicate timestamp .*; --drop-invalid drops such rows/,
    );
    expect(refused.err.split('\n')).toHaveLength(1);
    expect(existsSync(join(root, 'dup-refused'))).toBe(false);

    const dropped = await run(dup, 'dup', '--drop-invalid');
    expect(dropped.code).toBe(0);
    expect(dropped.err).toMatch(
      /^data: .*dup\.csv \(--drop-invalid\): dropped 1 invalid row\(s\) \(first: .*data row 900/m,
    );
    const state = JSON.parse(readFileSync(join(root, 'dup', 'last', 'state.json'), 'utf8'));
    expect(state.state.data.source).toMatch(/dup\.csv \(--drop-invalid\)$/);
    expect(state.state.data.bars).toBe(2000);

    const filled = await run(gaps, 'gaps', '--fill-gaps');
    expect(filled.code).toBe(0);
    expect(filled.err).toMatch(/gaps\.csv \(--fill-gaps\): filled 3 missing bar\(s\) in 1 gap\(s\)/);

    // backtest reads the file the same way, or says how to.
    const bare = await cli(['backtest', '--checkpoint', join(root, 'dup')]);
    expect(bare.code).toBe(1);
    expect(bare.err).toBe(
      `foxhunt backtest: the checkpoint trained on ${dup} (--drop-invalid): pass --data ${dup} --drop-invalid (or other bars with --data)`,
    );
    const bt = await cli(['backtest', '--checkpoint', join(root, 'dup'), '--data', dup]);
    expect(bt.code).toBe(1);
    expect(bt.err).toMatch(/duplicate timestamp .*--drop-invalid/);
    const bt2 = await cli(['backtest', '--checkpoint', join(root, 'dup'), '--data', dup, '--drop-invalid']);
    expect(bt2.code).toBe(0);
    expect(bt2.out).toMatch(/on .*dup\.csv \(--drop-invalid\), test split/);

    // data check's warnings reach train: an unadjusted 2:1 split halves every price from row 1500 on.
    const split = join(root, 'split.csv');
    const halve = (l: string) =>
      l
        .split(',')
        .map((c, j) => (j >= 1 && j <= 4 ? String(Number(c) / 2) : c))
        .join(',');
    writeFileSync(split, `${[...lines.slice(0, 1500), ...lines.slice(1500).map(halve)].join('\n')}\n`);
    const warned = await run(split, 'split');
    expect(warned.code).toBe(0);
    expect(warned.err).toMatch(
      /^warning: .*split\.csv: 1 close\(s\) more than 1\.8x away from the previous one .*unadjusted split/m,
    );
    expect(dropped.err).not.toMatch(/warning/);

    const noFile = await cli(['train', '--drop-invalid', '--out', join(root, 'none'), ...TINY]);
    expect(noFile.code).toBe(1);
    expect(noFile.err).toMatch(/--drop-invalid and --fill-gaps repair the bars of --data FILE/);
  });
});

describe('foxhunt train, interrupted', () => {
  it('stops after the epoch in progress on Ctrl-C, and --resume finishes the run', async () => {
    const out = join(root, 'interrupted');
    const args = ['train', '--backend', 'cpu', '--epochs', '3', '--out', out, ...TINY];
    const before = process.listenerCount('SIGINT');
    // Ctrl-C as soon as the command listens for it (before epoch 1 ends).
    const poll = setInterval(() => {
      if (process.listenerCount('SIGINT') > before) {
        clearInterval(poll);
        process.emit('SIGINT');
      }
    }, 1);
    const stopped = await cli(args);
    clearInterval(poll);
    expect(stopped.code).not.toBe(0);
    expect(stopped.err).toMatch(/stopped after epoch 1; a resume continues from last\/ \(epoch 1\)/);
    expect((await readLog(out)).map((r) => r.epoch)).toEqual([1]);
    expect(process.listenerCount('SIGINT')).toBe(before);
    const resumed = await cli([...args, '--resume']);
    expect(resumed.code).toBe(0);
    expect((await readLog(out)).map((r) => r.epoch)).toEqual([1, 2, 3]);
  });
});

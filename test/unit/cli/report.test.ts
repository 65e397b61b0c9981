import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunView } from '../../../src/report/view.js';
import { ONE_EPOCH_CPU, runCli } from '../../support/cli.js';

const root = mkdtempSync(join(tmpdir(), 'foxhunt-report-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const small = ONE_EPOCH_CPU;

/** The RunView a report.html draws. */
function viewOf(dir: string): RunView {
  const html = readFileSync(join(dir, 'report.html'), 'utf8');
  return JSON.parse(/^const view = (.*);$/m.exec(html)?.[1] ?? 'null');
}

const market = join(root, 'market.csv');
const other = join(root, 'other.csv');
const onFile = join(root, 'on-file');
const onSynth = join(root, 'on-synth');
beforeAll(async () => {
  expect((await runCli(['data', 'synth', '--bars', '2000', '--out', market])).code).toBe(0);
  expect((await runCli(['data', 'synth', '--bars', '2000', '--seed', '2', '--out', other])).code).toBe(0);
  expect((await runCli(['train', ...small, '--data', market, '--out', onFile])).code).toBe(0);
  expect((await runCli(['train', ...small, '--out', onSynth])).code).toBe(0);
});

describe('report --data', () => {
  it('draws the curves on the file the run trained on', async () => {
    const r = await runCli(['report', onFile, '--data', market]);
    expect(r.code).toBe(0);
    expect(viewOf(onFile).curves?.label).toBe('best/, epoch 1');
  });

  it('refuses other bars than the run trained on in one line, and leaves report.html alone', async () => {
    const before = statSync(join(onFile, 'report.html')).mtimeMs;
    const r = await runCli(['report', onFile, '--data', other]);
    expect(r.code).toBe(1);
    expect(r.err).toBe(
      `foxhunt report: --data ${other} (2000 bars) is not the data the checkpoint in ${onFile} trained on ` +
        `(${market}, 2000 bars); give that file with --data, or leave --data out to read it`,
    );
    expect(statSync(join(onFile, 'report.html')).mtimeMs).toBe(before);
  });

  it('refuses a file for a run on the synthetic market', async () => {
    const r = await runCli(['report', onSynth, '--data', other]);
    expect(r.code).toBe(1);
    expect(r.err).toBe(
      `foxhunt report: --data ${other} (2000 bars) is not the data the checkpoint in ${onSynth} trained on ` +
        '(the synthetic market, 2000 bars); leave --data out: report rebuilds the synthetic market from the config',
    );
  });
});

describe('report of a run on a repaired file', () => {
  it('reads the file with the repairs the run made, and refuses it without them', async () => {
    const lines = readFileSync(market, 'utf8').trimEnd().split('\n');
    const gappy = join(root, 'gappy.csv');
    writeFileSync(gappy, `${[...lines.slice(0, 1000), ...lines.slice(1010)].join('\n')}\n`);
    const run = join(root, 'filled');
    expect((await runCli(['train', ...small, '--data', gappy, '--fill-gaps', '--out', run])).code).toBe(0);
    const auto = await runCli(['report', run]);
    expect(auto.code).toBe(0);
    expect(viewOf(run).curves?.label).toBe('best/, epoch 1');
    expect(viewOf(run).subtitle).toContain(`${gappy} (--fill-gaps) (2000 bars)`);
    const bare = await runCli(['report', run, '--data', gappy]);
    expect(bare.code).toBe(1);
    expect(bare.err).toMatch(
      /is not the data the checkpoint .* trained on \(.*gappy\.csv \(--fill-gaps\), 2000 bars\)/,
    );
    expect((await runCli(['report', run, '--data', gappy, '--fill-gaps'])).code).toBe(0);
  });
});

describe('report of a run whose data file changed since', () => {
  it('writes the report without curves and says why on stderr', async () => {
    const moved = join(root, 'moved.csv');
    writeFileSync(moved, readFileSync(market));
    const run = join(root, 'moved-run');
    expect((await runCli(['train', ...small, '--data', moved, '--out', run])).code).toBe(0);
    writeFileSync(moved, readFileSync(other));
    const r = await runCli(['report', run]);
    expect(r.code).toBe(0);
    expect(r.err).toBe(
      `warning: ${moved} is not the data the checkpoint in ${run} trained on (it changed since); ` +
        'report.html has no curves: give the bars it trained on with --data',
    );
    expect(viewOf(run).curves).toBeNull();
    expect(existsSync(join(run, 'report.html'))).toBe(true);
  });
});

describe('report of a run with a damaged checkpoint', () => {
  /** A copy of the synthetic run, its `dirs` checkpoints' actor files flipped by a byte. */
  function damaged(name: string, dirs: string[]): string {
    const run = join(root, name);
    cpSync(onSynth, run, { recursive: true });
    for (const d of dirs) {
      const actor = join(run, d, 'actor.safetensors');
      const bytes = readFileSync(actor);
      bytes[bytes.length - 3] ^= 0xff;
      writeFileSync(actor, bytes);
    }
    return run;
  }
  const differ = 'contents differ from state.json (a crash while a checkpoint was written?)';

  it('draws last/ when best/ cannot be loaded, and says so on stderr', async () => {
    const run = damaged('bad-best', ['best']);
    const r = await runCli(['report', run]);
    expect(r.code).toBe(0);
    expect(r.err).toBe(
      `warning: ${join(run, 'best', 'actor.safetensors')}: ${differ}: skipped, report.html draws last/`,
    );
    expect(viewOf(run).curves?.label).toBe('last/, epoch 1');
    expect(viewOf(run).verdict).toHaveLength(2);
  });

  it('writes what the log holds when neither checkpoint loads', async () => {
    const run = damaged('bad-both', ['best', 'last']);
    const r = await runCli(['report', run]);
    expect(r.code).toBe(0);
    expect(r.err.split('\n')).toEqual(
      ['best', 'last'].map(
        (d) => `warning: ${join(run, d, 'actor.safetensors')}: ${differ}: skipped, report.html has no curves`,
      ),
    );
    const view = viewOf(run);
    expect(view.curves).toBeNull();
    expect(view.epochs).toHaveLength(1);
    expect(view.subtitle).toBe(
      'cpu backend, 1 epochs logged; no curves: neither best/ nor last/ can be loaded',
    );
  });

  it('refuses in one line when neither checkpoint loads and no epoch is logged', async () => {
    const run = damaged('bad-all', ['best', 'last']);
    writeFileSync(join(run, 'log.jsonl'), '');
    rmSync(join(run, 'report.html'));
    const r = await runCli(['report', run]);
    expect(r.code).toBe(1);
    const why = (d: string) => `${join(run, d, 'actor.safetensors')}: ${differ}`;
    expect(r.err).toBe(
      `foxhunt report: ${run}: nothing to report: no epoch is logged and no checkpoint loads ` +
        `(${why('best')}; ${why('last')}); train again (--force replaces the run)`,
    );
    expect(existsSync(join(run, 'report.html'))).toBe(false);
  });
});

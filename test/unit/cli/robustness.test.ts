import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { UserError } from '../../../src/cli/main.js';
import { runCli } from '../../support/cli.js';

const root = mkdtempSync(join(tmpdir(), 'foxhunt-robust-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const cli = runCli;

/** A one-epoch CPU run on a short synthetic market. */
const small = ['--backend', 'cpu', '--epochs', '1', '--data.synthBars', '2000', '--env.episodeBars', '24'];

describe('CLI misuse: one line, exit 1', () => {
  it('train --config reads a file with a byte-order mark (its fields are checked, not a JSON error)', async () => {
    const path = join(root, 'bom.json');
    writeFileSync(path, '\uFEFF{"ppo": {"lr": "fast"}}');
    const r = await cli(['train', '--backend', 'cpu', '--config', path, '--out', join(root, 'bom')]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/ppo\.lr: expected a finite number, got "fast"/);
  });

  it('a config flag followed by another option says that it needs a value', async () => {
    const out = join(root, 'noval');
    const r = await cli(['train', '--backend', 'cpu', '--ppo.lr', '--out', out]);
    expect(r.code).toBe(1);
    expect(r.err).toBe('foxhunt train: --ppo.lr needs a value');
    const last = await cli(['train', '--backend', 'cpu', '--out', out, '--ppo.lr']);
    expect(last.err).toBe('foxhunt train: --ppo.lr needs a value');
    expect(existsSync(out)).toBe(false);
  });
});

describe('damaged run directories', () => {
  it('a log line that is not JSON is one line for resume and report', async () => {
    const torn = join(root, 'torn');
    mkdirSync(torn);
    writeFileSync(join(torn, 'log.jsonl'), '{"epoch": 1}\n{"garb\n');
    const r = await cli(['report', torn]);
    expect(r.code).toBe(1);
    expect(r.err).toBe(
      `foxhunt report: ${join(torn, 'log.jsonl')}: line 2 is not valid JSON (a torn write?); delete that line to resume`,
    );
  });
});

describe('a file where a directory belongs', () => {
  it('backtest --checkpoint FILE says there is no checkpoint there', async () => {
    const file = join(root, 'not-a-dir.txt');
    writeFileSync(file, 'x');
    const r = await cli(['backtest', '--checkpoint', file]);
    expect(r.code).toBe(1);
    expect(r.err).toBe(
      `foxhunt backtest: ${file}: no checkpoint here (missing state.json); train first, or check the path`,
    );
  });
});

describe('report on a directory without a run', () => {
  it('refuses in one line and creates nothing', async () => {
    const missing = join(root, 'no-such-run');
    const r = await cli(['report', missing]);
    expect(r.code).toBe(1);
    expect(r.err).toBe(
      `foxhunt report: ${missing}: no run here (no best/, last/ or logged epoch); give the --out directory of a foxhunt train run`,
    );
    expect(existsSync(missing)).toBe(false);
    const empty = join(root, 'empty-run');
    mkdirSync(empty);
    expect((await cli(['report', empty])).code).toBe(1);
    expect(existsSync(join(empty, 'report.html'))).toBe(false);
  });
});

describe('sizes past memory', () => {
  it("a rollout past the kernels' indexing is refused by the config check, naming the sizes", async () => {
    const out = join(root, 'huge');
    const r = await cli([
      'train',
      ...small,
      '--rollout.episodes',
      '100000000',
      '--rollout.steps',
      '16',
      '--out',
      out,
    ]);
    expect(r.code).toBe(1);
    expect(r.err).toBe(
      'foxhunt train: config: rollout.steps: rollout.episodes * rollout.steps must be at most 33554432 ' +
        '(2^25: the collection kernels index their output in u32)',
    );
    expect(existsSync(out)).toBe(false);
  });

  it('an allocation that fails within the limits is one line naming the sizes to lower', async () => {
    // Imported after main.js (through runCli): train.js first would close the commands' import cycle early.
    const { asUserError } = await import('../../../src/cli/commands/train.js');
    const failed = asUserError(() =>
      Promise.reject(new RangeError('Invalid typed array length: 8589934592')),
    );
    await expect(failed).rejects.toThrow(
      /^Invalid typed array length: \d+: the config's sizes do not fit in memory; lower rollout\.episodes/,
    );
    await expect(failed).rejects.toBeInstanceOf(UserError);
  });
});

describe('a damaged checkpoint', () => {
  it('backtest says to use the other checkpoint or train again, not to resume', async () => {
    const out = join(root, 'flip');
    const sizes = ['--rollout.episodes', '4', '--rollout.steps', '16', '--ppo.minibatch', '32'];
    expect((await cli(['train', ...small, ...sizes, '--out', out])).code).toBe(0);
    const actor = join(out, 'last', 'actor.safetensors');
    const bytes = readFileSync(actor);
    bytes[bytes.length - 3] ^= 0xff;
    writeFileSync(actor, bytes);
    const r = await cli(['backtest', '--checkpoint', join(out, 'last')]);
    expect(r.code).toBe(1);
    expect(r.err).toBe(
      `foxhunt backtest: ${actor}: contents differ from state.json (a crash while a checkpoint was written?); ` +
        "this checkpoint cannot be loaded: use the run's other one (best/ or last/), or train again (--force replaces the run)",
    );
    expect((await cli(['backtest', '--checkpoint', out])).code).toBe(0);
  });
});

describe('a state.json that is not JSON', () => {
  it('is one line, though the parser quotes the text with its newline', async () => {
    const out = join(root, 'garbled');
    const sizes = ['--rollout.episodes', '4', '--rollout.steps', '16', '--ppo.minibatch', '32'];
    expect((await cli(['train', ...small, ...sizes, '--out', out])).code).toBe(0);
    writeFileSync(join(out, 'last', 'state.json'), 'garbage\n');
    const r = await cli(['backtest', '--checkpoint', join(out, 'last')]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^foxhunt backtest: .*state\.json: not valid JSON \(.*\)$/);
    expect(r.err.split('\n')).toHaveLength(1);
  });
});

describe('--out that is a file', () => {
  it('is refused in one line before training, and the file is kept', async () => {
    const file = join(root, 'out-file');
    writeFileSync(file, 'keep');
    const args = ['--backend', 'cpu', '--epochs', '1', '--data.synthBars', '2000', '--env.episodeBars', '24'];
    for (const out of [file, join(file, 'sub')]) {
      for (const extra of [[], ['--force']]) {
        const r = await cli(['train', ...args, ...extra, '--out', out]);
        expect(r.code).toBe(1);
        expect(r.err).toBe(
          `foxhunt train: --out ${out}: ${file} is a file, not a directory; give another --out`,
        );
      }
    }
    expect(readFileSync(file, 'utf8')).toBe('keep');
  });
});

describe('--resume of a run without last/', () => {
  it('says --force, since a fresh run into the directory is refused as well', async () => {
    const out = join(root, 'log-only');
    mkdirSync(out);
    writeFileSync(join(out, 'log.jsonl'), '');
    const args = ['--backend', 'cpu', '--epochs', '1', '--data.synthBars', '2000', '--env.episodeBars', '24'];
    const r = await cli(['train', ...args, '--resume', '--out', out]);
    expect(r.code).toBe(1);
    expect(r.err).toBe(
      `foxhunt train: ${join(out, 'last')}: no checkpoint here to resume (the run stopped before its first; ${out} holds only log.jsonl); --force starts it again, --out DIR trains elsewhere`,
    );
    const empty = join(root, 'no-run');
    expect((await cli(['train', ...args, '--resume', '--out', empty])).err).toMatch(/no checkpoint here/);
  });
});

describe('an environment that overflows f32', () => {
  it('names the env scales, not the learning rate, when epoch 1 rewards are not finite', async () => {
    const args = ['--backend', 'cpu', '--epochs', '1', '--data.synthBars', '2000', '--env.episodeBars', '24'];
    const sizes = ['--rollout.episodes', '4', '--rollout.steps', '16', '--ppo.minibatch', '32'];
    const dqn = [
      '--algo',
      'dqn',
      '--dqn.batch',
      '16',
      '--dqn.stepsPerEpoch',
      '1',
      '--dqn.replayCapacity',
      '256',
    ];
    for (const algo of [[], dqn]) {
      const out = join(root, `overflow${algo.length}`);
      const r = await cli([
        'train',
        ...args,
        ...sizes,
        ...algo,
        '--env.initialCapital',
        '1e300',
        '--out',
        out,
      ]);
      expect(r.code).toBe(1);
      const line = r.err.split('\n').at(-1);
      expect(line).toMatch(
        /^foxhunt train: epoch 1: the mean reward total is NaN; .*no checkpoint was written/,
      );
      expect(line).toContain('env.initialCapital and env.pnlScale nearer their defaults');
      expect(line).not.toContain('.lr');
    }
  });
});

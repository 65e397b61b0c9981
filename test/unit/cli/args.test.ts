import { describe, expect, it, vi } from 'vitest';
import { chooseBackendFlag, intFlag, parseFlags } from '../../../src/cli/args.js';
import { main, UserError } from '../../../src/cli/main.js';
import { applyFlags, cloneDefaults, fieldsElsewhere, nearestName } from '../../../src/config.js';
import { duration, progressLine, timing } from '../../../src/train/report.js';

const OPTIONS = {
  epochs: { type: 'string' },
  seed: { type: 'string' },
  out: { type: 'string' },
  resume: { type: 'boolean' },
} as const;

const flagError = (args: string[]): string => {
  try {
    parseFlags(args, OPTIONS);
  } catch (err) {
    expect(err).toBeInstanceOf(UserError);
    return (err as Error).message;
  }
  throw new Error(`${args.join(' ')} parsed`);
};

describe('flags', () => {
  it('an unknown flag gets one line naming the nearest valid one', () => {
    expect(flagError(['--epoch', '3'])).toBe('unknown option --epoch; did you mean --epochs?');
    expect(flagError(['--sed=4'])).toBe('unknown option --sed; did you mean --seed?');
    expect(flagError(['--colour'])).toBe('unknown option --colour; --help lists the options');
    expect(flagError(['--out'])).toBe('--out needs a value');
    expect(flagError(['--resume=yes'])).toBe('--resume takes no value');
  });

  it('negative numbers are values, with or without =', () => {
    expect(parseFlags(['--seed', '-1', '--epochs', '-.5'], OPTIONS).values).toMatchObject({
      seed: '-1',
      epochs: '-.5',
    });
    expect(parseFlags(['--seed=-7'], OPTIONS).values.seed).toBe('-7');
    // A boolean flag never takes the number.
    expect(flagError(['--resume', '-1'])).toBe('unknown option -1; --help lists the options');
    expect(() => intFlag('-1', 'seed', 0, 0)).toThrow('--seed must be an integer >= 0, got "-1"');
  });

  it('integer flags take decimal integers only: not hex, 1_000 or an empty string', () => {
    for (const raw of ['0x10', '0b1', '1_000', '', ' ', 'Infinity'])
      expect(() => intFlag(raw, 'seed', 0, 0)).toThrow(`--seed must be an integer >= 0, got "${raw}"`);
    expect(intFlag(' 12 ', 'seed', 0, 0)).toBe(12);
    expect(intFlag('1e3', 'epochs', 0, 1)).toBe(1000);
  });

  it("bench's --episodes lists take decimal integers only", async () => {
    const err: string[] = [];
    const spy = vi.spyOn(console, 'error').mockImplementation((...a) => void err.push(a.join(' ')));
    try {
      for (const bench of ['collect', 'train'])
        expect(await main(['bench', bench, '--backend', 'cpu', '--episodes', '8,0x10'])).toBe(1);
    } finally {
      spy.mockRestore();
    }
    expect(err).toEqual(
      ['collect', 'train'].map(
        (b) => `foxhunt bench ${b}: --episodes must be a comma-separated list of integers >= 1, got "8,0x10"`,
      ),
    );
  });

  it('a config flag takes -Infinity as its value (and refuses it), not as an option', async () => {
    const err: string[] = [];
    const spy = vi.spyOn(console, 'error').mockImplementation((...a) => void err.push(a.join(' ')));
    try {
      expect(await main(['train', '--dqn.vMin', '-Infinity'])).toBe(1);
    } finally {
      spy.mockRestore();
    }
    expect(err).toEqual(['foxhunt train: config: dqn.vMin: expected a decimal number, got "-Infinity"']);
  });

  it('foxhunt train prints the one line, not the usage', async () => {
    const err: string[] = [];
    const spy = vi.spyOn(console, 'error').mockImplementation((...a) => void err.push(a.join(' ')));
    try {
      expect(await main(['train', '--epoch', '3'])).toBe(1);
      expect(await main(['train', '--seed', '-1'])).toBe(1);
    } finally {
      spy.mockRestore();
    }
    expect(err).toEqual([
      'foxhunt train: unknown option --epoch; did you mean --epochs?',
      'foxhunt train: --seed must be an integer >= 0, got "-1"',
    ]);
  });

  it('foxhunt bench --help lists the bench subcommands', async () => {
    const out: string[] = [];
    const spy = vi.spyOn(console, 'log').mockImplementation((...a) => void out.push(a.join(' ')));
    try {
      expect(await main(['bench', '--help'])).toBe(0);
    } finally {
      spy.mockRestore();
    }
    expect(out.join('\n')).toMatch(/usage: foxhunt bench <subcommand>[\s\S]*bench train[\s\S]*bench collect/);
    expect(out.join('\n')).not.toMatch(/data synth/);
  });

  it('a backend that cannot start is a UserError with its reason; cpu starts', async () => {
    await expect(chooseBackendFlag('tpu')).rejects.toThrow(UserError);
    await expect(chooseBackendFlag('tpu')).rejects.toThrow(/unknown backend "tpu"/);
    const { backend } = await chooseBackendFlag('cpu');
    expect(backend.kind).toBe('cpu');
    backend.destroy();
  });

  it('an unknown config field names the nearest field of its section', () => {
    expect(() => applyFlags(cloneDefaults(), { 'ppo.lrr': '1' })).toThrow(
      /ppo\.lrr: unknown field \(did you mean --ppo\.lr\?\)/,
    );
    expect(nearestName('epoch', ['epochs', 'seed'])).toBe('epochs');
    expect(nearestName('xyz', ['epochs', 'seed'])).toBeNull();
  });

  it('a flag under the wrong section names the field elsewhere; booleans take on and off', () => {
    // Issue 24 writes the replay switch as --checkpoint.replay off.
    expect(() => applyFlags(cloneDefaults(), { 'checkpoint.replay': 'off' })).toThrow(
      /checkpoint\.replay: unknown section \(known: [a-z, ]+\) \(did you mean --dqn\.checkpointReplay\?\)$/,
    );
    expect(() => applyFlags(cloneDefaults(), { 'train.lr': '1e-4' })).toThrow(
      /train\.lr: unknown field \(did you mean --ppo\.lr or --dqn\.lr\?\)$/,
    );
    expect(fieldsElsewhere(cloneDefaults(), 'env', 'epochs')).toEqual(['train.epochs']);
    expect(fieldsElsewhere(cloneDefaults(), 'nope', 'nothing')).toEqual([]);
    const off = applyFlags(cloneDefaults(), { 'dqn.checkpointReplay': 'off', 'env.barrierTerminates': 'on' });
    expect(off.dqn.checkpointReplay).toBe(false);
    expect(off.env.barrierTerminates).toBe(true);
    expect(() => applyFlags(cloneDefaults(), { 'dqn.checkpointReplay': 'no' })).toThrow(
      /expected true or false \(or on, off\), got "no"/,
    );
  });
});

describe('progress', () => {
  it('shows elapsed time and an ETA from the mean epoch time of this session', () => {
    expect(duration(4_400)).toBe('4s');
    expect(duration(245_000)).toBe('4m05s');
    expect(duration(3_725_000)).toBe('1h02m');
    expect(timing(30_000, 0, 10).etaMs).toBeNull();
    expect(timing(30_000, 3, 10).etaMs).toBe(70_000);
    expect(progressLine(4, 10, 'update', null, timing(30_000, 3, 10))).toMatch(
      /^epoch 4\/10 \[#{6}-{14}\] update {4} {2}30s elapsed, ETA 1m10s$/,
    );
  });
});

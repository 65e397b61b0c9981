import { describe, expect, it } from 'vitest';
import { applyFlags, ConfigError, cloneDefaults, loadConfig, SIZE_LIMITS } from '../../src/config.js';
import { largestLearnerBatch } from '../../src/device/dqn.js';
import { assertHostReplayFits } from '../../src/engine/cpu_dqn.js';
import { DQN_OUTPUT, dqnTileConstants } from '../../src/kernels/collect_dqn.js';
import { PPO_OUTPUT } from '../../src/kernels/collect_ppo.js';
import { DQN_MAX_ATOMS } from '../../src/kernels/dqn_loss.js';
import { IQN_MAX_TAU } from '../../src/kernels/iqn_loss.js';
import { duelingLayout } from '../../src/nets/layout.js';

/** The message of the ConfigError thrown by f. */
function configMessage(f: () => unknown): string {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
}

const file = (text: string) => ({ text, path: 'c.json' });

describe('config files and flags: robustness', () => {
  it('reads a config file that starts with a byte-order mark (as Windows editors save it)', () => {
    expect(loadConfig(file('\uFEFF{"ppo": {"lr": 0.0005}}')).ppo.lr).toBe(0.0005);
  });

  it('refuses a number JSON reads as Infinity (1e999) instead of training on it', () => {
    expect(configMessage(() => loadConfig(file('{"ppo": {"lr": 1e999}}')))).toBe(
      'config: ppo.lr: expected a finite number, got Infinity in c.json',
    );
    expect(configMessage(() => loadConfig(file('{"dqn": {"vMin": -1e999}}')))).toContain(
      'dqn.vMin: expected a finite number, got -Infinity',
    );
  });

  it("names inherited names (constructor, __proto__, toString) as unknown fields, not as 'expected a function'", () => {
    for (const text of [
      '{"ppo": {"constructor": 5}}',
      '{"ppo": {"toString": 5}}',
      '{"ppo": {"__proto__": {"lr": 5}}}',
    ]) {
      expect(configMessage(() => loadConfig(file(text)))).toMatch(
        /^config: ppo\.\w+: unknown field in c\.json$/,
      );
    }
    expect(configMessage(() => loadConfig(file('{"constructor": {"name": "x"}}')))).toMatch(
      /^config: constructor: unknown section/,
    );
    expect(configMessage(() => applyFlags(cloneDefaults(), { 'ppo.constructor': '5' }))).toMatch(
      /^config: ppo\.constructor: unknown field/,
    );
    expect(configMessage(() => applyFlags(cloneDefaults(), { 'hasOwnProperty.x': '5' }))).toMatch(
      /^config: hasOwnProperty\.x: unknown section/,
    );
  });

  it('takes only decimal numbers from flags: not hex, binary, octal, 1_000, Infinity or an empty string', () => {
    const flag = (raw: string) => configMessage(() => applyFlags(cloneDefaults(), { 'ppo.lr': raw }));
    for (const raw of [
      '0x10',
      '0X1F',
      '0b11',
      '0o7',
      '1_000',
      'Infinity',
      '-Infinity',
      'NaN',
      '',
      ' ',
      '1e-4x',
      '--1',
    ])
      expect(flag(raw)).toBe(`config: ppo.lr: expected a decimal number, got "${raw}"`);
    expect(flag('1e999')).toBe('config: ppo.lr: expected a finite number, got "1e999"');
    expect(configMessage(() => applyFlags(cloneDefaults(), { 'rollout.episodes': '0x80' }))).toBe(
      'config: rollout.episodes: expected a decimal number, got "0x80"',
    );
  });

  it('reads a decimal number with spaces around it, as a shell quote may leave them', () => {
    const c = applyFlags(cloneDefaults(), {
      'ppo.lr': ' 3e-4 ',
      'rollout.episodes': '\t64',
      'ppo.clip': '+.25',
    });
    expect([c.ppo.lr, c.rollout.episodes, c.ppo.clip]).toEqual([3e-4, 64, 0.25]);
    expect(applyFlags(cloneDefaults(), { 'env.barrierTerminates': ' true ' }).env.barrierTerminates).toBe(
      true,
    );
  });

  it('refuses a number written as a string in a config file, hex included', () => {
    expect(configMessage(() => loadConfig(file('{"ppo": {"lr": "0x10"}}')))).toBe(
      'config: ppo.lr: expected a finite number, got "0x10" in c.json',
    );
  });
});

describe('size limits', () => {
  const flags = (f: Record<string, string>) => () => loadConfig(undefined, f);

  it('refuses sizes past what the kernels hold or memory takes, naming the field and the limit', () => {
    const cases: [Record<string, string>, string][] = [
      [
        { 'dqn.atoms': '100000' },
        'dqn.atoms: must be an integer in [2, 64] (dqn_loss holds 64 atoms a sample)',
      ],
      [
        { 'dqn.iqnTau': '100000' },
        'dqn.iqnTau: must be an integer in [1, 64] (iqn_loss holds 64 quantiles a sample)',
      ],
      [
        { 'dqn.iqnEmbed': '257' },
        'dqn.iqnEmbed: must be an integer in [1, 256] (collect_dqn writes the cosines into a 256-float trunk row)',
      ],
      [{ 'dqn.iqnActTau': '257' }, 'dqn.iqnActTau: must be an integer in [1, 256]'],
      [{ 'dqn.batch': '8193', 'dqn.replayCapacity': '10000' }, 'dqn.batch: must be an integer in [1, 8192]'],
      // Past its limit and past the replay: the batch is the field to change.
      [{ 'dqn.batch': '100000000' }, 'dqn.batch: must be an integer in [1, 8192]'],
      [{ 'dqn.replayCapacity': '9673350' }, 'dqn.replayCapacity: must be an integer in [dqn.batch, 9673349]'],
      [{ 'ppo.minibatch': '65537' }, 'ppo.minibatch: must be an integer in [1, 65536]'],
      [{ 'env.curiosityBatch': '65537' }, 'env.curiosityBatch: must be an integer in [1, 65536]'],
      [{ 'data.synthBars': '10000001' }, 'data.synthBars: must be an integer in [1000, 10000000]'],
      [
        { 'rollout.episodes': '65536', 'rollout.steps': '513' },
        'rollout.steps: rollout.episodes * rollout.steps must be at most 33554432 (2^25: the collection kernels index their output in u32)',
      ],
    ];
    for (const [f, message] of cases)
      expect(configMessage(flags(f))).toMatch(new RegExp(`^config: ${literal(message)}`));
  });

  it('takes every size at its limit', () => {
    const c = loadConfig(undefined, {
      'dqn.atoms': '64',
      'dqn.iqnTau': '64',
      'dqn.iqnEmbed': '256',
      'dqn.iqnActTau': '256',
      'dqn.batch': '8192',
      'dqn.replayCapacity': '9673349',
      'ppo.minibatch': '65536',
      'env.curiosityBatch': '65536',
      'data.synthBars': '10000000',
      'rollout.episodes': '65536',
      'rollout.steps': '512',
    });
    expect(c.dqn.atoms).toBe(64);
  });

  it('copies the kernels and the engines: each limit is theirs', () => {
    expect(SIZE_LIMITS.atoms).toBe(DQN_MAX_ATOMS);
    expect(SIZE_LIMITS.iqnTau).toBe(IQN_MAX_TAU);
    const iqn = {
      head: 'iqn',
      atoms: 51,
      iqnEmbed: 64,
      actTaus: 32,
      variant: 'tiled',
      tileEpisodes: 1,
    } as const;
    const tile = { threads: 256, tj: 256, kt: 32, tauRows: 1 };
    expect(SIZE_LIMITS.iqnEmbed).toBe(dqnTileConstants({ ...iqn, ...tile }).ACT_W);
    // The IQN learner's arenas at the largest taus and embedding stay within u32 indexing.
    const layout = duelingLayout('iqn', 51, SIZE_LIMITS.iqnEmbed);
    expect(largestLearnerBatch(layout, SIZE_LIMITS.batch, SIZE_LIMITS.iqnTau, Infinity)).toBe(
      SIZE_LIMITS.batch,
    );
    expect(largestLearnerBatch(layout, 2 * SIZE_LIMITS.batch, SIZE_LIMITS.iqnTau, Infinity)).toBeLessThan(
      2 * SIZE_LIMITS.batch,
    );
    expect(() => assertHostReplayFits(SIZE_LIMITS.replayCapacity)).not.toThrow();
    expect(() => assertHostReplayFits(SIZE_LIMITS.replayCapacity + 1)).toThrow();
    for (const out of [DQN_OUTPUT, PPO_OUTPUT])
      expect(SIZE_LIMITS.rolloutSteps * out.floatsPerStep).toBeLessThan(2 ** 32);
  });
});

/** `text` as a literal in a RegExp. */
function literal(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

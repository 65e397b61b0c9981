import { describe, expect, it } from 'vitest';
import { applyFlags, ConfigError, cloneDefaults, loadConfig } from '../../src/config.js';

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

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
});

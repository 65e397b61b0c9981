import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  applyFlags,
  type Config,
  ConfigError,
  cloneDefaults,
  defaultConfig,
  defaultsFor,
  loadConfig,
  mergeConfig,
  resolvePrecision,
  validateConfig,
} from '../../src/config.js';

/** The ConfigError thrown by f (failing the test when nothing is thrown). */
function configError(f: () => unknown): ConfigError {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('config', () => {
  it('defaults pass validation and match SPEC numbers', () => {
    expect(validateConfig(cloneDefaults())).toEqual(defaultConfig);
    expect(defaultConfig.data).toMatchObject({
      trainFrac: 0.7,
      valFrac: 0.15,
      maxLookback: 120,
      defaultSpreadBps: 2,
    });
    expect(defaultConfig.env).toMatchObject({
      feeBps: 1,
      rebateBps: 0.2,
      reservePct: 0.05,
      initialCapital: 1,
    });
    expect(defaultConfig.rollout).toEqual({ episodes: 128, steps: 500 });
  });

  const impossible: [string, (c: Config) => void, string][] = [
    ['negative fee', (c) => void (c.env.feeBps = -1), 'env.feeBps'],
    ['no episodes', (c) => void (c.rollout.episodes = 0), 'rollout.episodes'],
    ['unknown algo', (c) => void ((c.train as { algo: string }).algo = 'sarsa'), 'train.algo'],
    [
      'splits leave no test data',
      (c) => {
        c.data.trainFrac = 0.8;
        c.data.valFrac = 0.2;
      },
      'data.valFrac',
    ],
    ['lookback too short', (c) => void (c.data.maxLookback = 10), 'data.maxLookback'],
    ['fractional episode length', (c) => void (c.env.episodeBars = 10.5), 'env.episodeBars'],
    ['epsilon end above start', (c) => void (c.dqn.epsilonEnd = 1.5), 'dqn.epsilonEnd'],
  ];
  for (const [what, mutate, field] of impossible) {
    it(`rejects ${what}, naming ${field}`, () => {
      const c = cloneDefaults();
      mutate(c);
      const err = configError(() => validateConfig(c));
      expect(err.field).toBe(field);
      expect(err.message).toContain(field);
    });
  }

  it('train.precision: auto by default (tf32 on CUDA, exact elsewhere); tf32 only with --backend cuda, else a message saying what to use', () => {
    expect(defaultConfig.train.precision).toBe('auto');
    expect(resolvePrecision('auto', 'cuda')).toBe('tf32');
    expect(resolvePrecision('auto', 'webgpu')).toBe('exact');
    expect(resolvePrecision('auto', 'cpu')).toBe('exact');
    expect(resolvePrecision('exact', 'cuda')).toBe('exact');
    expect(resolvePrecision('tf32', 'cuda')).toBe('tf32');
    for (const backend of ['auto', 'cpu', 'webgpu', 'cuda']) {
      expect(loadConfig(undefined, { 'train.backend': backend }).train.precision).toBe('auto');
    }
    expect(
      loadConfig(undefined, { 'train.precision': 'tf32', 'train.backend': 'cuda' }).train.precision,
    ).toBe('tf32');
    expect(
      loadConfig(undefined, { 'train.precision': 'exact', 'train.backend': 'cpu' }).train.precision,
    ).toBe('exact');
    for (const backend of ['auto', 'cpu', 'webgpu']) {
      const err = configError(() =>
        loadConfig(undefined, { 'train.precision': 'tf32', 'train.backend': backend }),
      );
      expect(err.field).toBe('train.precision');
      expect(err.message).toContain(`train.backend is "${backend}"`);
      expect(err.message).toContain('use train.precision exact, or --backend cuda');
    }
    const bad = configError(() =>
      loadConfig(undefined, { 'train.precision': 'fp16', 'train.backend': 'cuda' }),
    );
    expect(bad.field).toBe('train.precision');
    expect(bad.message).toContain('use auto, exact or tf32');
  });

  it('rejects unknown fields and sections from JSON and flags', () => {
    expect(
      configError(() => loadConfig({ text: '{"env": {"feeBsp": 1}}', path: 'c.json' })).message,
    ).toContain('env.feeBsp');
    expect(configError(() => loadConfig({ text: '{"nope": {}}', path: 'c.json' })).field).toBe('nope');
    expect(configError(() => applyFlags(cloneDefaults(), { 'ppo.lamda': '0.9' })).field).toBe('ppo.lamda');
    expect(configError(() => loadConfig({ text: '{not json', path: 'bad.json' })).message).toContain(
      'bad.json',
    );
  });

  it('rejects a flag or JSON value of the wrong type, naming the field', () => {
    expect(configError(() => applyFlags(cloneDefaults(), { 'rollout.episodes': 'many' })).field).toBe(
      'rollout.episodes',
    );
    expect(configError(() => applyFlags(cloneDefaults(), { 'env.barrierTerminates': 'yes' })).field).toBe(
      'env.barrierTerminates',
    );
    expect(
      configError(() => mergeConfig(cloneDefaults(), { env: { feeBps: '1' as unknown as number } })).field,
    ).toBe('env.feeBps');
  });

  it('merges JSON over defaults and flags over JSON, coercing flag types', () => {
    const c = loadConfig(
      {
        text: JSON.stringify({ env: { feeBps: 2, stopLossBps: 40 }, train: { algo: 'dqn' } }),
        path: 'c.json',
      },
      { 'env.feeBps': '3', 'env.barrierTerminates': 'false', 'train.algo': 'iqn' },
    );
    expect(c.env.feeBps).toBe(3);
    expect(c.env.stopLossBps).toBe(40);
    expect(c.env.barrierTerminates).toBe(false);
    expect(c.train.algo).toBe('iqn');
    expect(c.env.rebateBps).toBe(defaultConfig.env.rebateBps);
    // The defaults object itself is never mutated by a merge.
    expect(defaultConfig.env.feeBps).toBe(1);
  });

  it("lays an algorithm's own defaults under the file and flags: C51 moves its target by Polyak steps", () => {
    const family = defaultConfig.dqn.targetEvery;
    expect(family).toBe(1000);
    expect(loadConfig(undefined, { 'train.algo': 'c51' }).dqn.targetEvery).toBe(0);
    expect(loadConfig(undefined, { 'train.algo': 'dqn' }).dqn.targetEvery).toBe(family);
    expect(loadConfig(undefined, { 'train.algo': 'iqn' }).dqn.targetEvery).toBe(family);
    // Selected by the file, or by a flag over the file.
    const file = { text: JSON.stringify({ train: { algo: 'c51' } }), path: 'c.json' };
    expect(loadConfig(file).dqn.targetEvery).toBe(0);
    expect(loadConfig(file, { 'train.algo': 'dqn' }).dqn.targetEvery).toBe(family);
    // A value the user gives wins, from the file or a flag, even when it equals the family's.
    const pinned = {
      text: JSON.stringify({ train: { algo: 'c51' }, dqn: { targetEvery: 1000 } }),
      path: 'p.json',
    };
    expect(loadConfig(pinned).dqn.targetEvery).toBe(1000);
    expect(loadConfig(undefined, { 'train.algo': 'c51', 'dqn.targetEvery': '1000' }).dqn.targetEvery).toBe(
      1000,
    );
    expect(defaultsFor('c51').train.algo).toBe('c51');
    expect(defaultsFor('c51').dqn.targetEvery).toBe(0);
    expect(defaultConfig.dqn.targetEvery).toBe(family);
    // C51 discounts by 0.95, the family by 0.99; a file's gamma wins (configs/cpu-c51.json's 0.98).
    expect(defaultConfig.dqn.gamma).toBe(0.99);
    expect(loadConfig(undefined, { 'train.algo': 'c51' }).dqn.gamma).toBe(0.95);
    expect(loadConfig(undefined, { 'train.algo': 'iqn' }).dqn.gamma).toBe(0.99);
    const cpu = 'configs/cpu-c51.json';
    expect(loadConfig({ text: readFileSync(cpu, 'utf8'), path: cpu }).dqn.gamma).toBe(0.98);
    // C51 trains 600 steps an epoch, the family 300; the CPU file's 50 wins.
    expect(defaultConfig.dqn.stepsPerEpoch).toBe(300);
    expect(loadConfig(undefined, { 'train.algo': 'c51' }).dqn.stepsPerEpoch).toBe(600);
    expect(loadConfig(undefined, { 'train.algo': 'dqn' }).dqn.stepsPerEpoch).toBe(300);
    expect(loadConfig({ text: readFileSync(cpu, 'utf8'), path: cpu }).dqn.stepsPerEpoch).toBe(50);
  });

  it('validates after merging: an impossible flag value fails the load', () => {
    expect(
      configError(() => loadConfig(undefined, { 'data.trainFrac': '0.9', 'data.valFrac': '0.2' })).field,
    ).toBe('data.valFrac');
  });

  it('checks ppo.minibatch against the rollout only for PPO runs', () => {
    const small = { 'rollout.episodes': '4', 'rollout.steps': '16' };
    expect(configError(() => loadConfig(undefined, small)).field).toBe('ppo.minibatch');
    expect(loadConfig(undefined, { ...small, 'train.algo': 'c51' }).rollout.episodes).toBe(4);
  });
});

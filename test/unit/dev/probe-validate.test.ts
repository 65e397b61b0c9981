import { describe, expect, it, vi } from 'vitest';
import { devMain } from '../../../dev/main.js';
import { probeSources, VALIDATE_PROBES } from '../../../dev/probe-validate.js';
import { wgslSources } from '../../../src/kernels/sources.js';
import { useWebgpu } from '../../support/webgpu.js';

describe('dev/bench.js probe-validate', () => {
  const webgpu = useWebgpu();

  it('builds every probe from the shipped validate_dqn source (each edit must still match it)', () => {
    const built = probeSources(wgslSources.validate_dqn);
    expect(built.map(([name]) => name)).toEqual(Object.keys(VALIDATE_PROBES));
    for (const [, kernel, source] of built) {
      expect(source).toContain(`fn ${kernel}(`);
      expect(source).not.toBe(wgslSources.validate_dqn);
    }
    expect(() => probeSources('fn validate_dqn() {}', ['no-weights'])).toThrow(
      /not in validate_dqn's source/,
    );
  });

  it('times validate_dqn, a probe and validate_policy on WebGPU', async (ctx) => {
    webgpu(ctx);
    const lines: string[] = [];
    const log = vi.spyOn(console, 'log').mockImplementation((line: string) => void lines.push(line));
    const err = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      // A short market: its validation split is a few hundred bars. One probe: the unrolled ones
      // compile slowly on lavapipe, and their sources are checked above.
      expect(
        await devMain([
          'probe-validate',
          '--backend',
          'webgpu',
          '--bars',
          '3000',
          '--repeats',
          '1',
          '--probes',
          'no-weights',
        ]),
      ).toBe(0);
    } finally {
      log.mockRestore();
      err.mockRestore();
    }
    expect(lines[0]).toMatch(/^\d+ bars, validate_dqn on webgpu/);
    for (const name of ['validate_dqn', 'no-weights', 'validate_policy (PPO actor)']) {
      expect(lines.some((l) => l.startsWith(name) && / us a bar$/.test(l))).toBe(true);
    }
    expect(await devMain(['probe-validate', '--bars', '10'])).toBe(1);
  }, 300_000);
});

import { describe, expect, it, vi } from 'vitest';
import { devMain } from '../../../dev/main.js';
import { useWebgpu } from '../../support/webgpu.js';

describe('dev/bench.js probe-validate', () => {
  const webgpu = useWebgpu();

  it('times validate_dqn and builds both WGSL probes from the shipped source', async (ctx) => {
    webgpu(ctx);
    const lines: string[] = [];
    const log = vi.spyOn(console, 'log').mockImplementation((line: string) => void lines.push(line));
    const err = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      // A short market: its validation split is a few hundred bars.
      expect(
        await devMain(['probe-validate', '--backend', 'webgpu', '--bars', '3000', '--repeats', '1']),
      ).toBe(0);
    } finally {
      log.mockRestore();
      err.mockRestore();
    }
    expect(lines[0]).toMatch(/^\d+ bars, validate_dqn on webgpu/);
    // Each probe's source edit must match the shipped kernel (the harness throws when it does not).
    for (const name of ['validate_dqn', 'no-weights', 'read-only', 'validate_policy (PPO actor)']) {
      expect(lines.some((l) => l.startsWith(name) && / us a bar$/.test(l))).toBe(true);
    }
    expect(await devMain(['probe-validate', '--bars', '10'])).toBe(1);
  }, 120_000);
});

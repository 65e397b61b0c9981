import { describe, expect, it } from 'vitest';
import { DAWN_NODE_FLAGS, dawnNodeFlags } from '../../src/backend/webgpu/gpu.js';

describe('dawnNodeFlags', () => {
  it('is the built-in flags when FOXHUNT_DAWN_FLAGS is unset or blank', () => {
    expect(dawnNodeFlags({})).toEqual(DAWN_NODE_FLAGS);
    expect(dawnNodeFlags({ FOXHUNT_DAWN_FLAGS: '  ' })).toEqual(DAWN_NODE_FLAGS);
  });

  it('appends the whitespace-separated flags of FOXHUNT_DAWN_FLAGS after the built-in ones', () => {
    const flags = dawnNodeFlags({
      FOXHUNT_DAWN_FLAGS: 'enable-dawn-features=disable_robustness\n  backend=vulkan',
    });
    expect(flags).toEqual([...DAWN_NODE_FLAGS, 'enable-dawn-features=disable_robustness', 'backend=vulkan']);
  });
});

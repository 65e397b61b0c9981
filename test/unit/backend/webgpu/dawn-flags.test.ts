import { describe, expect, it } from 'vitest';
import { DAWN_NODE_FLAGS, dawnNodeFlags, mergeDawnFlags } from '../../../../src/backend/webgpu/gpu.js';

describe('dawnNodeFlags', () => {
  it('is the built-in flags when FOXHUNT_DAWN_FLAGS is unset or blank', () => {
    expect(dawnNodeFlags({})).toEqual(DAWN_NODE_FLAGS);
    expect(dawnNodeFlags({ FOXHUNT_DAWN_FLAGS: '  ' })).toEqual(DAWN_NODE_FLAGS);
  });

  it('merges the toggles of FOXHUNT_DAWN_FLAGS into the built-in ones and keeps its other flags', () => {
    const flags = dawnNodeFlags({
      FOXHUNT_DAWN_FLAGS: 'enable-dawn-features=disable_robustness\n  backend=vulkan',
    });
    // One enable flag: Dawn's Node bindings keep only the last flag of a name, so a second
    // enable-dawn-features would drop vulkan_enable_f16_on_nvidia.
    expect(flags).toEqual([
      'enable-dawn-features=vulkan_enable_f16_on_nvidia,disable_robustness',
      'disable-dawn-features=timestamp_quantization',
      'backend=vulkan',
    ]);
  });

  it('adds allow_unsafe_apis for the subgroup-matrix (tensor-core) engine, once', () => {
    expect(dawnNodeFlags({}, true)[0]).toBe(
      'enable-dawn-features=vulkan_enable_f16_on_nvidia,allow_unsafe_apis',
    );
    expect(
      dawnNodeFlags(
        { FOXHUNT_DAWN_FLAGS: 'enable-dawn-features=allow_unsafe_apis,disable_robustness' },
        true,
      )[0],
    ).toBe('enable-dawn-features=vulkan_enable_f16_on_nvidia,allow_unsafe_apis,disable_robustness');
    expect(mergeDawnFlags(['a=1', 'disable-dawn-features=x', 'disable-dawn-features=y,x'])).toEqual([
      'disable-dawn-features=x,y',
      'a=1',
    ]);
  });
});

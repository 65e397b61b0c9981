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
    expect(flags).toEqual([
      'disable-dawn-features=timestamp_quantization',
      'enable-dawn-features=disable_robustness',
      'backend=vulkan',
    ]);
    // One flag per name: Dawn's Node bindings keep only the last flag of a name, so a second
    // disable-dawn-features would drop timestamp_quantization.
    expect(
      dawnNodeFlags({ FOXHUNT_DAWN_FLAGS: 'disable-dawn-features=lazy_clear_resource_on_first_use' }),
    ).toEqual(['disable-dawn-features=timestamp_quantization,lazy_clear_resource_on_first_use']);
  });

  it('merges flags of one name into one, each toggle once', () => {
    expect(mergeDawnFlags(['a=1', 'disable-dawn-features=x', 'disable-dawn-features=y,x'])).toEqual([
      'disable-dawn-features=x,y',
      'a=1',
    ]);
  });
});

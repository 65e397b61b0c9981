/**
 * WebGPU engine 5's step schedules (wgsl/collect_dqn.wgsl): the TD op beside the next step's action op
 * (TD_WITH_NEXT_ACTION), the dueling combination folded into the acting and TD threads (FOLDED_COMBINE) and the dual
 * pass's layers on two activation buffers (PING_PONG) move work between threads and ops, not what is
 * computed. So the default build and the build without them (the step as one op after another) must
 * give the same bits, greedy actions included (epsilons 0.3 and 0.1), which the engine's parity cases
 * against the f32 reference cannot decide (f16 weights: they run at epsilon 1). Lavapipe in CI; a
 * machine without WebGPU skips unless FOXHUNT_REQUIRE_WEBGPU=1.
 */
import { describe, expect, it } from 'vitest';
import { collectDqnSpec } from '../../src/kernels/collect_dqn.js';
import type { Outputs } from '../../src/parity/cases.js';
import { dqnBuildOutputs } from '../../src/parity/collect_cases.js';
import { useWebgpu } from '../support/webgpu.js';

/** The schedule switches off: TD_WITH_NEXT_ACTION 0 needs FOLDED_COMBINE 0 (collect_dqn.wgsl's const_asserts). */
const PLAIN_STEP = { TD_WITH_NEXT_ACTION: 0, FOLDED_COMBINE: 0, PING_PONG: 0 };

/** Each output's elements whose bits differ between two runs. */
function bitDiffs(a: Outputs, b: Outputs): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, x] of Object.entries(a)) {
    const y = b[name];
    const xa = new Uint32Array(x.buffer, x.byteOffset, x.byteLength / 4);
    const ya = new Uint32Array(y.buffer, y.byteOffset, y.byteLength / 4);
    let n = xa.length === ya.length ? 0 : Math.max(xa.length, ya.length);
    for (let i = 0; i < Math.min(xa.length, ya.length); i++) if (xa[i] !== ya[i]) n++;
    if (n) out[name] = n;
  }
  return out;
}

describe('engine 5 schedules on webgpu', () => {
  const webgpu = useWebgpu();

  it('gives the same bits with and without the merged, folded, two-buffer step (3 episodes, 2 a workgroup, 512 threads)', async (ctx) => {
    const backend = webgpu(ctx);
    const tile = { tileEpisodes: 2, threads: 512, engine: 5 };
    // The default build of this tile runs all three schedules (else the comparison shows nothing).
    const spec = collectDqnSpec({
      head: 'plain',
      variant: 'tiled',
      atoms: 51,
      iqnEmbed: 64,
      actTaus: 8,
      tauRows: 1,
      tj: 32,
      kt: 8,
      ...tile,
    });
    expect(spec.constants).toMatchObject({ TD_WITH_NEXT_ACTION: 1, FOLDED_COMBINE: 1, PING_PONG: 1 });
    const kept = await dqnBuildOutputs(backend, 3, { variant: 'tiled', tile });
    const plain = await dqnBuildOutputs(backend, 3, { variant: 'tiled', tile, constants: PLAIN_STEP });
    expect(Object.keys(kept)).toContain('2:actions');
    expect(bitDiffs(kept, plain)).toEqual({});
  });
});

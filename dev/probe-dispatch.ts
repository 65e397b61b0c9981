/**
 * Dev harness `node dist/dev/bench.js probe-dispatch`: what one more dependent dispatch costs on a
 * backend, the question behind splitting validate_dqn's bar over several workgroups (one dispatch a
 * layer a bar, about 3 a bar over 9,000 bars). Runs D dispatches of a tiny kernel in one submission,
 * each reading and writing the same storage buffer (so each waits for the one before, as layers
 * would), with G workgroups of 256; prints device time and wall time (with the encoding) a dispatch.
 */
import { describeChoice } from '../src/backend/index.js';
import type { KernelSpec } from '../src/backend/types.js';
import { chooseBackendFlag, intFlag, parseFlags } from '../src/cli/args.js';
import { type Command, UserError } from '../src/cli/main.js';
import { wgslSources } from '../src/kernels/sources.js';

const usage = `usage: node dist/dev/bench.js probe-dispatch [--backend webgpu|cuda] [--dispatches D] [--groups G,G...]

D (default 27000) dependent dispatches of a tiny kernel in one submission, G workgroups of 256
each (default 1,16,40); microseconds a dispatch, device time and wall time.`;

const KERNEL = 'probe_chain';
const WGSL = `@compute @workgroup_size(WG_X)
fn probe_chain(@builtin(global_invocation_id) g: vec3<u32>) {
  let i = g.x;
  if (i < arrayLength(&data)) {
    data[i] = data[i] * 0.5 + 1.0;
  }
}
`;

async function run(argv: string[]): Promise<number> {
  const { values } = parseFlags(
    argv,
    { backend: { type: 'string' }, dispatches: { type: 'string' }, groups: { type: 'string' } },
    usage,
  );
  const d = intFlag(values.dispatches as string | undefined, 'dispatches', 27000, 1);
  const groups = ((values.groups as string | undefined) ?? '1,16,40')
    .split(',')
    .map((g) => intFlag(g, 'groups', 1, 1));
  const choice = await chooseBackendFlag((values.backend as string | undefined) ?? 'webgpu');
  const { backend } = choice;
  for (const line of describeChoice(choice)) console.error(line);
  if (backend.kind !== 'webgpu')
    throw new UserError('probe-dispatch: the probe kernel is WGSL only (--backend webgpu)');
  (wgslSources as Record<string, string>)[KERNEL] = WGSL;
  try {
    for (const g of groups) {
      const spec: KernelSpec = {
        name: KERNEL,
        bindings: [{ name: 'data', type: 'f32', access: 'read_write' }],
        uniforms: [],
        workgroupSize: [256, 1, 1],
      };
      const buf = backend.createBuffer(4 * 256 * g, 'probe data');
      const chain = Array.from({ length: d }, () => ({
        kernel: spec,
        buffers: [buf],
        uniforms: {},
        groups: [g, 1, 1] as [number, number, number],
      }));
      await backend.time(chain.slice(0, 100), 1);
      const t0 = performance.now();
      const ms = await backend.time(chain, 1);
      const wall = performance.now() - t0;
      console.log(
        `${d} dispatches x ${g} workgroups: device ${ms.toFixed(1)} ms (${((1000 * ms) / d).toFixed(2)} us each), wall ${wall.toFixed(1)} ms (${((1000 * wall) / d).toFixed(2)} us each)`,
      );
      backend.destroyBuffer(buf);
    }
    return 0;
  } finally {
    backend.destroy();
  }
}

export const devProbeDispatchCommand: Command = {
  name: 'probe-dispatch',
  summary: 'time a chain of dependent dispatches (the per-dispatch cost)',
  usage,
  run,
};

/**
 * Dev harness `node dist/dev/bench.js probe-validate`: where validate_dqn's time a bar goes on a
 * backend. Times the shipped kernel over the validation split of the synthetic market (one launch,
 * device time, random plain-head weights, no early stop), then probes built from its WGSL source
 * at run time (a renamed copy in the source table, so the shipped kernel is untouched):
 *   no-weights  the dense layers return their bias: the bar's fixed cost (simulator step,
 *               barriers, the transposition once a launch)
 *   read-only   the same transposed access pattern, read from the read-only nets binding instead of
 *               the read_write output buffer (the values are wrong; only the timing counts)
 * and, for scale, PPO's validate_policy over the same split.
 */
import { type BackendRequest, chooseBackend, describeChoice } from '../src/backend/index.js';
import { BackendUnavailableError } from '../src/backend/types.js';
import { intFlag, parseFlags } from '../src/cli/args.js';
import { type Command, UserError } from '../src/cli/main.js';
import { loadConfig } from '../src/config.js';
import { DeviceValidator, type SharedValidateBuffers } from '../src/device/validate.js';
import { envParams } from '../src/env/params.js';
import { wgslSources } from '../src/kernels/sources.js';
import { initParams } from '../src/nets/forward.js';
import { duelingLayout, NetId, ppoActorLayout } from '../src/nets/layout.js';
import { prepareData } from '../src/train/run.js';

const usage = `usage: node dist/dev/bench.js probe-validate [--backend webgpu|cuda|cpu] [--bars N] [--repeats R]

Times validate_dqn (plain head) over the validation split, then WGSL probes (no-weights,
read-only) on webgpu, and validate_policy for scale; microseconds a bar. --bars: the synthetic
market's length (default data.synthBars, 60,000).`;

async function run(argv: string[]): Promise<number> {
  const { values } = parseFlags(
    argv,
    { backend: { type: 'string' }, bars: { type: 'string' }, repeats: { type: 'string' } },
    usage,
  );
  const repeats = intFlag(values.repeats as string | undefined, 'repeats', 3, 1);
  const bars = values.bars === undefined ? undefined : intFlag(values.bars as string, 'bars', 0, 1000);
  let choice: Awaited<ReturnType<typeof chooseBackend>>;
  try {
    choice = await chooseBackend(((values.backend as string | undefined) ?? 'webgpu') as BackendRequest);
  } catch (err) {
    if (err instanceof BackendUnavailableError) throw new UserError(err.message);
    throw err;
  }
  const { backend } = choice;
  for (const line of describeChoice(choice)) console.error(line);
  try {
    const cfg = loadConfig(undefined, bars === undefined ? {} : { 'data.synthBars': String(bars) });
    const data = await prepareData(cfg);
    const params = { ...envParams(cfg.env), collapseFraction: 0 };
    const layout = duelingLayout('plain', cfg.dqn.atoms, cfg.dqn.iqnEmbed);
    const actor = ppoActorLayout();
    const nets = new Float32Array(Math.max(layout.size, actor.size));
    nets.set(initParams(layout, NetId.QOnline, 1));
    const make = (a: Float32Array, label: string) => {
      const b = backend.createBuffer(a.byteLength, `probe ${label}`);
      backend.upload(b, a);
      return b;
    };
    const shared: SharedValidateBuffers = [
      make(data.market.features, 'features'),
      make(data.market.ohlc, 'ohlc'),
      make(data.market.spreadBps, 'spread'),
      make(params.entropyTable, 'entropy'),
      make(nets, 'nets'),
    ];
    const dqn = new DeviceValidator(backend, shared, params, data.splits.val, {
      kind: 'dqn',
      head: 'plain',
      netBase: 0,
      atoms: cfg.dqn.atoms,
      vMin: cfg.dqn.vMin,
      vMax: cfg.dqn.vMax,
      actTaus: cfg.dqn.iqnActTau,
      iqnEmbed: cfg.dqn.iqnEmbed,
    });
    const time = async (name: string, d: ReturnType<DeviceValidator['dispatch']>) => {
      await backend.time([d], 1);
      const ms = await backend.time([d], repeats);
      console.log(
        `${name.padEnd(28)} ${ms.toFixed(2).padStart(9)} ms  ${((1000 * ms) / dqn.steps).toFixed(2).padStart(7)} us a bar`,
      );
    };
    const base = dqn.dispatch();
    console.log(`${dqn.steps} bars, ${base.kernel.name} on ${backend.kind} (${backend.info.device})`);
    await time(base.kernel.name, base);
    if (backend.kind === 'webgpu' && base.kernel.name === 'validate_dqn') {
      const src = wgslSources.validate_dqn;
      const probes: [string, (s: string) => string][] = [
        [
          'no-weights',
          (s) => s.replaceAll('k + 16u <= n_in', 'k + 16u <= 0u').replaceAll('k < n_in', 'k < 0u'),
        ],
        ['read-only', (s) => s.replaceAll('out_f[col', 'nets[col - sb + u.netBase')],
      ];
      for (const [name, edit] of probes) {
        const kernel = `validate_dqn_${name.replace('-', '_')}`;
        const probe = edit(src).replace('fn validate_dqn(', `fn ${kernel}(`);
        if (probe === src) throw new Error(`probe ${name}: the source edit matched nothing`);
        (wgslSources as Record<string, string>)[kernel] = probe;
        await time(name, { ...base, kernel: { ...base.kernel, name: kernel } });
      }
    }
    const ppo = new DeviceValidator(backend, shared, params, data.splits.val, { kind: 'ppo' });
    await time(`${ppo.dispatch().kernel.name} (PPO actor)`, ppo.dispatch());
    dqn.destroy();
    ppo.destroy();
    for (const b of shared) backend.destroyBuffer(b);
    return 0;
  } finally {
    backend.destroy();
  }
}

export const devProbeValidateCommand: Command = {
  name: 'probe-validate',
  summary: "time validate_dqn and WGSL probes of its bar's cost",
  usage,
  run,
};

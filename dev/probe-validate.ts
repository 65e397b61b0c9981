/**
 * Dev harness `node dist/dev/bench.js probe-validate`: where validate_dqn's time a bar goes on a
 * backend. Times the shipped kernel over the validation split of the synthetic market (its
 * launches as training runs them, device time, random plain-head weights, no early stop), then the
 * probes of VALIDATE_PROBES built from its WGSL source at run time (a renamed copy in the source
 * table, so the shipped kernel is untouched), and, for scale, PPO's validate_policy over the same
 * split.
 */
import { describeChoice } from '../src/backend/index.js';
import type { Dispatch } from '../src/backend/types.js';
import { chooseBackendFlag, intFlag, parseFlags } from '../src/cli/args.js';
import { type Command, UserError } from '../src/cli/main.js';
import { loadConfig } from '../src/config.js';
import { DeviceValidator, uploadValidateBuffers } from '../src/device/validate.js';
import { envParams } from '../src/env/params.js';
import { wgslSources } from '../src/kernels/sources.js';
import { initParams } from '../src/nets/forward.js';
import { duelingLayout, NetId, ppoActorLayout } from '../src/nets/layout.js';
import { prepareData } from '../src/train/run.js';

/** `s` with every `from` replaced by `to`; an error where `from` does not occur. */
function must(s: string, from: string, to: string): string {
  if (!s.includes(from)) throw new Error(`probe edit: "${from}" is not in validate_dqn's source`);
  return s.replaceAll(from, to);
}

/**
 * The probes: edits of validate_dqn's WGSL source. Timing only: most compute wrong values.
 *   no-weights        the dense layers return their bias (the bar's fixed cost)
 *   read-only         the weights read from the read-only nets binding (same access pattern)
 *   loads-16          dense_range without its 64-load block: 16 loads in flight (the earlier kernel)
 *   one-part          the output layers one invocation an output (OUT_PARTS 1: the earlier kernel)
 *   no-output-layers  the streams' output layers return their bias (their share of a bar)
 */
export const VALIDATE_PROBES: Readonly<Record<string, (s: string) => string>> = {
  'no-weights': (s) =>
    must(
      must(must(s, 'k + 64u <= k1', 'k + 64u <= 0u'), 'k + 16u <= k1', 'k + 16u <= 0u'),
      'k < k1',
      'k < 0u',
    ),
  'read-only': (s) => must(s, 'out_f[col', 'nets[col - sb + u.netBase'),
  'loads-16': (s) => must(s, 'k + 64u <= k1', 'k + 64u <= 0u'),
  'one-part': (s) =>
    must(
      must(s, 'if (OUT_PARTS == 1u) {', 'if (true) {'),
      'let c = (n_in + OUT_PARTS - 1u) / OUT_PARTS;',
      'let c = n_in;',
    ),
  'no-output-layers': (s) => must(s, 'adv), k0, min(k0 + c, n_in), acc0)', 'adv), k0, k0, acc0)'),
};

const usage = `usage: node dist/dev/bench.js probe-validate [--backend webgpu|cuda|cpu] [--bars N] [--repeats R]
                                          [--probes P,P...]

Times validate_dqn (plain head) over the validation split, then WGSL probes of its source on
webgpu (default all: ${Object.keys(VALIDATE_PROBES).join(', ')}),
and validate_policy for scale; microseconds a bar. --bars: the synthetic market's length (default
data.synthBars, 60,000).`;

/** [probe, kernel name, WGSL source] of the named probes (default all), each a renamed copy of `src`. */
export function probeSources(src: string, names = Object.keys(VALIDATE_PROBES)): [string, string, string][] {
  return names.map((name) => {
    const edit = VALIDATE_PROBES[name];
    if (!edit)
      throw new UserError(`--probes: unknown probe "${name}" (${Object.keys(VALIDATE_PROBES).join(', ')})`);
    const kernel = `validate_dqn_${name.replace(/[^a-z0-9]+/g, '_')}`;
    return [name, kernel, must(edit(src), 'fn validate_dqn(', `fn ${kernel}(`)];
  });
}

async function run(argv: string[]): Promise<number> {
  const { values } = parseFlags(
    argv,
    {
      backend: { type: 'string' },
      bars: { type: 'string' },
      repeats: { type: 'string' },
      probes: { type: 'string' },
    },
    usage,
  );
  const only = (values.probes as string | undefined)?.split(',');
  const repeats = intFlag(values.repeats as string | undefined, 'repeats', 3, 1);
  const bars = values.bars === undefined ? undefined : intFlag(values.bars as string, 'bars', 0, 1000);
  const choice = await chooseBackendFlag((values.backend as string | undefined) ?? 'webgpu');
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
    const shared = uploadValidateBuffers(backend, data.market, params.entropyTable, nets);
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
    const time = async (name: string, d: Dispatch[]) => {
      await backend.time(d, 1);
      const ms = await backend.time(d, repeats);
      console.log(
        `${name.padEnd(28)} ${ms.toFixed(2).padStart(9)} ms  ${((1000 * ms) / dqn.steps).toFixed(2).padStart(7)} us a bar`,
      );
    };
    const base = dqn.dispatches();
    const name = base[0].kernel.name;
    console.log(`${dqn.steps} bars, ${name} on ${backend.kind} (${backend.info.device})`);
    await time(name, base);
    if (backend.kind === 'webgpu' && name === 'validate_dqn') {
      for (const [probe, kernel, source] of probeSources(wgslSources.validate_dqn, only)) {
        (wgslSources as Record<string, string>)[kernel] = source;
        await time(
          probe,
          base.map((d) => ({ ...d, kernel: { ...d.kernel, name: kernel } })),
        );
      }
    }
    const ppo = new DeviceValidator(backend, shared, params, data.splits.val, { kind: 'ppo' });
    await time(`${ppo.dispatches()[0].kernel.name} (PPO actor)`, ppo.dispatches());
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

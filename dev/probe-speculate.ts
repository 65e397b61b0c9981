/**
 * Dev harness `node dist/dev/bench.js probe-speculate --checkpoint DIR`: validate_dqn's speculative
 * rounds against its sequential launches on a backend, for a DQN-family checkpoint's online net
 * over its run's validation split (the synthetic market of its config, or --data). For each window
 * (0: the sequential launches) the wall time and rounds of a fresh validator's first backtest
 * (guesses from a zeroed trace) and of its next --repeats (guesses from its own last trace), the
 * steps each left to the sequential launches, and whether every run's trace is the sequential one
 * bit for bit.
 */
import { describeChoice } from '../src/backend/index.js';
import { chooseBackendFlag, intFlag, parseFlags } from '../src/cli/args.js';
import { type Command, UserError } from '../src/cli/main.js';
import { DeviceValidator, uploadValidateBuffers } from '../src/device/validate.js';
import { envParams } from '../src/env/params.js';
import { loadSourcedBars } from '../src/node/data.js';
import { NodeStorage } from '../src/node/storage.js';
import { loadDqnCheckpoint } from '../src/train/dqn_checkpoint.js';
import { prepareData } from '../src/train/run.js';

const usage = `usage: node dist/dev/bench.js probe-speculate --checkpoint DIR [--backend webgpu|cuda|cpu]
                                           [--data FILE] [--windows 0,32,128,...] [--repeats R]

Times validate_dqn over the validation split of DIR's run with the checkpoint's online net, in
speculative rounds of each window (0: the sequential launches; default 0,32,64,128,256,512).`;

async function run(argv: string[]): Promise<number> {
  const { values } = parseFlags(
    argv,
    {
      checkpoint: { type: 'string' },
      backend: { type: 'string' },
      data: { type: 'string' },
      windows: { type: 'string' },
      repeats: { type: 'string' },
    },
    usage,
  );
  if (!values.checkpoint) throw new UserError('--checkpoint DIR is required');
  const windows = String(values.windows ?? '0,32,64,128,256,512')
    .split(',')
    .map((w) => intFlag(w, 'windows', 0, 0));
  const repeats = intFlag(values.repeats as string | undefined, 'repeats', 3, 1);
  const { state, snapshot } = await loadDqnCheckpoint(new NodeStorage(), String(values.checkpoint));
  const cfg = state.config;
  const q = cfg.dqn;
  const head = state.algo === 'c51' ? 'c51' : state.algo === 'iqn' ? 'iqn' : 'plain';
  const data = await prepareData(
    cfg,
    values.data === undefined ? undefined : await loadSourcedBars(String(values.data), {}),
  );
  const choice = await chooseBackendFlag((values.backend as string | undefined) ?? 'webgpu');
  const { backend } = choice;
  for (const line of describeChoice(choice)) console.error(line);
  try {
    const params = envParams(cfg.env);
    const shared = uploadValidateBuffers(backend, data.market, params.entropyTable, snapshot.params.online);
    const policy = {
      kind: 'dqn',
      head,
      netBase: 0,
      atoms: q.atoms,
      vMin: q.vMin,
      vMax: q.vMax,
      actTaus: q.iqnActTau,
      iqnEmbed: q.iqnEmbed,
    } as const;
    let reference: { actions: Int32Array; values: Float64Array } | null = null;
    console.log(
      `${state.algo} epoch ${state.epoch}, ${data.splits.val.end - data.splits.val.start - 1} steps, ${backend.kind} (${backend.info.device})`,
    );
    console.log('window  first ms  rounds  seq steps  again ms  rounds  seq steps  same trace (every run)');
    const same = (r: { actions: Int32Array; trace: { equity: Float64Array } }) =>
      reference === null ||
      (r.actions.every((a, k) => a === reference?.actions[k]) &&
        r.trace.equity.every((e, k) => e === reference?.values[k]));
    for (const window of windows) {
      // A fresh validator: the first run guesses from a zeroed trace (an epoch's validation guesses
      // the previous epoch's), the later ones from their own last trace.
      const v = new DeviceValidator(backend, shared, params, data.splits.val, policy, { window });
      try {
        let t0 = performance.now();
        const first = await v.run(252);
        const firstMs = performance.now() - t0;
        const firstRun = { ...v.lastRun };
        let ok = same(first);
        t0 = performance.now();
        for (let k = 0; k < repeats; k++) ok = same(await v.run(252)) && ok;
        const ms = (performance.now() - t0) / repeats;
        reference ??= { actions: first.actions, values: first.trace.equity };
        console.log(
          `${String(window).padStart(6)} ${firstMs.toFixed(1).padStart(9)} ${String(firstRun.rounds).padStart(7)} ${String(firstRun.sequentialSteps).padStart(10)} ${ms.toFixed(1).padStart(9)} ${String(v.lastRun.rounds).padStart(7)} ${String(v.lastRun.sequentialSteps).padStart(10)}  ${ok}`,
        );
      } finally {
        v.destroy();
      }
    }
    for (const b of shared) backend.destroyBuffer(b);
    return 0;
  } finally {
    backend.destroy();
  }
}

export const devProbeSpeculateCommand: Command = {
  name: 'probe-speculate',
  summary: "time validate_dqn's speculative rounds against its sequential launches on a checkpoint",
  usage,
  run,
};

/**
 * Dev harness `node dist/dev/bench.js train` (the learner's plan knobs that `foxhunt bench train`
 * does not take): the PPO training-epoch benchmark (docs/LEARNER.md): per-phase times of
 * collect, update and validate on one backend, for the default rollout (N = 128, L = 500: 10
 * epochs x 125 minibatches of 512 = 1,250 update steps) and a large-N one; training samples/s,
 * the update's FLOPs and achieved FLOP/s. The measuring lives in src/train/ppo_bench.ts.
 */
import { describeChoice } from '../src/backend/index.js';
import { chooseBackendFlag, intFlag, parseFlags } from '../src/cli/args.js';
import { type Command, UserError } from '../src/cli/main.js';
import { loadConfig, type Precision, resolvePrecision } from '../src/config.js';
import { CHAIN_ROWS, CHAIN_ROWS_CHOICES, CHAIN_ROWS_STAGED } from '../src/kernels/mlp_chain_forward.js';
import { type BenchTrainResult, benchPpoTrain, stepKernelLines } from '../src/train/ppo_bench.js';
import { prepareData } from '../src/train/run.js';

const usage = `usage: node dist/dev/bench.js train --algo ppo [--backend auto|cuda|webgpu|cpu] [--episodes N] [--steps L]
                           [--large-episodes N2] [--repeats R] [--seed S] [--dw-split on|off|most|W]
                           [--gather-rows G] [--pdl on|off|early] [--chain on|off|both]
                           [--chain-rows R] [--delta-chain on|off|both] [--fuse-loss on|off|both]
                           [--precision auto|exact|tf32|both] [--json]

Times a PPO epoch per phase on the built-in synthetic market: collect (collect_ppo on the device),
update (the device learner: every minibatch step of the update in one submission, a CUDA graph
on CUDA) and validate (greedy backtest on the validation split). Two settings: N x L (default
128 x 500 = 64,000 samples) and N2 x L (default N2 = 1024). One warm-up epoch, then R measured
epochs (default 3). Reports wall and device milliseconds, update FLOPs and FLOP/s, samples/s.
On --backend cpu the defaults shrink to N = 8, L = 64 and no large setting (the CPU runs the
kernels' TS references); pass --episodes, --steps or --large-episodes to override.

  --algo ppo             the learner to measure (ppo; the DQN learner is not on the device yet)
  --backend KIND         auto (default), cuda, webgpu or cpu
  --episodes N           episodes of the first setting
  --steps L              steps per episode (both settings)
  --large-episodes N2    episodes of the large setting; 0 skips it
  --repeats R            measured epochs per setting
  --seed S               run seed (network init, synthetic market, shuffles)
  --dw-split on|off|most|W
                         CUDA, WebGPU: split the backward launches' dW tiles over batch slices (and
                         on WebGPU the hidden layers' forward K) (on, the default: within 2
                         workgroups per SM on CUDA; on WebGPU the fewest waves x rounds within 256
                         workgroups), the most slices within the budget (most: WebGPU's first
                         plan), within W workgroups per launch, or none (off: the earlier kernels)
  --gather-rows G        CUDA, WebGPU: ppo_gather samples per workgroup, 1-64 (default 4: 128
                         workgroups per 512-sample minibatch; 64 is the earlier 8-workgroup gather)
  --pdl on|off|early     CUDA on sm_90+: launch the update's kernels with Programmatic Dependent
                         Launch, each waiting in-kernel for the previous one (on, the default), also
                         triggering the next one's launch once all its blocks are resident (early),
                         or plainly (off: the earlier launches); same results
  --chain on|off|both    CUDA, WebGPU, CPU: run the critic's layers 3..5 (value_layer_3 ->
                         value_layer_4 -> value_output) as one mlp_chain_forward launch (on, the
                         default: 13 launches per step), as three mlp_forward launches (off: 15), or
                         both, each setting measured with the chain on then off
  --chain-rows R         minibatch rows per mlp_chain_forward workgroup: 2, 4, 8 or 16 (default:
                         ${CHAIN_ROWS_STAGED} on CUDA's staged build, ${CHAIN_ROWS} elsewhere)
  --delta-chain on|off|both
                         CUDA, WebGPU, CPU: the backward's input deltas of the actor's top two and
                         the critic's top three layers in one mlp_delta_chain launch, then one
                         mlp_backward launch for every layer whose deltas are known (on: 11 launches
                         per step, the default on CUDA), or one mlp_backward launch per stage (off:
                         13, the default elsewhere), or both, measured in that order
  --fuse-loss on|off|both
                         with the delta chain: compute the PPO loss head inside the mlp_delta_chain
                         launch (on, the default: 10 launches per step, no ppo_loss launch), or in a
                         ppo_loss launch of its own (off: 11), or both, measured in that order
                         (without the delta chain the ppo_loss launch stays either way)
  --precision P          auto (default: as train.precision auto, tf32 on CUDA, exact elsewhere),
                         exact (f32, the parity mode), tf32 (CUDA: TF32 tensor cores in collect_ppo
                         and the learner's matmuls), or both: each setting measured exact then tf32
                         in one invocation, a row each
  --json                 one JSON object on stdout instead of the table`;

const BACKENDS = ['auto', 'cuda', 'webgpu', 'cpu'];

/** Update-phase targets for a 64,000-sample rollout on one H200 (docs/BENCHMARKS.md). */
const TARGET_S: Record<string, number> = { cuda: 0.15, webgpu: 0.4 };

function table(results: BenchTrainResult[]): string[] {
  const rows = [
    [
      'N x L',
      'precision',
      'chain',
      'delta chain',
      'fused loss',
      'samples',
      'steps',
      'launches',
      'collect ms',
      'update ms',
      'update dev ms',
      'validate ms',
      'validate dev ms',
      'update GFLOP',
      'TFLOP/s',
      'train samples/s',
      'epoch samples/s',
    ],
    ...results.map((r) => [
      `${r.episodes} x ${r.steps}`,
      r.precision,
      r.chain ? `on (${r.chainRows} rows)` : 'off',
      r.deltaChain ? 'on' : 'off',
      r.fuseLoss ? 'on' : 'off',
      String(r.samples),
      String(r.minibatchSteps),
      String(r.minibatchSteps * r.launchesPerStep),
      r.collectNote ? 'n/a' : r.times.collectMs.toFixed(1),
      r.times.updateMs.toFixed(1),
      r.times.updateDeviceMs.toFixed(1),
      r.times.validateMs.toFixed(1),
      r.times.validateDeviceMs.toFixed(1),
      (r.updateFlops / 1e9).toFixed(1),
      (r.updateFlopsPerSec / 1e12).toFixed(2),
      Math.round(r.trainSamplesPerSec).toLocaleString('en-US'),
      Math.round(r.epochSamplesPerSec).toLocaleString('en-US'),
    ]),
  ];
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  return rows.map((r) =>
    r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  '),
  );
}

async function run(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags(
    args,
    {
      algo: { type: 'string' },
      backend: { type: 'string' },
      episodes: { type: 'string' },
      steps: { type: 'string' },
      'large-episodes': { type: 'string' },
      repeats: { type: 'string' },
      seed: { type: 'string' },
      'dw-split': { type: 'string' },
      'gather-rows': { type: 'string' },
      pdl: { type: 'string' },
      chain: { type: 'string' },
      'chain-rows': { type: 'string' },
      'delta-chain': { type: 'string' },
      'fuse-loss': { type: 'string' },
      precision: { type: 'string' },
      json: { type: 'boolean' },
    },
    usage,
  );
  if (positionals.length > 0) throw new UserError(`unexpected argument "${positionals[0]}"\n${usage}`);
  const algo = (values.algo as string | undefined) ?? 'ppo';
  if (algo !== 'ppo')
    throw new UserError(`--algo ${algo}: bench train measures the PPO learner only (--algo ppo)`);
  const request = (values.backend as string | undefined) ?? 'auto';
  if (!BACKENDS.includes(request)) {
    throw new UserError(`--backend must be one of ${BACKENDS.join(', ')}, got "${request}"`);
  }
  const dwSplitFlag = (values['dw-split'] as string | undefined) ?? 'on';
  if (!['on', 'off', 'most'].includes(dwSplitFlag) && !/^[1-9]\d{0,5}$/.test(dwSplitFlag)) {
    throw new UserError(
      `--dw-split must be on, off, most or a workgroup budget (1-999999), got "${dwSplitFlag}"`,
    );
  }
  const dwSplit =
    dwSplitFlag === 'on' || dwSplitFlag === 'off' || dwSplitFlag === 'most'
      ? { on: true, off: false, most: 'most' as const }[dwSplitFlag]
      : Number(dwSplitFlag);
  const pdlFlag = (values.pdl as string | undefined) ?? 'on';
  if (!['on', 'off', 'early'].includes(pdlFlag)) {
    throw new UserError(`--pdl must be on, off or early, got "${pdlFlag}"`);
  }
  const chainFlag = (values.chain as string | undefined) ?? 'on';
  if (!['on', 'off', 'both'].includes(chainFlag)) {
    throw new UserError(`--chain must be on, off or both, got "${chainFlag}"`);
  }
  const chainRowsGiven = values['chain-rows'] as string | undefined;
  const chainRowsFlag = chainRowsGiven ?? 'default';
  if (chainRowsGiven !== undefined && !CHAIN_ROWS_CHOICES.map(String).includes(chainRowsGiven)) {
    throw new UserError(
      `--chain-rows must be one of ${CHAIN_ROWS_CHOICES.join(', ')}, got "${chainRowsFlag}"`,
    );
  }
  // true: the plan's default rows (CHAIN_ROWS_STAGED on CUDA, CHAIN_ROWS elsewhere).
  const chainRows: number | true = chainRowsGiven === undefined ? true : Number(chainRowsGiven);
  const chains: (number | boolean)[] =
    chainFlag === 'both' ? [chainRows, false] : [chainFlag === 'on' ? chainRows : false];
  const deltaFlag = (values['delta-chain'] as string | undefined) ?? 'default';
  if (!['on', 'off', 'both', 'default'].includes(deltaFlag)) {
    throw new UserError(`--delta-chain must be on, off or both, got "${deltaFlag}"`);
  }
  const deltas: (boolean | undefined)[] =
    deltaFlag === 'both' ? [true, false] : [deltaFlag === 'default' ? undefined : deltaFlag === 'on'];
  const fuseFlag = (values['fuse-loss'] as string | undefined) ?? 'on';
  if (!['on', 'off', 'both'].includes(fuseFlag)) {
    throw new UserError(`--fuse-loss must be on, off or both, got "${fuseFlag}"`);
  }
  const fuses: boolean[] = fuseFlag === 'both' ? [true, false] : [fuseFlag === 'on'];
  const gatherRowsFlag = values['gather-rows'] as string | undefined;
  const gatherRows = gatherRowsFlag === undefined ? undefined : Number(gatherRowsFlag);
  if (gatherRows !== undefined && (!/^\d+$/.test(gatherRowsFlag!) || gatherRows < 1 || gatherRows > 64)) {
    throw new UserError(`--gather-rows must be an integer from 1 to 64, got "${gatherRowsFlag}"`);
  }
  const precisionFlag = (values.precision as string | undefined) ?? 'auto';
  if (!['auto', 'exact', 'tf32', 'both'].includes(precisionFlag)) {
    throw new UserError(`--precision must be auto, exact, tf32 or both, got "${precisionFlag}"`);
  }
  const needsCuda = precisionFlag === 'tf32' || precisionFlag === 'both';
  if (needsCuda && request !== 'cuda' && request !== 'auto') {
    throw new UserError(
      `--precision ${precisionFlag}: tf32 runs on CUDA tensor cores only; use --precision exact, or --backend cuda`,
    );
  }
  const choice = await chooseBackendFlag(request);
  const { backend } = choice;
  const json = values.json === true;
  const log = (line: string) => {
    if (!json) console.error(line);
  };
  for (const line of describeChoice(choice)) log(line);
  try {
    if (needsCuda && backend.kind !== 'cuda') {
      throw new UserError(
        `--precision ${precisionFlag}: tf32 runs on CUDA tensor cores only, and the backend is ${backend.kind}; use --precision exact, or --backend cuda`,
      );
    }
    // auto: what train.precision auto runs on this backend (tf32 on CUDA, exact elsewhere).
    const precisions: Precision[] =
      precisionFlag === 'both'
        ? ['exact', 'tf32']
        : [resolvePrecision(precisionFlag as Precision | 'auto', backend.kind)];
    const cpu = backend.kind === 'cpu';
    const episodes = intFlag(values.episodes as string | undefined, 'episodes', cpu ? 8 : 128, 1);
    const steps = intFlag(values.steps as string | undefined, 'steps', cpu ? 64 : 500, 1);
    const large = intFlag(
      values['large-episodes'] as string | undefined,
      'large-episodes',
      cpu ? 0 : 1024,
      0,
    );
    const repeats = intFlag(values.repeats as string | undefined, 'repeats', 3, 1);
    const seed = intFlag(values.seed as string | undefined, 'seed', 1, 0);
    // loadConfig checks the rollout fills a minibatch (config: ppo.minibatch ...), before any work.
    const settings = (large > 0 && large !== episodes ? [episodes, large] : [episodes]).map((n) =>
      loadConfig(undefined, {
        'train.seed': String(seed),
        'rollout.episodes': String(n),
        'rollout.steps': String(steps),
      }),
    );
    const data = await prepareData(settings[0]);
    const results: BenchTrainResult[] = [];
    for (const [cfg, precision] of settings.flatMap((c) => precisions.map((p) => [c, p] as const))) {
      const n = cfg.rollout.episodes;
      log(
        `setting ${n} x ${steps}, ${precision}: ${cfg.ppo.updateEpochs} epochs x ${Math.floor((n * steps) / cfg.ppo.minibatch)} minibatches of ${cfg.ppo.minibatch}`,
      );
      const grid = chains.flatMap((c) => deltas.flatMap((d) => fuses.map((f) => [c, d, f] as const)));
      for (const [chain, deltaChain, fuseLoss] of grid) {
        if (chains.length > 1)
          log(`  --chain ${chain ? `on (rows per workgroup: ${chainRowsFlag})` : 'off'}`);
        if (deltas.length > 1) log(`  --delta-chain ${deltaChain ? 'on' : 'off'}`);
        if (fuses.length > 1) log(`  --fuse-loss ${fuseLoss ? 'on' : 'off'}`);
        const r = await benchPpoTrain({
          deltaChain,
          fuseLoss,
          precision,
          backend,
          cfg,
          market: data.market,
          splits: data.splits,
          barsPerYear: data.barsPerYear,
          repeats,
          dwSplit,
          gatherRows,
          pdl: pdlFlag === 'early' ? ('early' as const) : pdlFlag === 'on',
          chain,
          kernelRepeats: cpu ? 1 : 20,
          onProgress: (line) => log(`  ${line}`),
        });
        if (r.collectNote) log(`  ${r.collectNote}`);
        results.push(r);
      }
    }
    const target = TARGET_S[backend.kind];
    if (json) {
      console.log(
        JSON.stringify({ backend: backend.info, updateTargetSeconds64k: target ?? null, results }, null, 2),
      );
      return 0;
    }
    console.log(
      `bench train ppo on ${backend.kind}: ${backend.info.device} (${backend.info.driver}), --pdl ${pdlFlag}, --precision ${precisionFlag}, --chain ${chainFlag}${chainFlag === 'off' ? '' : ` (rows per workgroup: ${chainRowsFlag})`}, --delta-chain ${deltaFlag}, --fuse-loss ${fuseFlag}`,
    );
    for (const line of table(results)) console.log(`  ${line}`);
    for (const r of results) {
      const stepMs = r.stepKernels.reduce((t, k) => t + k.ms, 0);
      console.log(
        `  one minibatch step of ${r.episodes} x ${r.steps} (${r.precision}), chain ${r.chain ? 'on' : 'off'}, delta chain ${r.deltaChain ? `on${r.fuseLoss ? ' with the loss head' : ''}` : 'off'}, each launch timed alone (sum ${(stepMs * 1000).toFixed(1)} us):`,
      );
      for (const line of stepKernelLines(r.stepKernels)) console.log(`    ${line}`);
    }
    for (const at64k of results.filter((r) => r.samples === 64_000)) {
      if (target === undefined) break;
      const s = at64k.times.updateMs / 1000;
      console.log(
        `  update of 64,000 samples (${at64k.precision}${chains.length > 1 ? `, chain ${at64k.chain ? 'on' : 'off'}` : ''}${deltas.length > 1 ? `, delta chain ${at64k.deltaChain ? 'on' : 'off'}` : ''}${fuses.length > 1 ? `, fused loss ${at64k.fuseLoss ? 'on' : 'off'}` : ''}): ${s.toFixed(3)} s (target <= ${target} s on one H200: ${s <= target ? 'met' : 'not met'})`,
      );
    }
    return 0;
  } finally {
    backend.destroy();
  }
}

export const devBenchTrainCommand: Command = {
  name: 'train',
  summary: 'time a PPO epoch per phase (collect, update, validate) on a backend; FLOP/s, samples/s',
  usage,
  run,
};

/**
 * `foxhunt bench train`: a PPO training epoch per phase (collect, update, validate) as
 * `foxhunt train` runs it (the learner's own launch plan, precision as train.precision), for one
 * or more N, with the update's achieved FLOP/s against the device's datasheet peaks
 * (src/backend/peaks.ts). The measuring lives in src/train/ppo_bench.ts; the learner's plan
 * knobs are in the dev harness: `node dist/dev/bench.js train --help`. `--algo dqn|c51|iqn` times
 * the DQN-family epoch instead (src/train/dqn_bench.ts).
 */
import { capsOf } from '../../backend/caps.js';
import { describeChoice } from '../../backend/index.js';
import { type DevicePeaks, devicePeaks, tensorPeak } from '../../backend/peaks.js';
import type { Backend } from '../../backend/types.js';
import { type Config, DECIMAL, resolvePrecision } from '../../config.js';
import { REPLAY_F } from '../../learn/replay.js';
import { type BenchDqnResult, benchDqnTrain, dqnTable } from '../../train/dqn_bench.js';
import { type BenchTrainResult, benchPpoTrain, stepKernelLines } from '../../train/ppo_bench.js';
import { prepareData } from '../../train/run.js';
import { chooseBackendFlag, intFlag, parseFlags } from '../args.js';
import { type Command, UserError } from '../main.js';
import { peaksLine } from './bench-collect.js';
import { configOf, readConfigFile, splitConfigFlags } from './train.js';

const usage = `usage: foxhunt bench train [--algo ppo|dqn|c51|iqn] [--backend auto|cuda|webgpu|cpu] [--episodes N[,N...]]
                           [--steps L] [--train-steps K] [--precision auto|exact|tf32] [--repeats R]
                           [--config FILE] [--section.field value ...] [--json]

Times a PPO epoch per phase on the built-in synthetic market, as \`foxhunt train\` runs it: collect
(collect_ppo on the device), update (every minibatch step of the update in one submission, a CUDA
graph on CUDA) and validate (the greedy backtest on the validation split, validate_policy on the
device; also the device time of its launches, and the host backtest it replaces, timed once). One warm-up
epoch, then R measured ones, for each N. Reports milliseconds per phase, the update's FLOPs, its
achieved FLOP/s as a share of the device's f32 FMA peak and, for tf32, of its TF32 tensor-core peak
(vendor datasheet figures, named in the output), and training samples/s.

  --algo A          ppo (default), or dqn / c51 / iqn: the DQN-family epoch per phase (collect,
                    then dqn.stepsPerEpoch train steps at dqn.batch, replay and PER on the device
                    in one submission, validate: validate_dqn on the device), the train-step
                    time, and on a device each launch of one train step timed alone; default
                    N = 128 (cpu: 8), the algorithm's train steps (c51 600, dqn and iqn
                    300; cpu: 10) at batch 512, replay capacity 1M
                    (fewer where the device's largest storage buffer is smaller), the
                    learner's matmuls at --precision
  --backend KIND    auto (default), cuda, webgpu or cpu
  --episodes LIST   comma-separated N (default 128,1024: 64,000 and 512,000 samples at L = 500;
                    cpu: 8)
  --steps L         steps per episode (default 500; cpu: 64)
  --train-steps K   the DQN family's train steps an epoch (default: what foxhunt train runs,
                    dqn.stepsPerEpoch of the algorithm; the DQN-epoch targets of
                    docs/BENCHMARKS.md take 300)
  --precision P     auto (tf32 on cuda, exact elsewhere), exact (f32, the parity mode) or tf32
                    (cuda tensor cores); default: the configuration's train.precision (auto)
  --repeats R       measured epochs per N (default 3)
  --config FILE     time this training configuration (as foxhunt train --config FILE takes it): its
                    algorithm, sizes, learner settings and market; N, L and K default to its
                    rollout.episodes, rollout.steps and dqn.stepsPerEpoch
  --section.field V any config field, as foxhunt train takes it (e.g. --dqn.iqnTau 32); like
                    --config, makes N, L and K default to the configuration's
  --json            one JSON object on stdout instead of the table

Developers: node dist/dev/bench.js train --help takes the learner's launch-plan knobs.`;

const BACKENDS = ['auto', 'cuda', 'webgpu', 'cpu'];

const share = (x: number, peak: number | undefined) =>
  peak === undefined ? 'n/a' : `${((100 * x) / peak).toFixed(1)}%`;

export function trainTable(results: BenchTrainResult[], peaks: DevicePeaks | undefined): string[] {
  const rows = [
    [
      'N x L',
      'precision',
      'samples',
      'collect ms',
      'update ms',
      'validate ms',
      'validate device ms',
      'host validate ms',
      'update GFLOP',
      'FLOP/s',
      '% f32 peak',
      '% tensor peak',
      'train samples/s',
    ],
    ...results.map((r) => [
      `${r.episodes} x ${r.steps}`,
      r.precision,
      String(r.samples),
      r.collectNote ? 'n/a' : r.times.collectMs.toFixed(1),
      r.times.updateMs.toFixed(1),
      r.times.validateMs.toFixed(1),
      r.times.validateDeviceMs.toFixed(1),
      r.times.validateHostMs.toFixed(1),
      (r.updateFlops / 1e9).toFixed(1),
      `${(r.updateFlopsPerSec / 1e12).toFixed(2)} T`,
      share(r.updateFlopsPerSec, peaks?.f32),
      r.precision === 'exact' ? '-' : share(r.updateFlopsPerSec, tensorPeak(peaks, r.precision)),
      Math.round(r.trainSamplesPerSec).toLocaleString('en-US'),
    ]),
  ];
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  return rows.map((r) =>
    r.map((cell, c) => (c <= 1 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  '),
  );
}

async function run(args: string[]): Promise<number> {
  const { named, config: configFlags } = splitConfigFlags(args);
  const { values, positionals } = parseFlags(
    named,
    {
      config: { type: 'string' },
      algo: { type: 'string' },
      backend: { type: 'string' },
      episodes: { type: 'string' },
      steps: { type: 'string' },
      'train-steps': { type: 'string' },
      precision: { type: 'string' },
      repeats: { type: 'string' },
      json: { type: 'boolean' },
    },
    usage,
  );
  if (positionals.length > 0) throw new UserError(`unexpected argument "${positionals[0]}"\n${usage}`);
  // The configuration timed: the defaults, or --config FILE and the --section.field flags over them.
  const file = await readConfigFile(values.config as string | undefined);
  const given = file !== null || Object.keys(configFlags).length > 0;
  if (values.algo !== undefined) configFlags['train.algo'] = String(values.algo);
  const algo =
    given || values.algo === undefined ? configOf(file, configFlags).train.algo : String(values.algo);
  const cfgWith = (bench: Record<string, string>) => configOf(file, { ...configFlags, ...bench });
  if (!['ppo', 'dqn', 'c51', 'iqn'].includes(algo))
    throw new UserError(`--algo ${algo}: bench train measures ppo, dqn, c51 or iqn`);
  if (algo === 'ppo' && values['train-steps'] !== undefined)
    throw new UserError('--train-steps: the DQN family only (--algo dqn, c51 or iqn)');
  const request = (values.backend as string | undefined) ?? 'auto';
  if (!BACKENDS.includes(request)) {
    throw new UserError(`--backend must be one of ${BACKENDS.join(', ')}, got "${request}"`);
  }
  const precisionFlag =
    (values.precision as string | undefined) ?? (given ? cfgWith({}).train.precision : 'auto');
  if (!['auto', 'exact', 'tf32'].includes(precisionFlag)) {
    throw new UserError(`--precision must be auto, exact or tf32, got "${precisionFlag}"`);
  }
  if (precisionFlag === 'tf32' && request !== 'cuda' && request !== 'auto') {
    throw new UserError(
      '--precision tf32: tf32 runs on CUDA tensor cores only; use --precision exact, or --backend cuda',
    );
  }
  const episodesFlag = values.episodes as string | undefined;
  const episodesList = episodesFlag?.split(',').map((s) => (DECIMAL.test(s.trim()) ? Number(s) : Number.NaN));
  if (episodesList?.some((n) => !Number.isInteger(n) || n < 1))
    throw new UserError(`--episodes must be a comma-separated list of integers >= 1, got "${episodesFlag}"`);
  const choice = await chooseBackendFlag(request);
  const { backend } = choice;
  const json = values.json === true;
  const log = (line: string) => {
    if (!json) console.error(line);
  };
  for (const line of describeChoice(choice)) log(line);
  if (algo !== 'ppo') {
    try {
      return await dqnBench(
        algo,
        backend,
        { episodesList, given, cfgWith, precisionFlag },
        values,
        json,
        log,
      );
    } finally {
      backend.destroy();
    }
  }
  try {
    const precision = resolvePrecision(precisionFlag as 'auto' | 'exact' | 'tf32', backend.kind);
    const caps = capsOf(backend);
    if (precision === 'tf32' && !caps.features.tf32TensorCores) {
      throw new UserError(
        `--precision tf32: tf32 runs on CUDA tensor cores only, and the backend is ${backend.kind}; use --precision exact, or --backend cuda`,
      );
    }
    const cpu = caps.deviceClass === 'cpu';
    const base = cfgWith({});
    const episodes = [
      ...new Set(episodesList ?? (given ? [base.rollout.episodes] : cpu ? [8] : [128, 1024])),
    ];
    const steps = intFlag(
      values.steps as string | undefined,
      'steps',
      given ? base.rollout.steps : cpu ? 64 : 500,
      1,
    );
    const repeats = intFlag(values.repeats as string | undefined, 'repeats', 3, 1);
    // loadConfig checks the rollout fills a minibatch (config: ppo.minibatch ...), before any work.
    const settings = episodes.map((n) =>
      cfgWith({ 'rollout.episodes': String(n), 'rollout.steps': String(steps) }),
    );
    const data = await prepareData(settings[0]);
    const results: BenchTrainResult[] = [];
    for (const cfg of settings) {
      const n = cfg.rollout.episodes;
      log(
        `${n} x ${steps}, ${precision}: ${cfg.ppo.updateEpochs} epochs x ${Math.floor((n * steps) / cfg.ppo.minibatch)} minibatches of ${cfg.ppo.minibatch}`,
      );
      const r = await benchPpoTrain({
        precision,
        backend,
        cfg,
        market: data.market,
        splits: data.splits,
        barsPerYear: data.barsPerYear,
        repeats,
        kernelRepeats: cpu ? 1 : 20,
        onProgress: (line) => log(`  ${line}`),
      });
      if (r.collectNote) log(`  ${r.collectNote}`);
      results.push(r);
    }
    const peaks = devicePeaks(backend);
    if (json) {
      console.log(
        JSON.stringify(
          {
            command: 'bench train',
            algo,
            precision,
            backend: backend.info,
            peaks: peaks ?? null,
            config: settings[0],
            results,
          },
          null,
          2,
        ),
      );
      return 0;
    }
    console.log(
      `train ppo, ${precision}, on ${backend.kind} (${backend.info.device}, ${backend.info.driver})`,
    );
    for (const line of trainTable(results, peaks)) console.log(`  ${line}`);
    console.log(peaksLine(peaks, backend.info.device));
    return 0;
  } finally {
    backend.destroy();
  }
}

async function dqnBench(
  algo: string,
  backend: Backend,
  timed: {
    episodesList: number[] | undefined;
    /** A --config file or --section.field flags: N, L and K default to the configuration's. */
    given: boolean;
    cfgWith: (bench: Record<string, string>) => Config;
    precisionFlag: string;
  },
  values: Record<string, unknown>,
  json: boolean,
  log: (line: string) => void,
): Promise<number> {
  const cpu = capsOf(backend).deviceClass === 'cpu';
  const { episodesList, given, cfgWith, precisionFlag } = timed;
  const base = cfgWith({});
  const episodes = [...new Set(episodesList ?? [given ? base.rollout.episodes : cpu ? 8 : 128])];
  const steps = intFlag(
    values.steps as string | undefined,
    'steps',
    given ? base.rollout.steps : cpu ? 64 : 500,
    1,
  );
  const repeats = intFlag(values.repeats as string | undefined, 'repeats', 3, 1);
  const trainSteps = values['train-steps'] as string | undefined;
  if (trainSteps !== undefined) intFlag(trainSteps, 'train-steps', 0, 1);
  // The configuration's replay ring (default 1M rows) unless the device's largest storage buffer
  // holds fewer rows (lavapipe: 128 MiB, about 300,000).
  const lim = backend.info.limits;
  const largest = Math.min(
    Number(lim.maxStorageBufferBindingSize ?? Number.POSITIVE_INFINITY),
    Number(lim.maxBufferSize ?? Number.POSITIVE_INFINITY),
  );
  const rows = Math.floor(largest / (4 * REPLAY_F));
  const settings = episodes.map((n) =>
    cfgWith({
      'train.algo': algo,
      'rollout.episodes': String(n),
      'rollout.steps': String(steps),
      'train.precision': precisionFlag,
      ...(trainSteps !== undefined
        ? { 'dqn.stepsPerEpoch': trainSteps }
        : cpu && !given
          ? { 'dqn.stepsPerEpoch': '10' }
          : {}),
      ...(rows < base.dqn.replayCapacity ? { 'dqn.replayCapacity': String(rows) } : {}),
    }),
  );
  const data = await prepareData(settings[0]);
  const results: BenchDqnResult[] = [];
  for (const cfg of settings) {
    log(
      `${cfg.rollout.episodes} x ${steps}: ${cfg.dqn.stepsPerEpoch} train steps at batch ${cfg.dqn.batch}${algo === 'iqn' ? ` (${cfg.dqn.iqnTau} x ${cfg.dqn.iqnTau} taus)` : ''}, replay capacity ${cfg.dqn.replayCapacity}, learner ${resolvePrecision(cfg.train.precision, backend.kind)}`,
    );
    try {
      results.push(
        await benchDqnTrain({
          backend,
          cfg,
          market: data.market,
          splits: data.splits,
          barsPerYear: data.barsPerYear,
          repeats,
          onProgress: (line) => log(`  ${line}`),
        }),
      );
    } catch (err) {
      if (err instanceof Error && /^(bench train|device dqn):/.test(err.message))
        throw new UserError(err.message);
      throw err;
    }
  }
  const precision = resolvePrecision(settings[0].train.precision, backend.kind);
  if (json) {
    console.log(
      JSON.stringify(
        { command: 'bench train', algo, precision, backend: backend.info, config: settings[0], results },
        null,
        2,
      ),
    );
    return 0;
  }
  console.log(
    `train ${algo}, learner ${precision}, on ${backend.kind} (${backend.info.device}, ${backend.info.driver})`,
  );
  for (const line of dqnTable(results)) console.log(`  ${line}`);
  if (results.some((r) => r.overlapped))
    console.log(
      "  epoch ms: each epoch's validation ran beside the next epoch's collection and train phase, as train runs it (epoch < collect + train + validate)",
    );
  for (const r of results) {
    if (r.stepKernels.length === 0) continue;
    const sum = r.stepKernels.reduce((t, k) => t + k.ms, 0);
    console.log(
      `  one train step of ${r.episodes} x ${r.steps}: ${((r.stepDeviceMs ?? 0) * 1000).toFixed(1)} us on the device as one submission (${r.trainSteps} of them: ${(r.trainDeviceMs ?? 0).toFixed(1)} ms); each launch timed alone (sum ${(sum * 1000).toFixed(1)} us):`,
    );
    for (const line of stepKernelLines(r.stepKernels)) console.log(`    ${line}`);
  }
  return 0;
}

export const benchTrainCommand: Command = {
  name: 'bench train',
  summary: 'time a PPO (or dqn / c51 / iqn) epoch per phase as train runs it',
  usage,
  run,
};

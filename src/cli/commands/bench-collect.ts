/**
 * `foxhunt bench collect`: env-steps/s of experience collection as `foxhunt train` runs it (the
 * collector's own choice of kernel, tile and engine; precision as train.precision), for a sweep of
 * N, with the achieved FLOP/s against the device's datasheet peaks (src/backend/peaks.ts). One
 * table, or JSON. The tuning knobs (variants, engines, tiles, constants) are in the dev harness:
 * `node dist/dev/bench.js collect --help`.
 */
import { capsOf } from '../../backend/caps.js';
import { describeChoice } from '../../backend/index.js';
import { type DevicePeaks, devicePeaks, tensorPeak } from '../../backend/peaks.js';
import { DECIMAL, loadConfig, resolvePrecision } from '../../config.js';
import { type CollectAlgo, trainCollectPrecision } from '../../device/collect.js';
import { benchCollect, type CollectBenchResult, stepsThatFit } from '../../device/collect_bench.js';
import { prepareData } from '../../train/run.js';
import { chooseBackendFlag, intFlag, parseFlags } from '../args.js';
import { type Command, UserError } from '../main.js';

const usage = `usage: foxhunt bench collect [--algo ppo|dqn|c51|iqn] [--backend auto|cuda|webgpu|cpu]
                             [--episodes N[,N...]] [--steps L] [--precision auto|exact|tf32]
                             [--repeats R] [--json]

Times one launch of the collection kernel over N episodes x L steps on the built-in synthetic
market, for each N: the kernel, tile and engine the collector chooses for this device and N (what
\`foxhunt train\` runs), and reports env-steps/s, the model FLOPs per step and the achieved FLOP/s
as a share of the device's f32 FMA peak and, for tf32, of its tensor-core peak (vendor datasheet
figures, named in the output; n/a for a device without them).

  --algo A          ppo (default: actor + critic, what foxhunt train collects), dqn (the online
                    dueling net), c51 or iqn
  --backend KIND    auto (default), cuda, webgpu or cpu
  --episodes LIST   comma-separated N (default 128,1024,8192,65536; cpu: 8)
  --steps L         steps per launch (default 64; cpu: 8); lowered where the outputs would not
                    fit one storage binding of the device
  --precision P     auto (default: as foxhunt train: tf32 on cuda for ppo and dqn, else exact), exact
                    (f32, the parity mode) or tf32 (cuda tensor cores)
  --repeats R       timed launches per N (default 5), after a warm-up of 300 ms
  --json            one JSON object on stdout instead of the table

Developers: node dist/dev/bench.js collect --help takes the variants, engines, tiles and kernel
constants.`;

const ALGOS: CollectAlgo[] = ['ppo', 'dqn', 'c51', 'iqn'];
const BACKENDS = ['auto', 'cuda', 'webgpu', 'cpu'];
const PRECISIONS = ['auto', 'exact', 'tf32'];

const si = (x: number, unit: string) => {
  for (const [v, s] of [
    [1e12, 'T'],
    [1e9, 'G'],
    [1e6, 'M'],
    [1e3, 'k'],
  ] as const)
    if (Math.abs(x) >= v) return `${(x / v).toFixed(2)} ${s}${unit}`;
  return `${x.toFixed(2)} ${unit}`;
};

/** `tiled tf32`, `cluster tf32`, `tiled exact engine 2`: what ran. */
export function kernelLabel(r: CollectBenchResult, webgpu: boolean): string {
  const engine = webgpu && r.variant === 'tiled' ? ` engine ${r.engine}` : '';
  return `${r.variant} ${r.precision}${engine}`;
}

/** `1 x 256` (episodes x threads a block), `9 x 288, 8 CTAs` (a cluster). */
export function tileLabel(r: CollectBenchResult): string {
  if (r.variant === 'seed') return `1/thread x ${r.threads}`;
  if (r.variant === 'cluster') return `${r.tileEpisodes} x ${r.threads}, ${r.cluster} CTAs`;
  return `${r.tileEpisodes} x ${r.threads}`;
}

const share = (x: number, peak: number | undefined) =>
  peak === undefined ? 'n/a' : `${((100 * x) / peak).toFixed(1)}%`;

export function collectTable(results: CollectBenchResult[], peaks: DevicePeaks | undefined, webgpu: boolean) {
  const rows = [
    [
      'N',
      'L',
      'kernel',
      'episodes x threads',
      'ms/launch',
      'env-steps/s',
      'MFLOP/step',
      'FLOP/s',
      '% f32 peak',
      '% tensor peak',
    ],
    ...results.map((r) => [
      String(r.episodes),
      String(r.steps),
      kernelLabel(r, webgpu),
      tileLabel(r),
      r.ms.toFixed(2),
      si(r.envStepsPerSec, ''),
      (r.flopsPerStep / 1e6).toFixed(3),
      si(r.flopsPerSec, 'FLOP/s'),
      share(r.flopsPerSec, peaks?.f32),
      r.precision === 'exact' ? '-' : share(r.flopsPerSec, tensorPeak(peaks, r.precision)),
    ]),
  ];
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  return rows.map((r) =>
    r.map((cell, c) => (c === 2 || c === 3 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  '),
  );
}

/** The peaks line under the table: the figures and where they come from. */
export function peaksLine(peaks: DevicePeaks | undefined, device: string): string {
  if (!peaks) return `peaks: none known for ${device} (src/backend/peaks.ts lists the devices)`;
  const parts = [`f32 FMA ${si(peaks.f32, 'FLOP/s')}`];
  if (peaks.tf32) parts.push(`TF32 dense ${si(peaks.tf32, 'FLOP/s')}`);
  return `peaks of ${peaks.name}: ${parts.join(', ')} (source: ${peaks.source})`;
}

function parseEpisodes(value: string | undefined, fallback: number[]): number[] {
  if (value === undefined) return fallback;
  const list = value.split(',').map((s) => (DECIMAL.test(s.trim()) ? Number(s) : Number.NaN));
  if (list.length === 0 || list.some((n) => !Number.isInteger(n) || n < 1)) {
    throw new UserError(`--episodes must be a comma-separated list of integers >= 1, got "${value}"`);
  }
  return list;
}

async function run(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags(
    args,
    {
      algo: { type: 'string' },
      backend: { type: 'string', default: 'auto' },
      episodes: { type: 'string' },
      steps: { type: 'string' },
      precision: { type: 'string' },
      repeats: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
    usage,
  );
  if (positionals.length > 0) throw new UserError(`unexpected argument "${positionals[0]}"\n${usage}`);
  const algo = ((values.algo as string | undefined) ?? 'ppo') as CollectAlgo;
  if (!ALGOS.includes(algo)) throw new UserError(`--algo must be one of ${ALGOS.join(', ')}, got "${algo}"`);
  const request = values.backend as string;
  if (!BACKENDS.includes(request)) throw new UserError(`--backend must be one of ${BACKENDS.join(', ')}`);
  const precisionFlag = (values.precision as string | undefined) ?? 'auto';
  if (!PRECISIONS.includes(precisionFlag))
    throw new UserError(`--precision must be one of ${PRECISIONS.join(', ')}, got "${precisionFlag}"`);
  const repeats = intFlag(values.repeats as string | undefined, 'repeats', 5, 1);
  const choice = await chooseBackendFlag(request);
  const { backend } = choice;
  try {
    // auto: what `foxhunt train` runs (trainCollectPrecision: C51 and IQN collect in exact f32).
    const precision =
      precisionFlag === 'auto'
        ? trainCollectPrecision(algo, resolvePrecision('auto', backend.kind))
        : (precisionFlag as 'exact' | 'tf32');
    const caps = capsOf(backend);
    if (precision === 'tf32' && !caps.features.tf32TensorCores)
      throw new UserError(
        `--precision tf32 runs on CUDA tensor cores, and the backend is ${backend.kind}: use --precision exact, or --backend cuda`,
      );
    const cpu = caps.deviceClass === 'cpu';
    const episodes = parseEpisodes(
      values.episodes as string | undefined,
      cpu ? [8] : [128, 1024, 8192, 65536],
    );
    const steps = intFlag(values.steps as string | undefined, 'steps', cpu ? 8 : 64, 1);
    const cfg = loadConfig(undefined, {
      'rollout.episodes': String(Math.max(...episodes)),
      'rollout.steps': String(steps),
      'data.synthBars': String(cpu ? 4000 : 20_000),
      // Collection only: the learner's minibatch must merely fit the config's rollout.
      'ppo.minibatch': '1',
    });
    if (!values.json) for (const line of describeChoice(choice)) console.error(line);
    const data = await prepareData(cfg);
    const maxBinding = backend.info.limits.maxStorageBufferBindingSize;
    const results: CollectBenchResult[] = [];
    for (const n of episodes) {
      const l = typeof maxBinding === 'number' ? stepsThatFit(algo, n, steps, maxBinding) : steps;
      const r = await benchCollect({
        backend,
        market: data.market,
        split: data.splits.train,
        cfg,
        algo,
        precision,
        episodes: n,
        steps: l,
        repeats,
      });
      results.push(r);
      if (!values.json) console.error(`  N=${n} L=${l}: ${si(r.envStepsPerSec, '')} env-steps/s`);
    }
    const peaks = devicePeaks(backend);
    if (values.json) {
      console.log(
        JSON.stringify({
          command: 'bench collect',
          algo,
          precision,
          backend: backend.info,
          peaks: peaks ?? null,
          results,
          date: new Date().toISOString(),
        }),
      );
    } else {
      console.log(`collect ${algo}, ${precision}, on ${backend.kind} (${backend.info.device})`);
      for (const line of collectTable(results, peaks, caps.features.wgsl)) console.log(`  ${line}`);
      console.log(peaksLine(peaks, backend.info.device));
    }
    return 0;
  } finally {
    backend.destroy();
  }
}

export const benchCollectCommand: Command = {
  name: 'bench collect',
  summary: 'env-steps/s of experience collection as train runs it, against the device peaks',
  usage,
  run,
};

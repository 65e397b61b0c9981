/**
 * Dev harness `node dist/dev/bench.js collect` (the tuning knobs that `foxhunt bench collect`
 * does not take): env-steps/s of the collection kernels (src/device/collect_bench.ts) for a
 * sweep of N, any variant, engine, tile, cluster shape or extra kernel constants, with FLOPs,
 * achieved FLOP/s against our own dense_forward's rate on the device, and bytes per step. A
 * table, or JSON. Compile-checked; not part of the user CLI.
 */
import { describeChoice } from '../src/backend/index.js';
import type { Backend } from '../src/backend/types.js';
import { chooseBackendFlag, intFlag, parseFlags } from '../src/cli/args.js';
import { type Command, UserError } from '../src/cli/main.js';
import { loadConfig } from '../src/config.js';
import {
  type CollectAlgo,
  type CollectVariant,
  chooseDqnVariant,
  clusterFits,
  type TileShape,
} from '../src/device/collect.js';
import { benchCollect, type CollectBenchResult, stepsThatFit, warmUp } from '../src/device/collect_bench.js';
import { ENGINES } from '../src/kernels/collect_engine.js';
import { denseForwardDispatch } from '../src/kernels/dense_forward.js';
import { initParams } from '../src/nets/forward.js';
import { buildLayout, NetId } from '../src/nets/layout.js';
import { prepareData } from '../src/train/run.js';

const usage = `usage: node dist/dev/bench.js collect --algo dqn|c51|iqn|ppo [--backend auto|cuda|webgpu|cpu]
                             [--episodes N[,N...]] [--steps L] [--variant tiled|seed|cluster[,...]|both|all]
                             [--precision exact|tf32|both] [--engine auto|0|2|both|all|E,E...]
                             [--tile E] [--threads T]
                             [--cluster C]
                             [--constants JSON] [--repeats R] [--seed S] [--json]

Times one launch of collect_dqn (the online dueling net; --algo c51 / iqn for those heads)
or collect_ppo (actor + critic) over N episodes x L steps on the built-in synthetic market, for
each N, and reports env-steps/s, model FLOPs per step, achieved FLOP/s next to the device's
measured f32 ceiling (a 1024x1024 dense_forward over a large batch on the same backend), weight
bytes read and experience bytes written per env step. The tiled kernel and the seed's one thread
per episode are measured in the same run (--variant both, the default for dqn and ppo).

  --algo A          dqn (plain dueling head), c51, iqn or ppo
  --backend KIND    auto (default), cuda, webgpu or cpu
  --episodes LIST   comma-separated N (default 128,1024,8192,65536; cpu: 8)
  --steps L         steps per launch (default 64; cpu: 8); lowered where the outputs would not
                    fit one storage binding of the device
  --variant V       tiled, seed, cluster, a list (tiled,cluster), both (tiled and seed) or all (the
                    three); seed runs the plain DQN head and PPO only, cluster (CUDA sm_90+, exact or
                    tf32) the plain DQN head. With tiled and cluster a second table compares them at
                    each N and precision beside the collector's own choice: the crossover sweep is
                    --algo dqn --backend cuda --variant tiled,cluster --precision both
                    --episodes 128,256,512,1024,2048,4096,8192,16384,65536
  --cluster C       cluster variant: CTAs per thread-block cluster (default 8; 16 is non-portable),
                    each holding 1/C of every layer in shared memory; --tile sets its episodes per
                    cluster (default: ~128 CTAs in all, more episodes per cluster where the GPU
                    cannot hold that many clusters at once), --threads its threads per CTA (default
                    256, or a warp for each of 9 or 10 episodes per cluster)
  --precision P     the tiled and cluster kernels' arithmetic: exact (f32, the parity mode; the
                    default except on cuda), tf32 (cuda: tensor cores, constant TF32 = 1; the
                    cluster variant then takes at most 16 episodes per cluster) or both (cuda: exact
                    and tf32, the cuda default)
  --engine E        webgpu only: the tiled kernel's WGSL tile engine, 0 (scalar activations,
                    outputs strided over threads), 2 (quad blocks: vec4 activations, 4 x 2
                    outputs per thread in named accumulators), a list (0,2), both (0,2), all, each in
                    the same sweep, or auto (default: the collectors' choice, src/device/collect.ts
                    chooseTile)
  --tile E          episodes per workgroup of the tiled kernel (default: chosen from N and the
                    device's workgroup memory)
  --threads T       threads per workgroup (default 256; cuda tf32: 512 for 64 dqn / 32 ppo episodes)
  --constants JSON  extra kernel constants merged into the tiled and cluster kernels' specs, for
                    timing a build variant; constants a kernel does not use are ignored
  --repeats R       timed launches per setting (default 5) after the warm-up: one launch, then on
                    a GPU launches for 300 ms (FOXHUNT_BENCH_WARM_MS), so that the timed ones run
                    at working clocks, not at the idle ones of a GPU left waiting through a compile
  --seed S          run seed (market, networks)
  --json            one JSON object on stdout instead of the table`;

export interface CeilingResult {
  /** Achieved FLOP/s of the reference matmul. */
  flopsPerSec: number;
  /** What was measured, e.g. `dense_forward 1024x1024, batch 4096`. */
  what: string;
}

/**
 * Our own f32 ceiling (the dev harness's "% ceiling"): a floor on the f32 peak, which the TF32
 * builds exceed; `foxhunt bench` divides by the datasheet peaks instead. The f32 ceiling: a square dense_forward layer over a large batch, on the same backend. */
export async function measureCeiling(
  backend: Backend,
  batch: number,
  repeats: number,
): Promise<CeilingResult> {
  const width = 1024;
  const layout = buildLayout('ceiling', [{ name: 'dense', in: width, out: width, act: 'none' }]);
  const layer = layout.layers[0];
  const params = backend.createBuffer(layout.size * 4, 'ceiling params');
  const x = backend.createBuffer(batch * width * 4, 'ceiling x');
  const y = backend.createBuffer(batch * width * 4, 'ceiling y');
  try {
    backend.upload(params, initParams(layout, NetId.QOnline, 1));
    backend.upload(x, new Float32Array(batch * width).fill(0.5));
    const d = denseForwardDispatch(params, layer, x, y, batch);
    await warmUp(backend, () => d);
    const ms = await backend.time([d], repeats);
    return {
      flopsPerSec: (2 * batch * width * width) / (ms / 1e3),
      what: `dense_forward ${width}x${width}, batch ${batch}`,
    };
  } finally {
    for (const b of [params, x, y]) backend.destroyBuffer(b);
  }
}

const ALGOS: CollectAlgo[] = ['dqn', 'c51', 'iqn', 'ppo'];
const BACKENDS = ['auto', 'cuda', 'webgpu', 'cpu'];

/** H200 targets for DQN collection (env-steps/s, CUDA; docs/BENCHMARKS.md). */
const TARGETS =
  'targets (H200, dqn, cuda): >= 50M env-steps/s at large N, >= 10M at N = 128; webgpu >= 50% of cuda';

const si = (x: number, unit: string) => {
  const p = [
    [1e12, 'T'],
    [1e9, 'G'],
    [1e6, 'M'],
    [1e3, 'k'],
  ] as const;
  for (const [v, s] of p) if (Math.abs(x) >= v) return `${(x / v).toFixed(2)} ${s}${unit}`;
  return `${x.toFixed(2)} ${unit}`;
};

const label = (r: CollectBenchResult) =>
  `${r.variant}${r.precision === 'tf32' ? '-tf32' : ''}${r.engine === 2 ? '-quad2' : ''}${
    r.constants
      ? Object.entries(r.constants)
          .map(([k, v]) => ` ${k}=${v}`)
          .join('')
      : ''
  }`;

function table(results: CollectBenchResult[], ceiling: CeilingResult | null): string[] {
  const rows = [
    [
      'variant',
      'N',
      'L',
      'episodes x threads',
      'ms/launch',
      'env-steps/s',
      'MFLOP/step',
      'FLOP/s',
      '% ceiling',
      'weights B/step',
      'out B/step',
    ],
    ...results.map((r) => [
      label(r),
      String(r.episodes),
      String(r.steps),
      r.variant === 'seed'
        ? `1/thread x ${r.threads}`
        : r.variant === 'cluster'
          ? `${r.tileEpisodes}/cluster of ${r.cluster} x ${r.threads}`
          : `${r.tileEpisodes}/wg x ${r.threads}`,
      r.ms.toFixed(2),
      si(r.envStepsPerSec, ''),
      (r.flopsPerStep / 1e6).toFixed(3),
      si(r.flopsPerSec, 'FLOP/s'),
      ceiling ? `${((100 * r.flopsPerSec) / ceiling.flopsPerSec).toFixed(1)}%` : 'n/a',
      si(r.weightBytesPerStep, 'B'),
      String(r.outputBytesPerStep),
    ]),
  ];
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  return rows.map((r) =>
    r.map((cell, c) => (c < 1 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  '),
  );
}

/**
 * Each N and precision where both the tiled and the cluster kernel ran (default shapes, no extra
 * constants): their rates, the faster one, and the collector's own choice there (chooseDqnVariant,
 * from the tuning row's clusterUpTo), to set that bound from.
 */
export function crossover(results: CollectBenchResult[], backend: Pick<Backend, 'kind' | 'info'>): string[] {
  const plain = results.filter((r) => !r.constants);
  const rows: string[][] = [];
  for (const t of plain.filter((r) => r.variant === 'tiled')) {
    const c = plain.find(
      (r) => r.variant === 'cluster' && r.episodes === t.episodes && r.precision === t.precision,
    );
    if (!c) continue;
    const faster = c.envStepsPerSec > t.envStepsPerSec ? 'cluster' : 'tiled';
    const chosen = chooseDqnVariant(backend, 'dqn', t.episodes, t.precision === 'tf32');
    rows.push([
      t.precision,
      String(t.episodes),
      si(t.envStepsPerSec, ''),
      si(c.envStepsPerSec, ''),
      `${faster} x${(Math.max(c.envStepsPerSec, t.envStepsPerSec) / Math.min(c.envStepsPerSec, t.envStepsPerSec)).toFixed(2)}`,
      chosen === faster ? chosen : `${chosen} (not the faster)`,
    ]);
  }
  if (rows.length === 0) return [];
  rows.unshift(['precision', 'N', 'tiled', 'cluster', 'faster', 'collector chooses']);
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  return [
    "tiled against cluster (the collector's choice: src/backend/tuning.ts clusterUpTo):",
    ...rows.map((r) =>
      r.map((cell, c) => (c < 1 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  '),
    ),
  ];
}

function parseEpisodes(value: string | undefined, fallback: number[]): number[] {
  if (value === undefined) return fallback;
  const list = value.split(',').map((s) => Number(s.trim()));
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
      variant: { type: 'string' },
      cluster: { type: 'string' },
      precision: { type: 'string' },
      engine: { type: 'string' },
      tile: { type: 'string' },
      threads: { type: 'string' },
      repeats: { type: 'string' },
      constants: { type: 'string' },
      seed: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
    usage,
  );
  if (positionals.length > 0) throw new UserError(`unexpected argument "${positionals[0]}"\n${usage}`);
  const algo = values.algo as CollectAlgo | undefined;
  if (!algo || !ALGOS.includes(algo))
    throw new UserError(`--algo must be one of ${ALGOS.join(', ')}\n${usage}`);
  const request = values.backend as string;
  if (!BACKENDS.includes(request)) throw new UserError(`--backend must be one of ${BACKENDS.join(', ')}`);
  const variantFlag =
    (values.variant as string | undefined) ?? (algo === 'dqn' || algo === 'ppo' ? 'both' : 'tiled');
  const variantList = variantFlag.split(',');
  if (
    !(
      ['both', 'all'].includes(variantFlag) ||
      variantList.every((v) => ['tiled', 'seed', 'cluster'].includes(v))
    ) ||
    new Set(variantList).size !== variantList.length
  )
    throw new UserError(
      '--variant must be tiled, seed, cluster, a list of them (tiled,cluster), both or all',
    );
  if (variantList.includes('cluster') && algo !== 'dqn')
    throw new UserError(
      `the cluster variant runs the plain dqn head only; use --variant tiled with --algo ${algo}`,
    );
  if (variantFlag !== 'tiled' && (algo === 'c51' || algo === 'iqn')) {
    throw new UserError(
      `the seed variant runs the plain dqn head and ppo only; use --variant tiled with --algo ${algo}`,
    );
  }
  const variants: CollectVariant[] =
    variantFlag === 'both'
      ? ['tiled', 'seed']
      : variantFlag === 'all'
        ? ['tiled', 'seed', ...(algo === 'dqn' ? (['cluster'] as const) : [])]
        : (variantList as CollectVariant[]);
  const clusterSize =
    values.cluster === undefined ? undefined : intFlag(values.cluster as string, 'cluster', 8, 1);
  if (clusterSize !== undefined && clusterSize > 16) throw new UserError('--cluster must be at most 16 CTAs');
  const tile: Partial<TileShape> = {};
  if (values.tile !== undefined) tile.tileEpisodes = intFlag(values.tile as string, 'tile', 1, 1);
  if (values.threads !== undefined) tile.threads = intFlag(values.threads as string, 'threads', 256, 32);
  const repeats = intFlag(values.repeats as string | undefined, 'repeats', 5, 1);
  let extraConstants: Record<string, number> | undefined;
  if (values.constants !== undefined) {
    try {
      extraConstants = JSON.parse(values.constants as string);
    } catch {
      throw new UserError(`--constants must be a JSON object of numbers, got ${values.constants}`);
    }
    if (
      typeof extraConstants !== 'object' ||
      extraConstants === null ||
      Object.values(extraConstants).some((v) => typeof v !== 'number' || !Number.isFinite(v))
    )
      throw new UserError(`--constants must be a JSON object of numbers, got ${values.constants}`);
  }
  const seed = intFlag(values.seed as string | undefined, 'seed', 1, 0);

  const precisionArg = values.precision as string | undefined;
  if (precisionArg !== undefined && !['exact', 'tf32', 'both'].includes(precisionArg))
    throw new UserError('--precision must be exact, tf32 or both');
  const choice = await chooseBackendFlag(request);
  const { backend } = choice;
  const cpu = backend.kind === 'cpu';
  if (variants.includes('cluster') && backend.kind !== 'cuda')
    throw new UserError(
      `the cluster variant needs --backend cuda on an sm_90 GPU (H100 / H200), not ${backend.kind}; use --variant tiled, seed or both`,
    );
  const precisionFlag = precisionArg ?? (backend.kind === 'cuda' ? 'both' : 'exact');
  if ((precisionFlag === 'tf32' || precisionFlag === 'both') && backend.kind !== 'cuda')
    throw new UserError(`--precision ${precisionFlag} needs --backend cuda (tf32 tensor cores)`);
  const precisions: ('exact' | 'tf32')[] =
    precisionFlag === 'both' ? ['exact', 'tf32'] : [precisionFlag as 'exact' | 'tf32'];
  const engineFlag = (values.engine as string | undefined) ?? 'auto';
  const engineList =
    engineFlag === 'both' ? ['0', '2'] : engineFlag === 'all' ? ENGINES.map(String) : engineFlag.split(',');
  if (
    engineFlag !== 'auto' &&
    (engineList.some((e) => !(ENGINES as readonly number[]).map(String).includes(e)) ||
      new Set(engineList).size !== engineList.length)
  )
    throw new UserError(
      `--engine must be auto, both, all or distinct engines from ${ENGINES.join(', ')} (e.g. 0,2)`,
    );
  if (engineFlag !== 'auto' && backend.kind !== 'webgpu')
    throw new UserError(`--engine ${engineFlag} picks the WGSL tile engine: it needs --backend webgpu`);
  // undefined: the collector chooses.
  const engines: (number | undefined)[] = engineFlag === 'auto' ? [undefined] : engineList.map(Number);
  // Each tiled run in every precision and engine, then the seed variant (exact: it has no
  // tensor-core path, and no tile engine).
  type Run = {
    variant: CollectVariant;
    precision: 'exact' | 'tf32';
    engine?: number;
  };
  const runs = variants.flatMap((v): Run[] =>
    v === 'cluster'
      ? precisions.map((p): Run => ({ variant: v, precision: p }))
      : v === 'seed'
        ? [{ variant: v, precision: 'exact' }]
        : precisions.flatMap((p): Run[] => engines.map((engine) => ({ variant: v, precision: p, engine }))),
  );
  const episodes = parseEpisodes(values.episodes as string | undefined, cpu ? [8] : [128, 1024, 8192, 65536]);
  const steps = intFlag(values.steps as string | undefined, 'steps', cpu ? 8 : 64, 1);
  const maxN = Math.max(...episodes);
  const cfg = loadConfig(undefined, {
    'train.seed': String(seed),
    'rollout.episodes': String(maxN),
    'rollout.steps': String(steps),
    'data.synthBars': String(cpu ? 4000 : 20_000),
    // Collection only: the learner's minibatch must merely fit the config's rollout.
    'ppo.minibatch': '1',
  });
  if (!values.json) for (const line of describeChoice(choice)) console.error(line);
  try {
    const data = await prepareData(cfg);
    // A software adapter (lavapipe, SwiftShader) gets a small ceiling batch: it is a CPU.
    const software = backend.info.limits.software === 'yes';
    const ceiling = cpu ? null : await measureCeiling(backend, software ? 64 : 4096, repeats);
    const maxBinding = backend.info.limits.maxStorageBufferBindingSize;
    const results: CollectBenchResult[] = [];
    for (const n of episodes) {
      const l = typeof maxBinding === 'number' ? stepsThatFit(algo, n, steps, maxBinding) : steps;
      for (const { variant, precision, engine } of runs) {
        if (variant === 'cluster' && !clusterFits(n, clusterSize, tile.tileEpisodes, precision === 'tf32')) {
          if (!values.json)
            console.error(`  cluster N=${n}: skipped (its grid would exceed 65535 blocks: small N only)`);
          continue;
        }
        const r = await benchCollect({
          backend,
          market: data.market,
          split: data.splits.train,
          cfg,
          algo,
          variant,
          cluster: clusterSize,
          precision,
          episodes: n,
          steps: l,
          repeats,
          tile: engine === undefined ? tile : { ...tile, engine },
          constants: variant !== 'seed' ? extraConstants : undefined,
        });
        results.push(r);
        if (!values.json)
          console.error(`  ${label(r)} N=${n} L=${l}: ${si(r.envStepsPerSec, 'env-steps/s')}`);
      }
    }
    if (values.json) {
      console.log(
        JSON.stringify({
          command: 'bench collect',
          algo,
          backend: backend.info,
          ceiling,
          results,
          date: new Date().toISOString(),
        }),
      );
    } else {
      console.log(`collect ${algo} on ${backend.kind} (${backend.info.device})`);
      console.log(
        ceiling
          ? `f32 ceiling: ${si(ceiling.flopsPerSec, 'FLOP/s')} (${ceiling.what})`
          : 'f32 ceiling: n/a on cpu',
      );
      for (const line of table(results, ceiling)) console.log(line);
      for (const line of crossover(results, backend)) console.log(line);
      console.log(TARGETS);
    }
    return 0;
  } finally {
    backend.destroy();
  }
}

export const devBenchCollectCommand: Command = {
  name: 'collect',
  summary: 'benchmark experience collection (env-steps/s, FLOP/s vs the f32 ceiling), tiled vs seed',
  usage,
  run,
};

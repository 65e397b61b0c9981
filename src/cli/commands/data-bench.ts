/**
 * `foxhunt bench data`: the data-loading benchmark (docs/BENCHMARKS.md, "Data loading").
 * Synthesises N bars, writes them as CSV and Parquet, loads each back through the full
 * validation path, and featurises them; prints wall-clock seconds per phase and the rate.
 */
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../config.js';
import { loadBars, saveBars } from '../../data/load.js';
import { generateSynthetic } from '../../data/synthetic.js';
import { buildMarket } from '../../features/market.js';
import { intFlag, parseFlags } from '../args.js';
import type { Command } from '../main.js';

const usage = `usage: foxhunt bench data [--bars N] [--seed S] [--dir DIR]

Times the data path on N synthetic bars (default 2000000): generate, write CSV and Parquet,
load + validate each, and build the market (51 features). Prints wall-clock and CPU seconds
per phase. Files go to a fresh folder under
DIR (default the system temp folder) and are removed afterwards.`;

/**
 * Runs one phase and records its wall-clock seconds, the process's CPU seconds (user + system,
 * all threads: GC and I/O helpers included) and the rate. On a shared machine the CPU seconds
 * are the steadier figure.
 */
async function timed<T>(label: string, rows: string[][], bars: number, f: () => Promise<T> | T): Promise<T> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const result = await f();
  const s = (performance.now() - t0) / 1000;
  const c = process.cpuUsage(c0);
  const cpu = (c.user + c.system) / 1e6;
  rows.push([label, s.toFixed(2), cpu.toFixed(2), `${(bars / s / 1e6).toFixed(2)} M bars/s`]);
  return result;
}

async function run(args: string[]): Promise<number> {
  const { values } = parseFlags(
    args,
    { bars: { type: 'string' }, seed: { type: 'string' }, dir: { type: 'string' } },
    usage,
  );
  const n = intFlag(values.bars as string | undefined, 'bars', 2_000_000, 1);
  const seed = intFlag(values.seed as string | undefined, 'seed', 1, 0);
  const dir = await mkdtemp(join((values.dir as string | undefined) ?? tmpdir(), 'foxhunt-bench-'));
  const cfg = loadConfig();
  const rows: string[][] = [];
  try {
    const bars = await timed('synthesise', rows, n, () => generateSynthetic({ bars: n, seed }));
    const csv = join(dir, 'bench.csv');
    const parquet = join(dir, 'bench.parquet');
    await timed('write csv', rows, n, () => saveBars(csv, bars));
    await timed('write parquet', rows, n, () => saveBars(parquet, bars));
    const fromCsv = await timed('load csv', rows, n, () => loadBars(csv));
    await timed('load parquet', rows, n, () => loadBars(parquet));
    await timed('build market (51 features)', rows, n, () => buildMarket(fromCsv.bars, cfg));
    const sizes = `csv ${((await stat(csv)).size / 2 ** 20).toFixed(0)} MiB, parquet ${((await stat(parquet)).size / 2 ** 20).toFixed(0)} MiB`;
    const width = Math.max(...rows.map((r) => r[0].length));
    console.log(`bench data: ${n} bars, seed ${seed}, node ${process.version} (${sizes})`);
    console.log(`  ${'phase'.padEnd(width)}  ${'wall s'.padStart(7)}  ${'cpu s'.padStart(7)}  rate (wall)`);
    for (const [label, s, cpu, rate] of rows) {
      console.log(`  ${label.padEnd(width)}  ${s.padStart(7)}  ${cpu.padStart(7)}  ${rate}`);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return 0;
}

export const benchDataCommand: Command = {
  name: 'bench data',
  summary: 'time loading and featurising N synthetic bars (CSV and Parquet)',
  usage,
  run,
};

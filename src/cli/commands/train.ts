/**
 * `foxhunt train`: trains an agent (PPO for now) on a data file or the built-in synthetic market,
 * writes `<out>/log.jsonl`, `<out>/last/` and `<out>/best/`, and ends with best/'s validation and
 * test tables and the verdict. Progress (elapsed, ETA) goes to stderr (a bar on a TTY, one line
 * per epoch otherwise); the tables and the verdict to stdout.
 */
import { readFile, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import {
  applyFlags,
  type Config,
  type DeepPartial,
  defaultsFor,
  mergeConfig,
  selectedAlgo,
  validateConfig,
} from '../../config.js';
import { trainWarnings } from '../../data/warnings.js';
import { loadSourcedBars, repairOptions } from '../../node/data.js';
import { writeReport } from '../../node/report.js';
import { NodeStorage } from '../../node/storage.js';
import { epochLine, metricsTable, progressLine, timing } from '../../train/report.js';
import { resumeConfig, runTraining } from '../../train/run.js';
import type { EpochRecord } from '../../train/runlog.js';
import { intFlag, NEGATIVE_NUMBER, parseFlags } from '../args.js';
import { type Command, UserError } from '../main.js';

const usage = `usage: foxhunt train --algo ppo|dqn|c51|iqn [--backend auto|cpu|webgpu|cuda]
                     [--data FILE [--drop-invalid] [--fill-gaps]] [--epochs E] [--seed S] [--out DIR]
                     [--config FILE] [--resume | --force] [--section.field value ...]

Trains on FILE (CSV or Parquet bars), or on the built-in synthetic market (data.synthBars bars,
generated from the seed) when --data is not given. Every epoch appends a JSON line to
DIR/log.jsonl and writes DIR/last/; DIR/best/ keeps the epoch with the best validation Sharpe,
which the run evaluates once on the test split at the end (see docs/TRAINING.md).

  --algo A             ppo, or dqn, c51, iqn (the DQN family)
  --backend KIND       auto (default: cuda, then hardware webgpu, then cpu), cpu, webgpu or cuda
  --data FILE          market bars; default: the synthetic market
  --drop-invalid       drop FILE's rows that break a rule instead of failing (reports how many)
  --fill-gaps          insert flat zero-volume bars for FILE's missing bars at the modal interval
  --epochs E           epochs to run (train.epochs, default 20)
  --seed S             run seed: Philox key, network init, synthetic market (train.seed, default 1)
  --out DIR            output directory (train.outDir, default runs/latest)
  --config FILE        JSON config, applied over the defaults
  --resume             continue DIR's last/ checkpoint exactly (raise --epochs to train further)
  --force              DIR holds an earlier run: delete it and start again (without: refused)
  --section.field V    any config field, e.g. --ppo.lr 1e-4 --rollout.episodes 32`;

/** Off a terminal, the first epoch's train-step progress at most this often. */
const STEP_LINE_MS = 30_000;

export const trainCommand: Command = {
  name: 'train',
  summary:
    'train an agent (PPO, DQN, C51, IQN) on a data file or the synthetic market; log, checkpoints, validation',
  usage,
  async run(args) {
    const { named, config: configFlags } = splitConfigFlags(args);
    const { values, positionals } = parseFlags(
      named,
      {
        algo: { type: 'string' },
        backend: { type: 'string' },
        data: { type: 'string' },
        epochs: { type: 'string' },
        seed: { type: 'string' },
        out: { type: 'string' },
        config: { type: 'string' },
        resume: { type: 'boolean' },
        force: { type: 'boolean' },
        'drop-invalid': { type: 'boolean' },
        'fill-gaps': { type: 'boolean' },
      },
      usage,
    );
    if (positionals.length) throw new UserError(`unexpected argument "${positionals[0]}"\n${usage}`);
    if (values.resume && values.force) throw new UserError('--resume and --force exclude each other');
    const repair = repairOptions(values);
    if (repair.error) throw new UserError(repair.error);
    const flags: Record<string, string> = { ...configFlags };
    if (values.algo !== undefined) flags['train.algo'] = String(values.algo);
    if (values.backend !== undefined) flags['train.backend'] = String(values.backend);
    if (values.epochs !== undefined)
      flags['train.epochs'] = String(intFlag(String(values.epochs), 'epochs', 0, 1));
    if (values.seed !== undefined) flags['train.seed'] = String(intFlag(String(values.seed), 'seed', 0, 0));
    if (values.out !== undefined) flags['train.outDir'] = String(values.out);
    const file = await readConfigFile(values.config as string | undefined);
    const override = (base: Config): Config => overrideConfig(base, file, flags);

    return asUserError(async () => {
      const storage = new NodeStorage();
      let cfg = configOf(file, flags);
      let resume = null;
      if (values.resume)
        ({ cfg, checkpoint: resume } = await resumeConfig(storage, cfg.train.outDir, override));
      await assertDirectoryPath(cfg.train.outDir);
      const epochs = cfg.train.epochs;
      const tty = process.stderr.isTTY === true;
      let last: EpochRecord | null = null;
      const start = performance.now();
      let phaseAt = start;
      let shownAt = start;
      const todo = epochs - (resume?.state.epoch ?? 0);
      let done = 0;
      // Ctrl-C once: finish the epoch in progress (its checkpoint included), then stop; --resume
      // continues. Twice: quit at once (last/ still holds the previous epoch's checkpoint).
      const stop = new AbortController();
      const quit = () => process.exit(130);
      const onInterrupt = () => {
        console.error('\nstopping after this epoch (Ctrl-C again quits now); --resume continues the run');
        stop.abort();
        process.once('SIGINT', quit);
      };
      const bars = await loadSourcedBars(values.data as string | undefined, repair.opts);
      if (bars?.repairs) console.error(`data: ${bars.source}: ${bars.repairs}`);
      if (bars) for (const w of trainWarnings(bars.bars, cfg)) console.error(`warning: ${bars.source}: ${w}`);
      process.once('SIGINT', onInterrupt);
      const result = await runTraining({
        signal: stop.signal,
        cfg,
        storage,
        bars,
        resume,
        force: values.force === true,
        onInfo: (line) => console.error(line),
        onPhase: (epoch, phase) => {
          phaseAt = shownAt = performance.now();
          const time = timing(performance.now() - start, done, todo);
          const line = progressLine(epoch, epochs, phase, last, time);
          if (tty) process.stderr.write(`\r\x1b[K${line}`);
          // Not on a terminal (a log file, a pipe): the first epoch's phases, a line each, so a
          // slow one (minutes on the CPU at the spec's sizes) shows where the run is.
          else if (done === 0) console.error(line);
        },
        // The CPU engines' train steps (a GPU's run in one submission): the phase's steps and the
        // time left at their rate; off a terminal, a line every 30 s of the first epoch.
        onStep: (epoch, phase, stepsDone, total) => {
          const now = performance.now();
          const leftMs = ((now - phaseAt) / stepsDone) * (total - stepsDone);
          const time = timing(now - start, done, todo);
          const line = progressLine(epoch, epochs, phase, last, time, { done: stepsDone, total, leftMs });
          if (tty) process.stderr.write(`\r\x1b[K${line}`);
          else if (done === 0 && now - shownAt >= STEP_LINE_MS) {
            console.error(line);
            shownAt = now;
          }
        },
        onEpoch: (record) => {
          last = record;
          done++;
          if (tty) process.stderr.write('\r\x1b[K');
          console.error(epochLine(record, epochs, timing(performance.now() - start, done, todo)));
        },
      }).finally(() => {
        process.removeListener('SIGINT', onInterrupt);
        process.removeListener('SIGINT', quit);
      });
      const { summary: s, outDir } = result;
      console.log(
        `best/ is epoch ${s.best.epoch} of ${s.epochs} (validation Sharpe ${s.best.score.toFixed(2)}); ` +
          `${result.backend}, seed ${cfg.train.seed}`,
      );
      console.log('validation split:');
      console.log(metricsTable(s.best.validation));
      console.log('test split (best/, evaluated once, at the end):');
      console.log(metricsTable(s.test));
      console.log(`log: ${outDir}/log.jsonl  checkpoints: ${outDir}/best/ ${outDir}/last/`);
      // The run is complete without it: a report that fails says so and leaves the exit status alone.
      await writeReport(outDir, bars, (line) => console.error(`warning: ${line}`)).then(
        (path) => console.log(`report: ${path}`),
        (err: Error) =>
          console.error(`report.html not written (${err.message}); foxhunt report ${outDir} retries`),
      );
      console.log(s.verdict.validation);
      console.log(s.verdict.test);
      return 0;
    });
  },
};

/**
 * Separates `--section.field value` (or `--section.field=value`) config flags, which parseArgs
 * cannot declare in advance, from the command's own options.
 */
export function splitConfigFlags(args: string[]): { named: string[]; config: Record<string, string> } {
  const named: string[] = [];
  const config: Record<string, string> = {};
  for (let i = 0; i < args.length; i++) {
    const m = /^--([A-Za-z]\w*\.[A-Za-z]\w*)(?:=(.*))?$/.exec(args[i]);
    if (!m) {
      named.push(args[i]);
      continue;
    }
    if (m[2] !== undefined) config[m[1]] = m[2];
    // The next word is the value unless it is another option (`--ppo.lr --out DIR`); `-1` is a value.
    else if (i + 1 < args.length && (!/^--?[A-Za-z]/.test(args[i + 1]) || NEGATIVE_NUMBER.test(args[i + 1])))
      config[m[1]] = args[++i];
    else throw new UserError(`--${m[1]} needs a value`);
  }
  return { named, config };
}

/** Errors a user can fix by changing the command, data or config: printed as one line. */
const USER_ERRORS = new Set([
  'RunError',
  'TrainingDivergedError',
  'CheckpointError',
  'DataError',
  'SplitError',
  'ConfigError',
  'BackendUnavailableError',
  'RunStoppedError',
  'LogError',
]);

export async function asUserError<T>(body: () => Promise<T>): Promise<T> {
  try {
    return await body();
  } catch (err) {
    if (err instanceof Error && USER_ERRORS.has(err.name)) throw new UserError(err.message);
    // A buffer past the typed-array or memory limit: sizes from the config (--rollout.episodes 1e8).
    if (err instanceof RangeError && /typed array length|allocation failed/i.test(err.message))
      throw new UserError(
        `${err.message}: the config's sizes do not fit in memory; lower rollout.episodes, rollout.steps or dqn.replayCapacity`,
      );
    throw err;
  }
}

/** Refuses an --out that is a file, or lies under one, before an epoch is spent on it. */
async function assertDirectoryPath(outDir: string): Promise<void> {
  for (let p = resolve(outDir); ; p = dirname(p)) {
    try {
      if ((await stat(p)).isDirectory()) return;
      throw new UserError(`--out ${outDir}: ${p} is a file, not a directory; give another --out`);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if ((code !== 'ENOENT' && code !== 'ENOTDIR') || p === dirname(p)) throw err;
    }
  }
}

/** `base` <- the --config file's sections <- the --section.field flags, validated. */
function overrideConfig(base: Config, file: ConfigFile | null, flags: Record<string, string>): Config {
  return validateConfig(applyFlags(file ? mergeConfig(base, file.patch, file.path) : base, flags));
}

/** The defaults of the algorithm the file or flags select, then the file, then the flags. */
export function configOf(file: ConfigFile | null, flags: Record<string, string>): Config {
  return overrideConfig(defaultsFor(selectedAlgo(file?.patch, flags)), file, flags);
}

export interface ConfigFile {
  patch: DeepPartial<Config>;
  path: string;
}

/** The JSON file of --config (null without one); an unreadable or malformed file is one line. */
export async function readConfigFile(path: string | undefined): Promise<ConfigFile | null> {
  if (path === undefined) return null;
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new UserError(`--config ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  let patch: unknown;
  try {
    patch = JSON.parse(text.replace(/^\uFEFF/, '')); // a byte-order mark is not JSON
  } catch (err) {
    throw new UserError(`--config ${path}: not valid JSON (${(err as Error).message})`);
  }
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) {
    throw new UserError(`--config ${path}: must hold a JSON object of sections`);
  }
  return { patch: patch as DeepPartial<Config>, path };
}

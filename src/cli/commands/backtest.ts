/**
 * `foxhunt backtest`: the greedy policy of a checkpoint over one split of a data file (or of the
 * synthetic market it trained on), next to buy-and-hold and the random baseline, with the
 * checkpoint's costs and config.
 */
import { join } from 'node:path';
import { allBars, SplitError } from '../../data/splits.js';
import type { SplitRange } from '../../data/types.js';
import { backtest, baselines } from '../../eval/backtest.js';
import { loadSourcedBars, repairOptions, sourceFile } from '../../node/data.js';
import { NodeStorage } from '../../node/storage.js';
import { checkpointPolicy } from '../../train/dqn_checkpoint.js';
import { metricsTable } from '../../train/report.js';
import { type PreparedData, prepareData, prepareMarket } from '../../train/run.js';
import type { ValidationReport } from '../../train/runlog.js';
import { committedDir } from '../../train/storage.js';
import { parseFlags } from '../args.js';
import { type Command, UserError } from '../main.js';
import { asUserError } from './train.js';

const usage = `usage: foxhunt backtest [--checkpoint] DIR [--data FILE [--drop-invalid] [--fill-gaps]]
                        [--split train|val|test|all] [--json]

Runs the checkpoint's greedy policy over one split as one continuous episode (barriers close
positions but do not end it), with buy-and-hold (one market buy at the first bar, held to the end)
and a random policy on the same bars and costs.

  --checkpoint DIR   a run directory (its best/ checkpoint) or a checkpoint directory (DIR/best,
                     DIR/last); the flag may be left out
  --data FILE        market bars; default: the synthetic market the checkpoint trained on
  --drop-invalid     drop FILE's rows that break a rule instead of failing (reports how many)
  --fill-gaps        insert flat zero-volume bars for FILE's missing bars at the modal interval
  --split NAME       train, val, test (default) or all (every bar after the warm-up: data too
                     short for the three splits still backtests)
  --json             print the metrics as one JSON object instead of a table`;

const SPLITS = ['train', 'val', 'test', 'all'] as const;

export const backtestCommand: Command = {
  name: 'backtest',
  summary: "backtest a checkpoint's greedy policy on a split, next to buy-and-hold and random",
  usage,
  async run(args) {
    const { values, positionals } = parseFlags(
      args,
      {
        checkpoint: { type: 'string' },
        data: { type: 'string' },
        split: { type: 'string', default: 'test' },
        json: { type: 'boolean' },
        'drop-invalid': { type: 'boolean' },
        'fill-gaps': { type: 'boolean' },
      },
      usage,
    );
    // `foxhunt backtest DIR` as `foxhunt report DIR`: one directory, given once.
    const dirs = [...(values.checkpoint === undefined ? [] : [String(values.checkpoint)]), ...positionals];
    if (dirs.length > 1)
      throw new UserError(`give one checkpoint directory, got "${dirs[0]}" and "${dirs[1]}"\n${usage}`);
    if (dirs.length === 0) throw new UserError(`--checkpoint DIR is required\n${usage}`);
    const repair = repairOptions(values);
    if (repair.error) throw new UserError(repair.error);
    const split = String(values.split) as (typeof SPLITS)[number];
    if (!SPLITS.includes(split))
      throw new UserError(`--split must be one of ${SPLITS.join(', ')}, got "${split}"`);
    const given = dirs[0];
    const storage = new NodeStorage();
    // A run directory means its best/; runs from before best/ existed have checkpoint/.
    let dir = given;
    for (const sub of ['best', 'last', 'checkpoint']) {
      if (await committedDir(storage, join(given, sub))) {
        dir = join(given, sub);
        break;
      }
    }

    return asUserError(async () => {
      const { state, policy } = await checkpointPolicy(storage, dir);
      const cfg = state.config;
      const dataFile = values.data as string | undefined;
      if (dataFile === undefined && state.data.source !== 'synthetic') {
        const { file, opts } = sourceFile(state.data.source);
        const flags = `${opts.dropInvalid ? ' --drop-invalid' : ''}${opts.fillGaps ? ' --fill-gaps' : ''}`;
        throw new UserError(
          `the checkpoint trained on ${state.data.source}: pass --data ${file}${flags} (or other bars with --data)`,
        );
      }
      const bars = await loadSourcedBars(dataFile, repair.opts);
      if (bars?.repairs) console.error(`data: ${bars.source}: ${bars.repairs}`);
      let range: SplitRange;
      let data: Omit<PreparedData, 'splits'>;
      if (split === 'all') {
        // Every bar after the warm-up: the three splits need not fit.
        range = allBars(bars?.bars.n ?? cfg.data.synthBars, cfg);
        data = await prepareMarket(cfg, bars);
      } else {
        const prepared = await prepareData(cfg, bars).catch((err: Error) => {
          if (err instanceof SplitError) err.message += '; --split all backtests every bar after the warm-up';
          throw err;
        });
        range = prepared.splits[split];
        data = prepared;
      }
      const report: ValidationReport = {
        policy: backtest(data.market, range, cfg.env, policy, data.barsPerYear).metrics,
        ...baselines(data.market, range, cfg.env, cfg.train.seed, data.barsPerYear),
      };
      if (values.json) {
        console.log(JSON.stringify({ checkpoint: dir, epoch: state.epoch, split, range, ...report }));
      } else {
        console.log(
          `backtest of ${dir} (epoch ${state.epoch}) on ${bars?.source ?? 'the synthetic market'}, ` +
            `${split} split: bars [${range.start}, ${range.end})`,
        );
        console.log(metricsTable(report));
      }
      return 0;
    });
  },
};

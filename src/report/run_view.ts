/**
 * A RunView from a run directory in any Storage: its log (epochs, summary) and a checkpoint
 * backtested on the validation split. `foxhunt report` and the end of `foxhunt train` use it
 * through src/node/report.ts; the browser worker uses `checkpointCurves` after every epoch.
 */

import type { Config } from '../config.js';
import { makeSplits } from '../data/splits.js';
import type { Policy } from '../eval/policies.js';
import { bestDir, lastDir } from '../train/checkpoint.js';
import { checkpointPolicy } from '../train/dqn_checkpoint.js';
import { type PreparedData, prepareMarket, RunError, type SourcedBars, sameData } from '../train/run.js';
import { readLog, readSummary } from '../train/runlog.js';
import { committedDir, type Storage } from '../train/storage.js';
import { backtestCurves, type Curves, epochPoint, type RunView, summaryParts } from './view.js';

/** The validation curves of the checkpoint in `dir` on `data` (the bars it trained on). */
export async function checkpointCurves(
  storage: Storage,
  dir: string,
  data: PreparedData,
  label: string,
): Promise<Curves> {
  const { state, policy } = await checkpointPolicy(storage, dir);
  return validationCurves(state.config, policy, data, `${label}, epoch ${state.epoch}`);
}

/** `policy` (of a checkpoint with config `cfg`) backtested on the validation split of `data`. */
function validationCurves(cfg: Config, policy: Policy, data: PreparedData, label: string): Curves {
  return backtestCurves(
    data.market,
    data.splits.val,
    'validation',
    cfg.env,
    policy,
    cfg.train.seed,
    data.barsPerYear,
    label,
  ).curves;
}

/**
 * The bars a report draws on: the ones a caller holds (`--data`, or the run's own in the browser),
 * which must be those the run trained on, or a lookup by the source its checkpoint names (a file
 * that may have changed since: then no curves, and a warning), or none.
 */
export type ReportBars = SourcedBars | undefined | ((source: string) => Promise<SourcedBars | undefined>);

/**
 * The view of the run in `outDir`, its curves on `bars` (the synthetic market is rebuilt from the
 * config): without them a run on a file gets none, and the subtitle says why. Given bars other
 * than the run's are a RunError; found ones that changed since leave the curves out, and
 * `onWarning` says so.
 */
export async function runViewOf(
  storage: Storage,
  outDir: string,
  bars: ReportBars,
  onWarning: (line: string) => void = () => {},
): Promise<RunView> {
  const records = await readLog(storage, outDir);
  const summary = await readSummary(storage, outDir);
  const dir =
    (await committedDir(storage, bestDir(outDir))) ?? (await committedDir(storage, lastDir(outDir)));
  let curves: Curves | null = null;
  let subtitle = `${records[0]?.backend ?? 'no'} backend, ${records.length} epochs logged`;
  if (dir !== null) {
    const { state, policy } = await checkpointPolicy(storage, dir);
    const cfg = state.config;
    const trained = state.data;
    subtitle =
      `${state.backend} backend, seed ${cfg.train.seed}, ${trained.source} (${trained.bars} bars), ` +
      `${state.algo.toUpperCase()}, ${cfg.rollout.episodes} episodes x ${cfg.rollout.steps} steps per rollout, ${records.length} epochs logged`;
    const synthetic = trained.source === 'synthetic';
    const found = typeof bars === 'function';
    const given = found ? (synthetic ? undefined : await bars(trained.source)) : bars;
    if (synthetic || given) {
      // The fingerprint first: other bars may be too short for the splits as well.
      const data = await prepareMarket(cfg, given);
      if (sameData(trained, data.fingerprint)) {
        const label = `${dir === bestDir(outDir) ? 'best/' : 'last/'}, epoch ${state.epoch}`;
        const splits = makeSplits(data.market.n, cfg);
        curves = validationCurves(cfg, policy, { ...data, splits }, label);
      } else if (found) {
        onWarning(
          `${given?.source ?? 'the synthetic market'} is not the data the checkpoint in ${outDir} trained on ` +
            '(it changed since); report.html has no curves: give the bars it trained on with --data',
        );
        subtitle += '; no curves: the data changed since the run';
      } else {
        const now = data.fingerprint;
        throw new RunError(
          `--data ${now.source} (${now.bars} bars) is not the data the checkpoint in ${outDir} trained on ` +
            (synthetic
              ? `(the synthetic market, ${trained.bars} bars); leave --data out: report rebuilds the synthetic market from the config`
              : `(${trained.source}, ${trained.bars} bars); give that file with --data, or leave --data out to read it`),
        );
      }
    } else {
      subtitle += `; no curves: pass the data file ${trained.source} to draw them`;
    }
  }
  const last = records.at(-1);
  return {
    title: `foxhunt run ${outDir}`,
    subtitle,
    epochs: records.map(epochPoint),
    curves,
    ...(summary
      ? summaryParts(summary)
      : {
          tables: last ? [{ caption: `validation split, epoch ${last.epoch}`, report: last.validation }] : [],
          verdict: [],
        }),
  };
}

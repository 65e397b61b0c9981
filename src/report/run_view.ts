/**
 * A RunView from a run directory in any Storage: its log (epochs, summary) and a checkpoint
 * backtested on the validation split. `foxhunt report` and the end of `foxhunt train` use it
 * through src/node/report.ts; the browser worker uses `checkpointCurves` after every epoch.
 */

import type { Config } from '../config.js';
import { makeSplits } from '../data/splits.js';
import type { Policy } from '../eval/policies.js';
import { bestDir, CheckpointError, lastDir } from '../train/checkpoint.js';
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

type Loaded = Awaited<ReturnType<typeof checkpointPolicy>>;

/**
 * The checkpoint a report draws: best/, else last/, loaded; `skipped` says why each one that is
 * there could not be loaded (a damaged file: CheckpointError), one line each.
 */
async function reportCheckpoint(
  storage: Storage,
  outDir: string,
): Promise<{ checkpoint: (Loaded & { label: string }) | null; skipped: string[] }> {
  const skipped: string[] = [];
  for (const [label, path] of [
    ['best/', bestDir(outDir)],
    ['last/', lastDir(outDir)],
  ] as const) {
    const dir = await committedDir(storage, path);
    if (dir === null) continue;
    try {
      return { checkpoint: { ...(await checkpointPolicy(storage, dir)), label }, skipped };
    } catch (err) {
      if (!(err instanceof CheckpointError)) throw err;
      // The error's advice (use the other checkpoint) is what the report does.
      skipped.push(err.message.split('; ')[0]);
    }
  }
  return { checkpoint: null, skipped };
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
  const { checkpoint, skipped } = await reportCheckpoint(storage, outDir);
  if (!checkpoint && skipped.length && records.length === 0)
    throw new RunError(
      `${outDir}: nothing to report: no epoch is logged and no checkpoint loads (${skipped.join('; ')}); ` +
        'train again (--force replaces the run)',
    );
  const next = checkpoint ? `report.html draws ${checkpoint.label}` : 'report.html has no curves';
  for (const why of skipped) onWarning(`${why}: skipped, ${next}`);
  let curves: Curves | null = null;
  let subtitle = `${records[0]?.backend ?? 'no'} backend, ${records.length} epochs logged`;
  if (!checkpoint && skipped.length)
    subtitle += `; no curves: ${skipped.length === 2 ? 'neither best/ nor last/ can' : 'its checkpoint cannot'} be loaded`;
  if (checkpoint !== null) {
    const { state, policy } = checkpoint;
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
        const label = `${checkpoint.label}, epoch ${state.epoch}`;
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

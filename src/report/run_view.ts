/**
 * A RunView from a run directory in any Storage: its log (epochs, summary) and a checkpoint
 * backtested on the validation split. `foxhunt report` and the end of `foxhunt train` use it
 * through src/node/report.ts; the browser worker uses `checkpointCurves` after every epoch.
 */
import { bestDir, lastDir } from '../train/checkpoint.js';
import { checkpointPolicy } from '../train/dqn_checkpoint.js';
import { type PreparedData, prepareData, type SourcedBars } from '../train/run.js';
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
  const cfg = state.config;
  return backtestCurves(
    data.market,
    data.splits.val,
    'validation',
    cfg.env,
    policy,
    cfg.train.seed,
    data.barsPerYear,
    `${label}, epoch ${state.epoch}`,
  ).curves;
}

/**
 * The view of the run in `outDir`. `bars`: the data file it trained on (the synthetic market is
 * rebuilt from the config); without them a run on a file gets no curves, and `note` says why.
 */
export async function runViewOf(
  storage: Storage,
  outDir: string,
  bars: SourcedBars | undefined,
): Promise<RunView> {
  const records = await readLog(storage, outDir);
  const summary = await readSummary(storage, outDir);
  const dir =
    (await committedDir(storage, bestDir(outDir))) ?? (await committedDir(storage, lastDir(outDir)));
  let curves: Curves | null = null;
  let subtitle = `${records[0]?.backend ?? 'no'} backend, ${records.length} epochs logged`;
  if (dir !== null) {
    const { state } = await checkpointPolicy(storage, dir);
    const cfg = state.config;
    subtitle =
      `${state.backend} backend, seed ${cfg.train.seed}, ${state.data.source} (${state.data.bars} bars), ` +
      `${state.algo.toUpperCase()}, ${cfg.rollout.episodes} episodes x ${cfg.rollout.steps} steps per rollout, ${records.length} epochs logged`;
    if (state.data.source === 'synthetic' || bars) {
      const data = await prepareData(cfg, state.data.source === 'synthetic' ? undefined : bars);
      curves = await checkpointCurves(storage, dir, data, dir === bestDir(outDir) ? 'best/' : 'last/');
    } else {
      subtitle += `; no curves: pass the data file ${state.data.source} to draw them`;
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

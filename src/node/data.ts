/** Market bars from a file, for the CLI: the Node side of prepareData (src/train/run.ts). */
import { DataError } from '../data/errors.js';
import { type LoadOptions, loadBars, repairLine } from '../data/load.js';
import { NEWEST_FIRST } from '../data/validate.js';
import type { SourcedBars } from '../train/run.js';

/** Bars from a file and, when repairs were asked for, the one line of what they changed. */
export type LoadedBars = SourcedBars & { repairs: string | null };

/**
 * loadBars, with a row's broken rule (not a file-wide problem) saying how to go on without the row:
 * `--drop-invalid` (the CLI's data commands, train, backtest and report all take it).
 */
export async function loadBarsWithHint(file: string, opts: LoadOptions): ReturnType<typeof loadBars> {
  try {
    return await loadBars(file, opts);
  } catch (err) {
    if (
      err instanceof DataError &&
      /\brow \d/.test(err.where) &&
      err.rule !== 'malformed quotes' &&
      err.rule !== 'row too long' &&
      !err.detail.includes(NEWEST_FIRST) &&
      !opts.dropInvalid
    )
      err.message += '; --drop-invalid drops such rows (foxhunt data check FILE --drop-invalid counts them)';
    throw err;
  }
}

/**
 * Reads and validates `file` (CSV or Parquet), repaired as `opts` asks (--drop-invalid,
 * --fill-gaps: the source then names them, so checkpoints and messages say what the run saw);
 * undefined when no file is given (synthetic market).
 */
export async function loadSourcedBars(
  file: string | undefined,
  opts: LoadOptions = {},
): Promise<LoadedBars | undefined> {
  if (file === undefined) return undefined;
  const { bars, report } = await loadBarsWithHint(file, opts);
  const flags = [opts.dropInvalid ? '--drop-invalid' : '', opts.fillGaps ? '--fill-gaps' : ''].filter(
    Boolean,
  );
  return {
    bars,
    source: flags.length ? `${file} (${flags.join(' ')})` : file,
    repairs: repairLine(report, opts),
  };
}

/** The file and repairs of a source that loadSourcedBars named (`FILE (--drop-invalid --fill-gaps)`). */
export function sourceFile(source: string): { file: string; opts: LoadOptions } {
  const m = / \(((?:--drop-invalid|--fill-gaps)(?: --fill-gaps)?)\)$/.exec(source);
  if (!m) return { file: source, opts: {} };
  return {
    file: source.slice(0, m.index),
    opts: { dropInvalid: m[1].includes('--drop-invalid'), fillGaps: m[1].includes('--fill-gaps') },
  };
}

/** The repair flags of `train`, `backtest` and `report` (as `data check`'s); an error line when they lack --data. */
export function repairOptions(values: Record<string, unknown>): { opts: LoadOptions; error: string | null } {
  const opts = { fillGaps: values['fill-gaps'] === true, dropInvalid: values['drop-invalid'] === true };
  const error =
    (opts.fillGaps || opts.dropInvalid) && values.data === undefined
      ? '--drop-invalid and --fill-gaps repair the bars of --data FILE; the synthetic market needs no repair'
      : null;
  return { opts, error };
}

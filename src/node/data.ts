/** Market bars from a file, for the CLI: the Node side of prepareData (src/train/run.ts). */
import { loadBars } from '../data/load.js';
import type { SourcedBars } from '../train/run.js';

/** Reads and validates `file` (CSV or Parquet); undefined when no file is given (synthetic market). */
export async function loadSourcedBars(file: string | undefined): Promise<SourcedBars | undefined> {
  if (file === undefined) return undefined;
  return { bars: (await loadBars(file)).bars, source: file };
}

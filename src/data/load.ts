/**
 * One entry point for market files: pick the reader by extension, apply the SPEC 1 rules, run
 * the explicit repairs the caller asked for, and say what was touched.
 */
import { formatOf } from './bytes.js';
import { readCsvTable, writeCsv } from './csv.js';
import { DataError } from './errors.js';
import { fillGaps } from './gaps.js';
import { readParquetTable, writeParquet } from './parquet.js';
import type { Bars } from './types.js';
import { validateTable } from './validate.js';

export interface LoadOptions {
  /** Insert flat zero-volume bars for missing bars at the modal interval (gaps.ts). */
  fillGaps?: boolean;
  /** Drop rows that break a rule instead of failing on the first one. */
  dropInvalid?: boolean;
}

export interface LoadReport {
  file: string;
  /** Data rows in the file. */
  rowsRead: number;
  /** Rows removed by dropInvalid, and the first one's error. */
  dropped: number;
  firstDropped: string | null;
  /** Bars inserted by fillGaps, and the gaps they closed. */
  filled: number;
  gapsFilled: number;
}

export { type DataFormat, formatOf } from './bytes.js';

export async function loadBars(
  file: string,
  opts: LoadOptions = {},
): Promise<{ bars: Bars; report: LoadReport }> {
  const table = formatOf(file) === 'csv' ? await readCsvTable(file) : await readParquetTable(file);
  const valid = validateTable(table, { dropInvalid: opts.dropInvalid });
  let bars = valid.bars;
  let filled = 0;
  let gapsFilled = 0;
  if (opts.fillGaps) {
    try {
      const f = fillGaps(bars);
      bars = f.bars;
      filled = f.filled;
      gapsFilled = f.gaps;
    } catch (err) {
      throw new DataError(file, 'file', 'fill-gaps refused', (err as Error).message);
    }
  }
  return {
    bars,
    report: {
      file,
      rowsRead: table.n,
      dropped: valid.dropped,
      firstDropped: valid.firstDropped,
      filled,
      gapsFilled,
    },
  };
}

/** Writes bars as CSV or Parquet, by the path's extension. */
export async function saveBars(file: string, bars: Bars): Promise<void> {
  if (formatOf(file) === 'csv') await writeCsv(file, bars);
  else writeParquet(file, bars);
}

/** One line on what --drop-invalid / --fill-gaps changed, or null when they were not asked for. */
export function repairLine(report: LoadReport, opts: LoadOptions): string | null {
  const parts: string[] = [];
  if (opts.dropInvalid) {
    parts.push(
      `dropped ${report.dropped} invalid row(s)${report.firstDropped ? ` (first: ${report.firstDropped})` : ''}`,
    );
  }
  if (opts.fillGaps) parts.push(`filled ${report.filled} missing bar(s) in ${report.gapsFilled} gap(s)`);
  return parts.length ? parts.join('; ') : null;
}

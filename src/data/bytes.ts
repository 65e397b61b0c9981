/**
 * Market bars from a file's contents, without a file system: what the browser page does with a
 * dropped CSV or Parquet file. The same readers and rules as `foxhunt data check` (load.ts), so
 * the same file fails with the same file / row / rule message.
 */
import { parseCsvTable } from './csv_parse.js';
import { DataError } from './errors.js';
import { parseParquetTable } from './parquet_parse.js';
import type { Bars } from './types.js';
import { validateTable } from './validate.js';

export type DataFormat = 'csv' | 'parquet';

/** The format of a path by its extension, or a DataError saying which ones are known. */
export function formatOf(file: string): DataFormat {
  const base = file.slice(file.lastIndexOf('/') + 1);
  const dot = base.lastIndexOf('.');
  const ext = dot > 0 ? base.slice(dot).toLowerCase() : '';
  if (ext === '.csv') return 'csv';
  if (ext === '.parquet' || ext === '.pq') return 'parquet';
  const fix = COMPRESSED.has(ext)
    ? 'a compressed file: extract the .csv or .parquet inside first'
    : DELIMITED.has(ext)
      ? 'delimited text reads as CSV (comma, semicolon or tab): rename it to .csv'
      : 'use .csv or .parquet';
  throw new DataError(file, 'file', 'unknown format', `extension "${ext}"; ${fix}`);
}

/** Archives a market file often comes in (Binance's klines are zipped CSV). */
const COMPRESSED = new Set(['.zip', '.gz', '.bz2', '.xz', '.zst', '.7z', '.tgz']);
/** Delimited text under another name. */
const DELIMITED = new Set(['.tsv', '.txt', '.tab', '.dat']);

/** Parses and validates `bytes` named `file` (its extension picks the reader); throws DataError. */
export async function barsFromBytes(file: string, bytes: Uint8Array): Promise<{ bars: Bars; rows: number }> {
  const table =
    formatOf(file) === 'csv'
      ? await parseCsvTable(new TextDecoder().decode(bytes), file)
      : await parseParquetTable(
          bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
          file,
        );
  return { bars: validateTable(table).bars, rows: table.n };
}

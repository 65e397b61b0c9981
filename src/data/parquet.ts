/**
 * Parquet <-> bars with hyparquet (reader) and hyparquet-writer. Reading goes row group by row
 * group, column chunk by column chunk (`onChunk`, no row objects); timestamps may be TIMESTAMP columns (read as Date),
 * epoch integers or ISO strings (cells.ts decides the unit). Row numbers in errors count data
 * rows from 1.
 */
import { type AsyncBuffer, asyncBufferFromFile } from 'hyparquet';
import { parquetWriteFile } from 'hyparquet-writer';
import { DataError } from './errors.js';
import { parseParquetTable } from './parquet_parse.js';
import type { RawTable } from './table.js';
import type { Bars } from './types.js';

/** Reads a Parquet file into columns; rules are checked afterwards by validateTable. */
export async function readParquetTable(file: string): Promise<RawTable> {
  let buffer: AsyncBuffer;
  try {
    buffer = await asyncBufferFromFile(file);
  } catch (err) {
    throw new DataError(file, 'file', 'not a readable Parquet file', (err as Error).message);
  }
  return parseParquetTable(buffer, file);
}

/**
 * Writes bars as Parquet: `timestamp` as INT64 TIMESTAMP_MILLIS (whole ms), prices, volume and
 * spread (bps, when present) as DOUBLE, snappy-compressed.
 */
export function writeParquet(file: string, bars: Bars): void {
  const columnData = [
    { name: 'timestamp', data: Float64Array.from(bars.timestamp, Math.round), type: 'TIMESTAMP' as const },
    { name: 'open', data: bars.open, type: 'DOUBLE' as const },
    { name: 'high', data: bars.high, type: 'DOUBLE' as const },
    { name: 'low', data: bars.low, type: 'DOUBLE' as const },
    { name: 'close', data: bars.close, type: 'DOUBLE' as const },
    { name: 'volume', data: bars.volume, type: 'DOUBLE' as const },
  ];
  if (bars.spreadBps) columnData.push({ name: 'spread', data: bars.spreadBps, type: 'DOUBLE' as const });
  parquetWriteFile({
    filename: file,
    columnData: columnData.map((c) => ({ ...c, nullable: false })),
  });
}

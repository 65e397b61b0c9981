/**
 * Parquet bytes -> columns with hyparquet, without touching a file system (parquet.ts opens
 * files for the CLI; the browser page passes a dropped file's bytes). Reading goes row group by
 * row group, column chunk by column chunk (`onChunk`, no row objects); timestamps may be TIMESTAMP
 * columns, epoch integers or ISO strings (cells.ts decides the unit). Row numbers in errors count
 * data rows from 1.
 */
import {
  type AsyncBuffer,
  type ColumnData,
  type Compressors,
  type FileMetaData,
  parquetMetadataAsync,
  parquetRead,
} from 'hyparquet';
import {
  decompressBrotli,
  decompressLz4,
  decompressLz4Raw,
  decompressZstd,
  gunzip,
} from 'hyparquet-compressors';
import { type CellProblem, InstantMs, parseNumberCell, parseTimestampCell } from './cells.js';
import { DataError } from './errors.js';
import { findColumns, type RawTable } from './table.js';

type Key = 'timestamp' | 'open' | 'high' | 'low' | 'close' | 'volume' | 'spread' | 'bid' | 'ask';
const KEYS: Key[] = ['timestamp', 'open', 'high', 'low', 'close', 'volume', 'spread', 'bid', 'ask'];

/**
 * The codecs hyparquet lacks (it reads snappy and uncompressed itself): ZSTD (Polars' default),
 * GZIP, BROTLI, LZ4, from hyparquet-compressors (pure JS, so the browser page reads them too).
 */
const CODECS: Compressors = {
  GZIP: (input, length) => gunzip(input, new Uint8Array(length)),
  BROTLI: decompressBrotli,
  ZSTD: (input) => decompressZstd(input),
  LZ4: decompressLz4,
  LZ4_RAW: decompressLz4Raw,
};

/**
 * Parses Parquet bytes into columns; rules are checked afterwards by validateTable. `buffer` is
 * hyparquet's AsyncBuffer (a file in Node) or an ArrayBuffer (a file dropped on the page); `file`
 * names it in errors.
 */
export async function parseParquetTable(buffer: AsyncBuffer | ArrayBuffer, file: string): Promise<RawTable> {
  let metadata: FileMetaData;
  try {
    metadata = await parquetMetadataAsync(buffer);
  } catch (err) {
    throw new DataError(file, 'file', 'not a readable Parquet file', (err as Error).message);
  }
  // Top-level column names: the schema is flattened depth-first under a root element.
  const names: string[] = [];
  for (let i = 1; i < metadata.schema.length; ) {
    names.push(metadata.schema[i].name);
    let skip = 1;
    for (let pending = metadata.schema[i].num_children ?? 0; pending > 0; pending--, skip++) {
      pending += metadata.schema[i + skip].num_children ?? 0;
    }
    i += skip;
  }
  const found = findColumns(names);
  if (found.missing) {
    throw new DataError(
      file,
      'schema',
      `missing column "${found.missing}"`,
      `${found.hint ? `${found.hint}; ` : ''}found: ${names.join(', ')}`,
    );
  }
  const n = Number(metadata.num_rows);
  if (n === 0) throw new DataError(file, 'file', 'empty file', 'no data rows');
  const quote = found.index.spread >= 0 ? 'spread' : found.index.bid >= 0 ? 'bidask' : null;
  const wanted = KEYS.filter(
    (k) =>
      found.index[k] >= 0 &&
      (k === 'spread' ? quote === 'spread' : k === 'bid' || k === 'ask' ? quote === 'bidask' : true),
  );
  const cols = new Map<string, { key: Key; order: number; data: Float64Array }>();
  for (const [order, key] of wanted.entries()) {
    cols.set(names[found.index[key]], { key, order, data: new Float64Array(n) });
  }
  // Per row, the problem of the leftmost bad column, whatever order the chunks arrive in.
  const problems = new Map<number, CellProblem>();
  const problemOrder = new Map<number, number>();
  const ts = { scale: 0, last: null as CellProblem | null };
  const cell = { last: null as CellProblem | null };
  const onChunk = ({ columnName, columnData, rowStart, rowEnd }: ColumnData) => {
    const col = cols.get(columnName);
    if (!col) return;
    for (let r = rowStart; r < rowEnd; r++) {
      const raw = columnData[r - rowStart];
      let x: number;
      let problem: CellProblem | null;
      if (col.key === 'timestamp') {
        ts.last = null;
        x = parseTimestampCell(raw, ts);
        problem = ts.last;
      } else {
        cell.last = null;
        x = parseNumberCell(raw, col.key, cell);
        problem = cell.last;
      }
      col.data[r] = x;
      if (problem && (problemOrder.get(r) ?? KEYS.length) > col.order) {
        problems.set(r, problem);
        problemOrder.set(r, col.order);
      }
    }
  };
  try {
    // One row group at a time: hyparquet decodes every requested group at once and keeps them all
    // until the read ends (ISO timestamps as strings, TIMESTAMP cells as Dates), so a whole 5M-row
    // file held ~1.8 GB where one group of it is a few hundred MB at most.
    let groupStart = 0;
    for (const group of metadata.row_groups) {
      const groupEnd = groupStart + Number(group.num_rows);
      if (groupEnd > groupStart)
        await parquetRead({
          file: buffer,
          metadata,
          rowStart: groupStart,
          rowEnd: groupEnd,
          compressors: CODECS,
          // TIMESTAMP(MICROS / NANOS) with their sub-millisecond part (hyparquet's Dates truncate it).
          parsers: {
            timestampFromMicroseconds: InstantMs.fromMicros,
            timestampFromNanoseconds: InstantMs.fromNanos,
          },
          columns: [...cols.keys()],
          onChunk,
        });
      groupStart = groupEnd;
    }
  } catch (err) {
    throw new DataError(file, 'file', 'cannot decode Parquet data', (err as Error).message);
  }
  const get = (key: Key) => [...cols.values()].find((c) => c.key === key)?.data ?? null;
  return {
    file,
    n,
    timestamp: get('timestamp')!,
    open: get('open')!,
    high: get('high')!,
    low: get('low')!,
    close: get('close')!,
    volume: get('volume')!,
    spread: get('spread'),
    bid: get('bid'),
    ask: get('ask'),
    problems,
    where: (r) => `data row ${r + 1}`,
  };
}

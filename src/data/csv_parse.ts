/**
 * CSV text -> columns, without touching a file system: the CLI feeds it a file stream
 * (csv.ts), the browser page a dropped File. Row numbers in errors: `data row R` counts data rows
 * from 1 (header excluded, blank lines skipped); `line L` is the physical line, assuming no quoted
 * field spans lines.
 */
import Papa from 'papaparse';
import { type CellProblem, parseNumberCell, parseTimestampCell } from './cells.js';
import { DataError } from './errors.js';
import { Column, findColumns, type RawTable } from './table.js';

/**
 * Chunks (64 KiB each) that may pass without completing a row before the reader stops: a quoted
 * field that never closes (or a file without line breaks) makes papaparse keep the rest of the file
 * as one pending row and rescan it with every chunk, quadratic in the file (176 s and 1.9 GB for a
 * 186 MB file whose valid twin reads in 8 s). No market row comes near 1 MiB.
 */
const MAX_PENDING_CHUNKS = 16;

/** What papaparse reads: a Node readable stream, a Blob or File, or the text. */
export type CsvInput = NodeJS.ReadableStream | Blob | string;

/**
 * Parses CSV into columns; rules are checked afterwards by validateTable. `input` is a Node stream
 * (the CLI), a Blob (a file dropped on the page) or the text itself; `file` names it in errors.
 */
export async function parseCsvTable(input: CsvInput, file: string): Promise<RawTable> {
  const cols = {
    timestamp: new Column(),
    open: new Column(),
    high: new Column(),
    low: new Column(),
    close: new Column(),
    volume: new Column(),
    spread: new Column(),
    bid: new Column(),
    ask: new Column(),
  };
  const problems = new Map<number, CellProblem>();
  /** Data-row indices before which blank lines were skipped (one entry per blank line). */
  const blankBefore: number[] = [];
  let idx: ReturnType<typeof findColumns>['index'] | null = null;
  let columns = 0;
  let quote: 'spread' | 'bidask' | null = null;
  let rows = 0;
  let failure: DataError | null = null;
  let pendingChunks = 0;
  const ts = { scale: 0, last: null as CellProblem | null };
  const num = { last: null as CellProblem | null };

  const where = (r: number) => {
    let skipped = 0;
    while (skipped < blankBefore.length && blankBefore[skipped] <= r) skipped++;
    return `data row ${r + 1} (line ${r + 2 + skipped})`;
  };

  const takeRow = (row: string[]) => {
    if (!idx) {
      if (row.length > 0 && row[0].charCodeAt(0) === 0xfeff) {
        // After a BOM papaparse reads an opening quote as text: `\uFEFF"timestamp"` keeps its quotes.
        const first = row[0].slice(1);
        row[0] = /^"[\s\S]*"$/.test(first) ? first.slice(1, -1).replace(/""/g, '"') : first;
      }
      // Blank lines before the header are skipped (and counted in line numbers) like later ones.
      if (row.every((h) => h.trim() === '')) {
        blankBefore.push(0);
        return;
      }
      const found = findColumns(row);
      if (found.missing) {
        throw new DataError(
          file,
          `header (line ${blankBefore.length + 1})`,
          `missing column "${found.missing}"`,
          `${found.hint ? `${found.hint}; ` : ''}found: ${row.map((h) => h.trim()).join(', ')}`,
        );
      }
      idx = found.index;
      columns = row.length;
      quote = idx.spread >= 0 ? 'spread' : idx.bid >= 0 ? 'bidask' : null;
      return;
    }
    // A blank line, or one of delimiters only (a spreadsheet's empty rows, `,,,,,`): no data.
    if (row[0].trim() === '' && row.every((c) => c.trim() === '')) {
      blankBefore.push(rows);
      return;
    }
    const r = rows++;
    let first: CellProblem | null = null;
    // A cell past the header's last column means the row's cells are shifted (an unquoted
    // delimiter, `1,000` as a volume): cells read by position would be silently wrong. Empty
    // ones (a trailing delimiter) are harmless.
    for (let c = columns; c < row.length && !first; c++) {
      if (row[c].trim() !== '') {
        first = {
          rule: 'too many fields',
          detail: `${row.length} fields where the header has ${columns}; a cell holding the delimiter must be quoted`,
        };
      }
    }
    ts.last = null;
    cols.timestamp.push(parseTimestampCell(row[idx.timestamp] ?? '', ts));
    first ??= ts.last;
    num.last = null;
    cols.open.push(parseNumberCell(row[idx.open] ?? '', 'open', num));
    cols.high.push(parseNumberCell(row[idx.high] ?? '', 'high', num));
    cols.low.push(parseNumberCell(row[idx.low] ?? '', 'low', num));
    cols.close.push(parseNumberCell(row[idx.close] ?? '', 'close', num));
    cols.volume.push(parseNumberCell(row[idx.volume] ?? '', 'volume', num));
    if (quote === 'spread') cols.spread.push(parseNumberCell(row[idx.spread] ?? '', 'spread', num));
    else if (quote === 'bidask') {
      cols.bid.push(parseNumberCell(row[idx.bid] ?? '', 'bid', num));
      cols.ask.push(parseNumberCell(row[idx.ask] ?? '', 'ask', num));
    }
    first ??= num.last;
    if (first) problems.set(r, first);
  };

  await new Promise<void>((resolve, reject) => {
    // One call for all three inputs: papaparse picks its streamer by the runtime type.
    Papa.parse<string[]>(input as File, {
      header: false,
      chunkSize: 1 << 16,
      chunk(results, parser) {
        try {
          const bad = results.errors.find((e) => e.type === 'Quotes');
          if (bad) {
            throw new DataError(file, where(rows), 'malformed quotes', bad.message);
          }
          for (const row of results.data) takeRow(row);
          pendingChunks = results.data.length ? 0 : pendingChunks + 1;
          if (pendingChunks > MAX_PENDING_CHUNKS) {
            throw new DataError(
              file,
              idx ? where(rows) : `header (line ${blankBefore.length + 1})`,
              'row too long',
              `no line break outside quotes in ${MAX_PENDING_CHUNKS * 64} KiB: a quoted field without its closing quote, or not a CSV of lines`,
            );
          }
        } catch (err) {
          failure = err as DataError;
          parser.abort();
        }
      },
      complete: () => resolve(),
      error: (err) => reject(new DataError(file, 'file', 'cannot read', err.message)),
    });
  });
  if (failure) throw failure;
  if (!idx) throw new DataError(file, 'file', 'empty file', 'no header row');
  const data = (c: Column) => c.data.subarray(0, rows);
  return {
    file,
    n: rows,
    timestamp: data(cols.timestamp),
    open: data(cols.open),
    high: data(cols.high),
    low: data(cols.low),
    close: data(cols.close),
    volume: data(cols.volume),
    spread: quote === 'spread' ? data(cols.spread) : null,
    bid: quote === 'bidask' ? data(cols.bid) : null,
    ask: quote === 'bidask' ? data(cols.ask) : null,
    problems,
    where,
  };
}

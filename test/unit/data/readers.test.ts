import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { type AsyncBuffer, parquetMetadata } from 'hyparquet';
import { parquetWriteBuffer, parquetWriteFile } from 'hyparquet-writer';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { InstantMs, parseIsoMs, parseNumberCell } from '../../../src/data/cells.js';
import { parseCsvTable } from '../../../src/data/csv_parse.js';
import { DataError } from '../../../src/data/errors.js';
import { loadBars, saveBars } from '../../../src/data/load.js';
import { parseParquetTable } from '../../../src/data/parquet_parse.js';
import { generateSynthetic } from '../../../src/data/synthetic.js';
import type { Bars } from '../../../src/data/types.js';
import { validateTable } from '../../../src/data/validate.js';
import { loadSourcedBars } from '../../../src/node/data.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'foxhunt-data-'));
});

const HEADER = 'timestamp,open,high,low,close,volume';
/** Five valid one-minute bars as CSV lines (no header). */
function goodRows(): string[] {
  return [0, 1, 2, 3, 4].map(
    (i) => `2024-03-01T10:0${i}:00Z,${100 + i},${101.5 + i},${99.5 + i},${100.5 + i},${10 * (i + 1)}`,
  );
}
function csvFile(name: string, lines: string[]): string {
  const path = join(dir, name);
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}
/** A CSV whose data row `row` (1-based) is replaced by `line`. */
function withRow(name: string, row: number, line: string): string {
  const rows = goodRows();
  rows[row - 1] = line;
  return csvFile(name, [HEADER, ...rows]);
}
async function loadError(path: string, opts = {}): Promise<DataError> {
  try {
    await loadBars(path, opts);
  } catch (err) {
    expect(err).toBeInstanceOf(DataError);
    return err as DataError;
  }
  throw new Error(`${path} loaded without error`);
}

describe('CSV validation names file, row and rule', () => {
  const cases: [string, number, string, string][] = [
    ['nan.csv', 3, '2024-03-01T10:02:00Z,102,103.5,101.5,NaN,30', 'NaN value'],
    ['negative-price.csv', 2, '2024-03-01T10:01:00Z,-101,102.5,100.5,101.5,20', 'price <= 0'],
    ['high-below-low.csv', 4, '2024-03-01T10:03:00Z,103,99,104,103.5,40', 'high < low'],
    ['high-below-close.csv', 2, '2024-03-01T10:01:00Z,101,101.2,100.5,101.5,20', 'high < max(open, close)'],
    ['low-above-open.csv', 2, '2024-03-01T10:01:00Z,101,102.5,101.2,101.5,20', 'low > min(open, close)'],
    ['negative-volume.csv', 5, '2024-03-01T10:04:00Z,104,105.5,103.5,104.5,-1', 'volume < 0'],
    ['duplicate.csv', 3, '2024-03-01T10:01:00Z,102,103.5,101.5,102.5,30', 'duplicate timestamp'],
    ['backwards.csv', 3, '2024-03-01T10:00:30Z,102,103.5,101.5,102.5,30', 'timestamp before previous row'],
    ['wrong-type.csv', 2, '2024-03-01T10:01:00Z,101,102.5,100.5,101.5,lots', 'wrong type'],
    ['bad-time.csv', 2, 'yesterday,101,102.5,100.5,101.5,20', 'wrong type'],
    ['missing-value.csv', 2, '2024-03-01T10:01:00Z,101,,100.5,101.5,20', 'missing value'],
    // An unquoted thousands separator: volume would read 1 and the "000" cell be ignored.
    ['too-many-fields.csv', 3, '2024-03-01T10:02:00Z,102,103.5,101.5,102.5,1,000', 'too many fields'],
  ];
  for (const [name, row, line, rule] of cases) {
    it(`${rule} (${name})`, async () => {
      const path = withRow(name, row, line);
      const err = await loadError(path);
      expect(err.file).toBe(path);
      expect(err.rule).toBe(rule);
      expect(err.message).toContain(path);
      expect(err.message).toContain(`data row ${row} (line ${row + 1})`);
      expect(err.message).toContain(rule);
    });
  }

  it('missing column names the column and the header line', async () => {
    const path = csvFile('no-volume.csv', ['timestamp,open,high,low,close', '2024-03-01T10:00:00Z,1,2,1,1']);
    const err = await loadError(path);
    expect(err.message).toContain(path);
    expect(err.message).toContain('header (line 1)');
    expect(err.message).toContain(
      'missing column "volume" (a market without volume (FX quotes) needs a volume column of 0s',
    );
  });

  it('reads a Date (or Datetime, time) column as the timestamp; refuses separate date and time columns', async () => {
    const rows = goodRows();
    // Yahoo Finance's daily export: Date first, an Adj Close column beside Close.
    const yahoo = csvFile('yahoo.csv', [
      'Date,Open,High,Low,Close,Adj Close,Volume',
      ...rows.map((r) => {
        const c = r.split(',');
        return [c[0], c[1], c[2], c[3], c[4], '1', c[5]].join(',');
      }),
    ]);
    const ref = await loadBars(csvFile('ref.csv', [HEADER, ...rows]));
    const got = await loadBars(yahoo);
    expect(got.bars.timestamp).toEqual(ref.bars.timestamp);
    expect(got.bars.close).toEqual(ref.bars.close);
    const both = csvFile('date-time.csv', [
      'Date,Time,Open,High,Low,Close,Volume',
      '2024-03-01,10:00:00,1,2,1,1,1',
    ]);
    const err = await loadError(both);
    expect(err.message).toContain('missing column "timestamp" (date and time are separate columns');
    // timestamp wins over an alias beside it.
    const named = csvFile('named.csv', [
      'date,timestamp,open,high,low,close,volume',
      ...rows.map((r) => `x,${r}`),
    ]);
    expect((await loadBars(named)).bars.timestamp).toEqual(ref.bars.timestamp);
    const none = csvFile('no-time.csv', ['when,open,high,low,close,volume', ...rows]);
    expect((await loadError(none)).message).toContain(
      'the time column may also be called datetime, date, time',
    );
  });

  it("reads Yahoo's null cells as missing values and reports a row's leftmost bad cell", async () => {
    // Yahoo Finance writes a day without data as `null` in every cell but the date.
    const yahoo = withRow('yahoo-null.csv', 2, '2024-03-01T10:01:00Z,null,null,null,null,null');
    const err = await loadError(yahoo);
    expect(err.rule).toBe('missing value');
    expect(err.message).toContain('data row 2 (line 3): missing value (open=null)');
    for (const marker of ['NA', 'N/A', 'None', '#N/A']) {
      const path = withRow(
        `marker-${marker.replace('/', '')}.csv`,
        3,
        `2024-03-01T10:02:00Z,102,103.5,101.5,102.5,${marker}`,
      );
      expect((await loadError(path)).message).toContain(`missing value (volume=${marker})`);
    }
    const two = withRow('two-bad.csv', 2, '2024-03-01T10:01:00Z,101,102.5,abc,101.5,lots');
    expect((await loadError(two)).message).toContain('wrong type (low="abc" is not a number)');
    const comma = withRow('comma.csv', 2, '2024-03-01T10:01:00Z,"101,25",102.5,100.5,101.5,20');
    expect((await loadError(comma)).message).toContain(
      'open="101,25" is not a number (a decimal comma or a thousands separator: write 1234.5)',
    );
  });

  it('says a newest-first file must be reversed, without offering to drop its rows', async () => {
    const path = csvFile('newest-first.csv', [HEADER, ...goodRows().reverse()]);
    const err = await loadError(path);
    expect(err.message).toContain(
      'data row 2 (line 3): timestamp before previous row (2024-03-01T10:03:00.000Z < 2024-03-01T10:04:00.000Z; rows must be in time order (the file runs newest first: reverse its data rows, oldest first))',
    );
    await expect(loadSourcedBars(path)).rejects.toThrow(/oldest first\)\)$/);
    // One row out of order in a file that runs forward: no such advice, and --drop-invalid is offered.
    const rows = goodRows();
    [rows[1], rows[2]] = [rows[2], rows[1]];
    const swapped = csvFile('swapped.csv', [HEADER, ...rows]);
    expect((await loadError(swapped)).message).not.toContain('newest first');
    await expect(loadSourcedBars(swapped)).rejects.toThrow(/--drop-invalid drops such rows/);
  });

  it('names the fix when the header is missing or names the time column otherwise', async () => {
    const rows = goodRows().map((r) =>
      r.replace(/^2024-03-01T10:0(\d):00Z/, (_, m) => String(Date.UTC(2024, 2, 1, 10, +m))),
    );
    // Binance's kline files: no header line.
    const bare = csvFile('no-header.csv', rows);
    expect((await loadError(bare)).message).toContain(
      'missing column "timestamp" (the first line holds numbers, not column names: add a header line naming the columns (timestamp,open,high,low,close,volume, in the file\'s order)',
    );
    const binance = csvFile('open-time.csv', [
      'Open Time,Open,High,Low,Close,Volume,Close Time',
      ...rows.map((r) => `${r},0`),
    ]);
    expect((await loadError(binance)).message).toContain(
      'missing column "timestamp" (rename the column of each bar\'s start time ("Open Time" or "Close Time") to "timestamp"',
    );
    // CryptoDataDownload: a URL above the header, and volume in two currencies.
    const titled = csvFile('titled.csv', ['https://www.CryptoDataDownload.com', HEADER, ...goodRows()]);
    expect((await loadError(titled)).message).toContain(
      'missing column "timestamp" (the first line is one field, not the column names: delete the lines above the header',
    );
    const twoVolumes = csvFile('two-volumes.csv', [
      'timestamp,open,high,low,close,Volume BTC,Volume USDT',
      ...goodRows().map((r) => `${r},1`),
    ]);
    expect((await loadError(twoVolumes)).message).toContain(
      'missing column "volume" (rename the column to use ("Volume BTC" or "Volume USDT") to "volume"',
    );
    // Nasdaq.com: Close/Last, and dollar signs in the cells.
    const nasdaq = csvFile('nasdaq.csv', [
      'Date,Close/Last,Volume,Open,High,Low',
      '2024-03-01,$100.5,10,$100,$101.5,$99.5',
    ]);
    expect((await loadError(nasdaq)).message).toContain(
      'missing column "close" (rename the column to use ("Close/Last") to "close"',
    );
    const dollars = csvFile('dollars.csv', [
      'Date,Close,Volume,Open,High,Low',
      '2024-03-01,$100.5,10,$100,$101.5,$99.5',
    ]);
    expect((await loadError(dollars)).message).toContain(
      'open="$100" is not a number (a currency sign: write the bare number)',
    );
    // pandas' to_csv of an unnamed DatetimeIndex, and yfinance's multi-level columns.
    const unnamed = csvFile('unnamed.csv', [',open,high,low,close,volume', ...goodRows()]);
    expect((await loadError(unnamed)).message).toContain(
      'missing column "timestamp" (the first column has no name (pandas writes an unnamed index so): name it "timestamp"',
    );
    const yf = csvFile('yfinance.csv', [
      'Price,Close,High,Low,Open,Volume',
      'Ticker,AAPL,AAPL,AAPL,AAPL,AAPL',
      'Date,,,,,',
      '2024-03-01,100.5,101.5,99.5,100,10',
    ]);
    expect((await loadError(yf)).message).toContain(
      'missing column "timestamp" (yfinance\'s header of 3 lines (Price, Ticker, Date): download with multi_level_index=False, or write df.droplevel("Ticker", axis=1); found: Price',
    );
    // pandas writes an unnamed DatetimeIndex as __index_level_0__.
    const pq = join(dir, 'unnamed-index.parquet');
    const t0 = Date.UTC(2024, 0, 1);
    parquetWriteFile({
      filename: pq,
      columnData: [
        { name: 'open', data: [1, 1], type: 'DOUBLE' },
        { name: 'high', data: [2, 2], type: 'DOUBLE' },
        { name: 'low', data: [0.5, 0.5], type: 'DOUBLE' },
        { name: 'close', data: [1, 1], type: 'DOUBLE' },
        { name: 'volume', data: [1, 1], type: 'DOUBLE' },
        { name: '__index_level_0__', data: [t0, t0 + 60_000], type: 'TIMESTAMP' },
      ],
    });
    expect((await loadError(pq)).message).toContain(
      `missing column "timestamp" (__index_level_0__ is pandas' unnamed index: name it before writing (df.index.name = "timestamp")`,
    );
  });

  it('empty file and header-only file', async () => {
    const empty = join(dir, 'empty.csv');
    writeFileSync(empty, '');
    expect((await loadError(empty)).message).toBe(`${empty}: file: empty file (no header row)`);
    const headerOnly = csvFile('header-only.csv', [HEADER]);
    expect((await loadError(headerOnly)).rule).toBe('empty file');
  });

  it('skips blank lines before the header; a file of blank lines is empty', async () => {
    const rows = goodRows();
    rows[1] = '2024-03-01T10:01:00Z,101,102.5,100.5,101.5,-5';
    expect((await loadError(csvFile('lead.csv', ['', ' ', HEADER, ...rows]))).message).toContain(
      'data row 2 (line 5): volume < 0',
    );
    expect((await loadError(csvFile('blanks.csv', ['', '', '']))).message).toContain(
      'empty file (no header row)',
    );
  });

  it('counts line numbers past blank lines', async () => {
    const rows = goodRows();
    rows[3] = '2024-03-01T10:03:00Z,103,104.5,102.5,103.5,-5';
    const path = csvFile('blank.csv', [HEADER, rows[0], '', rows[1], rows[2], rows[3], rows[4]]);
    expect((await loadError(path)).message).toContain('data row 4 (line 6): volume < 0');
  });

  it("reads a spreadsheet's rows of delimiters only (,,,,,) as blank lines", async () => {
    const rows = goodRows();
    const path = csvFile('excel.csv', [HEADER, rows[0], ',,,,,', ...rows.slice(1), ',,,,,', ' , ,,,,']);
    const { bars } = await loadBars(path);
    expect(bars.n).toBe(5);
    rows[3] = '2024-03-01T10:03:00Z,103,104.5,102.5,103.5,-5';
    const bad = csvFile('excel-bad.csv', [HEADER, rows[0], ',,,,,', ...rows.slice(1)]);
    expect((await loadError(bad)).message).toContain('data row 4 (line 6): volume < 0');
    // A row with a timestamp and nothing else is still a row with missing values.
    const partial = csvFile('partial.csv', [HEADER, ...goodRows(), '2024-03-01T10:05:00Z,,,,,']);
    expect((await loadError(partial)).rule).toBe('missing value');
  });
});

describe('CSV reading', () => {
  it('stops at a quoted field that never closes instead of rescanning the rest of the file per chunk', async () => {
    // 2.6 MiB after an opening quote in data row 3: papaparse kept it all as one pending row and
    // rescanned it for every 64 KiB chunk (176 s and 1.9 GB for a 186 MB file).
    const rows = goodRows();
    rows[2] = rows[2].replace(',102,', ',"102,');
    for (let i = 0; i < 120_000; i++) rows.push(`${1_709_300_000 + 60 * i},1,2,0.5,1,5`);
    const path = csvFile('open-quote.csv', [HEADER, ...rows]);
    const detail =
      'no line break outside quotes in 1024 KiB: a quoted field without its closing quote, or not a CSV of lines';
    expect((await loadError(path)).message).toBe(`${path}: data row 3 (line 4): row too long (${detail})`);
    // train and backtest do not offer --drop-invalid for it: no row rule can drop it.
    await expect(loadSourcedBars(path)).rejects.toThrow(/closing quote, or not a CSV of lines\)$/);
    // A file without line breaks (not a CSV export) fails the same way, at its header.
    const flat = csvFile('one-line.csv', [[HEADER, ...rows].join(';')]);
    expect((await loadError(flat)).message).toBe(`${flat}: header (line 1): row too long (${detail})`);
  });

  it('reads epoch seconds and milliseconds by magnitude, and ISO without a zone as UTC', async () => {
    const base = Date.UTC(2024, 2, 1, 10);
    const rows = (ts: (i: number) => string) => [
      HEADER,
      ...[0, 1, 2].map((i) => `${ts(i)},100,101,99,100,1`),
    ];
    const seconds = await loadBars(
      csvFile(
        's.csv',
        rows((i) => String(base / 1000 + 60 * i)),
      ),
    );
    const millis = await loadBars(
      csvFile(
        'ms.csv',
        rows((i) => String(base + 60_000 * i)),
      ),
    );
    const iso = await loadBars(
      csvFile(
        'iso.csv',
        rows((i) => `2024-03-01 10:0${i}:00`),
      ),
    );
    const expected = [base, base + 60_000, base + 120_000];
    expect(Array.from(seconds.bars.timestamp)).toEqual(expected);
    expect(Array.from(millis.bars.timestamp)).toEqual(expected);
    expect(Array.from(iso.bars.timestamp)).toEqual(expected);
  });

  it("reads an offset of hours alone (PostgreSQL's timestamptz text, 2024-03-01 10:00:00+00)", () => {
    expect(parseIsoMs('2024-03-01 10:00:00+00')).toBe(Date.UTC(2024, 2, 1, 10));
    expect(parseIsoMs('2024-03-01 05:00:00.250-05')).toBe(Date.UTC(2024, 2, 1, 10, 0, 0, 250));
    expect(parseIsoMs('2024-03-01T15:30+05')).toBe(Date.UTC(2024, 2, 1, 10, 30));
    // Minutes with or without a colon were read before; a bare date keeps its meaning.
    expect(parseIsoMs('2024-03-01T10:00:00+0000')).toBe(Date.UTC(2024, 2, 1, 10));
    expect(parseIsoMs('2024-03-01T10:00:00-05:00')).toBe(Date.UTC(2024, 2, 1, 15));
    expect(parseIsoMs('2024-03-01')).toBe(Date.UTC(2024, 2, 1));
  });

  it('rejects a day past the end of its month instead of rolling it into the next month', () => {
    for (const t of [
      '2023-02-29',
      '2024-02-30T10:00:00Z',
      '2024-04-31 09:30:00',
      '2024-02-30T10:00:00.000Z',
    ]) {
      expect(parseIsoMs(t), t).toBeNaN();
    }
    expect(parseIsoMs('2024-02-29')).toBe(Date.UTC(2024, 1, 29));
  });

  it('reads YYYYMMDD and YYYYMMDDHHMMSS numbers as dates, not as epoch seconds of 1970', async () => {
    const rows = (ts: string[]) => [HEADER, ...ts.map((t) => `${t},100,101,99,100,1`)];
    const daily = await loadBars(csvFile('yyyymmdd.csv', rows(['20240229', '20240301', '20240304'])));
    expect(Array.from(daily.bars.timestamp)).toEqual([
      Date.UTC(2024, 1, 29),
      Date.UTC(2024, 2, 1),
      Date.UTC(2024, 2, 4),
    ]);
    const minutes = await loadBars(csvFile('yyyymmddhhmmss.csv', rows(['20240304143000', '20240304143100'])));
    expect(Array.from(minutes.bars.timestamp)).toEqual([
      Date.UTC(2024, 2, 4, 14, 30),
      Date.UTC(2024, 2, 4, 14, 31),
    ]);
    const bad = csvFile('yyyymmdd-bad.csv', rows(['20240228', '20240230']));
    expect((await loadError(bad)).message).toContain('data row 2 (line 3): wrong type (timestamp="20240230"');
  });

  it('reads a UTF-8 BOM before a quoted header (Excel, pandas utf-8-sig with quoting)', async () => {
    const path = join(dir, 'bom-quoted.csv');
    const quoted = (line: string) =>
      line
        .split(',')
        .map((c) => `"${c}"`)
        .join(',');
    writeFileSync(path, `\uFEFF${[HEADER, ...goodRows()].map(quoted).join('\r\n')}\r\n`);
    const { bars } = await loadBars(path);
    expect(bars.n).toBe(5);
    expect(bars.close[4]).toBe(104.5);
  });

  it('accepts empty cells past the header (a trailing delimiter)', async () => {
    const { bars } = await loadBars(
      csvFile('trailing-comma.csv', [HEADER, ...goodRows().map((r) => `${r},`)]),
    );
    expect(bars.n).toBe(5);
  });

  it('takes the spread from bid/ask when there is no spread column', async () => {
    const path = csvFile('quotes.csv', [
      'timestamp,open,high,low,close,volume,bid,ask',
      '2024-03-01T10:00:00Z,100,101,99,100,1,99.99,100.01',
      '2024-03-01T10:01:00Z,100,101,99,100,1,99.98,100.02',
    ]);
    const { bars } = await loadBars(path);
    expect(bars.spreadBps![0]).toBeCloseTo(2, 9);
    expect(bars.spreadBps![1]).toBeCloseTo(4, 9);
    const crossed = csvFile('crossed.csv', [
      'timestamp,open,high,low,close,volume,bid,ask',
      '2024-03-01T10:00:00Z,100,101,99,100,1,100.02,100.01',
    ]);
    expect((await loadError(crossed)).message).toContain('data row 1 (line 2): ask < bid');
  });

  it('round-trips synthetic bars through CSV bit for bit', async () => {
    const bars = generateSynthetic({ bars: 3000, seed: 5 });
    const path = join(dir, 'round.csv');
    await saveBars(path, bars);
    expectSameBars((await loadBars(path)).bars, bars);
  });
});

function expectSameBars(got: Bars, want: Bars): void {
  expect(got.n).toBe(want.n);
  for (const k of ['timestamp', 'open', 'high', 'low', 'close', 'volume', 'spreadBps'] as const) {
    expect(got[k], k).toEqual(want[k]);
  }
}

describe('Parquet', () => {
  it('round-trips synthetic bars bit for bit', async () => {
    const bars = generateSynthetic({ bars: 3000, seed: 6 });
    const path = join(dir, 'round.parquet');
    await saveBars(path, bars);
    expectSameBars((await loadBars(path)).bars, bars);
  });

  it('reads GZIP, BROTLI and ZSTD compressed files (hyparquet alone reads only snappy)', async () => {
    const t0 = Date.UTC(2024, 2, 1, 10);
    const columnData = [
      { name: 'timestamp', data: [0, 1, 2].map((i) => t0 + 60_000 * i), type: 'TIMESTAMP' as const },
      { name: 'open', data: [100, 101, 102], type: 'DOUBLE' as const },
      { name: 'high', data: [101.5, 102.5, 103.5], type: 'DOUBLE' as const },
      { name: 'low', data: [99.5, 100.5, 101.5], type: 'DOUBLE' as const },
      { name: 'close', data: [100.5, 101.5, 102.5], type: 'DOUBLE' as const },
      { name: 'volume', data: [10, 20, 30], type: 'DOUBLE' as const },
    ];
    for (const [codec, compress] of [
      ['GZIP', gzipSync],
      ['BROTLI', brotliCompressSync],
    ] as const) {
      const path = join(dir, `${codec}.parquet`);
      parquetWriteFile({
        filename: path,
        columnData,
        codec,
        compressors: { [codec]: (b: Uint8Array) => new Uint8Array(compress(b)) },
      });
      const { bars } = await loadBars(path);
      expect(Array.from(bars.close), codec).toEqual([100.5, 101.5, 102.5]);
    }
    // Written by pyarrow with compression='zstd' (Polars' default codec); test/fixtures/README.md.
    const zstd = await loadBars(join(import.meta.dirname, '../../fixtures/bars-zstd.parquet'));
    expect(zstd.bars.n).toBe(20);
    expect(zstd.bars.close[19]).toBe(119.5);
    expect(zstd.bars.timestamp[1] - zstd.bars.timestamp[0]).toBe(60_000);
  });

  it('keeps the sub-millisecond part of TIMESTAMP(MICROS) and (NANOS) cells', async () => {
    // 20 bars 500 us apart, TIMESTAMP(us, UTC), by pyarrow (test/fixtures/README.md): as whole ms
    // (hyparquet's Dates) every other bar would repeat its neighbour's time.
    const { bars } = await loadBars(join(import.meta.dirname, '../../fixtures/bars-500us.parquet'));
    expect(bars.n).toBe(20);
    expect(bars.timestamp[0]).toBe(Date.UTC(2024, 2, 1, 10));
    for (let i = 1; i < 20; i++) expect(bars.timestamp[i] - bars.timestamp[i - 1]).toBeCloseTo(0.5, 9);
    const ns = 1_709_287_200_123_456_789n;
    expect(InstantMs.fromNanos(ns).ms).toBe(1_709_287_200_123 + 0.456789);
    expect(InstantMs.fromMicros(ns / 1000n).ms).toBe(1_709_287_200_123 + 0.456);
  });

  it('reads one row group at a time (a whole file decoded at once held ~1.8 GB for 5M rows)', async () => {
    const bars = generateSynthetic({ bars: 3000, seed: 4 });
    const bytes = parquetWriteBuffer({
      columnData: [
        { name: 'timestamp', data: Array.from(bars.timestamp), type: 'TIMESTAMP' },
        ...(['open', 'high', 'low', 'close', 'volume'] as const).map((k) => ({
          name: k,
          data: bars[k],
          type: 'DOUBLE' as const,
        })),
      ],
      rowGroupSize: 1000,
    });
    const groups = parquetMetadata(bytes).row_groups.map((g) => {
      const starts = g.columns.map((c) =>
        Number(c.meta_data!.dictionary_page_offset ?? c.meta_data!.data_page_offset),
      );
      const ends = g.columns.map((c, i) => starts[i] + Number(c.meta_data!.total_compressed_size));
      return [Math.min(...starts), Math.max(...ends)];
    });
    expect(groups.length).toBe(3);
    // Each read of a row group's bytes is logged when asked for and when it arrives (a tick later).
    const events: string[] = [];
    const groupOf = (start: number) => groups.findIndex(([a, b]) => start >= a && start < b);
    const buffer: AsyncBuffer = {
      byteLength: bytes.byteLength,
      async slice(start, end) {
        const g = groupOf(start);
        if (g >= 0) events.push(`ask ${g}`);
        await new Promise((r) => setImmediate(r));
        if (g >= 0) events.push(`got ${g}`);
        return bytes.slice(start, end);
      },
    };
    const table = await parseParquetTable(buffer, 'groups.parquet');
    expect(table.n).toBe(3000);
    expect(table.close).toEqual(bars.close);
    // No group's bytes are asked for before every read of the group before it arrived.
    const count = (list: string[], e: string) => list.filter((x) => x === e).length;
    for (const [i, e] of events.entries()) {
      const g = Number(e.split(' ')[1]);
      if (e.startsWith('ask') && g > 0)
        expect(count(events.slice(0, i), `got ${g - 1}`), e).toBe(count(events.slice(0, i), `ask ${g - 1}`));
    }
    for (const g of [0, 1, 2]) expect(events).toContain(`got ${g}`);
  });

  it('applies the same rules, naming file, row and rule', async () => {
    const path = join(dir, 'bad.parquet');
    const t0 = Date.UTC(2024, 0, 1);
    parquetWriteFile({
      filename: path,
      columnData: [
        { name: 'timestamp', data: [t0, t0 + 60_000, t0 + 60_000], type: 'TIMESTAMP' },
        { name: 'open', data: [1, 1, 1], type: 'DOUBLE' },
        { name: 'high', data: [2, 2, 2], type: 'DOUBLE' },
        { name: 'low', data: [0.5, 0.5, 0.5], type: 'DOUBLE' },
        { name: 'close', data: [1, 1, 1], type: 'DOUBLE' },
        { name: 'volume', data: [1, 1, 1], type: 'DOUBLE' },
      ],
    });
    const err = await loadError(path);
    expect(err.message).toContain(`${path}: data row 3: duplicate timestamp`);
  });

  it('rejects a string price column as a wrong type, and a missing column', async () => {
    const path = join(dir, 'strings.parquet');
    const t0 = Date.UTC(2024, 0, 1);
    parquetWriteFile({
      filename: path,
      columnData: [
        { name: 'timestamp', data: [t0, t0 + 60_000], type: 'TIMESTAMP' },
        { name: 'open', data: [1, 1], type: 'DOUBLE' },
        { name: 'high', data: [2, 2], type: 'DOUBLE' },
        { name: 'low', data: [0.5, 0.5], type: 'DOUBLE' },
        { name: 'close', data: ['1', 'one'], type: 'STRING' },
        { name: 'volume', data: [1, 1], type: 'DOUBLE' },
      ],
    });
    const err = await loadError(path);
    expect(err.message).toContain(`${path}: data row 2: wrong type`);
    expect(err.message).toContain('close');
    const noLow = join(dir, 'nolow.parquet');
    parquetWriteFile({
      filename: noLow,
      columnData: [
        { name: 'timestamp', data: [t0], type: 'TIMESTAMP' },
        { name: 'open', data: [1], type: 'DOUBLE' },
        { name: 'high', data: [2], type: 'DOUBLE' },
        { name: 'close', data: [1], type: 'DOUBLE' },
        { name: 'volume', data: [1], type: 'DOUBLE' },
      ],
    });
    expect((await loadError(noLow)).message).toContain('missing column "low"');
  });
});

describe('repair options', () => {
  it('dropInvalid removes bad and out-of-order rows and reports how many', async () => {
    const rows = goodRows();
    rows[1] = '2024-03-01T10:01:00Z,101,100,102,101.5,20';
    rows[3] = '2024-03-01T10:00:00Z,103,104.5,102.5,103.5,40';
    const path = csvFile('repair-drop.csv', [HEADER, ...rows]);
    const { bars, report } = await loadBars(path, { dropInvalid: true });
    expect(report.rowsRead).toBe(5);
    expect(report.dropped).toBe(2);
    expect(report.firstDropped).toContain('data row 2 (line 3): high < low');
    expect(bars.n).toBe(3);
    expect(Array.from(bars.open)).toEqual([100, 102, 104]);
  });

  it('dropInvalid locates only the first dropped row (one location per row was quadratic past blank lines)', async () => {
    // Every other row bad and each followed by a blank line: every location scans the blank lines
    // before it, so 200k bad rows took 19.5 s to drop where reading them takes 0.8 s.
    const lines = [HEADER];
    for (let i = 0; i < 50; i++) lines.push(`${1_700_000_000 + 60 * i},1,2,0.5,1,${i % 2 ? '' : 5}`, '');
    const table = await parseCsvTable(lines.join('\n'), 'blank.csv');
    const where = vi.spyOn(table, 'where');
    const { bars, dropped, firstDropped } = validateTable(table, { dropInvalid: true });
    expect([bars.n, dropped]).toEqual([25, 25]);
    expect(firstDropped).toBe('blank.csv: data row 2 (line 4): missing value (volume is empty)');
    expect(where).toHaveBeenCalledTimes(1);
  });

  it('fillGaps inserts flat zero-volume bars at the modal interval and reports them', async () => {
    const rows = goodRows();
    const path = csvFile('repair-fill.csv', [HEADER, rows[0], rows[1], rows[4]]);
    const { bars, report } = await loadBars(path, { fillGaps: true });
    expect(report.filled).toBe(2);
    expect(report.gapsFilled).toBe(1);
    expect(bars.n).toBe(5);
    const t0 = Date.UTC(2024, 2, 1, 10);
    expect(Array.from(bars.timestamp)).toEqual([0, 1, 2, 3, 4].map((i) => t0 + 60_000 * i));
    for (const t of [2, 3]) {
      expect([bars.open[t], bars.high[t], bars.low[t], bars.close[t]]).toEqual([101.5, 101.5, 101.5, 101.5]);
      expect(bars.volume[t]).toBe(0);
    }
    expect(bars.close[4]).toBe(104.5);
    const plain = await loadBars(path);
    expect(plain.bars.n).toBe(3);
    expect(plain.report.filled).toBe(0);
  });
});

describe('cell parsing fast paths agree with Number and Date.parse', () => {
  it('reads decimal text to the same f64 as Number()', () => {
    const p = { last: null };
    const cases = ['0', '-0', '1.', '.5', '-.5', '100.1234', '0.1', '0.3', '123456789012345'];
    cases.push('1234567890123456', '9007199254740993', '1e5', '-12.000001', '00012.50', '+3', '0x1f');
    for (let i = 0; i < 2000; i++) cases.push(((i * 7919.123457) % 1e5).toFixed(i % 7), String(i / 7));
    for (const c of cases) expect(Object.is(parseNumberCell(c, 'x', p), Number(c)), c).toBe(true);
    for (const bad of ['', ' ', '.', '-', '1.2.3', 'abc', 'NaN', 'Infinity']) {
      expect(parseNumberCell(bad, 'x', p), bad).toBeNaN();
    }
  });

  it('reads ISO-8601 text to the same instant as Date.parse', () => {
    for (let i = 0; i < 2000; i++) {
      const s = new Date(Date.UTC(1971, 0, 1) + i * 987_654_321_7).toISOString();
      expect(parseIsoMs(s), s).toBe(Date.parse(s));
    }
    expect(parseIsoMs('2024-03-01T10:00:00+01:00')).toBe(Date.UTC(2024, 2, 1, 9));
    expect(parseIsoMs('2024-03-01')).toBe(Date.UTC(2024, 2, 1));
    expect(parseIsoMs('2024-13-01T00:00:00.000Z')).toBeNaN();
    expect(parseIsoMs('01/03/2024')).toBeNaN();
  });
});

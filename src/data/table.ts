/**
 * What a reader hands to validation: the file's columns as f64 (NaN where a cell was rejected,
 * with the reason kept per row), before any rule about bars is checked. Keeping the readers
 * (CSV, Parquet) and the rules (validate.ts) apart means both formats obey the same rules.
 */
import type { CellProblem } from './cells.js';

/** The columns every file must have, in the order rules are checked. */
export const REQUIRED_COLUMNS = ['timestamp', 'open', 'high', 'low', 'close', 'volume'] as const;

export interface RawTable {
  file: string;
  /** Data rows read (blank lines excluded). */
  n: number;
  /** ms since epoch; NaN where the cell was rejected. */
  timestamp: Float64Array;
  open: Float64Array;
  high: Float64Array;
  low: Float64Array;
  close: Float64Array;
  volume: Float64Array;
  /** Spread in bps from a `spread` column, or null. */
  spread: Float64Array | null;
  /** Bid and ask prices (both or neither), used when there is no spread column. */
  bid: Float64Array | null;
  ask: Float64Array | null;
  /** The first rejected cell of each row that has one (0-based data row -> reason). */
  problems: Map<number, CellProblem>;
  /** Human location of a 0-based data row, e.g. `data row 3 (line 4)`. */
  where(row: number): string;
}

/** A growable f64 column: readers append cell by cell without knowing the row count. */
export class Column {
  data: Float64Array;
  length = 0;
  constructor(capacity = 1 << 16) {
    this.data = new Float64Array(capacity);
  }
  push(x: number): void {
    if (this.length === this.data.length) {
      const next = new Float64Array(this.data.length * 2);
      next.set(this.data);
      this.data = next;
    }
    this.data[this.length++] = x;
  }
}

/**
 * Names of the time column where no column is called `timestamp`: Yahoo Finance and most daily
 * exports say `Date`, others `Datetime` or `time`. One of them must be present alone: separate
 * date and time columns are refused (they need joining into one instant first).
 */
export const TIMESTAMP_ALIASES = ['datetime', 'date', 'time'] as const;

/** The column pandas' `to_parquet` writes for an index without a name. */
const PANDAS_INDEX = '__index_level_0__';

/**
 * Maps a header (list of names) to the indices of the columns foxhunt reads. Names match
 * case-insensitively after trimming; extra columns are ignored; the time column is `timestamp`,
 * else the one of TIMESTAMP_ALIASES present. Returns the index per name (-1 when absent) or the
 * name of the first missing required column, with a hint where one helps.
 */
export function findColumns(header: string[]): {
  index: Record<(typeof REQUIRED_COLUMNS)[number] | 'spread' | 'bid' | 'ask', number>;
  missing: string | null;
  hint: string | null;
} {
  const lower = header.map((h) => h.trim().toLowerCase());
  const at = (name: string) => lower.indexOf(name);
  const aliases = TIMESTAMP_ALIASES.filter((a) => at(a) >= 0);
  let timestamp = at('timestamp');
  if (timestamp < 0 && aliases.length === 1) timestamp = at(aliases[0]);
  const index = {
    timestamp,
    open: at('open'),
    high: at('high'),
    low: at('low'),
    close: at('close'),
    volume: at('volume'),
    spread: at('spread'),
    bid: at('bid'),
    ask: at('ask'),
  };
  let missing: string | null = REQUIRED_COLUMNS.find((c) => index[c] < 0) ?? null;
  let hint: string | null = null;
  // Names that are numbers: the file's first line is a bar (Binance's kline files, MetaTrader's
  // exports have no header).
  const numeric = header.filter((h) => h.trim() !== '' && Number.isFinite(Number(h))).length;
  const timeLike = header.filter((h, i) => i !== index.timestamp && /time|date/i.test(h));
  // Other names holding the missing one as a word: `Volume BTC`, `Close/Last`.
  const similar = missing
    ? header.filter((h) => new RegExp(`\\b${missing}\\b`, 'i').test(h) && h.trim().toLowerCase() !== missing)
    : [];
  if (missing && numeric >= 2) {
    hint = `the first line holds numbers, not column names: add a header line naming the columns (${REQUIRED_COLUMNS.join(',')}, in the file's order)`;
  } else if (missing && header.filter((h) => h.trim() !== '').length === 1) {
    // A title or a URL above the header (CryptoDataDownload's files start with their address).
    hint = 'the first line is one field, not the column names: delete the lines above the header';
  } else if (missing !== 'timestamp' && similar.length > 0) {
    hint = `rename the column to use (${similar.map((h) => `"${h.trim()}"`).join(' or ')}) to "${missing}"`;
  } else if (missing === 'timestamp') {
    if (aliases.length > 1)
      hint = `${aliases.join(' and ')} are separate columns: join them into one "timestamp" column of instants`;
    else if (lower.includes(PANDAS_INDEX))
      hint = `${PANDAS_INDEX} is pandas' unnamed index: name it before writing (df.index.name = "timestamp"), or write df.reset_index(names="timestamp")`;
    else if (lower[0] === 'price')
      hint =
        'yfinance\'s header of 3 lines (Price, Ticker, Date): download with multi_level_index=False, or write df.droplevel("Ticker", axis=1)';
    else if (lower[0] === '')
      hint =
        'the first column has no name (pandas writes an unnamed index so): name it "timestamp" (df.index.name = "timestamp" before writing)';
    else if (timeLike.length > 0)
      hint = `rename the column of each bar's start time (${timeLike.map((h) => `"${h.trim()}"`).join(' or ')}) to "timestamp"`;
    else hint = `the time column may also be called ${TIMESTAMP_ALIASES.join(', ')}`;
  } else if (missing === 'volume') {
    hint = 'a market without volume (FX quotes) needs a volume column of 0s';
  }
  // Half a quote is a mistake worth stopping for: the user meant to give a spread.
  if (!missing && index.spread < 0 && index.bid < 0 !== index.ask < 0)
    missing = index.bid < 0 ? 'bid' : 'ask';
  return { index, missing, hint };
}

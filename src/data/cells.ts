/**
 * Text/typed cell values -> f64, with the reason a cell was rejected. Readers call these per cell;
 * the fast path allocates nothing, and a reason is only built for a rejected cell.
 */

/** Why a cell could not become a number; `null` after a successful parse. */
export interface CellProblem {
  rule: string;
  detail: string;
}

const POW10 = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15];

/**
 * `-123.4567`-style text (optional minus, digits, optional fraction, at most 15 digits in all)
 * without Number(): the digits form an exact integer below 2^53 and the power of ten is exact, so
 * one division rounds correctly, the same f64 as Number() gives. NaN for any other shape (the
 * caller then falls back to Number). Number() on price text was a fifth of CSV loading.
 */
function parsePlainDecimal(s: string): number {
  const n = s.length;
  let i = 0;
  let negative = false;
  if (n > 0 && s.charCodeAt(0) === 45) {
    negative = true;
    i = 1;
  }
  let mantissa = 0;
  let digitCount = 0;
  let fraction = -1;
  for (; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c === 46 && fraction < 0) {
      fraction = 0;
      continue;
    }
    const d = c - 48;
    if (d < 0 || d > 9) return Number.NaN;
    mantissa = mantissa * 10 + d;
    digitCount++;
    if (fraction >= 0) fraction++;
  }
  if (digitCount === 0 || digitCount > 15) return Number.NaN;
  const x = fraction > 0 ? mantissa / POW10[fraction] : mantissa;
  return negative ? -x : x;
}

/**
 * Text that exports write for a missing number: Yahoo Finance writes `null` for every cell of a
 * day without data, R `NA`, Python `None`. Such a cell is a `missing value`, not a `wrong type`.
 */
const MISSING_MARKERS = new Set(['null', 'na', 'n/a', 'none', '#n/a', '-']);

/**
 * A number cell: finite, not blank. Returns NaN when rejected and fills `problem.last` unless it
 * already holds a problem: a row's first rejected cell (the leftmost) is the one reported.
 */
export function parseNumberCell(raw: unknown, column: string, problem: { last: CellProblem | null }): number {
  if (typeof raw === 'number') {
    if (Number.isFinite(raw)) return raw;
    problem.last ??= Number.isNaN(raw)
      ? { rule: 'NaN value', detail: `${column}=NaN` }
      : { rule: 'infinite value', detail: `${column}=${raw}` };
    return Number.NaN;
  }
  if (typeof raw === 'bigint') return Number(raw);
  if (typeof raw === 'string') {
    const fast = parsePlainDecimal(raw);
    if (!Number.isNaN(fast)) return fast;
    const x = Number(raw);
    if (Number.isFinite(x) && (x !== 0 || raw.trim() !== '')) return x;
    const t = raw.trim();
    const lower = t.toLowerCase();
    if (t === '') problem.last ??= { rule: 'missing value', detail: `${column} is empty` };
    else if (MISSING_MARKERS.has(lower)) problem.last ??= { rule: 'missing value', detail: `${column}=${t}` };
    else if (lower === 'nan') problem.last ??= { rule: 'NaN value', detail: `${column}=${t}` };
    else if (Number.isNaN(x))
      problem.last ??= {
        rule: 'wrong type',
        detail: `${column}=${JSON.stringify(raw)} is not a number${
          /^-?\d[\d.]*,\d+$/.test(t)
            ? ' (a decimal comma or a thousands separator: write 1234.5)'
            : /^[-+]?[$€£¥]/.test(t)
              ? ' (a currency sign: write the bare number)'
              : ''
        }`,
      };
    else problem.last ??= { rule: 'infinite value', detail: `${column}=${t}` };
    return Number.NaN;
  }
  if (raw === null || raw === undefined) {
    problem.last ??= { rule: 'missing value', detail: `${column} is null` };
    return Number.NaN;
  }
  problem.last ??= {
    rule: 'wrong type',
    detail: `${column}=${JSON.stringify(String(raw))} (${typeof raw}) is not a number`,
  };
  return Number.NaN;
}

/** Epoch numbers below these magnitudes are s, ms, us; above, ns (see timestampScale). */
const SECONDS_BELOW = 1e11;
const MILLIS_BELOW = 1e14;
const MICROS_BELOW = 1e17;

/**
 * The `scale` of a file whose first numeric timestamp is an ISO-8601 basic-format date, `YYYYMMDD`
 * (or `YYYYMMDDHHMMSS`): read as epoch seconds (or milliseconds) it would land in 1970 (or the
 * 26th century), spaced 1 to 70 "seconds" a day apart, and train silently on a wrong clock.
 */
export const COMPACT_DATE = -1;

/**
 * A `YYYYMMDD` or `YYYYMMDDHHMMSS` integer (years 1800-2200) -> ms since epoch (UTC), or NaN when
 * `x` is not one (other digit counts, month 13, February 30, minute 60).
 */
export function compactDateMs(x: number): number {
  if (!Number.isInteger(x)) return Number.NaN;
  let date = x;
  let h = 0;
  let mi = 0;
  let sec = 0;
  if (x >= 1e13 && x < 1e14) {
    date = Math.floor(x / 1e6);
    const time = x % 1e6;
    h = Math.floor(time / 1e4);
    mi = Math.floor(time / 100) % 100;
    sec = time % 100;
    if (h > 23 || mi > 59 || sec > 59) return Number.NaN;
  } else if (!(x >= 1e7 && x < 1e8)) return Number.NaN;
  const y = Math.floor(date / 1e4);
  const mo = Math.floor(date / 100) % 100;
  const d = date % 100;
  if (y < 1800 || y > 2200 || mo < 1 || mo > 12 || d < 1) return Number.NaN;
  if (d > daysInMonth(y, mo)) return Number.NaN;
  return Date.UTC(y, mo - 1, d, h, mi, sec);
}

/**
 * Milliseconds per unit of an epoch number, decided once per file from the first timestamp's
 * magnitude: < 1e11 seconds (1e11 s is the year 5138), < 1e14 milliseconds, < 1e17
 * microseconds, else nanoseconds. Every row of a file uses the same unit. A first timestamp that
 * is a valid `YYYYMMDD` or `YYYYMMDDHHMMSS` date gives COMPACT_DATE instead: the file's numbers
 * are dates in that form (as epoch seconds they would be August 1970).
 */
export function timestampScale(first: number): number {
  if (!Number.isNaN(compactDateMs(first))) return COMPACT_DATE;
  const a = Math.abs(first);
  if (a < SECONDS_BELOW) return 1000;
  if (a < MILLIS_BELOW) return 1;
  if (a < MICROS_BELOW) return 1e-3;
  return 1e-6;
}

const ISO_START = /^\d{4}-\d{2}-\d{2}/;
const HAS_ZONE = /(?:[zZ]|[+-]\d{2}(?::?\d{2})?)$/;
const HOURS_OFFSET = /T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?[+-]\d{2}$/;

/** Digits s[i..i+len) as a number, or -1 if any is not a digit. */
function digits(s: string, i: number, len: number): number {
  let x = 0;
  for (let k = i; k < i + len; k++) {
    const d = s.charCodeAt(k) - 48;
    if (d < 0 || d > 9) return -1;
    x = x * 10 + d;
  }
  return x;
}

const MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** Days in month `mo` (1-12) of year `y` (Gregorian), without a Date: this is on the CSV hot path. */
const daysInMonth = (y: number, mo: number) =>
  mo === 2 && y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0) ? 29 : MONTH_DAYS[mo - 1];

/**
 * `YYYY-MM-DDTHH:MM:SS.sssZ` (what toISOString and foxhunt write) without Date.parse: about a
 * third of the cost of loading a CSV went to parsing such strings. NaN when `s` has another shape.
 */
function parseIsoUtcMillis(s: string): number {
  if (s.length !== 24 || s[4] !== '-' || s[7] !== '-' || s[10] !== 'T' || s[13] !== ':' || s[16] !== ':')
    return Number.NaN;
  if (s[19] !== '.' || s[23] !== 'Z') return Number.NaN;
  const y = digits(s, 0, 4);
  const mo = digits(s, 5, 2);
  const d = digits(s, 8, 2);
  const h = digits(s, 11, 2);
  const mi = digits(s, 14, 2);
  const sec = digits(s, 17, 2);
  const ms = digits(s, 20, 3);
  if (y < 0 || mo < 1 || mo > 12 || d < 1 || d > daysInMonth(y, mo) || h < 0 || h > 23 || mi < 0 || mi > 59)
    return Number.NaN;
  if (sec < 0 || sec > 59 || ms < 0) return Number.NaN;
  return Date.UTC(y, mo - 1, d, h, mi, sec, ms);
}

/**
 * An ISO-8601 string -> ms since epoch (UTC). A date-time without a zone is read as UTC
 * (Date.parse would read it as local time, which makes a file mean different things on
 * different machines); `YYYY-MM-DD HH:MM:SS` with a space is accepted. NaN when unparseable.
 */
export function parseIsoMs(s: string): number {
  const fast = parseIsoUtcMillis(s);
  if (!Number.isNaN(fast)) return fast;
  if (!ISO_START.test(s)) return Number.NaN;
  // Date.parse rolls February 30 over to March 1 (a duplicate of the real one, or a silent shift).
  const mo = digits(s, 5, 2);
  if (mo < 1 || mo > 12 || digits(s, 8, 2) < 1 || digits(s, 8, 2) > daysInMonth(digits(s, 0, 4), mo))
    return Number.NaN;
  let iso = s.length > 10 && s[10] === ' ' ? `${s.slice(0, 10)}T${s.slice(11)}` : s;
  if (iso.length > 10 && !HAS_ZONE.test(iso)) iso += 'Z';
  // An offset of hours alone (`+00`, PostgreSQL's timestamptz text) is ISO-8601; Date.parse wants minutes.
  else if (HOURS_OFFSET.test(iso)) iso += ':00';
  return Date.parse(iso);
}

/**
 * An instant in ms since the epoch with its sub-millisecond part kept (a fraction): the Parquet
 * reader's TIMESTAMP(MICROS / NANOS) cells, which a Date would truncate to whole milliseconds (500 us
 * bars would read as duplicates).
 */
export class InstantMs {
  constructor(readonly ms: number) {}
  /** From whole microseconds / nanoseconds since the epoch, exact to f64's resolution at that size. */
  static fromMicros(us: bigint): InstantMs {
    return new InstantMs(Number(us / 1000n) + Number(us % 1000n) / 1e3);
  }
  static fromNanos(ns: bigint): InstantMs {
    return new InstantMs(Number(ns / 1_000_000n) + Number(ns % 1_000_000n) / 1e6);
  }
}

/**
 * A timestamp cell -> ms since epoch. `scale` holds the file's epoch unit once known
 * (0 before the first numeric timestamp). Returns NaN and fills `problem` when rejected.
 */
export function parseTimestampCell(raw: unknown, state: { scale: number; last: CellProblem | null }): number {
  if (raw instanceof Date || raw instanceof InstantMs) {
    const ms = raw instanceof Date ? raw.getTime() : raw.ms;
    if (Number.isFinite(ms)) return ms;
  } else if (typeof raw === 'number' || typeof raw === 'bigint') {
    const x = Number(raw);
    if (Number.isFinite(x)) return epochMs(x, raw, state);
  } else if (typeof raw === 'string') {
    const iso = parseIsoUtcMillis(raw);
    if (!Number.isNaN(iso)) return iso;
    const t = raw.trim();
    const x = Number(t);
    if (t !== '' && Number.isFinite(x)) return epochMs(x, raw, state);
    const ms = parseIsoMs(t);
    if (Number.isFinite(ms)) return ms;
    state.last =
      t === ''
        ? { rule: 'missing value', detail: 'timestamp is empty' }
        : {
            rule: 'wrong type',
            detail: `timestamp=${JSON.stringify(raw)} is neither ISO-8601 (2024-03-01T10:00:00Z, 2024-03-01 10:00:00-05:00, 2024-03-01) nor an epoch number`,
          };
    return Number.NaN;
  }
  state.last =
    raw === null || raw === undefined
      ? { rule: 'missing value', detail: 'timestamp is null' }
      : { rule: 'wrong type', detail: `timestamp=${JSON.stringify(String(raw))} is not a time` };
  return Number.NaN;
}

/** A numeric timestamp -> ms, in the file's unit (set from `x` when it is the first one). */
function epochMs(x: number, raw: unknown, state: { scale: number; last: CellProblem | null }): number {
  if (state.scale === 0) state.scale = timestampScale(x);
  if (state.scale !== COMPACT_DATE) return x * state.scale;
  const ms = compactDateMs(x);
  if (Number.isNaN(ms)) {
    state.last = {
      rule: 'wrong type',
      detail: `timestamp=${JSON.stringify(String(raw))} is not a YYYYMMDD[HHMMSS] date, as the file's first timestamp is`,
    };
  }
  return ms;
}

/**
 * Text/typed cell values -> f64, with the reason a cell was rejected. Readers call these per cell;
 * the fast path allocates nothing, and a reason is only built for a rejected cell.
 */

/** Why a cell could not become a number; `null` after a successful parse. */
export interface CellProblem {
  rule: string;
  detail: string;
}

/** A number cell: finite, not blank. Returns NaN and fills `problem` when rejected. */
export function parseNumberCell(raw: unknown, column: string, problem: { last: CellProblem | null }): number {
  if (typeof raw === 'number') {
    if (Number.isFinite(raw)) return raw;
    problem.last = Number.isNaN(raw)
      ? { rule: 'NaN value', detail: `${column}=NaN` }
      : { rule: 'infinite value', detail: `${column}=${raw}` };
    return Number.NaN;
  }
  if (typeof raw === 'bigint') return Number(raw);
  if (typeof raw === 'string') {
    const x = Number(raw);
    if (Number.isFinite(x) && (x !== 0 || raw.trim() !== '')) return x;
    const t = raw.trim();
    if (t === '') problem.last = { rule: 'missing value', detail: `${column} is empty` };
    else if (t.toLowerCase() === 'nan') problem.last = { rule: 'NaN value', detail: `${column}=${t}` };
    else if (Number.isNaN(x))
      problem.last = { rule: 'wrong type', detail: `${column}=${JSON.stringify(raw)} is not a number` };
    else problem.last = { rule: 'infinite value', detail: `${column}=${t}` };
    return Number.NaN;
  }
  if (raw === null || raw === undefined) {
    problem.last = { rule: 'missing value', detail: `${column} is null` };
    return Number.NaN;
  }
  problem.last = {
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
 * Milliseconds per unit of an epoch number, decided once per file from the first timestamp's
 * magnitude: < 1e11 seconds (1e11 s is the year 5138), < 1e14 milliseconds, < 1e17
 * microseconds, else nanoseconds. Every row of a file uses the same unit.
 */
export function timestampScale(first: number): number {
  const a = Math.abs(first);
  if (a < SECONDS_BELOW) return 1000;
  if (a < MILLIS_BELOW) return 1;
  if (a < MICROS_BELOW) return 1e-3;
  return 1e-6;
}

const ISO_START = /^\d{4}-\d{2}-\d{2}/;
const HAS_ZONE = /(?:[zZ]|[+-]\d{2}(?::?\d{2})?)$/;

/**
 * An ISO-8601 string -> ms since epoch (UTC). A date-time without a zone is read as UTC
 * (Date.parse would read it as local time, which makes a file mean different things on
 * different machines); `YYYY-MM-DD HH:MM:SS` with a space is accepted. NaN when unparseable.
 */
export function parseIsoMs(s: string): number {
  if (!ISO_START.test(s)) return Number.NaN;
  let iso = s.length > 10 && s[10] === ' ' ? `${s.slice(0, 10)}T${s.slice(11)}` : s;
  if (iso.length > 10 && !HAS_ZONE.test(iso)) iso += 'Z';
  return Date.parse(iso);
}

/**
 * A timestamp cell -> ms since epoch. `scale` holds the file's epoch unit once known
 * (0 before the first numeric timestamp). Returns NaN and fills `problem` when rejected.
 */
export function parseTimestampCell(raw: unknown, state: { scale: number; last: CellProblem | null }): number {
  if (raw instanceof Date) {
    const ms = raw.getTime();
    if (Number.isFinite(ms)) return ms;
  } else if (typeof raw === 'number' || typeof raw === 'bigint') {
    const x = Number(raw);
    if (Number.isFinite(x)) {
      if (state.scale === 0) state.scale = timestampScale(x);
      return x * state.scale;
    }
  } else if (typeof raw === 'string') {
    const t = raw.trim();
    const x = Number(t);
    if (t !== '' && Number.isFinite(x)) {
      if (state.scale === 0) state.scale = timestampScale(x);
      return x * state.scale;
    }
    const ms = parseIsoMs(t);
    if (Number.isFinite(ms)) return ms;
    state.last =
      t === ''
        ? { rule: 'missing value', detail: 'timestamp is empty' }
        : {
            rule: 'wrong type',
            detail: `timestamp=${JSON.stringify(raw)} is neither ISO-8601 nor an epoch number`,
          };
    return Number.NaN;
  }
  state.last =
    raw === null || raw === undefined
      ? { rule: 'missing value', detail: 'timestamp is null' }
      : { rule: 'wrong type', detail: `timestamp=${JSON.stringify(String(raw))} is not a time` };
  return Number.NaN;
}

/**
 * The one error type of data loading: it names the file, the row and the rule broken, so a user
 * can open the file at that row and fix it (SPEC 1). The CLI prints `message` as one line.
 */
export class DataError extends Error {
  override name = 'DataError';
  constructor(
    /** The file being read. */
    readonly file: string,
    /** Where in the file: `data row 17 (line 18)`, `header (line 1)`, or `file` for whole-file rules. */
    readonly where: string,
    /** The rule broken, e.g. `high < max(open, close)`. */
    readonly rule: string,
    /** The offending values, e.g. `high=99.5, open=100, close=100.2`. */
    readonly detail = '',
  ) {
    super(`${file}: ${where}: ${rule}${detail ? ` (${printable(detail)})` : ''}`);
  }
}

/** The detail as one short printable line: a binary file's "header" would be kilobytes of noise. */
const printable = (s: string, max = 160): string => {
  const clean = s.replace(/[\p{Cc}\uFFFD]/gu, '?');
  return clean.length <= max ? clean : `${clean.slice(0, max)}... (${clean.length - max} more characters)`;
};

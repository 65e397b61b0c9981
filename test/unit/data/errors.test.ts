import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DataError } from '../../../src/data/errors.js';
import { loadBars } from '../../../src/data/load.js';

const dir = mkdtempSync(join(tmpdir(), 'foxhunt-data-errors-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('data errors stay one short line', () => {
  it('a binary file named .csv: file, row and rule, not kilobytes of its bytes', async () => {
    const path = join(dir, 'photo.csv');
    // 12 KB of bytes in 0..255 without a line break: the whole file reads as one header line.
    const bytes = Uint8Array.from({ length: 12_000 }, (_, i) => (i * 7919 + 13) % 256).map((b) =>
      b === 10 || b === 13 ? 11 : b,
    );
    writeFileSync(path, bytes);
    const err = await loadBars(path).catch((e: Error) => e);
    expect(err).toBeInstanceOf(DataError);
    const { message } = err as DataError;
    expect(message.startsWith(`${path}: header (line 1): missing column "timestamp"`)).toBe(true);
    expect(message.length).toBeLessThan(400);
    expect(message).toMatch(/\.\.\. \(\d+ more characters\)\)$/);
    expect(message).not.toMatch(/[\p{Cc}]/u);
  });

  it('keeps a short detail as it was', () => {
    const e = new DataError('a.csv', 'data row 3 (line 4)', 'high < max(open, close)', 'high=99.5, open=100');
    expect(e.message).toBe('a.csv: data row 3 (line 4): high < max(open, close) (high=99.5, open=100)');
  });
});

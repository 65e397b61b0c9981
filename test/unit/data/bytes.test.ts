/** barsFromBytes (the page's reader of a dropped file) against loadBars (the CLI's) on the same files. */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { barsFromBytes } from '../../../src/data/bytes.js';
import { loadBars, saveBars } from '../../../src/data/load.js';
import { generateSynthetic } from '../../../src/data/synthetic.js';

const dir = mkdtempSync(join(tmpdir(), 'foxhunt-bytes-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('barsFromBytes', () => {
  it.each(['bars.csv', 'bars.parquet'])('reads %s to the same bars as loadBars', async (name) => {
    const path = join(dir, name);
    await saveBars(path, generateSynthetic({ bars: 300, seed: 3 }));
    const fromFile = (await loadBars(path)).bars;
    const fromBytes = await barsFromBytes(name, new Uint8Array(readFileSync(path)));
    expect(fromBytes.rows).toBe(300);
    expect(fromBytes.bars).toEqual(fromFile);
  });

  it('fails with the same file / row / rule message as loadBars', async () => {
    const path = join(dir, 'bad.csv');
    writeFileSync(
      path,
      'timestamp,open,high,low,close,volume\n2024-01-01T00:00:00Z,100,101,99,100,1\n2024-01-01T00:00:00Z,100,101,99,100,1\n',
    );
    const cli = await loadBars(path).catch((e: Error) => e.message);
    await expect(barsFromBytes(path, new Uint8Array(readFileSync(path)))).rejects.toThrow(cli as string);
    await expect(barsFromBytes('bars.txt', new Uint8Array(1))).rejects.toThrow(/unknown format/);
  });

  it('says how to read an archive or delimited text under another extension', async () => {
    await expect(barsFromBytes('BTCUSDT-1h-2024-01.zip', new Uint8Array(1))).rejects.toThrow(
      'BTCUSDT-1h-2024-01.zip: file: unknown format (extension ".zip"; a compressed file: extract the .csv or .parquet inside first)',
    );
    await expect(barsFromBytes('bars.tsv', new Uint8Array(1))).rejects.toThrow(
      'bars.tsv: file: unknown format (extension ".tsv"; delimited text reads as CSV (comma, semicolon or tab): rename it to .csv)',
    );
    await expect(barsFromBytes('bars.xlsx', new Uint8Array(1))).rejects.toThrow(
      'bars.xlsx: file: unknown format (extension ".xlsx"; use .csv or .parquet)',
    );
  });
});

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { appendLog, type EpochRecord, logPath, readLog, trimLog } from '../../src/train/runlog.js';

const root = mkdtempSync(join(tmpdir(), 'foxhunt-runlog-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const record = (epoch: number) => ({ epoch, algo: 'ppo', backend: 'cpu' }) as unknown as EpochRecord;

describe('run log', () => {
  it('appends one JSON line per epoch and reads them back', () => {
    const dir = mkdtempSync(join(root, 'a-'));
    appendLog(dir, record(1));
    appendLog(dir, record(2));
    expect(readLog(dir).map((r) => r.epoch)).toEqual([1, 2]);
  });

  it('drops lines past the checkpoint and restores the checkpoint line a crash lost', () => {
    const dir = mkdtempSync(join(root, 'b-'));
    for (const e of [1, 2, 3]) appendLog(dir, record(e));
    trimLog(dir, 2, record(2));
    expect(readLog(dir).map((r) => r.epoch)).toEqual([1, 2]);
    // The checkpoint of epoch 3 was written but its log line was not.
    trimLog(dir, 3, record(3));
    expect(readLog(dir).map((r) => r.epoch)).toEqual([1, 2, 3]);
  });

  it('names the line of a torn write', () => {
    const dir = mkdtempSync(join(root, 'c-'));
    writeFileSync(logPath(dir), '{"epoch":1}\n{"epoch":2,"lo');
    expect(() => readLog(dir)).toThrow(/line 2 is not valid JSON/);
  });

  it('lets a resume drop a last line torn by a crash', () => {
    const dir = mkdtempSync(join(root, 'd-'));
    writeFileSync(logPath(dir), '{"epoch":1}\n{"epoch":2,"lo');
    trimLog(dir, 1, record(1));
    expect(readLog(dir).map((r) => r.epoch)).toEqual([1]);
  });
});

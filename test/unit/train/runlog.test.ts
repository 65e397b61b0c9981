import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { NodeStorage } from '../../../src/node/storage.js';
import * as runlog from '../../../src/train/runlog.js';
import { type EpochRecord, logPath } from '../../../src/train/runlog.js';

const storage = new NodeStorage();
const appendLog = (dir: string, r: EpochRecord) => runlog.appendLog(storage, dir, r);
const readLog = (dir: string) => runlog.readLog(storage, dir);
const trimLog = (dir: string, epoch: number, r: EpochRecord | null) => runlog.trimLog(storage, dir, epoch, r);

const root = mkdtempSync(join(tmpdir(), 'foxhunt-runlog-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const record = (epoch: number) => ({ epoch, algo: 'ppo', backend: 'cpu' }) as unknown as EpochRecord;

describe('run log', async () => {
  it('appends one JSON line per epoch and reads them back', async () => {
    const dir = mkdtempSync(join(root, 'a-'));
    await appendLog(dir, record(1));
    await appendLog(dir, record(2));
    expect((await readLog(dir)).map((r) => r.epoch)).toEqual([1, 2]);
  });

  it('drops lines past the checkpoint and restores the checkpoint line a crash lost', async () => {
    const dir = mkdtempSync(join(root, 'b-'));
    for (const e of [1, 2, 3]) await appendLog(dir, record(e));
    await trimLog(dir, 2, record(2));
    expect((await readLog(dir)).map((r) => r.epoch)).toEqual([1, 2]);
    // The checkpoint of epoch 3 was written but its log line was not.
    await trimLog(dir, 3, record(3));
    expect((await readLog(dir)).map((r) => r.epoch)).toEqual([1, 2, 3]);
  });

  it('names the line of a torn write', async () => {
    const dir = mkdtempSync(join(root, 'c-'));
    writeFileSync(logPath(dir), '{"epoch":1}\n{"epoch":2,"lo');
    await expect(readLog(dir)).rejects.toThrow(/line 2 is not valid JSON/);
  });

  it('lets a resume drop a last line torn by a crash', async () => {
    const dir = mkdtempSync(join(root, 'd-'));
    writeFileSync(logPath(dir), '{"epoch":1}\n{"epoch":2,"lo');
    await trimLog(dir, 1, record(1));
    expect((await readLog(dir)).map((r) => r.epoch)).toEqual([1]);
  });
});

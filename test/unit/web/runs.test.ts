import { describe, expect, it } from 'vitest';
import { MemoryStorage } from '../../../src/train/storage.js';
import { KEEP_RUNS, newRunDir, RUNS_DIR } from '../../../web/runs.js';

describe("the page's run directories (web/runs.ts)", () => {
  it('gives each run its own directory and keeps the newest KEEP_RUNS, the new one included', async () => {
    const st = new MemoryStorage();
    await st.write('web-run/log.jsonl', '{}\n');
    const dirs: string[] = [];
    for (let i = 0; i < 5; i++) {
      // Tabs closed or reloaded: no previous run of their own to remove.
      const dir = await newRunDir(st, null, 1_700_000_000_000 + i);
      expect(dir.startsWith(`${RUNS_DIR}/`)).toBe(true);
      expect(dirs).not.toContain(dir);
      dirs.push(dir);
      await st.write(`${dir}/log.jsonl`, '{}\n');
      expect((await st.list(RUNS_DIR)).length).toBeLessThanOrEqual(KEEP_RUNS);
    }
    expect(await st.list(RUNS_DIR)).toEqual(dirs.slice(-KEEP_RUNS).map((d) => d.split('/')[1]));
    // The directory all runs shared before goes too.
    expect(await st.exists('web-run')).toBe(false);
  });

  it("removes the tab's previous run and leaves the other tabs' runs", async () => {
    const st = new MemoryStorage();
    const a = await newRunDir(st, null, 1);
    await st.write(`${a}/log.jsonl`, 'a\n');
    const b1 = await newRunDir(st, null, 2);
    await st.write(`${b1}/log.jsonl`, 'b1\n');
    const b2 = await newRunDir(st, b1, 3);
    await st.write(`${b2}/log.jsonl`, 'b2\n');
    expect(await st.exists(a)).toBe(true);
    expect(await st.exists(b1)).toBe(false);
    expect(await st.list(RUNS_DIR)).toEqual([a, b2].map((d) => d.split('/')[1]));
  });
});

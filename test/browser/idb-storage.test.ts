/**
 * The page's IndexedDB storage (web/idb_storage.ts) in Chromium against the Storage contract
 * (src/train/storage.ts), and a PPO run on the CPU engine through it: checkpoints and log.
 */
import { describe, expect, it } from 'vitest';
import { cloneDefaults, validateConfig } from '../../src/config.js';
import { lastDir } from '../../src/train/checkpoint.js';
import { loadPpoCheckpoint } from '../../src/train/ppo_checkpoint.js';
import { runTraining } from '../../src/train/run.js';
import { readLog } from '../../src/train/runlog.js';
import { commitDir, joinPath, readText } from '../../src/train/storage.js';
import { IndexedDbStorage } from '../../web/idb_storage.js';

let n = 0;
const fresh = () => IndexedDbStorage.open(`foxhunt-test-${Date.now()}-${n++}`);

describe('IndexedDB storage', () => {
  it('reads back what it wrote, appends, lists, renames and removes', async () => {
    const s = await fresh();
    const dir = 'runs/x';
    expect(await s.read(joinPath(dir, 'a.bin'))).toBeNull();
    await s.write(joinPath(dir, 'a.bin'), new Uint8Array([1, 2, 3]));
    await s.write(joinPath(dir, 'sub/b.txt'), 'hé');
    expect(Array.from((await s.read(joinPath(dir, 'a.bin')))!)).toEqual([1, 2, 3]);
    expect(await readText(s, joinPath(dir, 'sub/b.txt'))).toBe('hé');
    await s.append(joinPath(dir, 'log'), 'one\n');
    await s.append(joinPath(dir, 'log'), 'two\n');
    expect(await readText(s, joinPath(dir, 'log'))).toBe('one\ntwo\n');
    expect(await s.list(dir)).toEqual(['a.bin', 'log', 'sub']);
    // A sibling whose name extends the directory's is not inside it.
    await s.write('runs/x2/c', 'c');
    expect(await s.list('runs')).toEqual(['x', 'x2']);
    expect(await s.exists(joinPath(dir, 'sub'))).toBe(true);
    await s.rename(joinPath(dir, 'sub'), joinPath(dir, 'moved'));
    expect(await s.exists(joinPath(dir, 'sub'))).toBe(false);
    expect(await readText(s, joinPath(dir, 'moved/b.txt'))).toBe('hé');
    await expect(s.rename(joinPath(dir, 'a.bin'), joinPath(dir, 'moved'))).rejects.toThrow(/already exists/);
    await s.remove(dir);
    expect(await s.exists(dir)).toBe(false);
    expect(await readText(s, 'runs/x2/c')).toBe('c');
  });

  it('commits a staged directory over an old one', async () => {
    const s = await fresh();
    await s.write('r/d/f', 'old');
    await s.write('r/d.pending/f', 'new');
    await commitDir(s, 'r/d.pending', 'r/d');
    expect(await readText(s, 'r/d/f')).toBe('new');
    expect(await s.list('r')).toEqual(['d']);
  });

  it('holds a PPO run: last/ and best/ checkpoints and the log', async () => {
    const s = await fresh();
    const cfg = cloneDefaults();
    Object.assign(cfg.train, { backend: 'cpu', epochs: 1, outDir: 'run' });
    Object.assign(cfg.rollout, { episodes: 2, steps: 16 });
    Object.assign(cfg.ppo, { minibatch: 32, updateEpochs: 1 });
    cfg.data.synthBars = 4000;
    cfg.env.episodeBars = 250;
    cfg.env.curiosityBatch = 32;
    await runTraining({ cfg: validateConfig(cfg), storage: s, resume: null });
    expect((await readLog(s, 'run')).map((r) => r.epoch)).toEqual([1]);
    expect((await loadPpoCheckpoint(s, lastDir('run'))).state.epoch).toBe(1);
    expect(await s.list('run')).toEqual(['best', 'last', 'log.jsonl']);
  });
});

import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { applyFlags, cloneDefaults, validateConfig } from '../../../src/config.js';
import { generateSynthetic } from '../../../src/data/synthetic.js';
import { NodeStorage } from '../../../src/node/storage.js';
import { lastDir } from '../../../src/train/checkpoint.js';
import { RunStoppedError } from '../../../src/train/ppo.js';
import { loadPpoCheckpoint } from '../../../src/train/ppo_checkpoint.js';
import { resumeConfig, runTraining } from '../../../src/train/run.js';
import { readLog } from '../../../src/train/runlog.js';
import {
  commitDir,
  committedDir,
  joinPath,
  MemoryStorage,
  PREVIOUS,
  readText,
  type Storage,
} from '../../../src/train/storage.js';

const root = mkdtempSync(join(tmpdir(), 'foxhunt-storage-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let n = 0;
const kinds: [string, () => { s: Storage; dir: string }][] = [
  ['memory', () => ({ s: new MemoryStorage(), dir: 'runs/x' })],
  ['node', () => ({ s: new NodeStorage(), dir: join(root, `r${n++}`) })],
];

describe.each(kinds)('%s storage', (_name, make) => {
  it('reads back what it wrote, appends, lists, renames and removes', async () => {
    const { s, dir } = make();
    expect(await s.read(joinPath(dir, 'a.bin'))).toBeNull();
    await s.write(joinPath(dir, 'a.bin'), new Uint8Array([1, 2, 3]));
    await s.write(joinPath(dir, 'sub/b.txt'), 'hé');
    expect(Array.from((await s.read(joinPath(dir, 'a.bin')))!)).toEqual([1, 2, 3]);
    expect(await readText(s, joinPath(dir, 'sub/b.txt'))).toBe('hé');
    await s.write(joinPath(dir, 'a.bin'), new Uint8Array([9]));
    expect(Array.from((await s.read(joinPath(dir, 'a.bin')))!)).toEqual([9]);

    await s.append(joinPath(dir, 'log'), 'one\n');
    await s.append(joinPath(dir, 'log'), 'two\n');
    expect(await readText(s, joinPath(dir, 'log'))).toBe('one\ntwo\n');

    expect(await s.list(dir)).toEqual(['a.bin', 'log', 'sub']);
    expect(await s.list(joinPath(dir, 'nothing'))).toEqual([]);
    expect(await s.exists(joinPath(dir, 'sub'))).toBe(true);

    await s.rename(joinPath(dir, 'sub'), joinPath(dir, 'moved'));
    expect(await s.exists(joinPath(dir, 'sub'))).toBe(false);
    expect(await readText(s, joinPath(dir, 'moved/b.txt'))).toBe('hé');
    await expect(s.rename(joinPath(dir, 'moved'), joinPath(dir, 'a.bin'))).rejects.toThrow(/exists/);

    await s.remove(joinPath(dir, 'moved'));
    await s.remove(joinPath(dir, 'never-was'));
    expect(await s.list(dir)).toEqual(['a.bin', 'log']);
  });

  it('commitDir swaps a staged directory in whole, and committedDir finds the old one mid-swap', async () => {
    const { s, dir } = make();
    const dest = joinPath(dir, 'last');
    await s.write(joinPath(dest, 'f'), 'old');
    await s.write(joinPath(dir, 'staged/f'), 'new');
    await s.write(joinPath(dir, 'staged/g'), 'new too');
    await commitDir(s, joinPath(dir, 'staged'), dest);
    expect(await s.list(dir)).toEqual(['last']);
    expect(await s.list(dest)).toEqual(['f', 'g']);
    expect(await readText(s, joinPath(dest, 'f'))).toBe('new');

    // A crash after step 1 (dest moved aside) leaves only the previous copy: it is what readers get.
    await s.rename(dest, dest + PREVIOUS);
    expect(await committedDir(s, dest)).toBe(dest + PREVIOUS);
    await s.write(joinPath(dir, 'staged2/f'), 'newer');
    await commitDir(s, joinPath(dir, 'staged2'), dest);
    expect(await committedDir(s, dest)).toBe(dest);
    expect(await readText(s, joinPath(dest, 'f'))).toBe('newer');
    expect(await s.exists(dest + PREVIOUS)).toBe(false);
    expect(await committedDir(s, joinPath(dir, 'none'))).toBeNull();
  });
});

describe('the node storage', () => {
  it('leaves no temp file behind and writes where the path says', async () => {
    const s = new NodeStorage();
    const dir = join(root, 'plain');
    await s.write(join(dir, 'x.json'), '{}');
    expect(readdirSync(dir)).toEqual(['x.json']);
    expect(readFileSync(join(dir, 'x.json'), 'utf8')).toBe('{}');
  });
});

describe('the trainer runs anywhere', () => {
  it('nothing src/train/run.ts or src/train/ppo.ts imports, however deep, comes from node: or a package', () => {
    const seen = new Set<string>();
    const outside: string[] = [];
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      // Static value imports only: `import type` is erased, dynamic imports are the backends' own.
      for (const m of readFileSync(file, 'utf8').matchAll(/^import (?!type )[^;]*?from '([^']+)'/gms)) {
        if (m[1].startsWith('.')) visit(join(file, '..', m[1].replace(/\.js$/, '.ts')));
        else outside.push(`${file}: ${m[1]}`);
      }
    };
    visit('src/train/run.ts');
    visit('src/train/ppo.ts');
    expect(seen.size).toBeGreaterThan(40);
    expect(outside).toEqual([]);
  });
});

describe('runTraining in memory', () => {
  it('trains on bars held in memory into a MemoryStorage, and writes no file', async () => {
    const cfg = validateConfig(
      applyFlags(cloneDefaults(), {
        'env.episodeBars': '24',
        'env.curiosityBatch': '32',
        'rollout.episodes': '4',
        'rollout.steps': '16',
        'ppo.minibatch': '32',
        'ppo.updateEpochs': '1',
        'train.backend': 'cpu',
        'train.epochs': '1',
        'train.outDir': 'mem/run',
      }),
    );
    const storage = new MemoryStorage();
    const bars = generateSynthetic({ bars: 1500, seed: 4 });
    const result = await runTraining({ cfg, storage, bars: { bars, source: 'dropped.csv' }, resume: null });
    expect(result.records.map((r) => r.epoch)).toEqual([1]);
    expect((await readLog(storage, 'mem/run')).map((r) => r.epoch)).toEqual([1]);
    const ckpt = await loadPpoCheckpoint(storage, lastDir('mem/run'));
    expect(ckpt.state.data).toMatchObject({ source: 'dropped.csv', bars: 1500 });
    expect(readdirSync('.').includes('mem')).toBe(false);
  });
});

describe('stopping a run', () => {
  it('an aborted signal stops it after the epoch in progress, and a resume finishes it', async () => {
    const cfg = validateConfig(
      applyFlags(cloneDefaults(), {
        'data.synthBars': '1500',
        'env.episodeBars': '24',
        'env.curiosityBatch': '16',
        'rollout.episodes': '2',
        'rollout.steps': '8',
        'ppo.minibatch': '16',
        'ppo.updateEpochs': '1',
        'train.backend': 'cpu',
        'train.epochs': '3',
        'train.outDir': 'mem/stop',
      }),
    );
    const storage = new MemoryStorage();
    const stop = new AbortController();
    const run = runTraining({ cfg, storage, resume: null, signal: stop.signal, onEpoch: () => stop.abort() });
    await expect(run).rejects.toThrow(RunStoppedError);
    await expect(
      runTraining({ cfg, storage, resume: null, signal: new AbortController().signal }),
    ).rejects.toThrow(/already holds a run/);
    expect((await readLog(storage, 'mem/stop')).map((r) => r.epoch)).toEqual([1]);
    const resumed = await resumeConfig(storage, 'mem/stop', (base) => base);
    expect(resumed.checkpoint.state.epoch).toBe(1);
    const { records, summary } = await runTraining({ cfg: resumed.cfg, storage, resume: resumed.checkpoint });
    expect(records.map((r) => r.epoch)).toEqual([2, 3]);
    expect(summary.epochs).toBe(3);
  });
});

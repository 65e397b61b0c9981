/**
 * The one trainer loop on the device engine: a tiny PPO run on WebGPU (lavapipe in CI), stopped
 * after epoch 1 and resumed from its checkpoint, agrees with the same run on the CPU engine: the
 * first rollout exactly, later losses and rewards to f32 tolerance (the device sums in another
 * order). WebGPU is skipped with its reason where no adapter exists, except under
 * FOXHUNT_REQUIRE_WEBGPU=1 (CI), where that is a failure.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createBackend } from '../../src/backend/index.js';
import { BackendUnavailableError } from '../../src/backend/types.js';
import { applyFlags, type Config, cloneDefaults, validateConfig } from '../../src/config.js';
import { NodeStorage } from '../../src/node/storage.js';
import { resumeConfig, runTraining } from '../../src/train/run.js';
import { readLog } from '../../src/train/runlog.js';

const storage = new NodeStorage();

const TINY: Record<string, string> = {
  'data.synthBars': '2000',
  'env.episodeBars': '24',
  'env.curiosityBatch': '32',
  // The SPEC reward terms (off by default) on, so that the curiosity model's state is covered too.
  'env.curiosityScale': '1',
  'env.diversityPenalty': '-0.1',
  'env.barrierTerminates': 'true',
  'rollout.episodes': '4',
  'rollout.steps': '16',
  'ppo.minibatch': '32',
  'ppo.updateEpochs': '2',
  'train.seed': '5',
};

const root = mkdtempSync(join(tmpdir(), 'foxhunt-backends-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const config = (backend: string, outDir: string, epochs: number): Config =>
  validateConfig(
    applyFlags(cloneDefaults(), {
      ...TINY,
      'train.backend': backend,
      'train.outDir': outDir,
      'train.epochs': String(epochs),
    }),
  );

const close = (a: number, b: number) => Math.abs(a - b) <= 1e-4 + 1e-3 * Math.abs(b);

describe('PPO on the device engine (webgpu)', () => {
  it('trains, checkpoints and resumes through the same loop as the CPU engine', async (ctx) => {
    try {
      (await createBackend('webgpu')).destroy();
    } catch (err) {
      if (err instanceof BackendUnavailableError && process.env.FOXHUNT_REQUIRE_WEBGPU !== '1') {
        ctx.skip(`webgpu unavailable here: ${err.message}`);
      }
      throw err;
    }
    const cpuDir = join(root, 'cpu');
    await runTraining({ cfg: config('cpu', cpuDir, 2), resume: null, storage });

    const gpuDir = join(root, 'webgpu');
    await runTraining({ cfg: config('webgpu', gpuDir, 1), resume: null, storage });
    const { cfg, checkpoint } = await resumeConfig(storage, gpuDir, (base) =>
      validateConfig(applyFlags(base, { 'train.epochs': '2' })),
    );
    expect(checkpoint.state.backend).toBe('webgpu');
    await runTraining({ cfg, resume: checkpoint, storage });

    const cpu = await readLog(storage, cpuDir);
    const gpu = await readLog(storage, gpuDir);
    expect(gpu.map((r) => [r.epoch, r.backend])).toEqual([
      [1, 'webgpu'],
      [2, 'webgpu'],
    ]);
    // Rollout 1 uses the initial weights on both: identical decisions, rewards to f32 sums.
    for (const [k, v] of Object.entries(gpu[0].reward)) expect(close(v, cpu[0].reward[k]), k).toBe(true);
    for (let e = 0; e < 2; e++) {
      for (const k of ['policy', 'value', 'entropy', 'total'] as const) {
        expect(close(gpu[e].losses[k], cpu[e].losses[k]), `epoch ${e + 1} ${k}`).toBe(true);
      }
    }
  }, 900_000);
});

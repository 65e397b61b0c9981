/**
 * The PPO epoch benchmark (foxhunt bench train): FLOP counting by hand, one tiny measured run on
 * the CPU backend (every phase timed, launches per step, FLOPs consistent), and the command's
 * one-line errors. Speeds are not asserted here: they come from running the benchmark.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { devMain } from '../../../dev/main.js';
import { createCpuBackend } from '../../../src/backend/cpu/index.js';
import { main } from '../../../src/cli/main.js';
import { loadConfig } from '../../../src/config.js';
import { planMlps } from '../../../src/device/learn_mlp.js';
import { buildLayout } from '../../../src/nets/layout.js';
import { benchPpoTrain, stepFlops } from '../../../src/train/ppo_bench.js';
import { prepareData } from '../../../src/train/run.js';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('bench train', () => {
  it('counts 2 flops per multiply-add of forward, dW (with db) and dX above the first layer', () => {
    const a = buildLayout('a', [
      { name: 'l0', in: 3, out: 4, act: 'relu' },
      { name: 'l1', in: 4, out: 2, act: 'none' },
    ]);
    const c = buildLayout('c', [{ name: 'l0', in: 3, out: 1, act: 'none' }]);
    // a.l0: fwd 3*4, dW 4*4 (3 inputs + bias); a.l1: fwd 4*2, dW 5*2, dX 4*2; c.l0: fwd 3, dW 4.
    const macs = 12 + 16 + (8 + 10 + 8) + (3 + 4);
    expect(stepFlops(planMlps([a, c], 10))).toBe(2 * 10 * macs);
  });

  it('times collect, update and validate of a tiny PPO setting on the CPU backend', async () => {
    const cfg = loadConfig(undefined, {
      'data.synthBars': '3000',
      'rollout.episodes': '2',
      'rollout.steps': '16',
      'ppo.minibatch': '16',
      'ppo.updateEpochs': '1',
    });
    const data = await prepareData(cfg);
    const backend = createCpuBackend();
    try {
      const r = await benchPpoTrain({
        backend,
        cfg,
        market: data.market,
        splits: data.splits,
        barsPerYear: data.barsPerYear,
        repeats: 1,
        kernelRepeats: 1,
      });
      expect(r.collectNote).toBeUndefined();
      expect(r.samples).toBe(32);
      expect(r.minibatchSteps).toBe(2);
      // gather, 3 paired forward stages, the critic's tail in one chain launch, loss, 6 backward
      // stages, adam.
      expect(r.chain).toBe(true);
      expect(r.chainRows).toBe(4); // the staged build's default rows (the CPU plan hands off like CUDA)
      expect(r.launchesPerStep).toBe(13);
      for (const ms of Object.values(r.times)) expect(ms).toBeGreaterThan(0);
      expect(r.stepKernels.map((k) => k.launch)).toEqual([
        'ppo_gather',
        'mlp_forward policy_layer_0 + value_layer_0',
        'mlp_forward policy_layer_1 + value_layer_1',
        'mlp_forward policy_output + value_layer_2',
        'mlp_chain_forward value_layer_3 -> value_layer_4 -> value_output',
        'ppo_loss',
        'mlp_backward policy_output + value_output',
        'mlp_backward policy_layer_1 + value_layer_4',
        'mlp_backward policy_layer_0 + value_layer_3',
        'mlp_backward value_layer_2',
        'mlp_backward value_layer_1',
        'mlp_backward value_layer_0',
        'adam_step',
      ]);
      expect(r.stepKernels.every((k) => k.ms > 0 && k.groups > 0)).toBe(true);
      expect(r.updateFlopsPerSec).toBeCloseTo(r.updateFlops / (r.times.updateMs / 1000), 0);
      expect(Number.isFinite(r.losses.policy) && r.losses.gradNorm > 0).toBe(true);
      // --chain off: the earlier 15 launches, value_layer_3 .. value_output one launch each.
      const off = await benchPpoTrain({
        backend,
        cfg,
        market: data.market,
        splits: data.splits,
        barsPerYear: data.barsPerYear,
        repeats: 1,
        kernelRepeats: 1,
        validate: false,
        chain: false,
      });
      expect(off.chain).toBe(false);
      expect(off.launchesPerStep).toBe(15);
      expect(off.stepKernels.slice(4, 7).map((k) => k.launch)).toEqual([
        'mlp_forward value_layer_3',
        'mlp_forward value_layer_4',
        'mlp_forward value_output',
      ]);
      // The TS twin adds as mlp_forward does: the same losses either way on the CPU.
      expect(off.losses).toEqual(r.losses);
      // --delta-chain on --fuse-loss off: the top layers' dX in one mlp_delta_chain launch, then 3
      // mlp_backward launches (on the CPU, without a split budget, each layer's dW at its first
      // chance).
      const dcRun = (fuseLoss?: boolean) =>
        benchPpoTrain({
          backend,
          cfg,
          market: data.market,
          splits: data.splits,
          barsPerYear: data.barsPerYear,
          repeats: 1,
          kernelRepeats: 1,
          validate: false,
          deltaChain: true,
          fuseLoss,
        });
      const dc = await dcRun(false);
      expect(r.deltaChain).toBe(false);
      expect(r.fuseLoss).toBe(false);
      expect(dc.deltaChain).toBe(true);
      expect(dc.fuseLoss).toBe(false);
      expect(dc.launchesPerStep).toBe(11);
      expect(dc.stepKernels.slice(5, 10).map((k) => k.launch)).toEqual([
        'ppo_loss',
        'mlp_delta_chain dX of policy_output, policy_layer_1 + value_output, value_layer_4, value_layer_3',
        'mlp_backward value_layer_2 + value_layer_3 + policy_layer_1 + value_layer_4 + policy_layer_0 + policy_output + value_output',
        'mlp_backward value_layer_1',
        'mlp_backward value_layer_0',
      ]);
      // Its TS twin adds as mlp_backward's dX does: the same losses on the CPU.
      expect(dc.losses).toEqual(r.losses);
      // --fuse-loss on (the default with the delta chain): no ppo_loss launch, 10 per step; the
      // same gradients (so the same grad norm), the loss sums grouped by the chain's workgroups.
      const fused = await dcRun(undefined);
      expect(fused.fuseLoss).toBe(true);
      expect(fused.launchesPerStep).toBe(10);
      expect(fused.stepKernels.map((k) => k.launch)).not.toContain('ppo_loss');
      expect(fused.stepKernels[5].launch).toBe(
        'mlp_delta_chain loss head + dX of policy_output, policy_layer_1 + value_output, value_layer_4, value_layer_3',
      );
      expect(fused.losses.gradNorm).toBe(r.losses.gradNorm);
      for (const [k, v] of Object.entries(r.losses)) {
        const got = fused.losses[k as keyof typeof r.losses];
        // Means of f32 sums of O(1) per-sample terms: absolute 1e-6 (a mean near 0 has no relative scale).
        expect(Math.abs(got - v), `${k}: ${got} vs ${v}`).toBeLessThanOrEqual(1e-6 + 1e-6 * Math.abs(v));
      }
    } finally {
      backend.destroy();
    }
  });

  it('refuses another algorithm and a rollout smaller than a minibatch with one line', async () => {
    const err: string[] = [];
    vi.spyOn(console, 'error').mockImplementation((...a) => void err.push(a.join(' ')));
    vi.spyOn(console, 'log').mockImplementation(() => {});
    expect(await main(['bench', 'train', '--algo', 'sac'])).toBe(1);
    expect(err.at(-1)).toBe('foxhunt bench train: --algo sac: bench train measures ppo, dqn, c51 or iqn');
    expect(await devMain(['train', '--chain', 'maybe'])).toBe(1);
    expect(err.at(-1)).toBe('dev/bench train: --chain must be on, off or both, got "maybe"');
    expect(await devMain(['train', '--chain-rows', '32'])).toBe(1);
    expect(err.at(-1)).toBe('dev/bench train: --chain-rows must be one of 2, 4, 8, 16, got "32"');
    expect(await devMain(['train', '--delta-chain', 'maybe'])).toBe(1);
    expect(err.at(-1)).toBe('dev/bench train: --delta-chain must be on, off or both, got "maybe"');
    expect(await devMain(['train', '--fuse-loss', 'maybe'])).toBe(1);
    expect(err.at(-1)).toBe('dev/bench train: --fuse-loss must be on, off or both, got "maybe"');
    expect(await main(['bench', 'train', '--backend', 'cpu', '--episodes', '2', '--steps', '8'])).toBe(1);
    expect(err.at(-1)).toBe(
      'foxhunt bench train: config: ppo.minibatch: must not exceed rollout.episodes * rollout.steps (512 > 2 * 8): lower --ppo.minibatch or raise the rollout',
    );
  });

  it("--train-steps sets the DQN family's train steps an epoch (default: the algorithm's), PPO refuses it", async () => {
    const err: string[] = [];
    const out: string[] = [];
    vi.spyOn(console, 'error').mockImplementation((...a) => void err.push(a.join(' ')));
    vi.spyOn(console, 'log').mockImplementation((...a) => void out.push(a.join(' ')));
    expect(await main(['bench', 'train', '--train-steps', '3'])).toBe(1);
    expect(err.at(-1)).toBe(
      'foxhunt bench train: --train-steps: the DQN family only (--algo dqn, c51 or iqn)',
    );
    const args = ['bench', 'train', '--algo', 'c51', '--backend', 'cpu', '--episodes', '8', '--steps', '64'];
    expect(await main([...args, '--train-steps', '0'])).toBe(1);
    expect(err.at(-1)).toBe('foxhunt bench train: --train-steps must be an integer >= 1, got "0"');
    expect(await main([...args, '--train-steps', '1', '--repeats', '1', '--json'])).toBe(0);
    expect(JSON.parse(out.join('\n')).results[0]).toMatchObject({ algo: 'c51', trainSteps: 1, batch: 512 });
  });

  it('times the configuration of --config FILE and --section.field flags (N, L, K and the net as train runs them)', async () => {
    const err: string[] = [];
    const out: string[] = [];
    vi.spyOn(console, 'error').mockImplementation((...a) => void err.push(a.join(' ')));
    vi.spyOn(console, 'log').mockImplementation((...a) => void out.push(a.join(' ')));
    const dir = mkdtempSync(join(tmpdir(), 'foxhunt-bench-'));
    try {
      const file = join(dir, 'iqn.json');
      writeFileSync(
        file,
        JSON.stringify({
          train: { algo: 'iqn' },
          data: { synthBars: 3000 },
          rollout: { episodes: 4, steps: 16 },
          dqn: { batch: 16, stepsPerEpoch: 2, iqnTau: 8, replayCapacity: 5000 },
        }),
      );
      // The file's algorithm, sizes and train steps; a flag over the file.
      expect(
        await main([
          'bench',
          'train',
          '--backend',
          'cpu',
          '--config',
          file,
          '--dqn.iqnTau',
          '4',
          '--repeats',
          '1',
          '--json',
        ]),
      ).toBe(0);
      const run = JSON.parse(out.join('\n'));
      expect(run.algo).toBe('iqn');
      expect(run.config.dqn).toMatchObject({ iqnTau: 4, batch: 16, replayCapacity: 5000 });
      expect(run.results[0]).toMatchObject({ algo: 'iqn', episodes: 4, steps: 16, batch: 16, trainSteps: 2 });
      // Flags alone: PPO at the configuration's rollout, the bench's --episodes over it.
      out.length = 0;
      const ppo = ['bench', 'train', '--backend', 'cpu', '--data.synthBars', '3000', '--rollout.steps', '16'];
      expect(
        await main([
          ...ppo,
          '--ppo.minibatch',
          '16',
          '--ppo.updateEpochs',
          '1',
          '--episodes',
          '2',
          '--repeats',
          '1',
          '--json',
        ]),
      ).toBe(0);
      const p = JSON.parse(out.join('\n'));
      expect(p.config.ppo).toMatchObject({ minibatch: 16, updateEpochs: 1 });
      expect(p.results[0]).toMatchObject({ episodes: 2, steps: 16, samples: 32, minibatchSteps: 2 });
      // A wrong field is one line naming it.
      expect(await main(['bench', 'train', '--backend', 'cpu', '--dqn.iqnTaus', '4'])).toBe(1);
      expect(err.at(-1)).toMatch(/^foxhunt bench train: .*dqn\.iqnTaus/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses --precision tf32 off CUDA, and an unknown precision, with one line', async () => {
    const err: string[] = [];
    vi.spyOn(console, 'error').mockImplementation((...a) => void err.push(a.join(' ')));
    vi.spyOn(console, 'log').mockImplementation(() => {});
    expect(await main(['bench', 'train', '--backend', 'cpu', '--precision', 'tf32'])).toBe(1);
    expect(err.at(-1)).toBe(
      'foxhunt bench train: --precision tf32: tf32 runs on CUDA tensor cores only; use --precision exact, or --backend cuda',
    );
    expect(await main(['bench', 'train', '--backend', 'cpu', '--precision', 'both'])).toBe(1);
    expect(err.at(-1)).toBe('foxhunt bench train: --precision must be auto, exact or tf32, got "both"');
    // The dev harness keeps both (exact then tf32) and refuses it off CUDA the same way.
    for (const p of ['tf32', 'both']) {
      expect(await devMain(['train', '--backend', 'cpu', '--precision', p])).toBe(1);
      expect(err.at(-1)).toBe(
        `dev/bench train: --precision ${p}: tf32 runs on CUDA tensor cores only; use --precision exact, or --backend cuda`,
      );
    }
    expect(await devMain(['train', '--backend', 'cpu', '--precision', 'fp16'])).toBe(1);
    expect(err.at(-1)).toBe('dev/bench train: --precision must be auto, exact, tf32 or both, got "fp16"');
  });
});

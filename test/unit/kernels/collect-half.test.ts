/**
 * The f16 weight copy of the tensor-core collection engine (src/kernels/collect_half.ts): the
 * packed layout (one matrix per layer op, 16-aligned, zero padding, fused blocks in op order), the
 * host's f32 -> f16 conversion, pack_half's CPU twin against the layout, and the WGSL pack_half on
 * lavapipe against the twin (it uses core WGSL only: pack2x16float). The engine itself needs
 * chromium-experimental-subgroup-matrix, which lavapipe lacks: its parity cases run on a GPU
 * (`foxhunt parity --backend webgpu`); here its options, plan and refusal are checked.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCpuBackend } from '../../../src/backend/cpu/index.js';
import { createWebGpuBackend, type WebGpuBackend } from '../../../src/backend/webgpu/index.js';
import { cloneDefaults } from '../../../src/config.js';
import { DqnDeviceCollector, hasSubgroupMatrix } from '../../../src/device/collect.js';
import { checkDqnOptions, collectDqnSpec, dqnWorkgroupBytes } from '../../../src/kernels/collect_dqn.js';
import {
  fromHalfBits,
  HALF_ENTRIES,
  type HalfEntry,
  type HalfOrder,
  halfConstants,
  halfNetsLayout,
  halfTable,
  packHalf,
  packHalfDispatch,
  toHalfBits,
} from '../../../src/kernels/collect_half.js';
import { initParams } from '../../../src/nets/forward.js';
import { curiosityLayout, duelingLayout, layerByName, NetId } from '../../../src/nets/layout.js';
import { randomMarket } from '../env/fixtures.js';

const q = duelingLayout('plain');
const c = curiosityLayout();
const netsFloats = 2 * q.size + c.size;

/** Nets with distinct, mostly non-zero values, some outside the f16 range. */
function testNets(): Float32Array {
  const nets = new Float32Array(netsFloats);
  nets.set(initParams(q, NetId.QOnline, 3), 0);
  nets.set(initParams(q, NetId.QOnline + 1, 3), q.size);
  nets.set(initParams(c, NetId.Curiosity, 3), 2 * q.size);
  nets[5] = 1e6;
  nets[q.size + 7] = -7e4;
  return nets;
}

/** Half (row j, input k) of entry e, straight from the layout's definition. */
function expectedHalf(
  nets: Float32Array,
  e: ReturnType<typeof halfNetsLayout>['entries'][number],
  j: number,
  k: number,
) {
  const [b0, b1] = e.blocks;
  const b = j < b0.rows ? b0 : b1;
  const jr = j < b0.rows ? j : j - b0.rows;
  if (jr >= b.rows || k < b.kLo || k >= b.kLo + b.kLen) return 0;
  return nets[b.w + jr * b.kLen + (k - b.kLo)];
}

describe('f16 nets layout', () => {
  const layout = halfNetsLayout();
  it('has one 16-aligned, 16-padded matrix per op, keyed by the first block', () => {
    expect(layout.entries).toHaveLength(HALF_ENTRIES);
    let end = 0;
    for (const e of layout.entries) {
      expect(e.off % 16, e.name).toBe(0);
      expect(e.off, e.name).toBe(end);
      expect(e.outPad % 16).toBe(0);
      expect(e.kPad % 16).toBe(0);
      expect(e.outPad).toBeGreaterThanOrEqual(e.blocks[0].rows + e.blocks[1].rows);
      expect(e.outPad - (e.blocks[0].rows + e.blocks[1].rows)).toBeLessThan(16);
      end = e.off + e.outPad * e.kPad;
    }
    expect(layout.halves).toBe(end);
    expect(new Set(layout.entries.map((e) => e.key)).size).toBe(HALF_ENTRIES);
    const heads = layout.entries.find((e) => e.name === 'target heads')!;
    expect(heads.key).toBe(q.size + layerByName(q, 'advantage_stream.1').wOffset);
    expect(heads.blocks[0]).toMatchObject({ rows: 45, kLo: 128, kLen: 128 });
    expect(heads.blocks[1]).toMatchObject({ rows: 1, kLo: 0, kLen: 128 });
    expect([heads.outPad, heads.kPad]).toEqual([48, 256]);
    const trunk0 = layout.entries[0];
    expect([trunk0.outPad, trunk0.kPad]).toEqual([256, 64]);
    const constants = halfConstants(layout);
    expect(constants.MMH_KEY_8).toBe(2 * q.size + layerByName(c, 'fc1').wOffset);
    expect(constants.MMH_OFF_9).toBe(layout.entries[9].off);
  });

  it('converts to f16 by rounding to nearest even, clamping to +-65504, keeping subnormals', () => {
    expect(toHalfBits(1)).toBe(0x3c00);
    expect(toHalfBits(-2)).toBe(0xc000);
    expect(toHalfBits(65504)).toBe(0x7bff);
    expect(toHalfBits(1e9)).toBe(0x7bff);
    expect(toHalfBits(-1e9)).toBe(0xfbff);
    expect(toHalfBits(1 + 2 ** -11)).toBe(0x3c00); // tie: to even
    expect(toHalfBits(1 + 3 * 2 ** -11)).toBe(0x3c02); // tie: to even (up)
    expect(toHalfBits(2 ** -24)).toBe(1);
    expect(toHalfBits(2 ** -26)).toBe(0);
    for (const x of [0.1, -0.37, 3.3, 1e-3, 6.2e-5, 2e-6, 1234.5]) {
      const back = fromHalfBits(toHalfBits(x));
      const ulp = Math.max(2 ** -24, 2 ** (Math.floor(Math.log2(Math.abs(x))) - 10));
      expect(Math.abs(back - x), String(x)).toBeLessThanOrEqual(ulp / 2);
    }
  });

  // Order 0 (engine 4): row-major [outPad, kPad]; order 1 (engine 5): groups of 8 inputs, word
  // g outPad + j of a matrix holding inputs 8 g .. 8 g + 7 of output j.
  const at = (order: HalfOrder, e: HalfEntry, j: number, k: number) =>
    order === 0 ? e.off + j * e.kPad + k : e.off + (Math.floor(k / 8) * e.outPad + j) * 8 + (k % 8);
  it.each([0, 1] as const)(
    "pack_half's CPU twin writes every entry's matrix and zeros around it (order %i)",
    (order) => {
      const nets = testNets();
      const cpu = createCpuBackend();
      const bNets = cpu.createBuffer(nets.byteLength, 'nets');
      cpu.upload(bNets, nets);
      const table = halfTable(layout);
      const bTable = cpu.createBuffer(table.byteLength, 'table');
      cpu.upload(bTable, table);
      const bOut = cpu.createBuffer(layout.words * 4, 'nets16');
      cpu.run([packHalfDispatch(bNets, bTable, bOut, layout, order)]);
      return cpu.download(bOut).then((buf) => {
        const words = new Uint32Array(buf);
        const half = (h: number) => (h & 1 ? words[h >> 1] >>> 16 : words[h >> 1] & 0xffff);
        for (const e of layout.entries) {
          // Every row's first, last and a middle input, plus the padding row and column.
          for (let j = 0; j < e.outPad; j += j < 2 || j > e.outPad - 3 ? 1 : 37)
            for (const k of [0, 1, e.blocks[0].kLo, 53, 54, 127, 128, e.kPad - 1].filter((x) => x < e.kPad))
              expect(half(at(order, e, j, k)), `${e.name} (${j}, ${k})`).toBe(
                toHalfBits(expectedHalf(nets, e, j, k)),
              );
        }
        expect(half(5)).toBe(0x7bff); // 1e6 clamped
        cpu.destroy();
      });
    },
  );
});

describe('pack_half on WebGPU (lavapipe)', () => {
  let backend: WebGpuBackend;
  beforeAll(async () => {
    backend = await createWebGpuBackend();
  });
  afterAll(() => backend?.destroy());

  it.each([0, 1] as const)(
    'writes the same halves as the CPU twin (flushing only f16 subnormals, if at all; order %i)',
    async (order) => {
      const layout = halfNetsLayout();
      const nets = testNets();
      const table = halfTable(layout);
      const bNets = backend.createBuffer(nets.byteLength, 'nets');
      backend.upload(bNets, nets);
      const bTable = backend.createBuffer(table.byteLength, 'table');
      backend.upload(bTable, table);
      const bOut = backend.createBuffer(layout.words * 4, 'nets16');
      backend.run([packHalfDispatch(bNets, bTable, bOut, layout, order)]);
      const gpu = new Uint32Array(await backend.download(bOut));
      const cpu = new Uint32Array(layout.words);
      packHalf.reference([nets, table, cpu], { words: layout.words, entries: layout.entries.length, order }, [
        Math.ceil(layout.words / 256),
        1,
        1,
      ]);
      let differ = 0;
      for (let i = 0; i < layout.words; i++) {
        if (gpu[i] === cpu[i]) continue;
        for (const shift of [0, 16]) {
          const g = (gpu[i] >>> shift) & 0xffff;
          const h = (cpu[i] >>> shift) & 0xffff;
          if (g === h) continue;
          differ++;
          // A flushed f16 subnormal is the only difference allowed.
          expect((h & 0x7c00) === 0 && (g & 0x7fff) === 0, `word ${i}: ${g} vs ${h}`).toBe(true);
        }
      }
      expect(differ).toBeLessThan(50);
    },
  );
});

/** A plain-head tiled DQN collector's options on 256 threads, for the f16 engines' plan tests. */
const plainTiled = {
  head: 'plain' as const,
  atoms: 51,
  iqnEmbed: 64,
  actTaus: 32,
  variant: 'tiled' as const,
  threads: 256,
  kt: 32,
  tauRows: 1,
};

describe('collect_dqn tensor-core engine (4): plan and refusal', () => {
  const base = { ...plainTiled, tj: 32, engine: 4 };
  it('pads rows to 16-row tiles (at most three), binds nets16 as f16 and fits 48 KiB at 48 episodes', () => {
    const one = collectDqnSpec({ ...base, tileEpisodes: 4 });
    expect(one.constants).toMatchObject({ ENGINE: 4, ROWS: 16, MT: 1, ACT_W: 264 });
    const two = collectDqnSpec({ ...base, tileEpisodes: 32 });
    expect(two.constants).toMatchObject({ ROWS: 32, MT: 2 });
    expect(two.bindings[10]).toEqual({ name: 'nets16', type: 'u32', access: 'read', wgslType: 'f16' });
    expect(two.wgslDirectives?.[0]).toBe('enable f16;');
    expect(two.constants).toMatchObject({ MMA_KSPLIT: 1 });
    expect(collectDqnSpec({ ...base, tileEpisodes: 48 }).constants).toMatchObject({ ROWS: 48, MT: 3 });
    expect(dqnWorkgroupBytes({ ...base, tileEpisodes: 48 })).toBeLessThanOrEqual(48 * 1024);
    expect(() => collectDqnSpec({ ...base, tileEpisodes: 49 })).toThrow(/at most 48 rows/);
    expect(() => collectDqnSpec({ ...base, tileEpisodes: 8, threads: 128 })).toThrow(/runs 256 threads/);
    // The K split: 512 threads for one 16-row tile, its scratch apart from qv, within 48 KiB.
    const split = collectDqnSpec({ ...base, tileEpisodes: 8, threads: 512 });
    expect(split.constants).toMatchObject({ ROWS: 16, MT: 1 });
    expect(dqnWorkgroupBytes({ ...base, tileEpisodes: 16, threads: 512 })).toBeLessThanOrEqual(48 * 1024);
    expect(() => collectDqnSpec({ ...base, tileEpisodes: 17, threads: 512 })).toThrow(/one 16-row tile only/);
    expect(() => collectDqnSpec({ ...base, head: 'c51', tileEpisodes: 8 })).toThrow(/plain head only/);
  });

  it('is refused with one clear error on a backend without subgroup matrices', () => {
    const cpu = createCpuBackend();
    expect(hasSubgroupMatrix(cpu)).toBe(false);
    const cfg = cloneDefaults();
    cfg.rollout.episodes = 4;
    cfg.rollout.steps = 2;
    const market = randomMarket(400, 4);
    expect(
      () =>
        new DqnDeviceCollector({
          backend: cpu,
          market,
          split: { start: 100, end: 390 },
          cfg,
          algo: 'dqn',
          tile: { engine: 4 },
        }),
    ).toThrow(/needs a WebGPU device with chromium-experimental-subgroup-matrix/);
    cpu.destroy();
  });
});

describe('collect_dqn weight-streaming engine (5): plan and refusal', () => {
  const base = { ...plainTiled, tj: 256, engine: 5 };
  it('keeps the rows, binds nets16 as 16-byte words with the lookup constants, and needs no feature', () => {
    const one = collectDqnSpec({ ...base, tileEpisodes: 1 });
    expect(one.constants).toMatchObject({ ENGINE: 5, ROWS: 1, ACT_W: 256, STREAM_RUN_WORDS: 4 });
    // The retired switches (tree sums, prefetch, unpipelined loads, ...) are gone from the build.
    for (const name of [
      'GV_PREF',
      'NEXT_LAYER_PREFETCH',
      'TREE_SUMS',
      'PIPELINED_LOADS',
      'STEP_TABLE',
      'ABLATE',
    ])
      expect(one.constants).not.toHaveProperty(name);
    expect(one.constants?.MMH_OFF_9).toBe(halfNetsLayout().entries[9].off);
    expect(one.bindings[10]).toEqual({ name: 'nets16', type: 'u32', access: 'read', wgslType: 'vec4<u32>' });
    expect(one.wgslDirectives).toBeUndefined();
    expect(one.constants).toMatchObject({ DUAL_PASS: 0 });
    // 512 threads: the dual pass (online and target rows), within 48 KiB at 8 episodes.
    const dual = collectDqnSpec({ ...base, tileEpisodes: 8, threads: 512 });
    expect(dual.constants).toMatchObject({ ROWS: 16, DUAL_PASS: 1 });
    expect(dqnWorkgroupBytes({ ...base, tileEpisodes: 8, threads: 512 })).toBeLessThanOrEqual(48 * 1024);
    // The curiosity layers beside the dual pass (CURIOSITY_SIDE) up to 4 episodes a workgroup, one weight
    // word a thread (fc1: 64 outputs x 5 groups of 8 of its 35 inputs); not without the dual pass.
    expect(dual.constants).toMatchObject({ CURIOSITY_SIDE: 0, TD_WITH_NEXT_ACTION: 0 });
    expect(one.constants).toMatchObject({ CURIOSITY_SIDE: 0, SIDE_LAYER_WORDS: 320 });
    const cur = collectDqnSpec({ ...base, tileEpisodes: 4, threads: 512 });
    expect(cur.constants).toMatchObject({ DUAL_PASS: 1, CURIOSITY_SIDE: 1, SIDE_LAYER_WORDS: 320 });
    expect(dqnWorkgroupBytes({ ...base, tileEpisodes: 4, threads: 512 })).toBeLessThanOrEqual(32 * 1024);
    // One episode, 512 threads against 256: an act row (256) and a qv row (48) more, 256 more part
    // sums, 4 ops fewer in the table (17 words each), stream_curiosity_rows (the model's rows 128, the bonus's
    // target 32) and stream_side_part (320) for their one-element stand-ins (4 + 1), and FLAT_STEP's combined
    // Q-values (stream_q, 2 rows of 48) for its stand-in (1), and TD_WITH_NEXT_ACTION's second parity of the
    // step's outcome (7), action and Q(s, a), and PING_PONG's second activation buffer (2 rows of 256).
    // The flat step, the merged ops and the folded combination need the curiosity layers beside the
    // dual pass; the two activation buffers also at most 2 episodes a workgroup (4 would take the
    // tile past 32 KiB).
    expect(cur.constants).toMatchObject({
      FLAT_STEP: 1,
      TD_WITH_NEXT_ACTION: 1,
      FOLDED_COMBINE: 1,
      PING_PONG: 0,
    });
    expect(one.constants).toMatchObject({
      FLAT_STEP: 0,
      TD_WITH_NEXT_ACTION: 0,
      FOLDED_COMBINE: 0,
      PING_PONG: 0,
    });
    for (const tileEpisodes of [1, 2])
      expect(collectDqnSpec({ ...base, tileEpisodes, threads: 512 }).constants).toMatchObject({
        TD_WITH_NEXT_ACTION: 1,
        FOLDED_COMBINE: 1,
        PING_PONG: 1,
      });
    expect(dqnWorkgroupBytes({ ...base, tileEpisodes: 1, threads: 512 })).toBe(
      dqnWorkgroupBytes({ ...base, tileEpisodes: 1, threads: 256 }) +
        4 * (256 + 48 + 256 - 4 * 17 + 128 + 32 + 320 - 5 + 2 * 48 - 1 + 7 + 1 + 1 + 2 * 256),
    );
    expect(dqnWorkgroupBytes({ ...base, tileEpisodes: 2, threads: 512 })).toBeLessThanOrEqual(32 * 1024);
    // 4 episodes: the second buffer (8 rows of 256 floats) where the device's workgroup memory holds
    // it (48 KiB, the H200 through Dawn), not on 32 KiB (lavapipe).
    const four = { ...base, tileEpisodes: 4, threads: 512 };
    expect(collectDqnSpec({ ...four, workgroupBytes: 32 * 1024 }).constants).toMatchObject({ PING_PONG: 0 });
    expect(collectDqnSpec({ ...four, workgroupBytes: 48 * 1024 }).constants).toMatchObject({ PING_PONG: 1 });
    expect(dqnWorkgroupBytes({ ...four, workgroupBytes: 48 * 1024 })).toBe(
      dqnWorkgroupBytes(four) + 4 * 8 * 256,
    );
    expect(dqnWorkgroupBytes({ ...four, workgroupBytes: 48 * 1024 })).toBeLessThanOrEqual(48 * 1024);
    expect(() => collectDqnSpec({ ...base, tileEpisodes: 9 })).toThrow(/at most 8 rows/);
    expect(() => checkDqnOptions({ ...base, tileEpisodes: 2, threads: 384, tj: 128 })).toThrow(
      /multiple of the layer width/,
    );
    expect(() => checkDqnOptions({ ...base, head: 'c51', tileEpisodes: 2 })).toThrow(/plain head only/);
  });

  it('is refused with one clear error off WebGPU', () => {
    const cpu = createCpuBackend();
    const cfg = cloneDefaults();
    cfg.rollout.episodes = 4;
    cfg.rollout.steps = 2;
    const collector = () =>
      new DqnDeviceCollector({
        backend: cpu,
        market: randomMarket(400, 4),
        split: { start: 100, end: 390 },
        cfg,
        algo: 'dqn',
        tile: { engine: 5 },
      });
    expect(collector).toThrow(/weight-streaming engine \(5, f16 weights\) is a WebGPU tile engine, not cpu/);
    // A WebGPU adapter with 10 storage buffers per stage (Chromium's SwiftShader) cannot bind nets16.
    Object.defineProperty(cpu, 'kind', { value: 'webgpu' });
    Object.defineProperty(cpu, 'info', {
      value: { ...cpu.info, kind: 'webgpu', limits: { maxStorageBuffersPerShaderStage: 10 } },
    });
    expect(collector).toThrow(
      /reads an 11th storage buffer \(the f16 nets\); .* allows 10 per shader stage: use --precision exact/,
    );
    cpu.destroy();
  });
});

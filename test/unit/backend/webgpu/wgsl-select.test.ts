/**
 * `//!if` blocks of the WGSL sources (src/backend/webgpu/preamble.ts selectWgsl): a module keeps
 * the code its constants select and nothing else, with every line where the source has it; the
 * collection kernels' modules hold their own tile engine only. (That the unresolved sources
 * compile is test/unit/kernels/collect-wgsl.test.ts; the parity cases of each engine compile and run its
 * resolved module.)
 */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { selectWgsl, wgslModule } from '../../../../src/backend/webgpu/preamble.js';
import { type CollectDqnOptions, collectDqnSpec } from '../../../../src/kernels/collect_dqn.js';
import { collectPpoSpec } from '../../../../src/kernels/collect_ppo.js';
import { wgslSources } from '../../../../src/kernels/sources.js';

describe('selectWgsl', () => {
  const src = [
    'a',
    '//!if E == 0',
    'zero',
    '//!if F != 1',
    'zero-not-f1',
    '//!endif',
    '//!endif',
    '//!if E == 1, 2',
    'one-or-two',
    '//!endif',
    'b',
  ].join('\n');

  it('keeps the lines whose conditions hold and blanks the rest, directives included', () => {
    expect(selectWgsl(src, { E: 0, F: 0 }).split('\n')).toEqual([
      'a',
      '',
      'zero',
      '',
      'zero-not-f1',
      '',
      '',
      '',
      '',
      '',
      'b',
    ]);
    expect(selectWgsl(src, { E: 0, F: 1 }).split('\n')).toEqual([
      'a',
      '',
      'zero',
      '',
      '',
      '',
      '',
      '',
      '',
      '',
      'b',
    ]);
    expect(selectWgsl(src, { E: 2, F: 0 }).split('\n')).toEqual([
      'a',
      '',
      '',
      '',
      '',
      '',
      '',
      '',
      'one-or-two',
      '',
      'b',
    ]);
  });

  it('rejects an unknown constant, unbalanced blocks and a directive it does not know', () => {
    expect(() => selectWgsl(src, { F: 0 })).toThrow(/E is not a constant/);
    expect(() => selectWgsl('//!if E == 0\nx', { E: 0 })).toThrow(/without \/\/!endif/);
    expect(() => selectWgsl('x\n//!endif', { E: 0 })).toThrow(/without \/\/!if/);
    expect(() => selectWgsl('//!else', { E: 0 })).toThrow(/malformed/);
    expect(() => selectWgsl('//!if E < 1\n//!endif', { E: 0 })).toThrow(/malformed/);
  });
});

describe('collection modules', () => {
  const dqn = (engine: number): CollectDqnOptions => ({
    head: 'plain',
    atoms: 51,
    iqnEmbed: 64,
    actTaus: 32,
    variant: 'tiled',
    threads: 256,
    tauRows: 1,
    tileEpisodes: 32,
    tj: 32,
    kt: 8,
    engine,
  });
  const module = (engine: number) => wgslModule(collectDqnSpec(dqn(engine)), wgslSources.collect_dqn);

  it("hold only their own tile engine: the other engines' functions and arrays are gone", () => {
    const own: Record<number, string[]> = {
      0: ['fn dense_scalar(', 'var<workgroup> act_s', 'fn ws_index(', 'fn layer_quad('],
      2: ['fn dense_quad2(', 'var<workgroup> act_v', 'fn wsq_index(', 'fn quad_weights('],
    };
    for (const engine of [0, 2]) {
      const m = module(engine);
      for (const s of own[engine]) expect(m, `engine ${engine}`).toContain(s);
      for (const other of [0, 2].filter((e) => e !== engine))
        for (const s of own[other].filter((x) => !own[engine].includes(x)))
          expect(m, `engine ${engine} without ${s}`).not.toContain(s);
    }
    // PPO includes the same tile engine.
    const ppo = wgslModule(
      collectPpoSpec({ variant: 'tiled', tileEpisodes: 16, threads: 256, tj: 64, kt: 4, engine: 2 }),
      wgslSources.collect_ppo,
    );
    expect(ppo).toContain('fn dense_quad2(');
    expect(ppo).not.toContain('fn dense_scalar(');
  });

  it('open with no enables and bind the ten collection buffers only', () => {
    for (const engine of [0, 2]) {
      const m = module(engine);
      expect(m).not.toMatch(/^enable /m);
      expect(m).not.toContain('subgroup');
      expect(m).toContain('@group(0) @binding(10) var<uniform> u: Uniforms;');
    }
  });

  it('keep every line where the source has it (compiler messages keep their line numbers)', () => {
    const lines = (s: string) => s.split('\n').length;
    expect(lines(module(0))).toBe(lines(module(2)));
  });

  it('come from files of at most 900 lines, one per engine, each opening with a comment', () => {
    const dir = new URL('../../../../wgsl/', import.meta.url);
    for (const name of readdirSync(dir).filter((f) => f.endsWith('.wgsl'))) {
      const text = readFileSync(new URL(name, dir), 'utf8');
      expect(text.split('\n').length, name).toBeLessThanOrEqual(900);
      expect(text.startsWith('//'), name).toBe(true);
    }
    // Each engine's file is included by collect_tile.wgsl inside its own engine's block.
    for (const [engine, file] of [
      [0, 'collect_tile_scalar'],
      [2, 'collect_tile_quad'],
    ] as const) {
      const raw = readFileSync(new URL('collect_tile.wgsl', dir), 'utf8');
      expect(raw).toContain(`//!if ENGINE == ${engine}\n//!include ${file}.wgsl\n//!endif`);
    }
  });
});

import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initParams } from '../../../src/nets/forward.js';
import {
  curiosityLayout,
  duelingLayout,
  NetId,
  ppoActorLayout,
  ppoCriticLayout,
} from '../../../src/nets/layout.js';
import {
  decodeSafetensors,
  encodeSafetensors,
  type NamedTensor,
  paramsToTensors,
  tensorsToParams,
} from '../../../src/nets/safetensors.js';
import { loadSafetensors, saveSafetensors } from '../../../src/node/safetensors_file.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'foxhunt-st-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const bits = (a: Float32Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);

describe('safetensors encoding', () => {
  it('lays out a tiny tensor byte for byte as the format specifies', () => {
    const json = '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'; // 54 bytes
    const expected = Buffer.concat([
      Buffer.from([56, 0, 0, 0, 0, 0, 0, 0]), // u64 LE header length: 54 + 2 spaces, so data starts at 64
      Buffer.from(json, 'utf8'),
      Buffer.from('  ', 'utf8'),
      Buffer.from([0x00, 0x00, 0x80, 0x3f]), // 1.0f little-endian
      Buffer.from([0x00, 0x00, 0x00, 0xc0]), // -2.0f
    ]);
    const got = encodeSafetensors([{ name: 'a', shape: [2], data: new Float32Array([1, -2]) }]);
    expect(Buffer.from(got).equals(expected)).toBe(true);
  });

  it('pads the header so the data starts at a multiple of 8', () => {
    for (const meta of ['', 'x', 'xy', 'xyz', 'abcdefgh']) {
      const bytes = encodeSafetensors([{ name: 't', shape: [1], data: new Float32Array([3]) }], { m: meta });
      const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
      expect((8 + n) % 8).toBe(0);
      expect(decodeSafetensors(bytes, 'mem').metadata).toEqual({ m: meta });
    }
  });

  it('rejects tensors whose data does not match their shape', () => {
    expect(() => encodeSafetensors([{ name: 'a', shape: [3], data: new Float32Array(2) }])).toThrow(
      /shape \[3\]/,
    );
  });
});

describe('safetensors files', () => {
  it('round-trips every network bit for bit with metadata, and leaves no temp file', async () => {
    const nets = [
      { layout: ppoActorLayout(), id: NetId.Actor, prefix: '' },
      { layout: ppoCriticLayout(), id: NetId.Critic, prefix: '' },
      { layout: duelingLayout('c51'), id: NetId.QOnline, prefix: 'online.' },
      { layout: curiosityLayout(), id: NetId.Curiosity, prefix: 'curiosity.' },
    ];
    const all = nets.map((n) => ({ ...n, params: initParams(n.layout, n.id, 42) }));
    const path = join(dir, 'ckpt.safetensors');
    await writeFile(path, 'an older checkpoint');
    await saveSafetensors(
      path,
      all.flatMap((n) => paramsToTensors(n.layout, n.params, n.prefix)),
      { algo: 'ppo', epoch: '3' },
    );
    expect(await readdir(dir)).toEqual(['ckpt.safetensors']);
    const loaded = await loadSafetensors(path);
    expect(loaded.metadata).toEqual({ algo: 'ppo', epoch: '3' });
    for (const n of all) {
      const back = tensorsToParams(n.layout, loaded.tensors, path, n.prefix);
      expect(bits(back).equals(bits(n.params))).toBe(true);
    }
    const w = loaded.tensors.find((t) => t.name === 'policy_layer_0.weight')!;
    expect(w.shape).toEqual([128, 54]);
  });

  it('names the file and the missing tensor or wrong shape when a checkpoint does not fit a network', () => {
    const actor = ppoActorLayout();
    const tensors = paramsToTensors(actor, initParams(actor, NetId.Actor, 1));
    expect(() => tensorsToParams(actor, tensors.slice(1), 'a.safetensors')).toThrow(
      /a\.safetensors: checkpoint has no tensor policy_layer_0\.weight/,
    );
    const wrong: NamedTensor[] = tensors.map((t) =>
      t.name === 'policy_output.bias' ? { ...t, shape: [5, 9] } : t,
    );
    expect(() => tensorsToParams(actor, wrong, 'a.safetensors')).toThrow(
      /a\.safetensors: tensor policy_output\.bias has shape \[5,9\]/,
    );
  });

  it('wraps a missing file in an error naming it', async () => {
    await expect(loadSafetensors(join(dir, 'nope.safetensors'))).rejects.toThrow(
      /nope\.safetensors: could not read/,
    );
  });
});

describe('corrupted files are rejected with the file name and the reason', () => {
  const good = encodeSafetensors([
    { name: 'a', shape: [2], data: new Float32Array([1, 2]) },
    { name: 'b', shape: [1, 1], data: new Float32Array([3]) },
  ]);
  const withHeader = (header: object): Uint8Array => {
    const json = Buffer.from(JSON.stringify(header));
    const out = Buffer.alloc(8 + json.length + 12);
    out.writeBigUInt64LE(BigInt(json.length), 0);
    json.copy(out, 8);
    return out;
  };
  const cases: [string, Uint8Array, RegExp][] = [
    ['shorter than 8 bytes', good.subarray(0, 5), /only 5 bytes/],
    ['truncated data', good.subarray(0, good.length - 4), /outside the|cover/],
    [
      'header length past the end',
      (() => {
        const b = good.slice();
        new DataView(b.buffer).setBigUint64(0, 1n << 40n, true);
        return b;
      })(),
      /header length/,
    ],
    [
      'garbage header',
      (() => {
        const b = good.slice();
        b[8] = 0x7b + 1;
        return b;
      })(),
      /not UTF-8 JSON/,
    ],
    ['F16 dtype', withHeader({ a: { dtype: 'F16', shape: [6], data_offsets: [0, 12] } }), /dtype F16/],
    [
      'offsets beyond the data',
      withHeader({ a: { dtype: 'F32', shape: [4], data_offsets: [0, 16] } }),
      /outside/,
    ],
    [
      'size not matching the shape',
      withHeader({ a: { dtype: 'F32', shape: [2], data_offsets: [0, 12] } }),
      /needs 8/,
    ],
    [
      'a hole between tensors',
      withHeader({
        a: { dtype: 'F32', shape: [1], data_offsets: [0, 4] },
        b: { dtype: 'F32', shape: [1], data_offsets: [8, 12] },
      }),
      /starts at byte 8, expected 4/,
    ],
    [
      'overlapping tensors',
      withHeader({
        a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] },
        b: { dtype: 'F32', shape: [2], data_offsets: [4, 12] },
      }),
      /starts at byte 4, expected 8/,
    ],
    [
      'trailing bytes',
      withHeader({ a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] } }),
      /cover 8 of 12/,
    ],
    [
      'non-string metadata',
      withHeader({ __metadata__: { n: 1 }, a: { dtype: 'F32', shape: [3], data_offsets: [0, 12] } }),
      /__metadata__\.n/,
    ],
  ];
  for (const [what, bytes, why] of cases) {
    it(what, async () => {
      const path = join(dir, 'bad.safetensors');
      await writeFile(path, bytes);
      const err = await loadSafetensors(path).catch((e: Error) => e);
      expect(err).toBeInstanceOf(Error);
      expect((err as Error).message).toContain(path);
      expect((err as Error).message).toMatch(why);
    });
  }

  it('accepts the uncorrupted file', () => {
    const { tensors } = decodeSafetensors(good, 'good');
    expect(tensors.map((t) => [t.name, Array.from(t.data)])).toEqual([
      ['a', [1, 2]],
      ['b', [3]],
    ]);
  });
});

describe('docs/CHECKPOINTS.md', () => {
  it('lists every tensor name of every network with its shape', async () => {
    const doc = await readFile(new URL('../../../docs/CHECKPOINTS.md', import.meta.url), 'utf8');
    const layouts = [
      ppoActorLayout(),
      ppoCriticLayout(),
      curiosityLayout(),
      duelingLayout('plain'),
      duelingLayout('c51'),
      duelingLayout('iqn'),
    ];
    for (const layout of layouts) {
      for (const l of layout.layers) {
        expect(doc).toContain(`\`${l.name}.weight\``);
        expect(doc).toContain(`\`${l.name}.bias\``);
      }
    }
  });
});

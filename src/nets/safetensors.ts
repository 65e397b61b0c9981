/**
 * safetensors checkpoints (https://github.com/huggingface/safetensors), F32 only, so that
 * PyTorch loads them with `safetensors.torch.load_file` (docs/CHECKPOINTS.md).
 *
 * File = 8-byte little-endian u64 header length N, then N bytes of UTF-8 JSON
 * `{"__metadata__": {string: string}, name: {"dtype": "F32", "shape": [...], "data_offsets": [b, e]}}`
 * padded with spaces so the data starts at a multiple of 8, then the raw little-endian tensor
 * bytes; offsets are relative to the data start, tensors packed back to back with no holes.
 * Float32Array bytes are written as they sit in memory, i.e. this assumes a little-endian host
 * (every platform Node and the browsers run on).
 */
import type { NetLayout } from './layout.js';

export interface NamedTensor {
  name: string;
  shape: number[];
  data: Float32Array;
}

export interface Safetensors {
  tensors: NamedTensor[];
  metadata: Record<string, string>;
}

/** Larger headers are refused, as the reference implementation does (a guard against garbage). */
const MAX_HEADER = 100_000_000;
const METADATA = '__metadata__';

const count = (shape: number[]) => shape.reduce((n, d) => n * d, 1);

/** The file bytes for these tensors, in the given order. */
export function encodeSafetensors(tensors: NamedTensor[], metadata?: Record<string, string>): Uint8Array {
  const header: Record<string, unknown> = {};
  if (metadata && Object.keys(metadata).length > 0) header[METADATA] = metadata;
  let offset = 0;
  for (const t of tensors) {
    if (t.name === METADATA || t.name in header)
      throw new Error(`safetensors: duplicate tensor name ${t.name}`);
    if (!t.shape.every((d) => Number.isInteger(d) && d >= 0)) {
      throw new Error(`safetensors: tensor ${t.name} has an invalid shape [${t.shape}]`);
    }
    if (count(t.shape) !== t.data.length) {
      throw new Error(
        `safetensors: tensor ${t.name} has ${t.data.length} floats, shape [${t.shape}] needs ${count(t.shape)}`,
      );
    }
    header[t.name] = { dtype: 'F32', shape: t.shape, data_offsets: [offset, offset + t.data.byteLength] };
    offset += t.data.byteLength;
  }
  const json = new TextEncoder().encode(JSON.stringify(header));
  const padded = Math.ceil((8 + json.length) / 8) * 8 - 8;
  const bytes = new Uint8Array(8 + padded + offset);
  new DataView(bytes.buffer).setBigUint64(0, BigInt(padded), true);
  bytes.set(json, 8);
  bytes.fill(0x20, 8 + json.length, 8 + padded);
  let at = 8 + padded;
  for (const t of tensors) {
    bytes.set(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength), at);
    at += t.data.byteLength;
  }
  return bytes;
}

function copyFloats(src: Uint8Array): Float32Array {
  const out = new Float32Array(src.length / 4);
  new Uint8Array(out.buffer).set(src);
  return out;
}

/** Parses and validates safetensors bytes; `source` (the file name) prefixes every error. */
export function decodeSafetensors(bytes: Uint8Array, source: string): Safetensors {
  const fail = (why: string): never => {
    throw new Error(`${source}: not a valid foxhunt safetensors checkpoint: ${why}`);
  };
  if (bytes.length < 8) fail(`only ${bytes.length} bytes, shorter than the 8-byte header length`);
  const n = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getBigUint64(0, true);
  if (n > BigInt(Math.min(MAX_HEADER, bytes.length - 8))) {
    fail(`header length ${n} exceeds the file (${bytes.length} bytes)`);
  }
  const headerLen = Number(n);
  let header: unknown;
  try {
    header = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(8, 8 + headerLen)));
  } catch (err) {
    fail(`header is not UTF-8 JSON (${(err as Error).message})`);
  }
  if (header === null || typeof header !== 'object' || Array.isArray(header))
    fail('header is not a JSON object');
  const dataStart = 8 + headerLen;
  const dataLen = bytes.length - dataStart;
  const metadata: Record<string, string> = {};
  const entries: { name: string; shape: number[]; begin: number; end: number }[] = [];
  for (const [name, value] of Object.entries(header as Record<string, unknown>)) {
    if (name === METADATA) {
      if (value === null || typeof value !== 'object' || Array.isArray(value))
        fail('__metadata__ is not an object');
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
        if (typeof v !== 'string') fail(`__metadata__.${k} is not a string`);
        metadata[k] = v as string;
      }
      continue;
    }
    const info = value as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
    if (info === null || typeof info !== 'object') fail(`tensor ${name} has no description`);
    if (info.dtype !== 'F32') fail(`tensor ${name} has dtype ${String(info.dtype)}; only F32 is supported`);
    const shape = info.shape;
    if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0)) {
      fail(`tensor ${name} has an invalid shape ${JSON.stringify(shape)}`);
    }
    const offs = info.data_offsets;
    if (
      !Array.isArray(offs) ||
      offs.length !== 2 ||
      !offs.every((o) => Number.isInteger(o) && o >= 0) ||
      offs[0] > offs[1] ||
      offs[1] > dataLen
    ) {
      fail(`tensor ${name} has data_offsets ${JSON.stringify(offs)} outside the ${dataLen} data bytes`);
    }
    const [begin, end] = offs as [number, number];
    if (end - begin !== 4 * count(shape as number[])) {
      fail(
        `tensor ${name} spans ${end - begin} bytes, shape ${JSON.stringify(shape)} needs ${4 * count(shape as number[])}`,
      );
    }
    entries.push({ name, shape: shape as number[], begin, end });
  }
  // Like the reference reader: tensors tile the data exactly (no overlaps, holes or trailing bytes).
  const sorted = [...entries].sort((a, b) => a.begin - b.begin || a.end - b.end);
  let expected = 0;
  for (const e of sorted) {
    if (e.begin !== expected) fail(`tensor ${e.name} starts at byte ${e.begin}, expected ${expected}`);
    expected = e.end;
  }
  if (expected !== dataLen) fail(`tensors cover ${expected} of ${dataLen} data bytes`);
  const tensors = entries.map((e) => ({
    name: e.name,
    shape: e.shape,
    // A copy: the data may not be 4-byte aligned within the file buffer (and a Node Buffer's
    // slice would share its memory pool).
    data: copyFloats(bytes.subarray(dataStart + e.begin, dataStart + e.end)),
  }));
  return { tensors, metadata };
}

/**
 * A flat parameter buffer as named tensors: `{prefix}{layer}.weight` `[out, in]` and
 * `{prefix}{layer}.bias` `[out]`, in layout order. The tensors are views of `params`.
 */
export function paramsToTensors(layout: NetLayout, params: Float32Array, prefix = ''): NamedTensor[] {
  if (params.length !== layout.size) {
    throw new Error(`${layout.kind}: params have ${params.length} floats, the layout needs ${layout.size}`);
  }
  return layout.layers.flatMap((l) => [
    { name: `${prefix}${l.name}.weight`, shape: [l.out, l.in], data: params.subarray(l.wOffset, l.bOffset) },
    { name: `${prefix}${l.name}.bias`, shape: [l.out], data: params.subarray(l.bOffset, l.bOffset + l.out) },
  ]);
}

/**
 * The flat parameter buffer of `layout` from named tensors (extra tensors, such as another
 * network's in the same file, are ignored). A missing tensor or a wrong shape is an error
 * naming `source` and the tensor.
 */
export function tensorsToParams(
  layout: NetLayout,
  tensors: NamedTensor[],
  source: string,
  prefix = '',
): Float32Array {
  const byName = new Map(tensors.map((t) => [t.name, t]));
  const params = new Float32Array(layout.size);
  for (const l of layout.layers) {
    const parts: [string, number[], number][] = [
      [`${prefix}${l.name}.weight`, [l.out, l.in], l.wOffset],
      [`${prefix}${l.name}.bias`, [l.out], l.bOffset],
    ];
    for (const [name, shape, offset] of parts) {
      const t = byName.get(name);
      if (!t) throw new Error(`${source}: checkpoint has no tensor ${name} (network ${layout.kind})`);
      if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
        throw new Error(
          `${source}: tensor ${name} has shape [${t.shape}], network ${layout.kind} needs [${shape}]`,
        );
      }
      params.set(t.data, offset);
    }
  }
  return params;
}

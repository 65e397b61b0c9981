/**
 * A checkpoint directory as one download: a plain ustar archive (files only, no directories),
 * which `tar xf` unpacks into the same files `foxhunt train` writes, and which the page reads back.
 */
const BLOCK = 512;

export interface NamedBytes {
  name: string;
  bytes: Uint8Array;
}

export function writeTar(files: NamedBytes[]): Uint8Array {
  const enc = new TextEncoder();
  const parts: Uint8Array[] = [];
  for (const f of files) {
    const h = new Uint8Array(BLOCK);
    const put = (text: string, at: number) => h.set(enc.encode(text), at);
    const octal = (n: number, width: number) => `${n.toString(8).padStart(width - 1, '0')}\0`;
    put(f.name, 0);
    put(octal(0o644, 8), 100);
    put(octal(0, 8), 108);
    put(octal(0, 8), 116);
    put(octal(f.bytes.length, 12), 124);
    put(octal(0, 12), 136);
    put('        ', 148);
    put('0', 156);
    put('ustar\x0000', 257);
    put(
      octal(
        h.reduce((s, b) => s + b, 0),
        7,
      ),
      148,
    );
    parts.push(h, f.bytes, new Uint8Array((BLOCK - (f.bytes.length % BLOCK)) % BLOCK));
  }
  parts.push(new Uint8Array(2 * BLOCK));
  const out = new Uint8Array(parts.reduce((s, p) => s + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** The regular files of a tar archive (names without their directories). */
export function readTar(tar: Uint8Array): NamedBytes[] {
  const dec = new TextDecoder();
  const files: NamedBytes[] = [];
  for (let at = 0; at + BLOCK <= tar.length; ) {
    const h = tar.subarray(at, at + BLOCK);
    if (h.every((b) => b === 0)) break;
    const field = (from: number, len: number) =>
      dec.decode(h.subarray(from, from + len)).replace(/\0.*$/s, '');
    const size = Number.parseInt(field(124, 12).trim() || '0', 8);
    const type = field(156, 1);
    const name = field(0, 100);
    if (type === '0' || type === '') {
      files.push({
        name: name.slice(name.lastIndexOf('/') + 1),
        bytes: tar.slice(at + BLOCK, at + BLOCK + size),
      });
    }
    at += BLOCK + Math.ceil(size / BLOCK) * BLOCK;
  }
  return files;
}

/**
 * The kernel sources the backends compile: `wgsl/*.wgsl` and `cuda/*.cu` + `cuda/*.cuh`, the
 * folders the package ships. Node reads them from disk when this module loads (found upward from
 * this file: src/kernels/ in the checkout, dist/src/kernels/ in the package and the bundle); a
 * Vite build (the browser) imports them as raw text. Nothing is generated into src/.
 * - wgslSources: key = file base name; a line `//!include NAME.wgsl` is replaced by that file
 *   (recursively, each file at most once per source), so snippets like philox.wgsl are shared.
 * - cudaSources: key = file name (`philox_stream.cu`, `philox.cuh`), verbatim, for NVRTC's
 *   header table (Node only: the CUDA backend does not run in a browser).
 * `kernelFileDigests` hashes the files as shipped; parity reports record them.
 */

/** File name -> text of one kernel folder. */
type Files = Record<string, string>;

const inNode = typeof process !== 'undefined' && typeof process.versions?.node === 'string';

/** wgsl/ and cuda/ read from the package folder that holds this module. */
async function readFolders(): Promise<{ wgsl: Files; cuda: Files }> {
  // Computed names keep bundlers from resolving Node's modules for the browser.
  const fsName = 'node:fs';
  const pathName = 'node:path';
  const urlName = 'node:url';
  const fs = (await import(/* @vite-ignore */ fsName)) as typeof import('node:fs');
  const path = (await import(/* @vite-ignore */ pathName)) as typeof import('node:path');
  const { fileURLToPath } = (await import(/* @vite-ignore */ urlName)) as typeof import('node:url');
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!(fs.existsSync(path.join(dir, 'wgsl')) && fs.existsSync(path.join(dir, 'package.json')))) {
    const up = path.dirname(dir);
    if (up === dir)
      throw new Error('kernel sources: no wgsl/ folder beside a package.json above this module');
    dir = up;
  }
  const read = (folder: string, exts: string[]): Files => {
    const at = path.join(dir, folder);
    if (!fs.existsSync(at)) return {};
    const names = fs
      .readdirSync(at)
      .filter((f) => exts.some((e) => f.endsWith(e)))
      .sort();
    return Object.fromEntries(names.map((f) => [f, fs.readFileSync(path.join(at, f), 'utf8')]));
  };
  return { wgsl: read('wgsl', ['.wgsl']), cuda: read('cuda', ['.cu', '.cuh']) };
}

/** wgsl/ as Vite bundles it (raw text); keys reduced to file names. */
function bundledWgsl(): Files {
  const raw = import.meta.glob('../../wgsl/*.wgsl', { query: '?raw', import: 'default', eager: true });
  return Object.fromEntries(
    Object.entries(raw).map(([p, text]) => [p.slice(p.lastIndexOf('/') + 1), text as string]),
  );
}

const files = inNode ? await readFolders() : { wgsl: bundledWgsl(), cuda: {} };

const INCLUDE = /^\s*\/\/!include\s+(\S+)\s*$/;

function resolveWgsl(file: string, seen: Set<string>): string {
  seen.add(file);
  const text = files.wgsl[file];
  if (text === undefined) throw new Error(`kernel sources: wgsl/${file} is included but does not exist`);
  return text
    .split('\n')
    .map((line) => {
      const m = INCLUDE.exec(line);
      if (!m) return line;
      if (seen.has(m[1])) return `// (${m[1]} already included)`;
      return `// ---- begin ${m[1]} ----\n${resolveWgsl(m[1], seen).trimEnd()}\n// ---- end ${m[1]} ----`;
    })
    .join('\n');
}

/** WGSL kernel sources by base name, `//!include` lines resolved. */
export const wgslSources: Readonly<Record<string, string>> = Object.fromEntries(
  Object.keys(files.wgsl).map((f) => [f.replace(/\.wgsl$/, ''), resolveWgsl(f, new Set())]),
);

/** CUDA sources by file name (`<kernel>.cu`, shared `*.cuh`), verbatim; empty in a browser. */
export const cudaSources: Readonly<Record<string, string>> = files.cuda;

async function sha256(text: string): Promise<string> {
  const bytes = await globalThis.crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * SHA-256 (hex) of each shipped kernel file as read, keyed `wgsl/<name>` and `cuda/<name>`
 * (`wgsl/` only in a browser); parity reports record them, so a test can tell whether the files
 * that ship are the ones a parity run compiled.
 */
export async function kernelFileDigests(): Promise<Record<string, string>> {
  const entries = [
    ...Object.entries(files.wgsl).map(([f, t]) => [`wgsl/${f}`, t]),
    ...Object.entries(files.cuda).map(([f, t]) => [`cuda/${f}`, t]),
  ];
  const out: Record<string, string> = {};
  for (const [name, text] of entries) out[name] = await sha256(text);
  return out;
}

/**
 * The WGSL declarations of a kernel, generated from its KernelSpec and prepended to
 * `wgsl/<name>.wgsl`, so that a kernel's bindings, uniforms, workgroup size and constants are
 * written once (the descriptor) and never by hand in the shader:
 * - `const WG_X/WG_Y/WG_Z` and one `const` per spec constant (abstract numbers, so they mix with
 *   u32, i32 or f32 without casts);
 * - `struct Uniforms` with the spec's fields in order and `var<uniform> u` at
 *   `@binding(bindings.length)` (omitted when the kernel has no uniforms);
 * - one `var<storage>` array per binding, `@group(0) @binding(i)` in spec order.
 *
 * `wgslModule` is the whole module: the preamble, then the source with its `//!if` blocks
 * resolved against the spec's constants (see `selectWgsl`).
 */
import type { KernelSpec } from '../types.js';

function wgslNumber(name: string, value: number): string {
  if (!Number.isFinite(value)) throw new Error(`constant ${name} must be finite, got ${value}`);
  if (Number.isInteger(value)) return String(value);
  const s = String(value);
  return s.includes('.') || s.includes('e') ? s : `${s}.0`;
}

export function wgslPreamble(spec: KernelSpec): string {
  const [x, y, z] = spec.workgroupSize;
  const lines = [
    `// ---- generated from the KernelSpec of ${spec.name} ----`,
    `const WG_X = ${x};`,
    `const WG_Y = ${y};`,
    `const WG_Z = ${z};`,
  ];
  for (const [name, value] of Object.entries(spec.constants ?? {})) {
    lines.push(`const ${name} = ${wgslNumber(name, value)};`);
  }
  if (spec.uniforms.length > 0) {
    lines.push('struct Uniforms {', ...spec.uniforms.map((u) => `  ${u.name}: ${u.type},`), '}');
    lines.push(`@group(0) @binding(${spec.bindings.length}) var<uniform> u: Uniforms;`);
  }
  spec.bindings.forEach((b, i) => {
    lines.push(`@group(0) @binding(${i}) var<storage, ${b.access}> ${b.name}: array<${b.type}>;`);
  });
  lines.push(`// ---- wgsl/${spec.name}.wgsl ----`, '');
  return lines.join('\n');
}

const IF = /^\s*\/\/!if\s+([A-Za-z_]\w*)\s*(==|!=)\s*(-?\d+(?:\s*,\s*-?\d+)*)\s*$/;
const ENDIF = /^\s*\/\/!endif\s*$/;

/**
 * Keeps only the code a kernel's constants select: lines between `//!if NAME == V` (or `!= V`,
 * or a list `== V1, V2`: any of them) and its `//!endif` are blanked when the condition is false
 * for the spec constant NAME (blocks nest). The directives are comments, so the unresolved source
 * is valid WGSL too (every block kept); resolving only removes code that the constants make dead,
 * so that the shader compiler sees one engine's functions, workgroup arrays and branches instead
 * of all of them. Blank lines keep the line numbers of compiler messages. A directive naming no
 * spec constant, or an unbalanced one, throws.
 */
export function selectWgsl(source: string, constants: Record<string, number> = {}): string {
  const lines = source.split('\n');
  const open: boolean[] = [];
  let keep = true;
  const out = lines.map((line, i) => {
    const m = IF.exec(line);
    if (m) {
      const value = constants[m[1]];
      if (value === undefined)
        throw new Error(`//!if on line ${i + 1}: ${m[1]} is not a constant of the kernel`);
      const listed = m[3].split(',').some((v) => Number(v.trim()) === value);
      open.push(keep);
      keep = keep && (m[2] === '==' ? listed : !listed);
      return '';
    }
    if (ENDIF.test(line)) {
      const outer = open.pop();
      if (outer === undefined) throw new Error(`//!endif on line ${i + 1} without //!if`);
      keep = outer;
      return '';
    }
    if (/^\s*\/\/!(if|endif|else)\b/.test(line))
      throw new Error(`line ${i + 1}: malformed directive "${line.trim()}"`);
    return keep ? line : '';
  });
  if (open.length > 0) throw new Error(`${open.length} //!if without //!endif`);
  return out.join('\n');
}

/**
 * Whether `wgslModule` resolves the `//!if` blocks: on unless FOXHUNT_WGSL_ALL_BLOCKS=1 (Node),
 * which compiles every block as the source stands, to time a kernel with and without its dead
 * code in one process.
 */
function resolveBlocks(): boolean {
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  return env?.FOXHUNT_WGSL_ALL_BLOCKS !== '1';
}

/** The module compiled for `spec`: preamble, then `source` with its `//!if` blocks resolved (see resolveBlocks). */
export function wgslModule(spec: KernelSpec, source: string): string {
  return wgslPreamble(spec) + (resolveBlocks() ? selectWgsl(source, spec.constants) : source);
}

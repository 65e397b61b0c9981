#!/usr/bin/env node
// Stages the portable runtime: a folder that runs `foxhunt` on a machine with only a node binary
// (air-gapped GPU hosts: no npm, no network, a 64 MiB transfer limit). Layout mirrors the repo so
// the code finds everything by the same relative paths:
//   bin/foxhunt.js, package.json, dist/src/**/*.js (fresh tsc output, no maps or .d.ts),
//   wgsl/*.wgsl and cuda/*.cu(h) (the kernels, read at run time), build/Release/foxhunt_cuda.node,
//   node_modules/<runtime deps>.
// Runtime deps are the package's `dependencies` that the compiled code names in a string literal
// (static imports, and the computed-name dynamic imports that keep bundlers away from Node-only
// modules), each with its own dependencies. `webgpu` is cut down to its loader and this
// platform's dawn.node (the package carries every platform's binary: 132 MB).
// Usage: node scripts/bundle.mjs [--out DIR]   (default: bundle/)
import { spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const LIMIT_BYTES = 64 * 2 ** 20;
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const outArg = process.argv.indexOf('--out');
const out = resolve(outArg >= 0 ? process.argv[outArg + 1] : join(root, 'bundle'));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

function die(msg) {
  console.error(`bundle: ${msg}`);
  process.exit(1);
}

function run(cmd, args) {
  const res = spawnSync(cmd, args, { cwd: root, stdio: 'inherit' });
  if (res.status !== 0) die(`${[cmd, ...args].join(' ')} failed`);
}

function walk(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)],
  );
}

// rmSync below must never hit the checkout: inside the repo only bundle/ itself may be replaced.
const rel = relative(root, out);
if (!rel.startsWith('..') && !isAbsolute(rel) && out !== join(root, 'bundle')) {
  die(`refusing to replace ${out}: use bundle/ or a folder outside the repo`);
}
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

// Compiled JS, fresh.
const tsc = join(root, 'node_modules/typescript/bin/tsc');
if (!existsSync(tsc)) die('typescript not installed: run npm ci first');
run(process.execPath, [
  tsc,
  '-p',
  'tsconfig.build.json',
  '--outDir',
  join(out, 'dist'),
  '--declaration',
  'false',
  '--sourceMap',
  'false',
]);

cpSync(join(root, 'bin'), join(out, 'bin'), { recursive: true });
// The kernels: src/kernels/sources.ts reads them from beside package.json.
for (const [dir, exts] of [
  ['wgsl', ['.wgsl']],
  ['cuda', ['.cu', '.cuh']],
]) {
  mkdirSync(join(out, dir), { recursive: true });
  for (const f of readdirSync(join(root, dir)).filter((f) => exts.some((e) => f.endsWith(e)))) {
    cpSync(join(root, dir, f), join(out, dir, f));
  }
}
const addon = join(root, 'build/Release/foxhunt_cuda.node');
if (existsSync(addon)) cpSync(addon, join(out, 'build/Release/foxhunt_cuda.node'));
else
  console.error(
    'bundle: build/Release/foxhunt_cuda.node missing (npm run build:addon): the bundle has no cuda backend',
  );
// The commit the bundle was staged from (`-dirty` with uncommitted changes to what it copies), so a
// run on another machine (`foxhunt parity --record`) names it without a git checkout there.
function gitCommit() {
  const git = (...args) => spawnSync('git', args, { cwd: root, encoding: 'utf8' });
  const head = git('rev-parse', '--short', 'HEAD');
  if (head.status !== 0) return undefined;
  const dirty = git('status', '--porcelain', '--', 'bin', 'src', 'dev', 'wgsl', 'cuda', 'package.json');
  return `${head.stdout.trim()}${dirty.stdout.trim() ? '-dirty' : ''}`;
}
writeFileSync(
  join(out, 'package.json'),
  `${JSON.stringify(
    {
      name: pkg.name,
      version: pkg.version,
      description: pkg.description,
      private: true,
      type: pkg.type,
      bin: pkg.bin,
      engines: pkg.engines,
      gitCommit: gitCommit(),
    },
    null,
    2,
  )}\n`,
);

// Runtime dependencies: named by the compiled code.
const code = walk(join(out, 'dist'))
  .filter((f) => f.endsWith('.js'))
  .map((f) => readFileSync(f, 'utf8'))
  .join('\n');
const named = (dep) =>
  new RegExp(`['"\`]${dep.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}(/[^'"\`]*)?['"\`]`).test(code);
const runtime = Object.keys(pkg.dependencies ?? {}).filter(named);

/** Node's lookup of `name` from the package in `from` (node_modules of it and its ancestors); not
 * require.resolve, which refuses `<name>/package.json` for packages with an `exports` map. */
function packageDir(name, from) {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (dirname(dir) === dir) return undefined;
  }
}

const copied = new Set();
function copyPackage(name, from) {
  if (copied.has(name)) return;
  copied.add(name);
  const dir = packageDir(name, from);
  if (!dir) die(`cannot find the installed package ${name}: run npm ci first`);
  const dest = join(out, 'node_modules', name);
  if (name === 'webgpu') {
    const dawn = `dist/${process.platform}-${process.platform === 'darwin' ? 'universal' : process.arch}/dawn.node`;
    for (const f of ['package.json', 'index.js', 'LICENSE.md', dawn]) {
      if (existsSync(join(dir, f))) cpSync(join(dir, f), join(dest, f));
    }
    // Its dependencies (@webgpu/types, debug) serve only its build scripts.
    return;
  }
  cpSync(dir, dest, { recursive: true, filter: (src) => !src.includes(`${join(dir, 'node_modules')}`) });
  const own = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  for (const dep of Object.keys(own.dependencies ?? {})) copyPackage(dep, dir);
}
for (const dep of runtime) copyPackage(dep, root);

const files = walk(out);
const bytes = files.reduce((s, f) => s + statSync(f).size, 0);
const mib = (b) => `${(b / 2 ** 20).toFixed(1)} MiB`;
console.log(
  `bundle: wrote ${out}: ${files.length} files, ${mib(bytes)} (limit ${mib(LIMIT_BYTES)}); node_modules: ${[...copied].join(', ') || 'none'}`,
);
if (bytes > LIMIT_BYTES) die(`${mib(bytes)} is over the ${mib(LIMIT_BYTES)} limit`);

#!/usr/bin/env node
// Builds build/Release/foxhunt_cuda.node with node-gyp (run by `npm ci` as the root `install` script
// and by `npm run build:addon`). Two things plain `node-gyp rebuild` gets wrong here:
// - it downloads Node's headers even when the installed node ships them, which fails offline;
// - a machine without a C++ toolchain would fail the whole `npm ci`, although only the cuda
//   backend needs the addon. The failure is reported and the install goes on (the cuda backend
//   then says "CUDA addon not built"), unless FOXHUNT_REQUIRE_ADDON=1.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

function nodeGyp() {
  const candidates = [
    process.env.npm_config_node_gyp,
    join(dirname(process.execPath), '../lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js'),
    '/usr/lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js',
    '/usr/local/lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js',
  ];
  return candidates.find((p) => p && existsSync(p));
}

/** A prefix whose include/node headers match the running node, so node-gyp needs no download. */
function localNodeDir() {
  if (process.env.npm_config_nodedir) return undefined;
  const prefixes = [resolve(dirname(process.execPath), '..'), process.config.variables.node_prefix, '/usr'];
  for (const prefix of prefixes) {
    if (!prefix) continue;
    try {
      const h = readFileSync(join(prefix, 'include/node/node_version.h'), 'utf8');
      const part = (k) => h.match(new RegExp(`#define NODE_${k}_VERSION (\\d+)`))?.[1];
      if (`v${part('MAJOR')}.${part('MINOR')}.${part('PATCH')}` === process.version) return prefix;
    } catch {}
  }
  return undefined;
}

function fail(reason) {
  const line = `foxhunt: the CUDA addon was not built (${reason}); the cuda backend stays unavailable, webgpu and cpu work. Fix it and run \`npm run build:addon\`.`;
  console.error(line);
  process.exit(process.env.FOXHUNT_REQUIRE_ADDON === '1' ? 1 : 0);
}

const gyp = nodeGyp();
if (!gyp) fail('node-gyp not found: it ships with npm');
const nodedir = localNodeDir();
const args = [gyp, 'rebuild', '--loglevel=warn', ...(nodedir ? [`--nodedir=${nodedir}`] : [])];
const res = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' });
if (res.status !== 0)
  fail(`node-gyp exited with ${res.status ?? res.signal}; a C++17 compiler, make and python3 are needed`);

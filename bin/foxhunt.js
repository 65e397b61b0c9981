#!/usr/bin/env node
// The foxhunt CLI entry: runs the compiled TypeScript in dist/ (built by `npm ci` via `prepare`).
import { main } from '../dist/src/cli/main.js';

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    console.error(`foxhunt: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);

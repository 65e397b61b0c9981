import { defineConfig } from 'vite';

// The demo page (web/): `npm run demo` serves it, `npm run build:web` writes a static site into
// web/dist with relative URLs, so any static host (or a subdirectory of one) serves it.
export default defineConfig({
  root: 'web',
  base: './',
  build: { outDir: 'dist', emptyOutDir: true, target: 'es2022' },
  worker: { format: 'es' },
  server: { port: 5173 },
  preview: { port: 4173 },
});

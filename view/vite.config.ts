import { defineConfig } from 'vite';

// The web view's bundle (issue 52): Preact, built by `npm run build` into dist/view/, which the
// view server (agent/view/) serves. Relative to this folder; no CDN, no font from the internet.
export default defineConfig({
  root: import.meta.dirname,
  base: '/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: '../dist/view',
    emptyOutDir: true,
    target: 'es2022',
    assetsInlineLimit: 0,
    reportCompressedSize: true,
  },
});

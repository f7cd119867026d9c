// Bundles the extension into one file, dist/extension.js, with esbuild. `vscode` is the
// host's; everything else (vscode-languageclient and its protocol) goes into the bundle, so
// the .vsix carries no node_modules. `--production`: minified, no source map.
import * as esbuild from 'esbuild';

const production = process.argv.includes('--production');

await esbuild.build({
  entryPoints: ['src/extension.ts'],
  bundle: true,
  outfile: 'dist/extension.js',
  external: ['vscode'],
  format: 'cjs',
  platform: 'node',
  target: 'node18',
  minify: production,
  sourcemap: !production,
  sourcesContent: false,
  logLevel: 'warning',
});

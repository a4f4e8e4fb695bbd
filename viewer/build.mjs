// Bundles the page (src/) and its npm libraries into dist/: index.html, viewer.js, viewer.css
// and the libraries' licences. hilsim-server builds dist/ into its binary (server/CMakeLists.txt).
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';

mkdirSync('dist', { recursive: true });
await build({
  entryPoints: { viewer: 'src/main.js' },
  bundle: true,
  minify: true,
  format: 'iife',
  target: ['chrome100', 'firefox100', 'safari15'],
  outdir: 'dist',
  legalComments: 'none',  // the licences go into dist/LICENSES.txt whole
  logLevel: 'warning',
});
copyFileSync('src/index.html', 'dist/index.html');
const licences = [
  ['three', 'node_modules/three/LICENSE'],
  ['uPlot', 'node_modules/uplot/LICENSE'],
].map(([name, file]) => {
  const version = JSON.parse(readFileSync(`node_modules/${name.toLowerCase()}/package.json`)).version;
  return `${name} ${version}\n\n${readFileSync(file, 'utf8').trim()}\n`;
});
writeFileSync('dist/LICENSES.txt',
  'Libraries bundled into viewer.js and viewer.css (from npm):\n\n' + licences.join('\n---\n\n'));

// Drives code-server's workbench in headless Chromium: opens example.dragon from the Explorer,
// then checks what a user would see and what the extension host logged.
//
//   node drive.mjs URL LOGS_DIR OUT_DIR EXPECT_DIAGNOSTICS(0|1)
//
// Checks: the extension host activated little-dragon on onLanguage:dragon; the Dragon status
// item shows the script's target; the language mode is Dragon; the extension logged the
// server's command line; with EXPECT_DIAGNOSTICS=1, the server's diagnostics reach the
// editor; "Dragon: Select target and device" from the Command Palette changes the status. Writes OUT_DIR/editor.png. Ends with "host: N passed, M failed".
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';

const require = createRequire(import.meta.url);
const { chromium } = require('playwright-core');

const [url, logsDir, outDir, expectDiagnostics] = process.argv.slice(2);
const results = [];
const check = (name, ok, detail = '') => {
  results.push(ok);
  console.log(`${ok ? 'ok' : 'not ok'} - ${name}${detail ? `: ${detail}` : ''}`);
};

function findFiles(dir, match) {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { recursive: true }).map((f) => path.join(dir, String(f))).filter((f) => match(path.basename(f)));
}

async function poll(what, fn, timeoutMs) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) return undefined;
    await new Promise((r) => setTimeout(r, 500));
  }
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  // No sandbox as root; no background traffic (this machine has no network beyond loopback).
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1500, height: 850 } });
  await page.goto(url, { waitUntil: 'domcontentloaded' });
  await page.waitForSelector('.monaco-workbench', { timeout: 90000 });
  await page.click('.explorer-folders-view .monaco-list-row:has-text("example.dragon")', { timeout: 90000 });

  const statusItems = () => page.$$eval('.statusbar-item', (els) => els.map((e) => (e.textContent || '').trim()).filter(Boolean));
  const dragonItem = await poll('status item', async () => (await statusItems()).find((t) => t.startsWith('Dragon: ')), 60000);
  check('status bar shows the target and device', dragonItem === 'Dragon: nvidia/nvidia-h100 · auto', String(dragonItem));
  check('language mode is Dragon', (await statusItems()).includes('Dragon'));

  const activated = await poll('activation', () => findFiles(logsDir, (b) => b === 'remoteexthost.log')
    .some((f) => /_doActivateExtension little-dragon\.little-dragon, startup: \w+, activationEvent: 'onLanguage:dragon'/.test(fs.readFileSync(f, 'utf8'))), 30000);
  check('the extension host activated little-dragon on onLanguage:dragon', Boolean(activated));

  const output = await poll('output', () => findFiles(logsDir, (b) => b.endsWith('Dragon Language Server.log'))
    .map((f) => fs.readFileSync(f, 'utf8')).find((t) => t.includes('Starting: ')), 30000);
  check('the extension logged the server command line', Boolean(output), output?.split('\n')[0]);

  if (expectDiagnostics === '1') {
    const squiggles = await poll('diagnostics', async () => (await page.$$('.squiggly-error')).length, 60000);
    check("the server's diagnostics reach the editor", Boolean(squiggles), `${squiggles ?? 0} error squiggle(s)`);
  }
  // A command of the extension, through the Command Palette: pick target llvm, device automatic.
  await page.keyboard.press('Control+Shift+P');
  await page.waitForSelector('.quick-input-widget', { state: 'visible', timeout: 10000 });
  await page.keyboard.type('Dragon: Select target and device');
  await page.waitForTimeout(800);
  await page.keyboard.press('Enter');
  await page.waitForSelector('.quick-input-widget .quick-input-title:has-text("Dragon: Target")', { timeout: 10000 });
  await page.keyboard.type('llvm');
  await page.waitForTimeout(500);
  await page.keyboard.press('Enter');
  await page.waitForSelector('.quick-input-widget .quick-input-title:has-text("Dragon: Device")', { timeout: 10000 });
  await page.keyboard.press('Enter'); // the first item: Automatic
  const picked = await poll('status after the pick', async () => (await statusItems()).find((t) => t === 'Dragon: llvm · auto'), 10000);
  check('"Select target and device" updates the settings and the status bar', Boolean(picked), String((await statusItems()).find((t) => t.startsWith('Dragon: '))));

  await page.waitForTimeout(1500);
  fs.mkdirSync(outDir, { recursive: true });
  await page.screenshot({ path: path.join(outDir, 'editor.png') });
  console.log(`screenshot: ${path.join(outDir, 'editor.png')}`);
} catch (error) {
  check('the workbench could be driven', false, String(error));
} finally {
  await browser.close();
}
const failed = results.filter((r) => !r).length;
console.log(`host: ${results.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);

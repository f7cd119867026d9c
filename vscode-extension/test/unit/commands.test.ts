import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  COMMANDS, commandArguments, commandById, interpretResult, progressStep, SERVER_COMMANDS, withoutClientCommands,
} from '../../src/commands';
import { DEFAULT_SETTINGS } from '../../src/settings';
import { readJson } from '../paths';

const manifest = readJson('package.json');

test('package.json contributes exactly the commands of the table, with the same titles', () => {
  const contributed = manifest.contributes.commands.map((c: { command: string; title: string; category: string }) => [c.command, c.title, c.category]);
  assert.deepEqual(contributed, COMMANDS.map((c) => [c.id, c.title, 'Dragon']));
});

test('menus name only contributed commands; document commands are hidden outside .dragon editors', () => {
  const ids = new Set(COMMANDS.map((c) => c.id));
  for (const [menu, entries] of Object.entries<Array<{ command: string; when?: string }>>(manifest.contributes.menus)) {
    for (const e of entries) assert.ok(ids.has(e.command), `${menu}: ${e.command}`);
  }
  const palette = new Map(manifest.contributes.menus.commandPalette.map((e: { command: string; when: string }) => [e.command, e.when]));
  for (const c of COMMANDS) assert.equal(palette.get(c.id), c.needsDocument ? 'editorLangId == dragon' : undefined, c.id);
});

test('the issue asks for these commands; the server carries out five of them', () => {
  assert.deepEqual(COMMANDS.map((c) => c.title), [
    'Suggest schedule', 'Rewrite schedule', 'Show scheduled TensorIR', 'Show CUDA source', 'Measure latency',
    'Select target and device', 'Restart language server',
  ]);
  assert.deepEqual(SERVER_COMMANDS, [
    'dragon.suggestSchedule', 'dragon.rewriteSchedule', 'dragon.showTensorIR', 'dragon.showCudaSource', 'dragon.measureLatency',
  ]);
  assert.equal(commandById('dragon.showCudaSource')?.language, 'cuda-cpp');
  assert.equal(commandById('nope'), undefined);
});

const doc = { uri: 'file:///w/a.dragon', version: 7, range: { start: { line: 1, character: 0 }, end: { line: 3, character: 4 } } };
const s = { ...DEFAULT_SETTINGS, target: 'nvidia/nvidia-h100', device: 'rpc', trackerAddress: '127.0.0.1:9190' };

test('arguments: one object with the document, its version and the settings', () => {
  assert.deepEqual(commandArguments(commandById('dragon.measureLatency')!, doc, s), [
    { uri: doc.uri, version: 7, target: 'nvidia/nvidia-h100', device: 'rpc', trackerAddress: '127.0.0.1:9190' },
  ]);
});

test('arguments: rewrite sends the selection and the prompt', () => {
  const [arg] = commandArguments(commandById('dragon.rewriteSchedule')!, doc, s, 'use shared memory');
  assert.deepEqual(arg.range, doc.range);
  assert.equal(arg.prompt, 'use shared memory');
  const [plain] = commandArguments(commandById('dragon.rewriteSchedule')!, { uri: doc.uri, version: 1 }, s, '');
  assert.ok(!('range' in plain) && !('prompt' in plain));
});

test('results: null, strings, messages, errors, documents, anything else', () => {
  const ir = commandById('dragon.showTensorIR')!;
  assert.deepEqual(interpretResult(ir, null), { kind: 'none' });
  assert.deepEqual(interpretResult(ir, undefined), { kind: 'none' });
  assert.deepEqual(interpretResult(ir, ''), { kind: 'none' });
  assert.deepEqual(interpretResult(ir, 'done'), { kind: 'message', severity: 'info', text: 'done' });
  assert.deepEqual(interpretResult(ir, { content: '# from tvm.script ...' }), { kind: 'document', content: '# from tvm.script ...', language: 'python' });
  assert.deepEqual(interpretResult(ir, { content: 'x', language: 'plaintext', message: 'built in 2 s' }),
    { kind: 'document', content: 'x', language: 'plaintext', message: 'built in 2 s' });
  assert.deepEqual(interpretResult(commandById('dragon.suggestSchedule')!, { content: 'b0 = get_sblock("C")\n' }),
    { kind: 'document', content: 'b0 = get_sblock("C")\n', language: 'dragon' });
  assert.deepEqual(interpretResult(ir, { error: 'DRG601: replay failed', content: 'x' }), { kind: 'message', severity: 'error', text: 'DRG601: replay failed' });
  assert.deepEqual(interpretResult(ir, { message: '12.5 us' }), { kind: 'message', severity: 'info', text: '12.5 us' });
  assert.deepEqual(interpretResult(ir, { latency_us: 12.5 }), { kind: 'message', severity: 'info', text: 'Show scheduled TensorIR: {"latency_us":12.5}' });
  assert.deepEqual(interpretResult(ir, [1]), { kind: 'message', severity: 'info', text: 'Show scheduled TensorIR: [1]' });
});

test("the server's copies of the extension's commands are not registered twice", () => {
  assert.deepEqual(withoutClientCommands({ commands: ['dragon.suggestSchedule', 'dragon.applyFix', 'dragon.measureLatency'], workDoneProgress: true }),
    { commands: ['dragon.applyFix'], workDoneProgress: true });
  assert.deepEqual(withoutClientCommands({}), {});
});

test("the server's progress becomes messages and increments of the command's notification", () => {
  assert.deepEqual(progressStep({ kind: 'begin', title: 'Suggesting a schedule', message: 'starting', percentage: 0 } as never, 0),
    { message: 'starting', done: 0 });
  assert.deepEqual(progressStep({ kind: 'report', message: 'searching: 16 trials', percentage: 10 }, 0),
    { message: 'searching: 16 trials', increment: 10, done: 10 });
  assert.deepEqual(progressStep({ kind: 'report', percentage: 60 }, 10), { increment: 50, done: 60 });
  assert.deepEqual(progressStep({ kind: 'report', message: 'again', percentage: 40 }, 60), { message: 'again', done: 60 });
  assert.deepEqual(progressStep({ kind: 'report', percentage: 250 }, 60), { increment: 40, done: 100 });
  assert.deepEqual(progressStep({ kind: 'end', message: 'done' }, 60), { done: 60 });
  assert.deepEqual(progressStep(null as never, 5), { done: 5 });
  assert.deepEqual(progressStep({ kind: 'report', message: 3, percentage: Number.NaN }, 5), { done: 5 });
});

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { DEFAULT_SETTINGS, initializationOptions, readSettings, RESTART_KEYS, SECTION } from '../../src/settings';
import { readJson } from '../paths';

const manifest = readJson('package.json');
const properties: Record<string, { default: unknown; type: string }> = manifest.contributes.configuration.properties;

test('package.json declares every setting with the default the client uses', () => {
  const declared = Object.keys(properties).filter((k) => k !== `${SECTION}.trace.server`).sort();
  assert.deepEqual(declared, Object.keys(DEFAULT_SETTINGS).map((k) => `${SECTION}.${k}`).sort());
  for (const [key, value] of Object.entries(DEFAULT_SETTINGS)) {
    assert.deepEqual(properties[`${SECTION}.${key}`].default, value, key);
  }
  assert.deepEqual(properties['dragon.trace.server'].default, 'off');
});

test('the timeouts object in package.json lists the same keys as the client', () => {
  const t = properties['dragon.timeouts'] as unknown as { properties: Record<string, unknown> };
  assert.deepEqual(Object.keys(t.properties).sort(), Object.keys(DEFAULT_SETTINGS.timeouts).sort());
});

test('an empty configuration reads as the defaults', () => {
  assert.deepEqual(readSettings(() => undefined), DEFAULT_SETTINGS);
});

test('values of the wrong type fall back to their defaults; strings are trimmed', () => {
  const values: Record<string, unknown> = {
    pythonPath: ' /opt/venv/bin/python ', serverPath: 3, serverArgs: ['--log', 7], target: 'nvidia/nvidia-h100',
    device: null, trackerAddress: '127.0.0.1:9190', modelPath: ['x'], timeouts: { replay: 5, build: -1, measure: 'x' },
  };
  const s = readSettings((k) => values[k]);
  assert.equal(s.pythonPath, '/opt/venv/bin/python');
  assert.equal(s.serverPath, '');
  assert.deepEqual(s.serverArgs, []);
  assert.equal(s.target, 'nvidia/nvidia-h100');
  assert.equal(s.device, '');
  assert.equal(s.trackerAddress, '127.0.0.1:9190');
  assert.equal(s.modelPath, '');
  assert.deepEqual(s.timeouts, { replay: 5, build: 120, measure: 300, suggest: 120 });
});

test('reading settings never shares arrays with the defaults', () => {
  const s = readSettings(() => undefined);
  s.serverArgs.push('--x');
  assert.deepEqual(DEFAULT_SETTINGS.serverArgs, []);
});

test('the server gets target, device, tracker, model and timeouts at initialize, not how it was started', () => {
  const s = { ...DEFAULT_SETTINGS, pythonPath: '/p', target: 'llvm', device: 'cpu' };
  assert.deepEqual(initializationOptions(s), {
    settings: { target: 'llvm', device: 'cpu', trackerAddress: '', modelPath: '', timeouts: DEFAULT_SETTINGS.timeouts },
  });
});

test('restart keys are settings', () => {
  for (const k of RESTART_KEYS) assert.ok(k in DEFAULT_SETTINGS, k);
});

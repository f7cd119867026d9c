import assert from 'node:assert/strict';
import { test } from 'node:test';

import { DEFAULT_SETTINGS } from '../../src/settings';
import { BUILTIN_TARGETS, choices, scriptTarget, statusText } from '../../src/status';

test("the script's target line: a tag, a JSON object, none", () => {
  assert.equal(scriptTarget('# a comment\nworkload "m.tvmscript"\ntarget "nvidia/nvidia-h100"\n\nb0 = get_sblock("C")\n'), 'nvidia/nvidia-h100');
  assert.equal(scriptTarget('target {"kind": "llvm", "num-cores": 2}\n'), 'llvm');
  assert.equal(scriptTarget('target {"num-cores": 2}\n'), '{...}');
  assert.equal(scriptTarget('target "a\\"b"\n'), 'a"b');
  assert.equal(scriptTarget('workload "m.tvmscript"\nb0 = get_sblock("C")\n'), undefined);
  assert.equal(scriptTarget('b0 = get_sblock("C")\ntarget "llvm"\n'), undefined, 'only the header counts');
  assert.equal(scriptTarget(''), undefined);
  assert.equal(scriptTarget('targets = 1\n'), undefined);
});

test('status text: settings first, then the script, then llvm; device auto', () => {
  const s = DEFAULT_SETTINGS;
  assert.equal(statusText(s, undefined, 'running').text, '$(flame) Dragon: llvm · auto');
  assert.equal(statusText(s, 'nvidia/nvidia-h100', 'running').text, '$(flame) Dragon: nvidia/nvidia-h100 · auto');
  const set = { ...s, target: 'llvm', device: 'cpu', trackerAddress: 'h:9190' };
  const st = statusText(set, 'nvidia/nvidia-h100', 'missing');
  assert.equal(st.text, '$(warning) Dragon: llvm · cpu');
  assert.match(st.tooltip, /Target: llvm \(from settings\)/);
  assert.match(st.tooltip, /RPC tracker: h:9190/);
  assert.match(st.tooltip, /not found/);
  assert.match(statusText(s, 'x', 'starting').tooltip, /from the script's target line/);
  assert.match(statusText(s, undefined, 'starting').text, /loading~spin/);
});

test("choices: the server's first, then the built-in ones, once each", () => {
  assert.deepEqual(choices(['nvidia/nvidia-h100', 'rocm', 3, ''], BUILTIN_TARGETS), ['nvidia/nvidia-h100', 'rocm', 'llvm', 'nvidia/nvidia-a100']);
  assert.deepEqual(choices(undefined, ['a']), ['a']);
});

/**
 * The status-bar item's text, and the target and device lists of "Select target and device".
 * No VS Code import (unit-tested directly).
 */

import type { DragonSettings } from './settings';

export type ServerState = 'starting' | 'running' | 'stopped' | 'missing';

/** Targets offered by "Select target and device" when the server offers no list of its own. */
export const BUILTIN_TARGETS: readonly string[] = ['llvm', 'nvidia/nvidia-h100', 'nvidia/nvidia-a100'];
// The server's words (lsp/config.py): this machine, the CPU of this machine, a device behind the tracker.
export const BUILTIN_DEVICES: readonly string[] = ['local', 'cpu', 'rpc'];
/** The target a script without a `target` line is checked against (the CLI's default). */
export const DEFAULT_TARGET = 'llvm';

/**
 * The `target` directive of a script's header, as a short label: the tag string, or the
 * `kind` of a JSON object. Undefined when the header has none. Reads only lines before the
 * first instruction, as the language does (docs/LANGUAGE.md, section 7).
 */
export function scriptTarget(text: string): string | undefined {
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const tag = /^target\s+("(?:[^"\\]|\\.)*")/.exec(line);
    if (tag) {
      try {
        return JSON.parse(tag[1]) as string;
      } catch {
        return tag[1];
      }
    }
    if (/^target\s*\{/.test(line)) {
      const kind = /"kind"\s*:\s*"([^"\\]*)"/.exec(line);
      return kind ? kind[1] : '{...}';
    }
    if (/^workload\b/.test(line)) continue;
    return undefined; // the first instruction ends the header
  }
  return undefined;
}

export interface StatusText {
  text: string;
  tooltip: string;
}

/**
 * `Dragon: <target> · <device>`: the setting when set, else the script's header (marked
 * "script"), else the default. The server's state shows as an icon.
 */
export function statusText(s: DragonSettings, fromScript: string | undefined, state: ServerState): StatusText {
  const target = s.target || fromScript || DEFAULT_TARGET;
  const targetNote = s.target ? 'from settings' : fromScript ? "from the script's target line" : 'default';
  const device = s.device || 'auto';
  const icon = state === 'running' ? '$(flame)' : state === 'starting' ? '$(loading~spin)' : '$(warning)';
  const server =
    state === 'running' ? 'Language server running.'
      : state === 'starting' ? 'Language server starting.'
        : state === 'missing' ? 'Language server not found: see the Dragon Language Server output.'
          : 'Language server stopped.';
  const lines = [
    `Target: ${target} (${targetNote})`,
    `Device: ${device}${s.device ? '' : ' (chosen by the server)'}`,
  ];
  if (s.trackerAddress) lines.push(`RPC tracker: ${s.trackerAddress}`);
  lines.push(server, 'Click to select the target and device.');
  return { text: `${icon} Dragon: ${target} · ${device}`, tooltip: lines.join('\n') };
}

/** Merge a server's list with the built-in one, server's first, without duplicates. */
export function choices(fromServer: unknown, builtin: readonly string[]): string[] {
  const listed = Array.isArray(fromServer) ? fromServer.filter((x): x is string => typeof x === 'string' && x !== '') : [];
  return [...new Set([...listed, ...builtin])];
}

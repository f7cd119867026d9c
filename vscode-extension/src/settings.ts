/**
 * The extension's settings (configuration section `dragon`): their names, defaults and the
 * validation of what a user wrote. No VS Code import, so the unit tests read it directly;
 * package.json declares the same keys and defaults (a unit test holds them in step).
 */

export const SECTION = 'dragon';

/** Time limits in seconds for the server's worker processes. */
export interface Timeouts {
  replay: number;
  build: number;
  measure: number;
  suggest: number;
}

export interface DragonSettings {
  /** Interpreter that runs `-m dragon_lsp`; empty: found (see launch.ts). */
  pythonPath: string;
  /** A `dragon-lsp` executable; wins over pythonPath when set. */
  serverPath: string;
  serverArgs: string[];
  /** Target tag, kind (`llvm`) or JSON object; empty: the script's `target` line. */
  target: string;
  /** `local`, `cpu`, `rpc` or `rpc://HOST:PORT/KEY`; empty: the tracker when `trackerAddress` is set, else this machine. */
  device: string;
  /** `host:port` or `host:port/key` of a TVM RPC tracker (key `dragon` when omitted); empty: measure locally. */
  trackerAddress: string;
  modelPath: string;
  timeouts: Timeouts;
}

export const DEFAULT_TIMEOUTS: Readonly<Timeouts> = Object.freeze({ replay: 30, build: 120, measure: 300, suggest: 120 });

export const DEFAULT_SETTINGS: Readonly<DragonSettings> = Object.freeze({
  pythonPath: '',
  serverPath: '',
  serverArgs: [],
  target: '',
  device: '',
  trackerAddress: '',
  modelPath: '',
  timeouts: { ...DEFAULT_TIMEOUTS },
});

/** Settings whose change needs a new server process (the others reach it as configuration). */
export const RESTART_KEYS: readonly string[] = ['pythonPath', 'serverPath', 'serverArgs'];

function str(v: unknown, d: string): string {
  return typeof v === 'string' ? v.trim() : d;
}

function strings(v: unknown, d: string[]): string[] {
  return Array.isArray(v) && v.every((x) => typeof x === 'string') ? [...v] : [...d];
}

function seconds(v: unknown, d: number): number {
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : d;
}

/**
 * Settings from a getter such as `workspace.getConfiguration('dragon').get`. A value of the
 * wrong type falls back to its default, so a typo in settings.json never breaks activation.
 */
export function readSettings(get: (key: string) => unknown): DragonSettings {
  const t = get('timeouts');
  const timeouts = (t && typeof t === 'object' ? t : {}) as Record<string, unknown>;
  return {
    pythonPath: str(get('pythonPath'), DEFAULT_SETTINGS.pythonPath),
    serverPath: str(get('serverPath'), DEFAULT_SETTINGS.serverPath),
    serverArgs: strings(get('serverArgs'), DEFAULT_SETTINGS.serverArgs),
    target: str(get('target'), DEFAULT_SETTINGS.target),
    device: str(get('device'), DEFAULT_SETTINGS.device),
    trackerAddress: str(get('trackerAddress'), DEFAULT_SETTINGS.trackerAddress),
    modelPath: str(get('modelPath'), DEFAULT_SETTINGS.modelPath),
    timeouts: {
      replay: seconds(timeouts.replay, DEFAULT_TIMEOUTS.replay),
      build: seconds(timeouts.build, DEFAULT_TIMEOUTS.build),
      measure: seconds(timeouts.measure, DEFAULT_TIMEOUTS.measure),
      suggest: seconds(timeouts.suggest, DEFAULT_TIMEOUTS.suggest),
    },
  };
}

/** What the server needs to know at `initialize` (the rest of `dragon` only starts it). */
export interface ServerSettings {
  target: string;
  device: string;
  trackerAddress: string;
  modelPath: string;
  timeouts: Timeouts;
}

/** `initializationOptions` of the `initialize` request: `{ settings: ServerSettings }`. */
export function initializationOptions(s: DragonSettings): { settings: ServerSettings } {
  return {
    settings: {
      target: s.target,
      device: s.device,
      trackerAddress: s.trackerAddress,
      modelPath: s.modelPath,
      timeouts: { ...s.timeouts },
    },
  };
}

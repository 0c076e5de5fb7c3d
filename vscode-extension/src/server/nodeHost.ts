/** The real {@link DiscoveryHost}: the local file system, PATH, and a Python probe. */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import { type DiscoveryHost, SAFE_PATH_FLAG } from "./discovery";

const PROBE_TIMEOUT_MS = 10_000;

export function createNodeHost(): DiscoveryHost {
  const moduleCache = new Map<string, boolean>();
  return {
    platform: process.platform,
    pathEnv: process.env.PATH,
    homeDir: os.homedir(),
    isExecutable(file: string): boolean {
      try {
        if (!fs.statSync(file).isFile()) return false;
        if (process.platform !== "win32") fs.accessSync(file, fs.constants.X_OK);
        return true;
      } catch {
        return false;
      }
    },
    hasModule(python: string, module: string): boolean {
      const key = `${python}\0${module}`;
      let found = moduleCache.get(key);
      if (found === undefined) {
        found = probeModule(python, module);
        moduleCache.set(key, found);
      }
      return found;
    },
  };
}

/**
 * find_spec locates the package without running it, so the probe stays fast.
 * `-P` as in the launch: the probe finds what the server will import, never a
 * folder of the working directory (and a Python before 3.11, too old for the
 * server, fails the probe).
 */
function probeModule(python: string, module: string): boolean {
  const script = `import importlib.util, sys; sys.exit(0 if importlib.util.find_spec(${JSON.stringify(module)}) else 1)`;
  const result = spawnSync(python, [SAFE_PATH_FLAG, "-c", script], { timeout: PROBE_TIMEOUT_MS, stdio: "ignore", windowsHide: true });
  return result.status === 0;
}

/**
 * "Calibrate": simulation-based calibration of a model program (`qvr sbc`), run in a
 * terminal of its own. Its progress ("simulation 7/100") and its verdicts, one per
 * parameter with the remedy, are the command's own; Ctrl-C stops it cleanly.
 *
 * The command comes from the environment the language server runs from, so the
 * calibration checks the program with the server's qvr: `python -P -m qvr_cli` where the
 * server is `python -P -m qvr_lsp`, the `qvr` beside a `qvr-lsp` executable, and `qvr` on
 * PATH otherwise. The terminal starts that process itself (no shell), so a file or
 * program name is one argument whatever characters it holds.
 */
import * as path from "node:path";
import type { ServerLaunch } from "../server/discovery";

export interface CalibrationTarget {
  uri?: string;
  program?: string;
}

/** A command line: the executable and its arguments, never parsed by a shell. */
export interface CommandLine {
  command: string;
  args: string[];
}

/** The lens's `[{uri, program}]`, or `[uri, program?]` as a palette or another client sends it. */
export function parseCalibrationArguments(args: readonly unknown[]): CalibrationTarget {
  const [first, second] = args;
  if (typeof first === "string") return { uri: first, ...(typeof second === "string" ? { program: second } : {}) };
  if (typeof first !== "object" || first === null) return {};
  const raw = first as Record<string, unknown>;
  return {
    ...(typeof raw.uri === "string" ? { uri: raw.uri } : {}),
    ...(typeof raw.program === "string" ? { program: raw.program } : {}),
  };
}

/** `qvr` from the server's environment (see the module), given what exists on disk. */
export function qvrCommand(launch: ServerLaunch | undefined, exists: (file: string) => boolean, platform: string): CommandLine {
  if (launch !== undefined) {
    const module = launch.args.indexOf("-m");
    if (module >= 0 && launch.args[module + 1] === "qvr_lsp") {
      return { command: launch.command, args: [...launch.args.slice(0, module), "-m", "qvr_cli"] };
    }
    const p = platform === "win32" ? path.win32 : path.posix;
    const name = p.basename(launch.command).toLowerCase();
    if (launch.args.length === 0 && (name === "qvr-lsp" || name === "qvr-lsp.exe")) {
      const beside = p.join(p.dirname(launch.command), name.endsWith(".exe") ? "qvr.exe" : "qvr");
      if (exists(beside)) return { command: beside, args: [] };
    }
  }
  return { command: "qvr", args: [] };
}

/** `qvr sbc`'s arguments: the file, the program, and the data file the runs use (when set). */
export function sbcArguments(file: string, program: string | undefined, data: string): string[] {
  return ["sbc", file, ...(program !== undefined ? ["--program", program] : []), ...(data !== "" ? ["--data", data] : [])];
}

/** Locations the tests need, from the bundled test file in out/test/. */
import * as path from "node:path";

export const extensionRoot = path.resolve(__dirname, "..", "..");
export const repoRoot = path.resolve(extensionRoot, "..");
export const examplesDir = path.join(repoRoot, "examples");

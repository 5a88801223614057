import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "..", "..", "..");

/** A module built by test/setup.ts. */
export function example(name: "kv" | "token"): string {
  return path.join(repo, "target", "wasm32-unknown-unknown", "contract", `${name}_ts.wasm`);
}

export const PROBE = path.join(here, ".build", "probe.wasm");
export const CONTRACTS = path.join(here, "contracts");
export const BUILD_DIR = path.join(here, ".build");

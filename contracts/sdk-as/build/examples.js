// Builds the example contracts of contracts/examples-as/ into
// target/wasm32-unknown-unknown/contract/<name>_ts.wasm (beside the Rust ones) and prints
// their sizes: `npm run -w @runnel/contract build-examples`.

import path from "node:path";
import { fileURLToPath } from "node:url";
import { buildContract } from "./build.js";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
export const EXAMPLES = ["kv", "token"];
export const outputDir = path.join(repo, "target", "wasm32-unknown-unknown", "contract");

export async function buildExamples() {
  const built = [];
  for (const name of EXAMPLES) {
    const result = await buildContract({
      entry: path.join(repo, "contracts", "examples-as", name, "index.ts"),
      outFile: path.join(outputDir, `${name}_ts.wasm`),
    });
    built.push({ name, ...result });
  }
  return built;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    for (const b of await buildExamples()) {
      console.log(`${path.relative(process.cwd(), b.outFile)}  ${b.bytes} bytes  (${b.functions.join(", ")})`);
    }
  } catch (e) {
    console.error(e.message);
    process.exit(1);
  }
}

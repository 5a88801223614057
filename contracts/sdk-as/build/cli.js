#!/usr/bin/env node
// runnel-contract-build <entry.ts> [-o out.wasm] [--config asconfig.json] [--text out.wat]
// Builds and checks an AssemblyScript contract (see build.js).

import path from "node:path";
import { buildContract } from "./build.js";

const args = process.argv.slice(2);
let entry;
let outFile;
let config;
let textFile;
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (a === "-o" || a === "--out") outFile = args[++i];
  else if (a === "--config") config = args[++i];
  else if (a === "--text") textFile = args[++i];
  else if (a === "-h" || a === "--help") entry = undefined, (i = args.length);
  else entry = a;
}
if (!entry) {
  console.error("usage: runnel-contract-build <entry.ts> [-o out.wasm] [--config asconfig.json] [--text out.wat]");
  process.exit(2);
}
outFile ??= path.join("build", `${path.basename(path.dirname(path.resolve(entry)))}.wasm`);
try {
  const result = await buildContract({ entry, outFile, config, textFile });
  console.log(`${path.relative(process.cwd(), result.outFile)}  ${result.bytes} bytes  (functions: ${result.functions.join(", ") || "none"})`);
} catch (e) {
  console.error(e.message);
  process.exit(1);
}

// Builds the example contracts and the test contracts before any test runs, so that
// `npm test -w @runnel/contract` always tests the current sources.

import path from "node:path";
import { fileURLToPath } from "node:url";
import { buildContract } from "@runnel/contract/build";
// @ts-expect-error: a plain JS module without types
import { buildExamples } from "../build/examples.js";

const here = path.dirname(fileURLToPath(import.meta.url));
export const BUILD_DIR = path.join(here, ".build");

export default async function setup(): Promise<void> {
  await buildExamples();
  await buildContract({
    entry: path.join(here, "contracts", "probe", "index.ts"),
    outFile: path.join(BUILD_DIR, "probe.wasm"),
  });
}

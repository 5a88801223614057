/** The example app runs against a real node and sees what it says it does. */

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, inject, test } from "vitest";
// @ts-expect-error: a plain .mjs example without type declarations
import { main } from "../examples/token-transfers.mjs";

interface Outcome {
  me: string;
  bob: string;
  transfers: string[];
  events: string[];
}

test("examples/token-transfers.mjs: mints, transfers, refuses, conflicts, and follows its events", async () => {
  const lines: string[] = [];
  const outcome = (await main({
    url: inject("runnelUrl"),
    dir: inject("runnelDir"),
    checkpointFile: join(mkdtempSync(join(tmpdir(), "runnel-example-")), "checkpoint.json"),
    log: (line: string) => lines.push(line),
  })) as Outcome;
  expect(outcome.transfers).toHaveLength(2);
  expect(outcome.events.slice(1, 3)).toEqual(outcome.transfers);
  expect(lines.join("\n")).toContain("refused: CONTRACT_ERROR");
  expect(lines.join("\n")).toContain("second concurrent transfer: MVCC_READ_CONFLICT");
  expect(lines).toContain(`event Transfer: ${outcome.me} -> ${outcome.bob}: 30`);
});

/** Starts the dev node every test file shares, and stops it when the run ends. */

import type { TestProject } from "vitest/node";
import { RunnelNode } from "./node.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** The shared node's URL. */
    runnelUrl: string;
    /** Its network directory (identities/). */
    runnelDir: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const node = await RunnelNode.start();
  project.provide("runnelUrl", node.url);
  project.provide("runnelDir", node.networkDir);
  return async () => {
    await node.stop();
  };
}

/**
 * A real `runnel dev` process for the end-to-end tests: a temp data dir, a free port on
 * 127.0.0.1, the explorer's build served from explorer/dist (what `runnel dev` serves),
 * ready once /healthz answers. RUNNEL_BIN and RUNNEL_CONTRACTS say where the binary and
 * the example contracts are; by default the repository's target/. (After
 * sdk-ts/test/node.ts, with the explorer and a restart on the same port and data.)
 */

import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, existsSync, mkdtempSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

export const RUNNEL_BIN = process.env.RUNNEL_BIN ?? join(repo, "target", "debug", "runnel");
export const RUNNEL_CONTRACTS = process.env.RUNNEL_CONTRACTS ?? join(repo, "target", "wasm32-unknown-unknown", "contract");
export const EXPLORER_DIST = join(repo, "explorer", "dist");

/** How long a node may take to answer /healthz after it starts. */
const START_TIMEOUT_MS = 120_000;
/** How long a node may take to stop after SIGTERM before it is killed. */
const STOP_TIMEOUT_MS = 15_000;

async function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => done(port));
    });
  });
}

const running = new Set<ChildProcess>();
process.once("exit", () => {
  for (const child of running) child.kill("SIGKILL");
});

/** A dev node on loopback serving the explorer. */
export class RunnelNode {
  readonly dir: string;
  readonly port: number;
  readonly url: string;
  #child: ChildProcess | undefined;
  #starts = 0;

  private constructor(dir: string, port: number) {
    this.dir = dir;
    this.port = port;
    this.url = `http://127.0.0.1:${port}`;
  }

  static async start(): Promise<RunnelNode> {
    if (!existsSync(join(EXPLORER_DIST, "index.html"))) {
      throw new Error(`no explorer build in ${EXPLORER_DIST}: run \`npm run -w explorer build\` first`);
    }
    const node = new RunnelNode(mkdtempSync(join(tmpdir(), "runnel-explorer-")), await freePort());
    await node.start();
    return node;
  }

  /** The network directory (identities/). */
  get networkDir(): string {
    return join(this.dir, "net");
  }

  /** Starts the process (again, after `stop`) on the same port and data dir; resolves once healthy. */
  async start(): Promise<void> {
    this.#starts += 1;
    const logPath = join(this.dir, `node-${this.#starts}.log`);
    const log = createWriteStream(logPath);
    const args = ["dev", "--dir", this.networkDir, "--listen", `127.0.0.1:${this.port}`, "--contracts", RUNNEL_CONTRACTS, "--explorer", EXPLORER_DIST];
    const child = spawn(RUNNEL_BIN, args, { stdio: ["ignore", "pipe", "pipe"] });
    child.stdout?.pipe(log);
    child.stderr?.pipe(log);
    running.add(child);
    this.#child = child;
    let exited: string | undefined;
    child.once("exit", (code, signal) => {
      running.delete(child);
      exited = `exited with ${code ?? signal}`;
    });
    child.once("error", (error) => {
      exited = `failed to start ${RUNNEL_BIN}: ${error.message}`;
    });
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (Date.now() < deadline) {
      if (exited !== undefined) throw new Error(`runnel dev ${exited}; see ${logPath}`);
      try {
        if ((await fetch(`${this.url}/healthz`)).ok) return;
      } catch {
        // not listening yet
      }
      await new Promise((done) => setTimeout(done, 100));
    }
    await this.stop();
    throw new Error(`runnel dev did not answer ${this.url}/healthz within ${START_TIMEOUT_MS} ms; see ${logPath}`);
  }

  /** Stops the node (SIGTERM, then SIGKILL) and waits for it to exit. */
  async stop(): Promise<void> {
    const child = this.#child;
    this.#child = undefined;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((done) => child.once("exit", () => done()));
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  }
}

/**
 * A real `runnel dev` process for the tests: a temp data dir, a free port on 127.0.0.1,
 * ready once /healthz answers. RUNNEL_BIN and RUNNEL_CONTRACTS (env) say where the
 * binary and the example contracts are; by default the repository's target/.
 */

import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { createWriteStream, mkdtempSync, readFileSync } from "node:fs";
import { get as httpsGet } from "node:https";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** The runnel binary. */
export const RUNNEL_BIN = process.env.RUNNEL_BIN ?? join(repo, "target", "debug", "runnel");
/** Where the example contracts' modules are. */
export const RUNNEL_CONTRACTS =
  process.env.RUNNEL_CONTRACTS ?? join(repo, "target", "wasm32-unknown-unknown", "contract");

/** How long a node may take to answer /healthz after it starts (compiling contracts on first start). */
const START_TIMEOUT_MS = 180_000;
/** How long a node may take to stop after SIGTERM before it is killed. */
const STOP_TIMEOUT_MS = 20_000;

/** A free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
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

/** Runs `runnel` with `args` to completion; throws with its output if it fails. */
function run(args: string[]): void {
  const result = spawnSync(RUNNEL_BIN, args, { encoding: "utf8" });
  if (result.status !== 0) {
    throw new Error(`runnel ${args.join(" ")} failed (${result.error?.message ?? result.status}): ${result.stderr}`);
  }
}

/** A node on loopback: `runnel dev`, or a network from `runnel init` served by `runnel start`. */
export class RunnelNode {
  readonly dir: string;
  readonly port: number;
  readonly url: string;
  /** The organisations of a network from `runnel init`; undefined for a dev node. */
  readonly orgs: string[] | undefined;
  #child: ChildProcess | undefined;
  #starts = 0;

  private constructor(dir: string, port: number, orgs?: string[]) {
    this.dir = dir;
    this.port = port;
    this.orgs = orgs;
    this.url = `${orgs === undefined ? "http" : "https"}://127.0.0.1:${port}`;
  }

  /** Starts a dev node in a new temp dir (or `dir`) on a free port. */
  static async start(dir?: string): Promise<RunnelNode> {
    const node = new RunnelNode(dir ?? mkdtempSync(join(tmpdir(), "runnel-sdk-")), await freePort());
    await node.#start();
    return node;
  }

  /** Creates a network of `orgs` (`runnel init`, TLS on) and starts its node (`runnel start`). */
  static async startNetwork(orgs: string[]): Promise<RunnelNode> {
    const node = new RunnelNode(mkdtempSync(join(tmpdir(), "runnel-sdk-")), await freePort(), orgs);
    run(["init", "--dir", node.networkDir, "--orgs", orgs.join(",")]);
    await node.#start();
    return node;
  }

  /** The TLS CA of a network from `runnel init`, PEM. */
  get tlsCa(): string {
    return readFileSync(join(this.networkDir, "identities", this.orgs?.[0] ?? "Org1", "tls", "ca.pem"), "utf8");
  }

  async #healthy(): Promise<boolean> {
    if (this.orgs === undefined) return (await fetch(`${this.url}/healthz`)).ok;
    return new Promise((done) => {
      const request = httpsGet(`${this.url}/healthz`, { ca: this.tlsCa }, (response) => {
        response.resume();
        done(response.statusCode === 200);
      });
      request.on("error", () => done(false));
    });
  }

  async #start(): Promise<void> {
    this.#starts += 1;
    const log = createWriteStream(join(this.dir, `node-${this.#starts}.log`));
    const listen = ["--listen", `127.0.0.1:${this.port}`];
    const args =
      this.orgs === undefined
        ? ["dev", "--dir", this.networkDir, ...listen, "--contracts", RUNNEL_CONTRACTS]
        : ["start", "--dir", this.networkDir, ...listen];
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
      if (exited !== undefined) {
        throw new Error(`runnel ${args[0]} ${exited}; see ${join(this.dir, `node-${this.#starts}.log`)}`);
      }
      try {
        if (await this.#healthy()) return;
      } catch {
        // not listening yet
      }
      await new Promise((done) => setTimeout(done, 100));
    }
    await this.stop();
    throw new Error(`runnel ${args[0]} did not answer ${this.url}/healthz within ${START_TIMEOUT_MS} ms`);
  }

  /** The network directory (identities/). */
  get networkDir(): string {
    return join(this.dir, "net");
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

  /** Stops the node and starts it again on the same data dir and port. */
  async restart(): Promise<void> {
    await this.stop();
    await this.#start();
  }
}

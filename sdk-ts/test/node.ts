/**
 * A real Runnel node for the tests of every TypeScript package (the SDK's Vitest suite and
 * the explorer's Playwright suite): a temp data dir, a free port on 127.0.0.1, ready once
 * /healthz answers, stopped by the test that started it (and killed if the test process
 * exits first). RUNNEL_BIN and RUNNEL_CONTRACTS (env) say where the binary and the example
 * contracts are; by default the repository's target/. It never imports the SDK, so each
 * suite talks to the node through the SDK build it tests.
 */

import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { createWriteStream, existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
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

/** The channel `runnel dev` serves. */
export const CHANNEL = "main";

/** How long a node may take to answer /healthz after it starts (compiling contracts on first start). */
const START_TIMEOUT_MS = 180_000;
/** How long a node may take to stop after SIGTERM before it is killed. */
const STOP_TIMEOUT_MS = 20_000;
/** How often a starting node's /healthz is asked. */
const HEALTH_POLL_MS = 100;

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

/** A key no other test uses. */
export function uniqueKey(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
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

/** Every `identities/<org>/ca.pem` of the network in `dir`, PEM, one after another. */
export function networkCaPem(dir: string): string {
  const identities = join(dir, "identities");
  return readdirSync(identities, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort()
    .map((org) => readFileSync(join(identities, org, "ca.pem"), "utf8"))
    .join("");
}

/**
 * Another network's identities (`runnel init` in a new temp dir, never started): its CAs
 * have the same names as any other network's, with keys of their own. Returns the dir.
 */
export function initNetwork(orgs: string[]): string {
  const dir = join(mkdtempSync(join(tmpdir(), "runnel-other-")), "net");
  run(["init", "--one-node", "--dir", dir, "--orgs", orgs.join(",")]);
  return dir;
}

/** Rewrites `dir`'s runnel.toml with `settings`, which must change something. */
function editSettings(dir: string, settings: (toml: string) => string): void {
  const file = join(dir, "runnel.toml");
  const before = readFileSync(file, "utf8");
  const after = settings(before);
  if (after === before) throw new Error("the settings changed nothing in runnel.toml");
  writeFileSync(file, after);
}

/** How to start a dev node. */
export interface DevNodeOptions {
  /** The data dir (the network is in its net/); a new temp dir by default. */
  readonly dir?: string;
  /** A built explorer (its index.html and assets) for the node to serve at `/` (`runnel dev --explorer`). */
  readonly explorer?: string;
}

/** A node on loopback: `runnel dev`, or a network from `runnel init` served by `runnel start`. */
export class RunnelNode {
  readonly dir: string;
  readonly port: number;
  readonly url: string;
  /** The organisations of a network from `runnel init`; undefined for a dev node. */
  readonly orgs: string[] | undefined;
  /** The explorer build a dev node serves; undefined when it serves none. */
  readonly explorer: string | undefined;
  #child: ChildProcess | undefined;
  #starts = 0;

  private constructor(dir: string, port: number, orgs?: string[], explorer?: string) {
    this.dir = dir;
    this.port = port;
    this.orgs = orgs;
    this.explorer = explorer;
    this.url = `${orgs === undefined ? "http" : "https"}://127.0.0.1:${port}`;
  }

  /** Starts a dev node (`runnel dev`, plain HTTP) on a free port. */
  static async start(options: DevNodeOptions = {}): Promise<RunnelNode> {
    if (options.explorer !== undefined && !existsSync(join(options.explorer, "index.html"))) {
      throw new Error(`no explorer build in ${options.explorer}: run \`npm run -w explorer build\` first`);
    }
    const dir = options.dir ?? mkdtempSync(join(tmpdir(), "runnel-test-"));
    const node = new RunnelNode(dir, await freePort(), undefined, options.explorer);
    await node.start();
    return node;
  }

  /**
   * Creates a network of `orgs` (`runnel init`, TLS on), changes its runnel.toml with
   * `settings` if given, and starts its node (`runnel start`).
   */
  static async startNetwork(orgs: string[], settings?: (toml: string) => string): Promise<RunnelNode> {
    const node = new RunnelNode(mkdtempSync(join(tmpdir(), "runnel-test-")), await freePort(), orgs);
    run(["init", "--one-node", "--dir", node.networkDir, "--orgs", orgs.join(",")]);
    if (settings !== undefined) editSettings(node.networkDir, settings);
    await node.start();
    return node;
  }

  /** The network directory (identities/). */
  get networkDir(): string {
    return join(this.dir, "net");
  }

  /**
   * The network's organisation CA certificates, PEM, one after another: every
   * `identities/<org>/ca.pem` (`runnel dev` and `runnel init` write them). What a seal or
   * inclusion check trusts.
   */
  get caPem(): string {
    return networkCaPem(this.networkDir);
  }

  /** The TLS CA of a network from `runnel init`, PEM. */
  get tlsCa(): string {
    return readFileSync(join(this.networkDir, "identities", this.orgs?.[0] ?? "Org1", "tls", "ca.pem"), "utf8");
  }

  /**
   * Starts the process (again, after {@link stop}) on the same port and data dir;
   * resolves once /healthz answers.
   */
  async start(): Promise<void> {
    this.#starts += 1;
    const logPath = join(this.dir, `node-${this.#starts}.log`);
    const log = createWriteStream(logPath);
    const listen = ["--listen", `127.0.0.1:${this.port}`];
    const explorer = this.explorer === undefined ? [] : ["--explorer", this.explorer];
    const args =
      this.orgs === undefined
        ? ["dev", "--dir", this.networkDir, ...listen, "--contracts", RUNNEL_CONTRACTS, ...explorer]
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
      if (exited !== undefined) throw new Error(`runnel ${args[0]} ${exited}; see ${logPath}`);
      try {
        if (await this.#healthy()) return;
      } catch {
        // not listening yet
      }
      await new Promise((done) => setTimeout(done, HEALTH_POLL_MS));
    }
    await this.stop();
    throw new Error(`runnel ${args[0]} did not answer ${this.url}/healthz within ${START_TIMEOUT_MS} ms; see ${logPath}`);
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

  /**
   * Stops the node, changes its runnel.toml with `settings` (which must change
   * something), and starts it again on the same data dir and port.
   */
  async reconfigure(settings: (toml: string) => string): Promise<void> {
    await this.stop();
    editSettings(this.networkDir, settings);
    await this.start();
  }

  /** Stops the node and starts it again on the same data dir and port. */
  async restart(): Promise<void> {
    await this.stop();
    await this.start();
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
}

/** `count` consecutive free TCP ports on 127.0.0.1: the first. */
export async function freePorts(count: number): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt += 1) {
    const base = await freePort();
    if (base + count > 65535) continue;
    const free = await Promise.all(
      Array.from({ length: count }, (_, i) => portFree(base + i)),
    );
    if (free.every(Boolean)) return base;
  }
  throw new Error(`no ${count} consecutive free ports`);
}

async function portFree(port: number): Promise<boolean> {
  return new Promise((done) => {
    const server = createServer();
    server.once("error", () => done(false));
    server.listen(port, "127.0.0.1", () => server.close(() => done(true)));
  });
}

const upNetworks = new Set<string>();
process.once("exit", () => {
  for (const dir of upNetworks) spawnSync(RUNNEL_BIN, ["down", "--dir", dir]);
});

/**
 * A network of organisations apart started by `runnel up`: an orderer and each
 * organisation's peers, each a process of its own holding only its organisation's keys,
 * the example contracts approved by every organisation (kv with every organisation's
 * peer in its policy). {@link RunnelUp.down} stops it (so does the test process's exit).
 */
export class RunnelUp {
  readonly dir: string;
  readonly basePort: number;

  private constructor(dir: string, basePort: number) {
    this.dir = dir;
    this.basePort = basePort;
  }

  /** Creates and starts a network of `orgs` organisations with `peersPerOrg` peers each. */
  static async start(orgs = 2, peersPerOrg = 1): Promise<RunnelUp> {
    const dir = join(mkdtempSync(join(tmpdir(), "runnel-up-")), "net");
    const basePort = await freePorts(1 + orgs * peersPerOrg);
    const network = new RunnelUp(dir, basePort);
    upNetworks.add(dir);
    const args = ["up", "--dir", dir, "--orgs", String(orgs), "--peers-per-org", String(peersPerOrg)];
    const result = spawnSync(
      RUNNEL_BIN,
      [...args, "--base-port", String(basePort), "--contracts", RUNNEL_CONTRACTS],
      { encoding: "utf8", env: { ...process.env, RUNNEL_LOG: "warn" } },
    );
    if (result.status !== 0) {
      network.down();
      throw new Error(`runnel up failed (${result.error?.message ?? result.status}): ${result.stderr}`);
    }
    return network;
  }

  /** The directory of organisation `org`'s people (its admin and client identities). */
  orgDir(org: string): string {
    return join(this.dir, org);
  }

  /** The API of `org`'s peer number `index`, from the network definition. */
  peerUrl(org: string, index = 0): string {
    const definition = JSON.parse(readFileSync(join(this.dir, "network.json"), "utf8")) as {
      orgs: { name: string; peers: { endpoint: string }[] }[];
    };
    const endpoint = definition.orgs.find((o) => o.name === org)?.peers[index]?.endpoint;
    if (endpoint === undefined) throw new Error(`no peer ${index} of ${org} in ${this.dir}`);
    return endpoint;
  }

  /** Stops one node, e.g. `"Org2/peer0"` (SIGTERM to the process `runnel up` started). */
  async stopNode(node: string): Promise<void> {
    const pid = Number(readFileSync(join(this.dir, node, "runnel.pid"), "utf8").trim());
    process.kill(pid, "SIGTERM");
    const deadline = Date.now() + STOP_TIMEOUT_MS;
    while (Date.now() < deadline && existsSync(`/proc/${pid}`)) {
      await new Promise((done) => setTimeout(done, 50));
    }
  }

  /** Stops every node (`runnel down`); their data stays. */
  down(): void {
    spawnSync(RUNNEL_BIN, ["down", "--dir", this.dir]);
    upNetworks.delete(this.dir);
  }
}

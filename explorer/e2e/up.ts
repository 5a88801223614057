/**
 * A network of organisations apart for the end-to-end tests, as `runnel up` makes one: an
 * orderer (orderer0.Org1) and a peer per organisation (peer0.Org1, peer0.Org2), each its
 * own process, on three consecutive free ports of 127.0.0.1 in a temp dir, every peer
 * serving the explorer's build over TLS. `runnel down` stops it; so does the test process
 * exiting first. RUNNEL_BIN and RUNNEL_CONTRACTS (env) say where the binary and the
 * example contracts are; by default the repository's target/, as for the dev node of the
 * other tests (sdk-ts/test/node.ts).
 */

import { execFile, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** The runnel binary. */
export const RUNNEL_BIN = process.env.RUNNEL_BIN ?? join(repo, "target", "debug", "runnel");
/** Where the example contracts' modules are. */
export const RUNNEL_CONTRACTS = process.env.RUNNEL_CONTRACTS ?? join(repo, "target", "wasm32-unknown-unknown", "contract");

/** The ports `runnel up` takes from its base port: the orderer's, then a peer per organisation. */
const PORTS_PER_NETWORK = 3;
/** How long `runnel up` may take: it creates the network, starts three processes and commits three contracts. */
const UP_TIMEOUT_MS = 180_000;
/** How long `runnel down` may take (each node waits at most 5 s for its connections). */
const DOWN_TIMEOUT_MS = 60_000;
/** How long a CLI call against a running network may take. */
const CLI_TIMEOUT_MS = 30_000;
/** Tries at a base port: another process may take a port between the check and `runnel up`. */
const UP_ATTEMPTS = 3;
/** Base ports tried per search for three consecutive free ones. */
const PORT_SEARCHES_MAX = 50;
/** Where base ports are picked: above the usual services, below the ephemeral range. */
const PORT_LOW = 20_000;
const PORT_HIGH = 32_000;

/** Networks up and not yet down: taken down if the test process exits first. */
const running = new Set<string>();
process.once("exit", () => {
  for (const dir of running) spawnSync(RUNNEL_BIN, ["down", "--dir", dir], { timeout: DOWN_TIMEOUT_MS });
});

/** Whether `port` of 127.0.0.1 can be listened on now. */
function portFree(port: number): Promise<boolean> {
  return new Promise((done) => {
    const server = createServer();
    server.once("error", () => done(false));
    server.listen(port, "127.0.0.1", () => server.close(() => done(true)));
  });
}

/** A base port whose next `count` ports (itself included) are free on 127.0.0.1. */
export async function consecutiveFreePorts(count: number): Promise<number> {
  for (let search = 0; search < PORT_SEARCHES_MAX; search += 1) {
    const base = PORT_LOW + Math.floor(Math.random() * (PORT_HIGH - PORT_LOW - count));
    let free = true;
    for (let port = base; port < base + count && free; port += 1) free = await portFree(port);
    if (free) return base;
  }
  throw new Error(`no ${count} consecutive free ports of 127.0.0.1 between ${PORT_LOW} and ${PORT_HIGH} after ${PORT_SEARCHES_MAX} tries`);
}

/** Runs `runnel` with `args`; resolves to its standard output, rejects with its output when it fails. */
function runnel(args: string[], timeoutMs: number): Promise<string> {
  return new Promise((done, fail) => {
    execFile(RUNNEL_BIN, args, { timeout: timeoutMs, maxBuffer: 4 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error === null) done(stdout);
      else fail(new Error(`runnel ${args.join(" ")} failed (${error.message}):\n${stdout}${stderr}`));
    });
  });
}

/** What `runnel invoke` prints (JSON). */
export interface Invoked {
  readonly tx_id: string;
  readonly code: string;
  readonly seq: number;
}

/** A network `runnel up` started; call `down()` when done with it. */
export class UpNetwork {
  /** The network's directory: one directory per organisation (`Org1/`, `Org2/`), each with its own keys. */
  readonly dir: string;
  /** The orderer's port; the peers listen on the ports after it. */
  readonly basePort: number;

  private constructor(dir: string, basePort: number) {
    this.dir = dir;
    this.basePort = basePort;
  }

  /**
   * Creates and starts a network of Org1 and Org2 in a new temp dir, its peers serving
   * `explorer` (a built explorer, absolute); resolves once its example contracts are
   * committed, which `runnel up` waits for.
   */
  static async up(explorer: string): Promise<UpNetwork> {
    if (!existsSync(join(explorer, "index.html"))) throw new Error(`no explorer build in ${explorer}: run \`npm run -w explorer build\` first`);
    const failures: string[] = [];
    for (let attempt = 0; attempt < UP_ATTEMPTS; attempt += 1) {
      const network = new UpNetwork(join(mkdtempSync(join(tmpdir(), "runnel-up-")), "net"), await consecutiveFreePorts(PORTS_PER_NETWORK));
      running.add(network.dir);
      try {
        await runnel(
          ["up", "--dir", network.dir, "--base-port", String(network.basePort), "--explorer", explorer, "--contracts", RUNNEL_CONTRACTS],
          UP_TIMEOUT_MS,
        );
        return network;
      } catch (error) {
        failures.push(describe(error));
        // Whatever it started before it failed.
        await network.down().catch((stopping: unknown) => failures.push(describe(stopping)));
      }
    }
    throw new Error(`runnel up failed ${UP_ATTEMPTS} times:\n${failures.join("\n")}`);
  }

  /** The API of organisation number `index` (1 for Org1)'s peer: `https://127.0.0.1:<base + index>`. */
  peerUrl(index: number): string {
    return `https://127.0.0.1:${this.basePort + index}`;
  }

  /** A file of `org`'s identities in its own directory: `client.pem`, `client.key`, ... */
  identityFile(org: string, file: string): string {
    return join(this.dir, org, "identities", org, file);
  }

  /** `runnel invoke` through Org1's peer, signed by Org1's client; waits for the commit. */
  async invoke(contract: string, fn: string, args: string[]): Promise<Invoked> {
    const output = await runnel(["invoke", "--url", this.peerUrl(1), "--dir", join(this.dir, "Org1"), "--org", "Org1", contract, fn, ...args], CLI_TIMEOUT_MS);
    return JSON.parse(output) as Invoked;
  }

  /** Stops every node (`runnel down`); their data stays in the temp dir. */
  async down(): Promise<void> {
    if (!running.delete(this.dir)) return;
    await runnel(["down", "--dir", this.dir], DOWN_TIMEOUT_MS);
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

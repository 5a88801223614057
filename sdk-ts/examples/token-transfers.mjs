// Token transfers with @runnel/sdk: an admin mints, a client transfers, a listener
// follows the Transfer events with a checkpoint file, and the failures show as the
// typed errors they are.
//
// Start a dev node (./scripts/dev.sh, or `runnel dev`), build the SDK
// (npm run -w sdk-ts build), then from the repository root:
//
//   node sdk-ts/examples/token-transfers.mjs
//
// RUNNEL_URL (default http://127.0.0.1:7051) and RUNNEL_DIR (default .runnel/dev, the
// network `runnel dev` made) say where the node and its identities are.

import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { checkpointers, CommitError, connect, EndorseError, loadNetworkIdentity } from "@runnel/sdk";

const text = (bytes) => JSON.parse(new TextDecoder().decode(bytes));

/**
 * Runs the example; returns what it saw, for the SDK's tests.
 * @param {{ url: string, dir: string, checkpointFile: string, log?: (line: string) => void }} options
 */
export async function main({ url, dir, checkpointFile, log = console.log }) {
  const admin = await loadNetworkIdentity(dir, "Org1", "admin");
  const client = await loadNetworkIdentity(dir, "Org1", "client");
  const adminGateway = connect({ url, ...admin });
  const clientGateway = connect({ url, ...client });
  try {
    return await run(adminGateway, clientGateway, checkpointFile, log);
  } finally {
    adminGateway.close();
    clientGateway.close();
  }
}

async function run(adminGateway, clientGateway, checkpointFile, log) {
  const channel = (await clientGateway.getQuery().getNetworkInfo()).channel;
  const asAdmin = adminGateway.getNetwork(channel).getContract("token");
  const asClient = clientGateway.getNetwork(channel).getContract("token");

  // Follow Transfer events from where the last run stopped (or from now).
  const checkpointer = await checkpointers.file(checkpointFile);
  const events = await clientGateway.getNetwork(channel).getContractEvents("token", { checkpoint: checkpointer });
  const me = text(await asClient.evaluateTransaction("whoami"));
  const bob = `${me}-bob`;
  log(`client account: ${me}`);

  // Mint to the client, then transfer to bob twice.
  await asAdmin.submitTransaction("mint", me, "100");
  const transfers = [];
  for (const amount of ["30", "20"]) {
    const submitted = await asClient.submitAsync("transfer", { arguments: [bob, amount] });
    const status = await submitted.getStatus();
    log(`transfer ${amount} to bob: ${status.codeName} at seq ${status.seq} (tx ${submitted.getTransactionId().slice(0, 12)}…)`);
    transfers.push(submitted.getTransactionId());
  }
  log(`balances: me ${text(await asClient.evaluateTransaction("balance", me))}, bob ${text(await asClient.evaluateTransaction("balance", bob))}`);

  // The contract's own error comes back as an EndorseError with its message.
  try {
    await asClient.submitTransaction("transfer", bob, "1000000");
  } catch (error) {
    if (!(error instanceof EndorseError)) throw error;
    log(`refused: ${error.nodeMessage}`);
  }

  // Two transfers endorsed on the same balance: the second is an MVCC conflict.
  const first = await (await asClient.newProposal("transfer", { arguments: [bob, "1"] })).endorse();
  const second = await (await asClient.newProposal("transfer", { arguments: [bob, "1"] })).endorse();
  await (await first.submit()).getStatus();
  const conflict = await (await second.submit()).getStatus();
  if (!conflict.successful) log(`second concurrent transfer: ${new CommitError(conflict).code}`);

  // The events of this run: a mint and three transfers, each checkpointed once processed.
  const seen = [];
  const iterator = events[Symbol.asyncIterator]();
  while (seen.length < 4) {
    const { value: event, done } = await iterator.next();
    if (done) break;
    const transfer = JSON.parse(event.payloadText);
    log(`event ${event.eventName}: ${transfer.from ?? "(mint)"} -> ${transfer.to}: ${transfer.amount}`);
    seen.push(event.transactionId);
    await checkpointer.checkpointEvent(event);
  }
  events.close();
  return { me, bob, transfers, events: seen };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  await main({
    url: process.env.RUNNEL_URL ?? "http://127.0.0.1:7051",
    dir: process.env.RUNNEL_DIR ?? ".runnel/dev",
    checkpointFile: process.env.RUNNEL_CHECKPOINT ?? join(tmpdir(), "runnel-token-transfers.checkpoint.json"),
  });
}

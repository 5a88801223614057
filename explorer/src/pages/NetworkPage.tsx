import type { NetworkDefinition } from "@runnel/sdk";
import type { JSX } from "preact";
import { LedgerText } from "../components/LedgerText";
import { OrgNodes } from "../components/OrgNodes";
import { useFeed, useLoad, useSnapshot, useThrottled } from "../live/hooks";
import { count } from "../model/format";
import { networkOrgs, servingHealth } from "../model/network";

/**
 * The least time between two reloads of the network definition, ms. It changes only with
 * a configuration update, which is a transaction: it is reloaded when the committed height
 * moves, at most this often. Health and heights come with the node's info, which the live
 * feed polls every second.
 */
const DEFINITION_RELOAD_MS = 2_000;

/**
 * The network as the node serving the explorer sees it: every organisation of the network
 * definition with its peers (their health and heights, live) and its orderers (named,
 * not checked); the definition's sequence and policies.
 */
export function NetworkPage(): JSX.Element {
  const feed = useFeed();
  const snapshot = useSnapshot();
  const { info } = snapshot;
  const committed = useThrottled(Number(info?.committedHeight ?? 0n), DEFINITION_RELOAD_MS);
  // Loaded again after a reconnection too: the node may have been given a new definition meanwhile.
  const definition = useLoad(() => feed.gateway.getQuery().getNetworkDefinition(), [snapshot.reconnects], committed);
  const here = {
    url: feed.url,
    health: servingHealth({
      live: snapshot.connection === "live",
      healthy: snapshot.health?.healthy,
      detail: snapshot.health?.detail,
      lastError: snapshot.lastError,
    }),
  };
  return (
    <>
      <h1>Network</h1>
      {definition.state === "loading" && <p aria-busy="true">Loading the network definition…</p>}
      {definition.state === "failed" && (
        <p class="error">
          <LedgerText text={definition.error} />
        </p>
      )}
      {definition.state === "ready" && (
        <>
          <DefinitionFacts definition={definition.value} ownOrgs={info?.ownOrgs ?? []} />
          <section aria-labelledby="orgs-heading">
            <h2 id="orgs-heading">Organisations and nodes</h2>
            <p class="muted">
              As this node sees them: it asks the other peers for their heights every two seconds; it does not check the orderers.
              {definition.value.orderers.length === 0 && " The network definition names no orderers (a dev node orders its own transactions)."}
            </p>
            {info === undefined ? (
              <p aria-busy="true">Waiting for the node's heights…</p>
            ) : (
              networkOrgs(definition.value, info, here).map((org) => <OrgNodes key={org.name} org={org} />)
            )}
          </section>
        </>
      )}
    </>
  );
}

/** The definition in force: channel, sequence, policies, and whom this node endorses for. */
function DefinitionFacts(props: { definition: NetworkDefinition; ownOrgs: readonly string[] }): JSX.Element {
  const { definition } = props;
  return (
    <dl class="facts" data-testid="network-definition">
      <dt>Channel</dt>
      <dd>
        <LedgerText text={definition.channel} />
      </dd>
      <dt>Definition sequence</dt>
      <dd>
        {count(definition.sequence)}{" "}
        <span class="muted">{definition.writtenAtSeq === 0n ? "(the genesis definition)" : `(written by the update at seq ${count(definition.writtenAtSeq)})`}</span>
      </dd>
      <dt>Lifecycle policy</dt>
      <dd>
        <code>
          <LedgerText text={definition.lifecyclePolicy} />
        </code>{" "}
        <span class="muted">whose approvals put a contract definition in force</span>
      </dd>
      <dt>Config policy</dt>
      <dd>
        <code>
          <LedgerText text={definition.configPolicy} />
        </code>{" "}
        <span class="muted">whose signatures change this definition</span>
      </dd>
      <dt>This node endorses for</dt>
      <dd>
        <LedgerText text={props.ownOrgs.join(", ") || "—"} />
      </dd>
    </dl>
  );
}

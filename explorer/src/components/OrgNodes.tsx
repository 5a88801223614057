import type { JSX } from "preact";
import { useId } from "preact/hooks";
import { count, plural } from "../model/format";
import type { NetworkOrg } from "../model/network";
import { markedText } from "../model/text";
import { LedgerText } from "./LedgerText";
import { NodeHealthBadge } from "./NodeHealthBadge";

/** An organisation of the network: its revoked certificates, and its peers and orderers with health and heights. */
export function OrgNodes(props: { org: NetworkOrg }): JSX.Element {
  const { org } = props;
  const headingId = useId();
  return (
    <section aria-labelledby={headingId}>
      <h3 id={headingId}>
        <LedgerText text={org.name} />
        {org.serving && <small class="muted"> · this node's organisation</small>}
        {!org.inDefinition && <small class="muted"> · not in the network definition</small>}
      </h3>
      {org.inDefinition && <p class="muted">{plural(org.revoked, "revoked certificate")}</p>}
      {org.nodes.length === 0 ? (
        <p class="muted">The network definition names no node of this organisation.</p>
      ) : (
        <div class="overflow-auto">
          <table class="nodes" aria-label={`Nodes of ${markedText(org.name)}`}>
            <thead>
              <tr>
                <th scope="col" class="c-node">
                  Node
                </th>
                <th scope="col" class="c-role">
                  Role
                </th>
                <th scope="col" class="c-endpoint">
                  Endpoint
                </th>
                <th scope="col">Health</th>
                <th scope="col" class="num c-height">
                  Committed
                </th>
                <th scope="col" class="num c-height">
                  Validated
                </th>
                <th scope="col" class="num c-height">
                  Ordered
                </th>
              </tr>
            </thead>
            <tbody>
              {org.nodes.map((node) => (
                <tr key={`${node.role} ${node.name}`} aria-current={node.serving ? "true" : undefined}>
                  <th scope="row">
                    <LedgerText text={node.name} />
                    {node.serving && node.inDefinition && <small class="muted"> (this node)</small>}
                    {!node.inDefinition && <small class="muted"> (not in the network definition)</small>}
                  </th>
                  <td>{node.role}</td>
                  <td>
                    <code class="wrap">
                      <LedgerText text={node.endpoint} />
                    </code>
                  </td>
                  <td>
                    <NodeHealthBadge health={node.health} />
                  </td>
                  <td class="num">{height(node.committedHeight)}</td>
                  <td class="num">{height(node.validatedHeight)}</td>
                  <td class="num">{height(node.orderedHeight)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

function height(value: bigint | undefined): string {
  return value === undefined ? "—" : count(value);
}

import type { NetworkInfo } from "@runnel/sdk";
import type { JSX } from "preact";
import type { NodeHealth } from "../live/feed";
import { count } from "../model/format";

/** The nodes the explorer watches and their health: heights, lag, /healthz. */
export function NodeTable(props: { url: string; info: NetworkInfo | undefined; health: NodeHealth | undefined; live: boolean }): JSX.Element {
  const { info, health } = props;
  const healthy = props.live && health?.healthy === true;
  return (
    <div class="overflow-auto">
    <table aria-label="Nodes">
      <thead>
        <tr>
          <th scope="col">Node</th>
          <th scope="col">Health</th>
          <th scope="col">Version</th>
          <th scope="col">Ordered</th>
          <th scope="col">Validated</th>
          <th scope="col">Committed</th>
          <th scope="col">Blocks</th>
        </tr>
      </thead>
      <tbody>
        <tr data-testid="node-row">
          <td>
            <code>{props.url}</code>
          </td>
          <td>
            <span class={`badge ${healthy ? "valid" : "invalid"}`} data-health={healthy ? "healthy" : "unhealthy"}>
              {healthy ? "● healthy" : `● ${props.live ? (health?.detail ?? "unknown") : "unreachable"}`}
            </span>
          </td>
          <td>{info?.nodeVersion ?? "—"}</td>
          <td class="num">{info ? count(info.orderedHeight) : "—"}</td>
          <td class="num">{info ? count(info.validatedHeight) : "—"}</td>
          <td class="num">{info ? count(info.committedHeight) : "—"}</td>
          <td class="num">{info ? count(info.blockHeight) : "—"}</td>
        </tr>
      </tbody>
    </table>
    </div>
  );
}

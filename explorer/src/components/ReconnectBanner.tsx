import type { JSX } from "preact";
import { useSnapshot } from "../live/hooks";

/**
 * Says when the node cannot be reached and the feed is retrying. The live region is
 * always in the page (screen readers announce changes to a region they already know);
 * it is empty while the connection is live.
 */
export function ReconnectBanner(): JSX.Element {
  const { connection, lastError, reconnects } = useSnapshot();
  const message =
    connection === "reconnecting"
      ? "Connection lost, reconnecting…"
      : connection === "connecting"
        ? "Connecting to the node…"
        : undefined;
  return (
    <div role="status" aria-live="polite" class="reconnect-region" data-connection={connection} data-reconnects={reconnects}>
      {message !== undefined && (
        <div class={`reconnect-banner ${connection}`}>
          <span class="spinner" aria-hidden="true" /> <strong>{message}</strong>
          {connection === "reconnecting" && lastError !== undefined && <small title={lastError}> {lastError}</small>}
        </div>
      )}
    </div>
  );
}

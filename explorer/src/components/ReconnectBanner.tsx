import type { JSX } from "preact";
import { useSnapshot } from "../live/hooks";
import { Link, paths } from "../router";

/**
 * Says when the node cannot be reached and the feed is retrying, or when it serves its
 * ledger to members only and the explorer has no identity it accepts. The live region is
 * always in the page (screen readers announce changes to a region they already know);
 * it is empty while the connection is live.
 */
export function ReconnectBanner(): JSX.Element {
  const { connection, lastError, readDenied, reconnects } = useSnapshot();
  if (readDenied !== undefined) {
    return (
      <div role="status" aria-live="polite" class="reconnect-region" data-connection={connection} data-reconnects={reconnects}>
        <div class="reconnect-banner identity-required" data-testid="identity-required" data-reason={readDenied}>
          <strong>
            {readDenied === "IDENTITY_REQUIRED"
              ? "This node serves its ledger to identities of the network only."
              : "This node refused the identity loaded here (or its read grant ended)."}
          </strong>{" "}
          <Link href={paths.settings()}>Load an identity in Settings</Link>
          {lastError !== undefined && <small title={lastError}> {lastError}</small>}
        </div>
      </div>
    );
  }
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

import { render } from "preact";
import { act } from "preact/test-utils";
import { afterEach, describe, expect, test } from "vitest";
import { ReconnectBanner } from "../src/components/ReconnectBanner";
import type { ConnectionState, FeedSnapshot, LiveFeed } from "../src/live/feed";
import { FeedContext } from "../src/live/hooks";

/** A feed whose connection state the test sets. */
class FakeFeed {
  #snapshot = { connection: "connecting", lastError: undefined, reconnects: 0 } as unknown as FeedSnapshot;
  readonly #listeners = new Set<(snapshot: FeedSnapshot) => void>();

  getSnapshot(): FeedSnapshot {
    return this.#snapshot;
  }

  subscribe(listener: (snapshot: FeedSnapshot) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  set(connection: ConnectionState, lastError?: string): void {
    this.#snapshot = { ...this.#snapshot, connection, lastError };
    for (const listener of this.#listeners) listener(this.#snapshot);
  }
}

let root: HTMLElement | undefined;
afterEach(() => {
  if (root !== undefined) render(null, root);
  root?.remove();
});

describe("ReconnectBanner", () => {
  test("an always-present status region that speaks up while the node is unreachable", () => {
    const feed = new FakeFeed();
    const host = document.createElement("div");
    root = host;
    document.body.append(host);
    act(() => {
      render(
        <FeedContext.Provider value={feed as unknown as LiveFeed}>
          <ReconnectBanner />
        </FeedContext.Provider>,
        host,
      );
    });
    const region = host.querySelector('[role="status"]');
    expect(region?.getAttribute("aria-live")).toBe("polite");
    expect(region?.textContent).toContain("Connecting to the node…");

    act(() => feed.set("live"));
    expect(region?.textContent).toBe("");
    expect(host.querySelector('[role="status"]')).toBe(region);

    act(() => feed.set("reconnecting", "cannot reach the node"));
    expect(region?.textContent).toContain("Connection lost, reconnecting…");
    expect(region?.textContent).toContain("cannot reach the node");

    act(() => feed.set("live"));
    expect(region?.textContent).toBe("");
  });
});

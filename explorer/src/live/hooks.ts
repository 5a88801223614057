/** How views reach the live feed: a context holding it and hooks over its snapshot. */

import { createContext } from "preact";
import { useContext, useEffect, useRef, useState } from "preact/hooks";
import type { FeedSnapshot, LiveFeed } from "./feed";

export const FeedContext = createContext<LiveFeed | undefined>(undefined);

/** The feed the app was given. */
export function useFeed(): LiveFeed {
  const feed = useContext(FeedContext);
  if (feed === undefined) throw new Error("useFeed outside a FeedContext provider");
  return feed;
}

/** The feed's snapshot; the view re-renders once per applied batch. */
export function useSnapshot(): FeedSnapshot {
  const feed = useFeed();
  const [snapshot, setSnapshot] = useState(() => feed.getSnapshot());
  useEffect(() => {
    setSnapshot(feed.getSnapshot());
    return feed.subscribe(setSnapshot);
  }, [feed]);
  return snapshot;
}

/** The state of a point query: loading, its value, or its error's message. */
export type Loaded<T> = { state: "loading" } | { state: "ready"; value: T } | { state: "failed"; error: string };

/**
 * Runs `load` when `deps` change, showing "loading" meanwhile; when only `refresh`
 * changes (new live data for the same thing) the old value stays until the new one
 * arrives. Results of superseded loads are dropped.
 */
export function useLoad<T>(load: () => Promise<T>, deps: readonly unknown[], refresh = 0): Loaded<T> {
  const [loaded, setLoaded] = useState<Loaded<T>>({ state: "loading" });
  const lastDeps = useRef<readonly unknown[] | undefined>(undefined);
  useEffect(() => {
    let current = true;
    const same = lastDeps.current !== undefined && lastDeps.current.length === deps.length && deps.every((d, i) => Object.is(d, lastDeps.current?.[i]));
    lastDeps.current = deps;
    if (!same) setLoaded({ state: "loading" });
    load().then(
      (value) => current && setLoaded({ state: "ready", value }),
      (error: unknown) => current && setLoaded({ state: "failed", error: error instanceof Error ? error.message : String(error) }),
    );
    return () => {
      current = false;
    };
  }, [...deps, refresh]);
  return loaded;
}

/** `value`, changing at most once per `ms`: the last value always lands, late by up to `ms`. */
export function useThrottled<T>(value: T, ms: number): T {
  const [shown, setShown] = useState(value);
  const last = useRef(0);
  useEffect(() => {
    const wait = last.current + ms - Date.now();
    if (wait <= 0) {
      last.current = Date.now();
      setShown(value);
      return;
    }
    const timer = setTimeout(() => {
      last.current = Date.now();
      setShown(value);
    }, wait);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return shown;
}

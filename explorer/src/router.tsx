/**
 * Real URLs for every page (the history API): the node serves index.html for any path
 * it does not know, and the explorer picks the page here.
 *
 * Matched here, not by a router library: eleven fixed patterns compare segment by segment,
 * and the pages read the match as a plain value (`Route`), where preact-iso or wouter
 * would bring their own components and history handling; `URLPattern` is not yet in every
 * browser.
 */

import type { ComponentChildren, JSX } from "preact";
import { useEffect, useState } from "preact/hooks";
import { hex, utf8Text } from "./model/format";

/** A page and the values its path carries. */
export interface Route {
  readonly page: PageName;
  readonly params: Readonly<Record<string, string>>;
  readonly query: URLSearchParams;
}

export type PageName =
  | "dashboard"
  | "blocks"
  | "block"
  | "transactions"
  | "transaction"
  | "contracts"
  | "contract"
  | "key"
  | "network"
  | "search"
  | "settings"
  | "not-found"
  | "bad-address";

const ROUTES: readonly (readonly [string, PageName])[] = [
  ["/", "dashboard"],
  ["/blocks", "blocks"],
  ["/blocks/:number", "block"],
  ["/transactions", "transactions"],
  ["/transactions/:id", "transaction"],
  ["/contracts", "contracts"],
  ["/contracts/:name", "contract"],
  ["/keys/:namespace/:key", "key"],
  ["/network", "network"],
  ["/search", "search"],
  ["/settings", "settings"],
];

/**
 * The route of a location's path and query. A path whose page is known but whose values
 * do not percent-decode (`/transactions/%zz`, `/keys/kv/%E0%A4%A`) is `bad-address`, with
 * the path as it came in `params.path`; one no page has is `not-found`.
 */
export function match(pathname: string, search = ""): Route {
  const query = new URLSearchParams(search);
  const parts = split(pathname);
  for (const [pattern, page] of ROUTES) {
    const want = split(pattern);
    if (want.length !== parts.length) continue;
    const raw: [string, string][] = [];
    const matched = want.every((segment, i) => {
      const part = parts[i] ?? "";
      if (segment.startsWith(":")) {
        raw.push([segment.slice(1), part]);
        return part.length > 0;
      }
      return segment === part;
    });
    if (!matched) continue;
    const params: Record<string, string> = {};
    for (const [name, part] of raw) {
      const value = decodeSegment(part);
      if (value === undefined) return { page: "bad-address", params: { path: pathname }, query };
      params[name] = value;
    }
    return { page, params, query };
  }
  return { page: "not-found", params: {}, query };
}

/** A path segment's text; `undefined` when its percent-encoding is malformed or not UTF-8. */
function decodeSegment(part: string): string | undefined {
  try {
    return decodeURIComponent(part);
  } catch {
    return undefined;
  }
}

function split(path: string): string[] {
  return path.split("/").filter((part) => part.length > 0);
}

/** Paths of the pages, so that links are never assembled by hand. */
export const paths = {
  dashboard: () => "/",
  blocks: () => "/blocks",
  block: (number: bigint | number) => `/blocks/${number}`,
  transactions: (filters: { contract?: string; status?: string } = {}) => {
    const query = new URLSearchParams();
    if (filters.contract) query.set("contract", filters.contract);
    if (filters.status) query.set("status", filters.status);
    const text = query.toString();
    return text ? `/transactions?${text}` : "/transactions";
  },
  transaction: (id: string) => `/transactions/${encodeURIComponent(id)}`,
  contracts: () => "/contracts",
  contract: (name: string) => `/contracts/${encodeURIComponent(name)}`,
  /**
   * A key's page, from its text or its exact bytes: UTF-8 bytes as their text
   * (percent-encoded, controls and all), others as hex with `?encoding=hex`.
   */
  key: (namespace: string, key: string | Uint8Array) => {
    const base = `/keys/${encodeURIComponent(namespace)}/`;
    if (typeof key === "string") return `${base}${encodeURIComponent(key)}`;
    const text = utf8Text(key);
    return text !== undefined ? `${base}${encodeURIComponent(text)}` : `${base}${hex(key)}?encoding=hex`;
  },
  network: () => "/network",
  search: (q: string) => `/search?q=${encodeURIComponent(q)}`,
  settings: () => "/settings",
};

const NAVIGATE = "runnel:navigate";

/** Goes to `to` without a reload. */
export function navigate(to: string, options: { replace?: boolean } = {}): void {
  if (options.replace) history.replaceState(null, "", to);
  else history.pushState(null, "", to);
  window.dispatchEvent(new Event(NAVIGATE));
  window.scrollTo(0, 0);
}

/** The current route; re-renders on navigation and on back/forward. */
export function useRoute(): Route {
  const [route, setRoute] = useState(() => match(location.pathname, location.search));
  useEffect(() => {
    const update = () => setRoute(match(location.pathname, location.search));
    window.addEventListener("popstate", update);
    window.addEventListener(NAVIGATE, update);
    return () => {
      window.removeEventListener("popstate", update);
      window.removeEventListener(NAVIGATE, update);
    };
  }, []);
  return route;
}

/** An anchor that navigates in-page (a plain link for new tabs and modified clicks). */
export function Link(props: { href: string; children: ComponentChildren } & Omit<JSX.HTMLAttributes<HTMLAnchorElement>, "href">): JSX.Element {
  const { href, children, ...rest } = props;
  const onClick = (event: MouseEvent) => {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(href);
  };
  return (
    <a href={href} onClick={onClick} {...rest}>
      {children}
    </a>
  );
}

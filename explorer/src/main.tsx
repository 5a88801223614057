/**
 * The explorer's entry: connects to the node that served the page (the Vite dev server
 * forwards the API to one, see vite.config.ts; or VITE_RUNNEL_URL at build time), starts
 * the live feed, reading as the identity given on the Settings page if any, and renders
 * the app.
 */

import "@picocss/pico/css/pico.min.css";
import "./styles.css";
import { render } from "preact";
import { App } from "./App";
import { applyTheme, initialTheme } from "./components/ThemeToggle";
import { LiveFeed } from "./live/feed";
import { FeedContext } from "./live/hooks";
import { readerFetch, readerGateway, savedReader } from "./live/reader";

applyTheme(initialTheme());

const nodeUrl: string = import.meta.env.VITE_RUNNEL_URL ?? location.origin;
// Reads as the identity loaded on the Settings page, if any (a node may serve members only).
const reader = savedReader();
const feed = new LiveFeed(readerGateway(nodeUrl, reader), { fetch: readerFetch(reader) });
feed.start();

const root = document.getElementById("app");
if (root === null) throw new Error("index.html has no #app element");
render(
  <FeedContext.Provider value={feed}>
    <App />
  </FeedContext.Provider>,
  root,
);

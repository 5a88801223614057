import type { JSX } from "preact";
import { useEffect } from "preact/hooks";
import { ReconnectBanner } from "./components/ReconnectBanner";
import { SearchBox } from "./components/SearchBox";
import { ThemeToggle } from "./components/ThemeToggle";
import { BadAddressPage } from "./pages/BadAddressPage";
import { BlockPage } from "./pages/BlockPage";
import { BlocksPage } from "./pages/BlocksPage";
import { ContractPage } from "./pages/ContractPage";
import { ContractsPage } from "./pages/ContractsPage";
import { DashboardPage } from "./pages/DashboardPage";
import { KeyPage } from "./pages/KeyPage";
import { NetworkPage } from "./pages/NetworkPage";
import { NotFoundPage } from "./pages/NotFoundPage";
import { SearchPage } from "./pages/SearchPage";
import { SettingsPage } from "./pages/SettingsPage";
import { TransactionPage } from "./pages/TransactionPage";
import { TransactionsPage } from "./pages/TransactionsPage";
import { Link, paths, useRoute, type PageName, type Route } from "./router";

const NAV: readonly (readonly [string, string, readonly PageName[]])[] = [
  ["Dashboard", paths.dashboard(), ["dashboard"]],
  ["Blocks", paths.blocks(), ["blocks", "block"]],
  ["Transactions", paths.transactions(), ["transactions", "transaction"]],
  ["Contracts", paths.contracts(), ["contracts", "contract", "key"]],
  ["Network", paths.network(), ["network"]],
];

const TITLES: Record<PageName, string> = {
  dashboard: "Dashboard",
  blocks: "Blocks",
  block: "Block",
  transactions: "Transactions",
  transaction: "Transaction",
  contracts: "Contracts",
  contract: "Contract",
  key: "Key",
  network: "Network",
  search: "Search",
  settings: "Settings",
  "not-found": "Not found",
  "bad-address": "Bad address",
};

/** The frame every page shares: header, navigation, search, theme, connection banner. */
export function App(): JSX.Element {
  const route = useRoute();
  useEffect(() => {
    document.title = `${TITLES[route.page]} · Runnel explorer`;
  }, [route.page]);
  return (
    <>
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <header class="container-fluid site-header">
        <nav aria-label="Main">
          <ul>
            <li>
              <Link href={paths.dashboard()} class="brand" aria-label="Runnel explorer, dashboard">
                <span aria-hidden="true">≈</span> Runnel
              </Link>
            </li>
            {NAV.map(([label, href, pages]) => (
              <li key={href}>
                <Link href={href} aria-current={pages.includes(route.page) ? "page" : undefined}>
                  {label}
                </Link>
              </li>
            ))}
          </ul>
          <ul>
            <li>
              <SearchBox />
            </li>
            <li>
              <Link href={paths.settings()} aria-current={route.page === "settings" ? "page" : undefined}>
                Settings
              </Link>
            </li>
            <li>
              <ThemeToggle />
            </li>
          </ul>
        </nav>
      </header>
      <ReconnectBanner />
      <main id="main" class="container-fluid" data-page={route.page}>
        <Page route={route} />
      </main>
    </>
  );
}

function Page(props: { route: Route }): JSX.Element {
  const { route } = props;
  const param = (name: string) => route.params[name] ?? "";
  switch (route.page) {
    case "dashboard":
      return <DashboardPage />;
    case "blocks":
      return <BlocksPage />;
    case "block":
      return <BlockPage number={param("number")} />;
    case "transactions":
      return <TransactionsPage route={route} />;
    case "transaction":
      return <TransactionPage id={param("id")} />;
    case "contracts":
      return <ContractsPage />;
    case "contract":
      return <ContractPage name={param("name")} />;
    case "key":
      return <KeyPage namespace={param("namespace")} keyName={param("key")} hex={route.query.get("encoding") === "hex"} />;
    case "network":
      return <NetworkPage />;
    case "search":
      return <SearchPage q={route.query.get("q") ?? ""} />;
    case "settings":
      return <SettingsPage />;
    case "not-found":
      return <NotFoundPage />;
    case "bad-address":
      return <BadAddressPage path={param("path")} />;
  }
}

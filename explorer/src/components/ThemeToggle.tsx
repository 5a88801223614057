import type { JSX } from "preact";
import { useState } from "preact/hooks";

export type Theme = "light" | "dark";

const STORAGE_KEY = "runnel-explorer-theme";

/** The theme the page starts in: the one chosen with the toggle before, else the system's. */
export function initialTheme(): Theme {
  const saved = localStorage.getItem(STORAGE_KEY);
  if (saved === "light" || saved === "dark") return saved;
  return matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
}

/** Sets the theme on the document (Pico reads `data-theme`); `remember` keeps it for the next visit. */
export function applyTheme(theme: Theme, options: { remember?: boolean } = {}): void {
  document.documentElement.dataset.theme = theme;
  document.documentElement.style.colorScheme = theme;
  if (options.remember) localStorage.setItem(STORAGE_KEY, theme);
  window.dispatchEvent(new Event("runnel:theme"));
}

/** Switches between light and dark, and remembers the choice. */
export function ThemeToggle(): JSX.Element {
  const [theme, setTheme] = useState<Theme>(() => (document.documentElement.dataset.theme === "dark" ? "dark" : "light"));
  const next: Theme = theme === "dark" ? "light" : "dark";
  const toggle = () => {
    applyTheme(next, { remember: true });
    setTheme(next);
  };
  return (
    <button type="button" class="outline secondary theme-toggle" onClick={toggle} aria-label={`Switch to ${next} theme`} title={`Switch to ${next} theme`}>
      {theme === "dark" ? "☀" : "☾"}
    </button>
  );
}

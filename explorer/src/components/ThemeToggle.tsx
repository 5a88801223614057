import type { JSX } from "preact";
import { useEffect, useState } from "preact/hooks";

export type Theme = "light" | "dark";

const STORAGE_KEY = "runnel-explorer-theme";

/** The theme the page starts in: the one chosen before, else the system's. */
export function initialTheme(): Theme {
  const saved = localStorage.getItem(STORAGE_KEY);
  if (saved === "light" || saved === "dark") return saved;
  return matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
}

/** Sets the theme on the document (Pico reads `data-theme`) and remembers it. */
export function applyTheme(theme: Theme): void {
  document.documentElement.dataset.theme = theme;
  document.documentElement.style.colorScheme = theme;
  localStorage.setItem(STORAGE_KEY, theme);
  window.dispatchEvent(new Event("runnel:theme"));
}

/** Switches between light and dark. */
export function ThemeToggle(): JSX.Element {
  const [theme, setTheme] = useState<Theme>(() => (document.documentElement.dataset.theme === "dark" ? "dark" : "light"));
  useEffect(() => applyTheme(theme), [theme]);
  const next: Theme = theme === "dark" ? "light" : "dark";
  return (
    <button type="button" class="outline secondary theme-toggle" onClick={() => setTheme(next)} aria-label={`Switch to ${next} theme`} title={`Switch to ${next} theme`}>
      {theme === "dark" ? "☀" : "☾"}
    </button>
  );
}

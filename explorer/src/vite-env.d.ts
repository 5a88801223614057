/// <reference types="vite/client" />

interface ImportMetaEnv {
  /** The node's URL when the explorer is not served by it (default: the page's origin). */
  readonly VITE_RUNNEL_URL?: string;
}

/** Components rendered into the test document, removed again after each test. */

import { type ComponentChild, render } from "preact";
import { act } from "preact/test-utils";
import { afterEach } from "vitest";

let root: HTMLElement | undefined;

/** Renders `node` into a fresh element of the document (effects run before it returns). */
export function mount(node: ComponentChild): HTMLElement {
  root = document.createElement("div");
  document.body.append(root);
  const into = root;
  act(() => render(node, into));
  return into;
}

afterEach(() => {
  if (root !== undefined) render(null, root);
  root?.remove();
  root = undefined;
});

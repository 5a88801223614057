import type { Trace } from "@runnel/sdk";
import { render } from "preact";
import { describe, expect, test } from "vitest";
import { TxWaterfall } from "../src/components/TxWaterfall";
import { VirtualList } from "../src/components/VirtualList";
import { mount } from "./mount";


describe("TxWaterfall", () => {
  test("one row per step with its duration, and bars placed on one time scale", () => {
    const t0 = 1_760_000_000_000_000n;
    const trace: Trace = {
      transactionId: "cd".repeat(32),
      stages: [
        { stage: "ENDORSE_START", atUs: t0 },
        { stage: "ENDORSE_END", atUs: t0 + 500n },
        { stage: "RECEIVED", atUs: t0 + 600n },
        { stage: "ORDERED", atUs: t0 + 620n },
        { stage: "VALIDATED", atUs: t0 + 1_000n },
        { stage: "COMMITTED", atUs: t0 + 2_000n },
      ],
    };
    const el = mount(<TxWaterfall trace={trace} />);
    const rows = [...el.querySelectorAll<HTMLTableRowElement>("tbody tr")];
    expect(rows.map((row) => row.dataset.step)).toEqual(["endorse", "order", "validate", "commit"]);
    expect(rows.map((row) => row.querySelector(".duration")?.textContent)).toEqual(["500 µs", "20 µs", "380 µs", "1.00 ms"]);
    const commitBar = rows[3]?.querySelector<HTMLElement>(".bar");
    expect(commitBar?.style.left).toBe("50%");
    expect(el.querySelector("[data-total-us]")?.textContent).toBe("2.00 ms");
  });
});

describe("VirtualList", () => {
  test("renders only the rows in view, and says how many there are", () => {
    const items = Array.from({ length: 10_000 }, (_, i) => i);
    const el = mount(
      <VirtualList label="Numbers" items={items} rowHeight={20} height={200} overscan={2} rowKey={(n) => String(n)} renderRow={(n) => <span role="cell">row {n}</span>} />,
    );
    const table = el.querySelector('[role="table"]');
    expect(table?.getAttribute("aria-rowcount")).toBe("10001");
    const rendered = el.querySelectorAll('.vspacer [role="row"]');
    expect(rendered.length).toBeLessThanOrEqual(14);
    expect(rendered[0]?.textContent).toBe("row 0");
  });

  test("shows the empty message with no items", () => {
    const el = mount(<VirtualList label="Nothing" items={[]} rowHeight={20} height={100} rowKey={String} renderRow={() => null} empty={<p>none yet</p>} />);
    expect(el.textContent).toContain("none yet");
  });
});

describe("VirtualList anchoring", () => {
  test("a reader scrolled down keeps their rows in place as new ones arrive on top", async () => {
    const list = (items: number[]) => (
      <VirtualList label="Numbers" items={items} rowHeight={20} height={200} rowKey={(n) => String(n)} renderRow={(n) => <span role="cell">row {n}</span>} />
    );
    const items = Array.from({ length: 100 }, (_, i) => 100 - i);
    const el = mount(list(items));
    const body = el.querySelector<HTMLElement>(".vbody");
    if (body === null) throw new Error("no body");
    body.scrollTop = 400;
    render(list([103, 102, 101, ...items]), el);
    expect(body.scrollTop).toBe(460);
  });

  test("at the top, the list follows the newest rows", () => {
    const list = (items: number[]) => (
      <VirtualList label="Numbers" items={items} rowHeight={20} height={200} rowKey={(n) => String(n)} renderRow={(n) => <span role="cell">row {n}</span>} />
    );
    const el = mount(list([2, 1]));
    render(list([3, 2, 1]), el);
    expect(el.querySelector<HTMLElement>(".vbody")?.scrollTop).toBe(0);
    expect(el.querySelector('.vspacer [role="row"]')?.textContent).toBe("row 3");
  });
});

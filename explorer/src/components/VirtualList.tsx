import type { ComponentChildren, JSX } from "preact";
import { useLayoutEffect, useRef, useState } from "preact/hooks";

/** Props of {@link VirtualList}. */
export interface VirtualListProps<T> {
  readonly items: readonly T[];
  /** Every row's height, px (fixed: what makes windowing O(visible rows)). */
  readonly rowHeight: number;
  /** The viewport's height, px. */
  readonly height: number;
  readonly rowKey: (item: T) => string;
  readonly renderRow: (item: T, index: number) => ComponentChildren;
  /** The header row, outside the scrolled area. */
  readonly header?: ComponentChildren;
  /** What the list is, for screen readers. */
  readonly label: string;
  /** Shown when there are no items. */
  readonly empty?: ComponentChildren;
  /** Rows rendered beyond each edge of the viewport. */
  readonly overscan?: number;
}

/**
 * A table whose rows are rendered only where they can be seen: thousands of rows cost
 * what the ~20 visible ones cost. ARIA table roles with row counts and indexes, so
 * assistive technology knows the whole table's size.
 */
export function VirtualList<T>(props: VirtualListProps<T>): JSX.Element {
  const { items, rowHeight, height, overscan = 6 } = props;
  const viewport = useRef<HTMLDivElement>(null);
  const [scrollTop, setScrollTop] = useState(0);
  useLayoutEffect(() => {
    const element = viewport.current;
    if (element === null) return;
    let frame = 0;
    const onScroll = () => {
      cancelAnimationFrame(frame);
      frame = requestAnimationFrame(() => setScrollTop(element.scrollTop));
    };
    element.addEventListener("scroll", onScroll, { passive: true });
    return () => {
      element.removeEventListener("scroll", onScroll);
      cancelAnimationFrame(frame);
    };
  }, []);
  // New rows arrive at the top. A reader scrolled down keeps the rows they look at in
  // place: the view moves down by the rows added above it.
  const previousFirstKey = useRef<string | undefined>(undefined);
  const firstItem = items[0];
  useLayoutEffect(() => {
    const element = viewport.current;
    const before = previousFirstKey.current;
    previousFirstKey.current = firstItem === undefined ? undefined : props.rowKey(firstItem);
    if (element === null || before === undefined || element.scrollTop === 0) return;
    const added = items.findIndex((item) => props.rowKey(item) === before);
    if (added > 0) {
      element.scrollTop += added * rowHeight;
      setScrollTop(element.scrollTop);
    }
  }, [firstItem]);
  const first = Math.max(0, Math.floor(scrollTop / rowHeight) - overscan);
  const last = Math.min(items.length, Math.ceil((scrollTop + height) / rowHeight) + overscan);
  const rows: JSX.Element[] = [];
  for (let index = first; index < last; index += 1) {
    const item = items[index];
    if (item === undefined) continue;
    rows.push(
      <div role="row" aria-rowindex={index + 2} class="vrow" key={props.rowKey(item)} style={{ transform: `translateY(${index * rowHeight}px)`, height: `${rowHeight}px` }}>
        {props.renderRow(item, index)}
      </div>,
    );
  }
  return (
    <div role="table" aria-label={props.label} aria-rowcount={items.length + 1} class="vtable">
      {props.header !== undefined && (
        <div role="rowgroup" class="vhead">
          <div role="row" aria-rowindex={1} class="vrow header">
            {props.header}
          </div>
        </div>
      )}
      <div ref={viewport} role="rowgroup" class="vbody" style={{ height: `${height}px` }} tabIndex={0}>
        {items.length === 0 && props.empty !== undefined ? (
          <div class="vempty">{props.empty}</div>
        ) : (
          <div class="vspacer" style={{ height: `${items.length * rowHeight}px` }}>
            {rows}
          </div>
        )}
      </div>
    </div>
  );
}

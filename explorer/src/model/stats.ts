/** Percentiles and per-second windows for the dashboard's charts. */

/** The `p`-quantile (0..1) of `values` by nearest rank; NaN for none. Sorts `values` in place. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  values.sort((a, b) => a - b);
  const rank = Math.min(values.length - 1, Math.max(0, Math.ceil(p * values.length) - 1));
  return values[rank] ?? Number.NaN;
}

/**
 * A fixed number of per-second points, oldest first: x (Unix seconds) and one column per
 * series. Pushing past the limit drops the oldest point, so memory stays bounded.
 */
export class Series {
  readonly x: number[] = [];
  readonly columns: number[][];
  readonly #points: number;

  constructor(seriesCount: number, points: number) {
    this.columns = Array.from({ length: seriesCount }, () => []);
    this.#points = points;
  }

  push(second: number, values: readonly number[]): void {
    this.x.push(second);
    this.columns.forEach((column, i) => column.push(values[i] ?? Number.NaN));
    if (this.x.length > this.#points) {
      this.x.shift();
      for (const column of this.columns) column.shift();
    }
  }

  /** uPlot's data layout: [x, ...series]. */
  data(): number[][] {
    return [this.x, ...this.columns];
  }
}

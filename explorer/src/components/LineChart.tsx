import type { JSX } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import type { Series } from "../model/stats";

/** The shortest span the x axis shows, so a young chart does not stretch its first points. */
const MIN_SPAN_SECONDS = 30;

/** One line of a chart. */
export interface Line {
  readonly label: string;
  readonly color: string;
  /** The column of the series it draws. */
  readonly column: number;
  readonly dash?: number[];
}

/** Props of {@link LineChart}. */
export interface LineChartProps {
  readonly title: string;
  readonly series: Series;
  readonly lines: readonly Line[];
  /** Formats a y value for the axis and legend. */
  readonly format: (value: number) => string;
  readonly height?: number;
  /** How many seconds the x axis spans; default 120. */
  readonly windowSeconds?: number;
  /** The y axis reaches at least this high, so an idle chart has sensible ticks. */
  readonly yMin?: number;
  /** Changes whenever the series gained a point (uPlot redraws only then). */
  readonly version: number;
}

/**
 * A live time chart drawn by uPlot on a canvas: redrawing a few hundred points once a
 * second costs well under a millisecond. The accessible name is the title; the legend
 * carries the latest values as text.
 */
export function LineChart(props: LineChartProps): JSX.Element {
  const container = useRef<HTMLDivElement>(null);
  const chart = useRef<uPlot | undefined>(undefined);
  const [theme, setTheme] = useState(document.documentElement.dataset.theme ?? "light");
  useEffect(() => {
    const update = () => setTheme(document.documentElement.dataset.theme ?? "light");
    window.addEventListener("runnel:theme", update);
    return () => window.removeEventListener("runnel:theme", update);
  }, []);
  useEffect(() => {
    const element = container.current;
    if (element === null) return;
    const style = getComputedStyle(document.documentElement);
    const ink = style.getPropertyValue("--pico-muted-color").trim() || "#888";
    const grid = style.getPropertyValue("--pico-muted-border-color").trim() || "#ddd";
    const axis = { stroke: ink, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
    const options: uPlot.Options = {
      width: Math.max(240, element.clientWidth),
      height: props.height ?? 200,
      // A window ending at the newest point: the last `windowSeconds` at most, MIN_SPAN_SECONDS at least.
      scales: { x: { time: true, range: (_u, min, max) => [Math.min(max - MIN_SPAN_SECONDS, Math.max(min, max - (props.windowSeconds ?? 120))), max] }, y: { range: (_u, _min, max) => [0, Math.max(props.yMin ?? 1, Number.isFinite(max) ? max * 1.1 : 0)] } },
      axes: [axis, { ...axis, values: (_u, values) => values.map(props.format), size: 70 }],
      series: [{}, ...props.lines.map((line) => ({ label: line.label, stroke: line.color, width: 2, dash: line.dash, spanGaps: true, points: { show: true, size: 3 }, value: (_u: uPlot, v: number | null) => (v === null || Number.isNaN(v) ? "—" : props.format(v)) }))],
      legend: { live: false },
    };
    const plot = new uPlot(options, data(props), element);
    chart.current = plot;
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(240, element.clientWidth), height: props.height ?? 200 }));
    resize.observe(element);
    return () => {
      resize.disconnect();
      plot.destroy();
      chart.current = undefined;
    };
    // The chart is rebuilt for a new theme or new lines; data changes go through setData below.
  }, [theme, props.lines]);
  useEffect(() => {
    chart.current?.setData(data(props));
  }, [props.version]);
  return (
    <figure class="chart">
      <figcaption>{props.title}</figcaption>
      <div ref={container} role="img" aria-label={props.title} />
    </figure>
  );
}

function data(props: LineChartProps): uPlot.AlignedData {
  const columns = props.series.data();
  const x = columns[0] ?? [];
  return [x, ...props.lines.map((line) => columns[line.column + 1] ?? [])];
}

// A result table drawn as a chart with ECharts (only the parts used are bundled, loaded on
// the first chart).

import { useEffect, useRef, useState } from "react";
import type { ResultTable } from "./api";
import { cardValue, chartOption, ChartKind, Visualization } from "./chart";

let loading: Promise<typeof import("echarts/core")> | undefined;

/** ECharts with the charts and components Trawl draws with, registered once. */
export function loadCharts() {
  loading ??= (async () => {
    const [core, charts, components, renderers] = await Promise.all([
      import("echarts/core"),
      import("echarts/charts"),
      import("echarts/components"),
      import("echarts/renderers"),
    ]);
    core.use([
      charts.LineChart,
      charts.BarChart,
      charts.PieChart,
      charts.ScatterChart,
      components.GridComponent,
      components.TooltipComponent,
      components.LegendComponent,
      components.TitleComponent,
      components.DataZoomComponent,
      components.BrushComponent,
      components.ToolboxComponent,
      renderers.CanvasRenderer,
    ]);
    return core;
  })();
  return loading;
}

export function Chart({ table, kind, visualization }: { table: ResultTable; kind: ChartKind; visualization: Visualization }) {
  const host = useRef<HTMLDivElement>(null);
  const [problem, setProblem] = useState<string>();
  useEffect(() => {
    if (kind === "card") return;
    const option = chartOption(table, kind, visualization);
    if (typeof option === "string") {
      setProblem(option);
      return;
    }
    setProblem(undefined);
    let disposed = false;
    let chart: ReturnType<typeof import("echarts/core").init> | undefined;
    const resize = () => chart?.resize();
    loadCharts().then((echarts) => {
      if (disposed || !host.current) return;
      chart = echarts.init(host.current);
      chart.setOption(option);
      host.current.dataset.series = String((option.series as unknown[]).length);
      window.addEventListener("resize", resize);
    });
    return () => {
      disposed = true;
      window.removeEventListener("resize", resize);
      chart?.dispose();
    };
  }, [table, kind, visualization]);

  if (kind === "card") {
    const card = cardValue(table, visualization);
    if (typeof card === "string") return <div className="chart-problem">{card}</div>;
    return (
      <div className="card" data-testid="card">
        <div className="card-label">{card.label}</div>
        <div className="card-value">{card.value}</div>
      </div>
    );
  }
  if (problem) return <div className="chart-problem" role="alert">Cannot draw this {kind}: {problem}</div>;
  return <div className="chart" ref={host} data-testid="chart" data-kind={kind} />;
}

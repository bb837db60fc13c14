"""The Grafana dashboard's picture on real data: real streams scraped by a real Prometheus, and every panel of
docs/assets/grafana/kafka-spark-dashboard.json drawn from its own PromQL, laid out as the dashboard's grid.

    apt-get install -y prometheus                              # the server binary only; its service is not used
    .venv/bin/python bench/dashboard_screenshot.py             # 4 minutes of records -> the docs' PNG
    .venv/bin/python bench/dashboard_screenshot.py --minutes 2 --out /tmp/dashboard.png

What runs, all on 127.0.0.1 with free ports and temporary directories, and all stopped at the end:

1. a local broker (`kafka_spark.local.start_kafka`) with two topics, `orders` and `clicks`;
2. a `kafka-spark stream` per topic (sink ids `orders` and `clicks`), each into a Delta table of its own, JSON
   values parsed by `--value-schema` and the ones that do not parse sent to `--dead-letter`, serving
   `--metrics-port`, each compacting its table after every `--compact-every` commits; both have had a first
   commit before the clock starts;
3. Prometheus (`prometheus` on PATH) scraping both endpoints every `--scrape` seconds;
4. a producer thread: orders swinging around 150 records/s and paused upstream from 55% to 75% of the run (the
   table's time since its last commit climbs); clicks ramping from 60 to 220 records/s, with a burst at 40%
   (the lag climbs, then drains under `--max-offsets-per-trigger`) and, from 20% to 30%, one value in 40 that
   is not JSON (dead letters; each such micro-batch is written again by Spark's writer: a retry).

Two streams rather than one routed stream: a routed micro-batch reports no commit time per table (its
tables' `seconds` are 0), which would leave the commit-seconds panel empty of meaning.

Then every panel's expressions are run with Prometheus' `query_range` over the run, with Grafana's values for
its variables: `$sink` and `$table` are "All" (the variables' allValue `.*`), `$__rate_interval` is
max(step + scrape interval, 4 x scrape interval) with the step equal to the scrape interval (as Grafana sets it
for a data source whose scrape interval matches and a range this short), `$__range` the run's length.
Grafana itself is not run: the drawing (matplotlib) mimics its dark theme, stat panels and time series.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display: write the PNG only
import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch
from matplotlib.ticker import FuncFormatter, MaxNLocator
from prometheus_client.parser import text_string_to_metric_families

from kafka_spark.client import Producer
from kafka_spark.local import start_kafka

REPO = Path(__file__).resolve().parent.parent
DASHBOARD = REPO / "docs/assets/grafana/kafka-spark-dashboard.json"
OUT = REPO / "docs/assets/grafana/kafka-spark-dashboard.png"
TOPICS = {"orders": 3, "clicks": 3}  # topic -> partitions; each has a stream (a sink) and a table of its own
SCHEMA = "n BIGINT, kind STRING, amount DOUBLE"
# Grafana's dark theme and its classic palette, so the picture reads like the dashboard would.
BACKGROUND, PANEL, BORDER, TEXT, MUTED, GRIDLINE = "#111217", "#181b1f", "#2c3235", "#ccccdc", "#8e8e8e", "#2c3235"
PALETTE = ["#7eb26d", "#eab839", "#6ed0e0", "#ef843c", "#e24d42", "#1f78c1", "#ba43a9", "#705da0", "#508642"]
COLORS = {"green": "#73bf69", "orange": "#ff9830", "red": "#f2495c", "yellow": "#fade2a"}
# Grafana's grid: 24 columns; a row unit is 30 px plus an 8 px margin.
WIDTH_PX, UNIT_PX, MARGIN_PX, HEADER_PX, FOOTER_PX = 1500, 30, 8, 44, 22


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get_json(url: str, timeout: float = 10.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.loads(response.read())


def wait_for(check: Any, what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, ValueError):
            if check():
                return
        time.sleep(1)
    raise SystemExit(f"{what} did not come up within {timeout:.0f}s")


class Feeder:
    """Produces the three topics' records on a schedule (records per second as a function of the run's
    fraction elapsed), so each panel has something to show."""

    def __init__(self, bootstrap: str, seconds: float, burst: int) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": "all"})
        self.seconds, self.burst, self.sent = seconds, burst, dict.fromkeys(TOPICS, 0)
        self.stop = threading.Event()
        self.rng = random.Random(52)
        self.thread = threading.Thread(target=self._run, name="feeder", daemon=True)

    @staticmethod
    def rate(topic: str, fraction: float) -> float:
        if topic == "orders":  # a swing, and an upstream pause from 55% to 75% of the run
            return 0 if 0.55 <= fraction < 0.75 else 150 + 50 * math.sin(fraction * 2 * math.pi)
        return 60 + 160 * fraction  # clicks: ramping up

    def _value(self, topic: str, n: int, fraction: float) -> bytes:
        if topic == "clicks" and 0.2 <= fraction < 0.3 and n % 40 == 0:
            return b"{not json"  # a bad upstream release for a while: these land in the dead-letter table
        return json.dumps({"n": n, "kind": topic, "amount": round(self.rng.uniform(1, 500), 2)}).encode()

    def _send(self, topic: str, count: int, fraction: float) -> None:
        for _ in range(count):
            n = self.sent[topic]
            self.producer.send(topic, self._value(topic, n, fraction), key=str(n % 97).encode())
            self.sent[topic] = n + 1

    def _run(self) -> None:
        started, burst_done, owed = time.monotonic(), False, dict.fromkeys(TOPICS, 0.0)
        while not self.stop.is_set():
            fraction = (time.monotonic() - started) / self.seconds
            if fraction >= 1:
                break
            for topic in TOPICS:
                owed[topic] += self.rate(topic, fraction) * 0.2
                whole = int(owed[topic])
                owed[topic] -= whole
                self._send(topic, whole, fraction)
            if not burst_done and fraction >= 0.4:
                self._send("clicks", self.burst, fraction)  # a backfill upstream: the lag climbs, then drains
                burst_done = True
            self.stop.wait(0.2)
        self.producer.flush(60)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=120)
        self.producer.close()


def prometheus_config(path: Path, metrics_ports: list[int], scrape: int) -> None:
    targets = ", ".join(f'"127.0.0.1:{port}"' for port in metrics_ports)
    path.write_text(f"""global:
  scrape_interval: {scrape}s
  evaluation_interval: {scrape}s
scrape_configs:
  - job_name: kafka-spark
    static_configs:
      - targets: [{targets}]
""")


def query_range(base: str, expr: str, start: float, end: float, step: int) -> list[dict[str, Any]]:
    query = urllib.parse.urlencode({"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": step})
    answer = get_json(f"{base}/api/v1/query_range?{query}", timeout=30)
    if answer.get("status") != "success":
        raise SystemExit(f"Prometheus refused {expr!r}: {answer}")
    return list(answer["data"]["result"])


def expand(expr: str, values: dict[str, str]) -> str:
    """The expression as Grafana sends it: each `$name` / `${name}` replaced by the variable's value."""
    return re.sub(r"\$\{?(\w+)\}?", lambda m: values.get(m.group(1), m.group(0)), expr)


def legend(fmt: str, labels: dict[str, str]) -> str:
    return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: labels.get(m.group(1), ""), fmt) or json.dumps(labels)


def fetch_panels(dashboard: dict[str, Any], base: str, start: float, end: float,
                 scrape: int) -> dict[int, list[tuple[str, list[float], list[float]]]]:
    """Each panel's series (legend, times, values) from its targets' expressions."""
    step = scrape
    values = {"sink": ".*", "table": ".*", "__rate_interval": f"{max(step + scrape, 4 * scrape)}s",
              "__range": f"{int(end - start)}s", "__interval": f"{step}s"}
    found: dict[int, list[tuple[str, list[float], list[float]]]] = {}
    for panel in dashboard["panels"]:
        series = found.setdefault(panel["id"], [])
        for target in panel["targets"]:
            for result in query_range(base, expand(target["expr"], values), start, end, step):
                points = [(float(t), float(v)) for t, v in result["values"] if not math.isnan(float(v))]
                series.append((legend(target.get("legendFormat", ""), result["metric"]),
                               [t for t, _ in points], [v for _, v in points]))
    return found


def fmt_value(value: float, unit: str, decimals: int | None = None) -> str:
    """A value in the panel's unit, roughly as Grafana prints it."""
    if math.isnan(value):
        return "No data"
    if unit == "s":
        magnitude = abs(value)
        if magnitude and magnitude < 1:
            return f"{value * 1000:.0f} ms"
        if magnitude < 60:
            return f"{value:.2g} s" if magnitude < 10 else f"{value:.0f} s"
        return f"{value / 60:.1f} min" if magnitude < 3600 else f"{value / 3600:.1f} hour"
    steps = (" B/s", " kB/s", " MB/s", " GB/s") if unit == "Bps" else ("", " K", " Mil", " Bil")  # both SI
    index = 0
    while abs(value) >= 1000 and index < len(steps) - 1:
        value, index = value / 1000, index + 1
    if decimals is not None:
        return f"{value:.{decimals}f}{steps[index]}"
    text = f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"
    return f"{text}{steps[index]}"


def threshold_color(panel: dict[str, Any], value: float) -> str:
    steps = panel["fieldConfig"]["defaults"].get("thresholds", {}).get("steps", [])
    color = "green"
    for step in steps:
        if step["value"] is None or value >= step["value"]:
            color = step["color"]
    return COLORS.get(color, color)


class Layout:
    """Figure coordinates of the dashboard's grid."""

    def __init__(self, panels: list[dict[str, Any]]) -> None:
        rows = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in panels)
        self.height_px = HEADER_PX + rows * (UNIT_PX + MARGIN_PX) + FOOTER_PX
        self.column_px = (WIDTH_PX - MARGIN_PX) / 24

    def box(self, grid: dict[str, int]) -> tuple[float, float, float, float]:
        """(left, bottom, width, height) as fractions of the figure."""
        left = MARGIN_PX + grid["x"] * self.column_px
        top = HEADER_PX + grid["y"] * (UNIT_PX + MARGIN_PX)
        width = grid["w"] * self.column_px - MARGIN_PX
        height = grid["h"] * (UNIT_PX + MARGIN_PX) - MARGIN_PX
        return (left / WIDTH_PX, 1 - (top + height) / self.height_px, width / WIDTH_PX, height / self.height_px)


def frame(fig: Figure, box: tuple[float, float, float, float], title: str) -> None:
    left, bottom, width, height = box
    fig.patches.append(FancyBboxPatch((left, bottom), width, height, boxstyle="round,pad=0,rounding_size=0.003",
                                      transform=fig.transFigure, facecolor=PANEL, edgecolor=BORDER, linewidth=0.8,
                                      zorder=-10))  # under the panel's axes
    fig.text(left + 0.006, bottom + height - 0.006, title, color=TEXT, fontsize=9.5, fontweight="bold", va="top")


def draw_stat(fig: Figure, panel: dict[str, Any], box: tuple[float, float, float, float],
              series: list[tuple[str, list[float], list[float]]], span: tuple[float, float]) -> None:
    left, bottom, width, height = box
    unit = panel["fieldConfig"]["defaults"].get("unit", "short")
    last = series[0][2][-1] if series and series[0][2] else float("nan")
    color = threshold_color(panel, last) if not math.isnan(last) else MUTED
    if series and series[0][1]:
        ax = fig.add_axes((left + 0.002, bottom + 0.002, width - 0.004, height * 0.4))
        ax.fill_between(series[0][1], series[0][2], color=color, alpha=0.18, linewidth=0)
        ax.plot(series[0][1], series[0][2], color=color, linewidth=1, alpha=0.7)
        ax.set_xlim(*span)
        ax.set_ylim(bottom=min(0.0, min(series[0][2])))
        ax.axis("off")
    decimals = panel["fieldConfig"]["defaults"].get("decimals")
    fig.text(left + width / 2, bottom + height * 0.55, fmt_value(last, unit, decimals), color=color,
             fontsize=22, fontweight="bold", ha="center", va="center")


def time_axis(ax: Axes, span: tuple[float, float]) -> None:
    ax.set_xlim(*span)
    ax.xaxis.set_major_locator(MaxNLocator(6))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda t, _: time.strftime("%H:%M:%S", time.gmtime(t))))


def draw_series(fig: Figure, panel: dict[str, Any], box: tuple[float, float, float, float],
                series: list[tuple[str, list[float], list[float]]], span: tuple[float, float]) -> None:
    left, bottom, width, height = box
    defaults = panel["fieldConfig"]["defaults"]
    unit = defaults.get("unit", "short")
    rows = math.ceil(len(series) / 3) if series else 1
    fig_px = float(fig.get_figheight() * fig.dpi)
    legend_h = (rows * 15 + 6) / fig_px
    ax = fig.add_axes((left + width * 0.075, bottom + legend_h + 0.022, width * 0.91,
                       height - legend_h - 0.022 - 0.03))
    ax.set_facecolor(PANEL)
    for i, (name, times, values) in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        ax.plot(times, values, color=color, linewidth=1.2, label=name)
        ax.fill_between(times, values, color=color, alpha=defaults.get("custom", {}).get("fillOpacity", 0) / 100,
                        linewidth=0)
    time_axis(ax, span)
    if defaults.get("min") is not None:
        ax.set_ylim(bottom=defaults["min"])
    if not series:
        ax.text(0.5, 0.5, "No data", color=MUTED, ha="center", va="center", transform=ax.transAxes)
        ax.set_ylim(0, 1)
    ax.yaxis.set_major_locator(MaxNLocator(4))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt_value(v, unit)))
    ax.tick_params(colors=MUTED, labelsize=7.5, length=0)
    ax.grid(color=GRIDLINE, linewidth=0.6)
    for side in ax.spines.values():
        side.set_visible(False)
    for i, (name, _, _) in enumerate(series):
        row, column = divmod(i, 3)
        x = left + 0.008 + column * (width - 0.01) / 3
        y = bottom + legend_h - 0.004 - row * 15 / fig_px
        fig.text(x, y, "\u2014", color=PALETTE[i % len(PALETTE)], fontsize=9, fontweight="bold", va="top")
        fig.text(x + 0.012, y, shorten(name, 44), color=TEXT, fontsize=7.5, va="top")


def shorten(text: str, most: int) -> str:
    return text if len(text) <= most else "\u2026" + text[-(most - 1):]


def render(dashboard: dict[str, Any], found: dict[int, list[tuple[str, list[float], list[float]]]],
           span: tuple[float, float], out: Path, note: str) -> None:
    layout = Layout(dashboard["panels"])
    dpi = 100
    fig = plt.figure(figsize=(WIDTH_PX / dpi, layout.height_px / dpi), dpi=dpi, facecolor=BACKGROUND)
    fig.text(MARGIN_PX / WIDTH_PX, 1 - 14 / layout.height_px, dashboard["title"], color=TEXT, fontsize=14,
             va="top", fontweight="bold")
    variables = "   ".join(f"{v.get('label', v['name'])}: {'All' if v.get('includeAll') else 'Prometheus'}"
                           for v in dashboard["templating"]["list"])
    fig.text(0.2, 1 - 17 / layout.height_px, variables, color=MUTED, fontsize=9, va="top")
    fig.text(1 - MARGIN_PX / WIDTH_PX, 6 / layout.height_px, note, color=MUTED, fontsize=8, ha="right")
    for panel in dashboard["panels"]:
        box = layout.box(panel["gridPos"])
        frame(fig, box, panel["title"])
        draw = draw_stat if panel["type"] == "stat" else draw_series
        draw(fig, panel, box, found.get(panel["id"], []), span)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=dpi, facecolor=BACKGROUND)
    plt.close(fig)


def rows_committed(port: int) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    return sum(sample.value for family in text_string_to_metric_families(text) for sample in family.samples
               if sample.name == "kafka_spark_rows_total")


def warm_up(bootstrap: str, ports: dict[str, int]) -> None:
    """One record per topic, and a wait until each stream has committed it: the run's clock starts with every
    stream past Spark's start-up and first micro-batch, so the picture shows the streams at work."""
    with contextlib.closing(Producer({"bootstrap.servers": bootstrap})) as producer:
        for topic in ports:
            producer.send(topic, json.dumps({"n": -1, "kind": "warm-up", "amount": 0}).encode())
        producer.flush(60)
    for topic, port in ports.items():
        wait_for(lambda p=port: rows_committed(p) >= 1, f"the {topic} stream's first commit", 300)


def start_stream(stack: contextlib.ExitStack, work: Path, bootstrap: str, topic: str, port: int,
                 args: argparse.Namespace) -> subprocess.Popen[bytes]:
    """`kafka-spark stream` of one topic into its table, serving its metrics; stopped (SIGTERM) by `stack`."""
    out = stack.enter_context((work / f"{topic}.out").open("w"))
    err = stack.enter_context((work / f"{topic}.err").open("w"))
    stream = subprocess.Popen(
        [str(Path(sys.executable).parent / "kafka-spark"), "stream", "-b", bootstrap, "--topic", topic,
         "--table", topic, "--dead-letter", f"dead-letters/{topic}", "--value-schema", SCHEMA, "--sink-id", topic,
         "--trigger", f"{args.trigger}s", "--max-offsets-per-trigger", str(args.max_offsets),
         "--compact-every", str(args.compact_every), "--metrics-port", str(port), "--json"],
        cwd=work, stdout=out, stderr=err)

    def stop() -> None:
        if stream.poll() is None:
            stream.send_signal(signal.SIGTERM)
            try:
                stream.wait(timeout=120)
            except subprocess.TimeoutExpired:
                stream.kill()
                stream.wait()

    stack.callback(stop)
    return stream


def start_prometheus(stack: contextlib.ExitStack, work: Path, metrics_ports: list[int], scrape: int) -> str:
    """Prometheus scraping the streams, on a free loopback port with its data in `work`; stopped by `stack`.
    Returns its base URL once it is ready."""
    prometheus_config(work / "prometheus.yml", metrics_ports, scrape)
    port = free_port()
    log = stack.enter_context((work / "prometheus.log").open("w"))
    prometheus = subprocess.Popen(
        ["prometheus", f"--config.file={work / 'prometheus.yml'}", f"--storage.tsdb.path={work / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{port}"], stdout=subprocess.DEVNULL, stderr=log)

    def stop() -> None:
        prometheus.terminate()
        try:
            prometheus.wait(timeout=30)
        except subprocess.TimeoutExpired:
            prometheus.kill()
            prometheus.wait()

    stack.callback(stop)
    base = f"http://127.0.0.1:{port}"
    wait_for(lambda: urllib.request.urlopen(f"{base}/-/ready", timeout=2).status == 200, "Prometheus", 60)
    return base


def run(args: argparse.Namespace, work: Path) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    seconds = args.minutes * 60
    with contextlib.ExitStack() as stack:
        node = stack.enter_context(start_kafka(secure=False, heap="512m"))
        for topic, partitions in TOPICS.items():
            node.create_topic(topic, partitions=partitions)
        ports = {topic: free_port() for topic in TOPICS}
        streams = {topic: start_stream(stack, work, node.bootstrap, topic, ports[topic], args) for topic in TOPICS}
        base = start_prometheus(stack, work, list(ports.values()), args.scrape)
        for topic, port in ports.items():
            wait_for(lambda p=port: urllib.request.urlopen(f"http://127.0.0.1:{p}/metrics", timeout=2).status == 200,
                     f"the {topic} stream's metrics endpoint", 300)
        warm_up(node.bootstrap, ports)
        print(f"streams committing, metrics on {ports}; Prometheus at {base}", flush=True)
        began = time.time()
        start = began + 10  # the picture begins past the first commits after the warm-up record
        feeder = Feeder(node.bootstrap, seconds, args.burst)
        feeder.thread.start()
        stack.callback(feeder.close)
        while feeder.thread.is_alive():
            feeder.thread.join(timeout=30)
            for topic, stream in streams.items():
                if stream.poll() is not None:
                    raise SystemExit(f"the {topic} stream stopped: {(work / f'{topic}.err').read_text()[-2000:]}")
            print(f"{(time.time() - began) / 60:4.1f} min: {feeder.sent} sent", flush=True)
        time.sleep(args.tail)  # the last micro-batch lands and is scraped
        end = time.time()
        found = fetch_panels(dashboard, base, start, end, args.scrape)
        empty = [p["title"] for p in dashboard["panels"] if not found.get(p["id"])]
        print(f"panels without data: {empty}", flush=True)
        for topic in TOPICS:
            lines = [json.loads(line) for line in (work / f"{topic}.out").read_text().splitlines()
                     if line.startswith("{")]
            print(f"{topic}: {len(lines)} micro-batches, seconds "
                  f"{[b.get('seconds') for b in lines if 'micro_batch' in b]}", flush=True)
        version = subprocess.run(["prometheus", "--version"], capture_output=True, text=True).stdout.split()[2]
        note = (f"rendered from the dashboard's PromQL on Prometheus {version}, scraping `kafka-spark stream` "
                f"every {args.scrape}s; {sum(feeder.sent.values()):,} records over {args.minutes:g} min")
        render(dashboard, found, (start, end), args.out, note)
    print(f"wrote {args.out} ({args.out.stat().st_size // 1024} KiB)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=4.0, help="how long records are produced")
    parser.add_argument("--scrape", type=int, default=5, help="Prometheus' scrape interval in seconds")
    parser.add_argument("--trigger", type=int, default=5, help="the stream's trigger in seconds")
    parser.add_argument("--burst", type=int, default=12000, help="records of the clicks burst")
    parser.add_argument("--max-offsets", type=int, default=3000, help="--max-offsets-per-trigger of the stream")
    parser.add_argument("--compact-every", type=int, default=6,
                        help="--compact-every of the streams (the data-file and compaction panels)")
    parser.add_argument("--tail", type=float, default=6.0, help="seconds to keep scraping after the producer")
    parser.add_argument("--out", type=Path, default=OUT, help="the PNG to write")
    args = parser.parse_args(argv)
    if shutil.which("prometheus") is None:
        parser.error("needs `prometheus` on PATH (Debian: apt-get install prometheus)")
    work = Path(tempfile.mkdtemp(prefix="lake-"))  # short: the tables' paths are the legends
    try:
        run(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

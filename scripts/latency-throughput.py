#!/usr/bin/env python3
# Draws latency-throughput.svg from a bench-sweep.sh output directory (no dependencies).
#   python3 scripts/latency-throughput.py OUT-DIR
# Latency against throughput: kv-insert at 1..64 clients, one line per ordering mode.
import json, math, pathlib, sys
out = pathlib.Path(sys.argv[1])
lines = {}
for mode in ("streaming", "blocks10", "blocks100"):
    pts = []
    for clients in (1, 4, 16, 64):
        path = out / f"{mode}-kv-insert-c{clients}" / "summary.json"
        if path.exists():
            s = json.loads(path.read_text())
            p50 = s["latency_us"]["submit_to_durable"]["p50"]
            if p50:
                pts.append((s["transactions"]["committed_per_second"], p50 / 1000))
    lines[mode] = pts
W, H, L, B = 640, 400, 70, 50
xmax = max([x for pts in lines.values() for x, _ in pts] + [1]) * 1.1
ymin, ymax = 0.1, 10000.0
def px(x): return L + (W - L - 20) * x / xmax
def py(y):
    span = math.log10(ymax) - math.log10(ymin)
    return H - B - (H - B - 20) * (math.log10(max(y, ymin)) - math.log10(ymin)) / span
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
       f'<rect width="{W}" height="{H}" fill="white"/>',
       f'<text x="{W/2}" y="{H-12}" text-anchor="middle">committed tx/s (kv-insert, 1, 4, 16, 64 clients)</text>',
       f'<text x="16" y="{H/2}" transform="rotate(-90 16 {H/2})" text-anchor="middle">p50 submit to durable, ms (log)</text>']
for y in (0.1, 1, 10, 100, 1000, 10000):
    svg.append(f'<line x1="{L}" x2="{W-20}" y1="{py(y):.1f}" y2="{py(y):.1f}" stroke="#ddd"/>')
    svg.append(f'<text x="{L-6}" y="{py(y)+4:.1f}" text-anchor="end">{y:g}</text>')
for i in range(6):
    x = xmax * i / 5
    svg.append(f'<text x="{px(x):.1f}" y="{H-B+16}" text-anchor="middle">{x:.0f}</text>')
colors = {"streaming": "#1f77b4", "blocks10": "#d62728", "blocks100": "#ff7f0e"}
names = {"streaming": "streaming", "blocks10": "blocks (10, 2 s)", "blocks100": "blocks (100, 2 s)"}
for i, (mode, pts) in enumerate(lines.items()):
    if not pts:
        continue
    path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
    svg.append(f'<polyline points="{path}" fill="none" stroke="{colors[mode]}" stroke-width="2"/>')
    for x, y in pts:
        svg.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{colors[mode]}"/>')
    svg.append(f'<text x="{L+10}" y="{24+16*i}" fill="{colors[mode]}">{names[mode]}</text>')
svg.append("</svg>")
(out / "latency-throughput.svg").write_text("\n".join(svg))
print(f"wrote {out / 'latency-throughput.svg'}")

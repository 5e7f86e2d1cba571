"""Draws the loss curve of a training_log.jsonl (written by train.py) as SVG:
training loss per step (and its 20-step mean), validation loss per split.

  /usr/bin/python3 examples/train/plot_loss.py examples/kjv-devil-tiny/training_log.jsonl \
      examples/kjv-devil-tiny/loss_curve.svg
"""
import argparse
import json
import math

WIDTH, HEIGHT = 760, 420
LEFT, RIGHT, TOP, BOTTOM = 60, 210, 30, 50
VALIDATION_COLORS = {"bible": "#c0392b", "devil": "#27ae60", "chat": "#8e44ad"}


def read_log(path):
    train, validation = [], {}
    with open(path) as f:
        for line in f:
            record = json.loads(line)
            if "train_loss" in record:
                train.append((record["step"], record["train_loss"]))
            for kind, loss in record.get("validation_loss", {}).items():
                validation.setdefault(kind, []).append((record["step"], loss))
    if not train:
        raise SystemExit(f"{path}: no training steps logged")
    return train, validation


def polyline(points, x, y, color, width, opacity=1.0):
    coords = " ".join(f"{x(s):.1f},{y(v):.1f}" for s, v in points)
    return f'<polyline fill="none" stroke="{color}" stroke-width="{width}" stroke-opacity="{opacity}" points="{coords}"/>'


def svg(train, validation):
    steps = train[-1][0]
    values = [v for _, v in train] + [v for pts in validation.values() for _, v in pts]
    low, high = math.floor(min(values)), math.ceil(max(values))
    x = lambda s: LEFT + (WIDTH - LEFT - RIGHT) * s / steps
    y = lambda v: TOP + (HEIGHT - TOP - BOTTOM) * (high - v) / (high - low)
    mean = [(train[i][0], sum(v for _, v in train[max(0, i - 19):i + 1]) / len(train[max(0, i - 19):i + 1]))
            for i in range(len(train))]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>']
    for v in range(low, high + 1):
        out.append(f'<line x1="{LEFT}" x2="{x(steps):.1f}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 8}" y="{y(v) + 4:.1f}" text-anchor="end">{v}</text>')
    tick = max(1, int(round(steps / 6, -2)) or steps // 6)  # about six round-numbered ticks
    for s in range(0, steps + 1, tick):
        out.append(f'<line x1="{x(s):.1f}" x2="{x(s):.1f}" y1="{TOP}" y2="{y(low):.1f}" stroke="#eee"/>')
        out.append(f'<text x="{x(s):.1f}" y="{y(low) + 18:.1f}" text-anchor="middle">{s}</text>')
    out.append(f'<text x="{(LEFT + x(steps)) / 2:.1f}" y="{HEIGHT - 10}" text-anchor="middle">step</text>')
    out.append(f'<text x="16" y="{(TOP + y(low)) / 2:.1f}" text-anchor="middle" '
               f'transform="rotate(-90 16 {(TOP + y(low)) / 2:.1f})">cross-entropy (nats/token)</text>')
    out.append(polyline(train, x, y, "#3498db", 1, 0.35))
    out.append(polyline(mean, x, y, "#1f4e79", 2))
    legend = [("#3498db", "train (per step)"), ("#1f4e79", "train (20-step mean)")]
    for kind, points in validation.items():
        color = VALIDATION_COLORS.get(kind, "black")
        out.append(polyline(points, x, y, color, 1.5))
        out += [f'<circle cx="{x(s):.1f}" cy="{y(v):.1f}" r="3" fill="{color}"/>' for s, v in points]
        legend.append((color, f"validation: {kind}"))
    for i, (color, label) in enumerate(legend):
        ly = TOP + 10 + 20 * i
        out.append(f'<line x1="{WIDTH - RIGHT + 15}" x2="{WIDTH - RIGHT + 35}" y1="{ly}" y2="{ly}" '
                   f'stroke="{color}" stroke-width="2"/>')
        out.append(f'<text x="{WIDTH - RIGHT + 40}" y="{ly + 4}">{label}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("log")
    p.add_argument("svg")
    a = p.parse_args()
    train, validation = read_log(a.log)
    with open(a.svg, "w") as f:
        f.write(svg(train, validation))


if __name__ == "__main__":
    main()

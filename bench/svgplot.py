"""Minimal SVG line charts for the benchmark reports (no plotting library needed).

    panels = [("title", {"series name": [(x, y), ...], ...}), ...]
    write_svg(path, panels, xlabel, ylabel, log_y=False)
"""
import math

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f"]
DASHES = ["", "6,3", "2,2", "8,3,2,3"]


def _ticks(lo, hi, log):
    if log:
        a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
        return [10 ** e for e in range(a, b + 1)]
    step = 10 ** math.floor(math.log10((hi - lo) or 1))
    while (hi - lo) / step > 6:
        step *= 2
    t = math.floor(lo / step) * step
    out = []
    while t <= hi + 1e-12:
        out.append(t)
        t += step
    return out


def write_svg(path, panels, xlabel, ylabel, log_y=False, styles=None):
    pw, ph, ml, mb, mt = 300, 230, 60, 45, 30
    width = ml + len(panels) * (pw + 20) + 150
    height = mt + ph + mb
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>']
    names = []
    for _, series in panels:
        for n in series:
            if n not in names:
                names.append(n)
    for i, (title, series) in enumerate(panels):
        x0 = ml + i * (pw + 20)
        pts = [p for s in series.values() for p in s if p[1] is not None and (p[1] > 0 or not log_y)]
        if not pts:
            continue
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        xlo, xhi = min(xs), max(xs)
        ylo, yhi = (min(ys) / 1.5, max(ys) * 1.5) if log_y else (0, max(ys) * 1.1)

        def X(v):
            return x0 + (v - xlo) / ((xhi - xlo) or 1) * pw

        def Y(v):
            if log_y:
                return mt + ph - (math.log10(v) - math.log10(ylo)) / (math.log10(yhi) - math.log10(ylo)) * ph
            return mt + ph - (v - ylo) / ((yhi - ylo) or 1) * ph

        out.append(f'<rect x="{x0}" y="{mt}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>')
        out.append(f'<text x="{x0 + pw / 2}" y="{mt - 8}" text-anchor="middle">{title}</text>')
        for t in _ticks(ylo, yhi, log_y):
            if ylo <= t <= yhi:
                out.append(f'<line x1="{x0}" x2="{x0 + pw}" y1="{Y(t):.1f}" y2="{Y(t):.1f}" stroke="#ddd"/>')
                if i == 0:
                    out.append(f'<text x="{x0 - 4}" y="{Y(t) + 4:.1f}" text-anchor="end">{t:g}</text>')
        for v in sorted(set(xs)):
            out.append(f'<text x="{X(v):.1f}" y="{mt + ph + 14}" text-anchor="middle">{v:g}</text>')
        out.append(f'<text x="{x0 + pw / 2}" y="{mt + ph + 32}" text-anchor="middle">{xlabel}</text>')
        for n, s in series.items():
            k = names.index(n)
            color, dash = (styles or {}).get(n, (COLORS[k % len(COLORS)], ""))
            p = [(X(a), Y(b)) for a, b in sorted(s) if b is not None and (b > 0 or not log_y)]
            if len(p) > 1:
                d = " ".join(f"{a:.1f},{b:.1f}" for a, b in p)
                out.append(f'<polyline points="{d}" fill="none" stroke="{color}" stroke-width="1.8" '
                           f'stroke-dasharray="{dash}"/>')
            for a, b in p:
                out.append(f'<circle cx="{a:.1f}" cy="{b:.1f}" r="2.5" fill="{color}"/>')
    out.append(f'<text x="14" y="{mt + ph / 2}" transform="rotate(-90 14 {mt + ph / 2})" '
               f'text-anchor="middle">{ylabel}</text>')
    lx = ml + len(panels) * (pw + 20) + 5
    for k, n in enumerate(names):
        color, dash = (styles or {}).get(n, (COLORS[k % len(COLORS)], ""))
        y = mt + 10 + k * 16
        out.append(f'<line x1="{lx}" x2="{lx + 24}" y1="{y}" y2="{y}" stroke="{color}" '
                   f'stroke-width="2" stroke-dasharray="{dash}"/>')
        out.append(f'<text x="{lx + 30}" y="{y + 4}">{n}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")

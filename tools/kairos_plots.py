"""Plots for Kairos's reports and benchmarks, drawn by matplotlib (kairos report, bench/).

    fig = line_panels([("title", {"series": [(x, y), ...], ...}), ...], "x label", "y label")
    save(fig, "out.svg")            # or .png, by the name
    png_data_uri(fig)               # for a self-contained HTML page
    bars(title, {"group": {"bar": value, ...}, ...}, ylabel)

matplotlib is imported on first use, with a clear message when it is missing.
"""
import base64
import importlib.util
import io
import sys

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
          "#7f7f7f"]
_plt = None


def _missing():
    sys.stderr.write(
        "kairos: error: the plots are drawn with matplotlib, which this Python ("
        f"{sys.executable}) lacks: install it (apt install python3-matplotlib, or "
        "python3 -m pip install matplotlib)\n")
    sys.exit(2)


def require():
    """Exit 2 with what to do if matplotlib is not installed, without importing it (half a
    second: an input error is reported at once, and the import waits for the drawing)."""
    if importlib.util.find_spec("matplotlib") is None:
        _missing()


def pyplot():
    """matplotlib.pyplot on the Agg backend (no display needed); exit 2 without it."""
    global _plt
    if _plt is None:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            _missing()
        # (a page draws all its figures before it encodes them: a report of several runs
        # opens more than matplotlib's default warning count of 20)
        plt.rcParams["figure.max_open_warning"] = 0
        _plt = plt
    return _plt


def line_panels(panels, xlabel, ylabel, log_y=False, styles=None, width=6.4):
    """One row of line-chart panels sharing the y label; styles maps a series name to
    (colour, dash pattern "5,3" or "")."""
    plt = pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(width * len(panels), 4.2),
                             squeeze=False)
    for ax, (title, series) in zip(axes[0], panels):
        for i, (name, points) in enumerate(series.items()):
            colour, dash = (styles or {}).get(name, (COLORS[i % len(COLORS)], ""))
            xs = [p[0] for p in points]
            ys = [p[1] for p in points]
            ls = (0, tuple(float(d) for d in dash.split(","))) if dash else "-"
            ax.plot(xs, ys, color=colour, linestyle=ls, marker="o", markersize=3, label=name)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        if log_y:
            ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
        if series:
            ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def bars(title, groups, ylabel, log_y=False):
    """Grouped bars: groups maps a group name (x) to {bar name: value}."""
    plt = pyplot()
    names = []
    for g in groups.values():
        names += [n for n in g if n not in names]
    fig, ax = plt.subplots(figsize=(min(12.8, max(6.4, 0.6 * len(groups) * max(1, len(names)))),
                                    4.2))
    width = 0.8 / max(1, len(names))
    for i, n in enumerate(names):
        xs = [k + (i - (len(names) - 1) / 2) * width for k in range(len(groups))]
        ax.bar(xs, [g.get(n, 0) for g in groups.values()], width, label=n,
               color=COLORS[i % len(COLORS)])
    ax.set_xticks(range(len(groups)))
    many = len(groups) > 4  # (long names side by side overlap: slant them)
    ax.set_xticklabels(list(groups), fontsize=8, rotation=20 if many else 0,
                       ha="right" if many else "center")
    ax.set_title(title, fontsize=10)
    ax.set_ylabel(ylabel)
    if log_y:
        ax.set_yscale("log")
    ax.grid(True, axis="y", alpha=0.3)
    if len(names) > 1:
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def save(fig, path):
    fig.savefig(path, dpi=110)
    pyplot().close(fig)


def png_data_uri(fig):
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=96)
    pyplot().close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")

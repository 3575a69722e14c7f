"""Inline SVG plots for the HTML report: no scripts, no fonts or images to load.

Every series gets a colour AND a dash pattern (and a marker shape on request), so a
plot printed in greyscale still tells its curves apart. Text is escaped here, once."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from html import escape

from rtgauge.analysis.run.histograms import PLOT_BUCKETS_PER_DECADE, rebin_log, step_points

COLOURS = ("#1b5e20", "#0d47a1", "#b71c1c", "#e65100", "#4a148c", "#006064", "#3e2723", "#263238")
DASHES = ("", "6 3", "2 2", "8 3 2 3", "12 4", "4 2 1 2")
MARKERS = ("circle", "square", "triangle", "diamond")


def style(i: int) -> tuple[str, str]:
    return COLOURS[i % len(COLOURS)], DASHES[i % len(DASHES)]


# Every plot is drawn twice: a wide variant (its legend in the right margin, about 620 user
# units, two side by side on a 1280 px screen) and a narrow one (NARROW units, the legend
# in rows below the plot) that the page's style sheet shows below NARROW_BELOW px of
# viewport (page.py), so a phone draws the plot at about its own size and its text
# stays about 11 px instead of shrinking with a wide drawing.
NARROW = 340
NARROW_BELOW = 600


def responsive(wide: str, narrow: str) -> str:
    """The two variants of one plot; the style sheet shows one of them."""
    return f"<span class='pw'>{wide}</span><span class='pn'>{narrow}</span>"


def nice_step(span: float, target: int = 5, integer: bool = False) -> float:
    raw = span / max(target, 1)
    if raw <= 0:
        return 1.0
    mag = 10 ** math.floor(math.log10(raw))
    for m in ((1, 2, 5, 10) if integer and mag >= 1 else (1, 2, 2.5, 5, 10)):
        if m * mag >= raw:
            step = m * mag
            return max(step, 1.0) if integer else step
    return 10 * mag


def fmt_tick(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 1e6:
        return f"{v / 1e6:g}M"
    if abs(v) >= 1e4:
        return f"{v / 1e3:g}k"
    return f"{v:g}"


def wrap(text: str, width: int) -> list[str]:
    """Words into lines of at most width characters (a longer word stays whole)."""
    lines: list[str] = []
    for word in text.split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines or [""]


@dataclass
class Axis:
    label: str
    log: bool = False
    lo: float | None = None
    hi: float | None = None
    integer: bool = False        # counts: ticks only at whole numbers

    def bounds(self, values: list[float]) -> tuple[float, float]:
        vals = [v for v in values if v is not None and (v > 0 or not self.log)]
        if not vals:
            vals = [1.0]
        lo = self.lo if self.lo is not None else min(vals)
        hi = self.hi if self.hi is not None else max(vals)
        if self.log:
            lo = 10 ** math.floor(math.log10(lo))
            hi = 10 ** math.ceil(math.log10(hi * 1.0001))
            if hi <= lo:
                hi = lo * 10
        else:
            if self.lo is None:
                lo = min(lo, 0.0)
            if hi <= lo:
                hi = lo + 1
            step = nice_step(hi - lo, integer=self.integer)
            hi = math.ceil(hi / step) * step
        return lo, hi

    def ticks(self, lo: float, hi: float, target: int = 5) -> list[tuple[float, str, bool]]:
        """(value, label, major) pairs; on an integer axis no label below 1."""
        if self.log:
            out = []
            for e in range(round(math.log10(lo)), round(math.log10(hi)) + 1):
                v = 10.0 ** e
                out.append((v, fmt_tick(v) if v >= 1 or not self.integer else "", True))
                if hi / lo <= 1e4:
                    out += [(m * v, "", False) for m in (2, 5) if m * v < hi]
            return out
        step = nice_step(hi - lo, target, self.integer)
        n = int(math.floor((hi - lo) / step + 1e-9))
        return [(lo + i * step, fmt_tick(round(lo + i * step, 10)), True) for i in range(n + 1)]


@dataclass
class Series:
    label: str
    points: list[tuple[float, float]]
    steps: bool = False          # draw as a histogram step line (x = bucket lower edges, +width)
    width: float | None = None   # bucket width factor for steps on a log axis
    markers: bool = False
    gap: float | None = None     # x distance beyond which two neighbours are not joined (no data between)


def segments(points: list[tuple[float, float]], gap: float | None) -> list[list[tuple[float, float]]]:
    """The points split where neighbours lie more than gap apart: a line across a stretch
    with no data would draw values nobody measured."""
    out: list[list[tuple[float, float]]] = []
    for p in points:
        if out and (gap is None or p[0] - out[-1][-1][0] <= gap):
            out[-1].append(p)
        else:
            out.append([p])
    return out


@dataclass
class Frame:
    """Where a plot's parts go: the plot area from (L, T) to (W - R, H - B), the title's
    lines, and the legend (right margin of a wide plot; rows from legend_top below a
    narrow one)."""
    W: int
    H: int
    L: int
    R: int
    T: int
    B: int
    narrow: bool
    title: list[str]
    legend_top: int = 0

    @classmethod
    def make(cls, title: str, width: int, height: int, narrow: bool, legend_n: int) -> "Frame":
        if not narrow:
            return cls(width, height, 64, 150, 30, 44, False, [title])
        lines = wrap(title, (NARROW - 10) // 7)          # a bold 13 px character is about 7 px
        T = 14 + 16 * len(lines)
        area = max(height - 30 - 44, 150)                # the wide plot area's height
        bottom = T + area + 44                            # the x axis and its label end here
        rows = (legend_n + 1) // 2
        H = bottom + 16 * rows + (6 if rows else 0)
        return cls(NARROW, H, 52, 14, T, H - T - area, True, lines, bottom)

    def head(self, title: str) -> list[str]:
        cx = (self.L + self.W - self.R) / 2 if not self.narrow else self.W / 2
        return ([f"<svg class='plot' width='{self.W}' height='{self.H}' viewBox='0 0 {self.W} {self.H}' "
                 f"role='img' aria-label='{escape(title)}'>", f"<title>{escape(title)}</title>"]
                + [f"<text x='{cx:.0f}' y='{18 + 16 * k}' text-anchor='middle' font-weight='bold' font-size='13'>"
                   f"{escape(line)}</text>" for k, line in enumerate(self.title)])

    def axes(self, x: Axis, x0: float, x1: float, tx, y: Axis, y0: float, y1: float, ty) -> list[str]:
        L, R, T, B, W, H = self.L, self.R, self.T, self.B, self.W, self.H
        out = []
        for v, label, major in x.ticks(x0, x1, 4 if self.narrow else 5):
            X = tx(v)
            if major:
                out.append(f"<line x1='{X:.1f}' y1='{T}' x2='{X:.1f}' y2='{H - B}' stroke='#eee'/>")
            out.append(f"<line x1='{X:.1f}' y1='{H - B}' x2='{X:.1f}' y2='{H - B + (5 if major else 3)}' stroke='#000'/>")
            if label:
                out.append(f"<text x='{X:.1f}' y='{H - B + 16}' text-anchor='middle' font-size='11'>{label}</text>")
        for v, label, major in y.ticks(y0, y1, 4 if self.narrow else 5):
            Y = ty(v)
            if major:
                out.append(f"<line x1='{L}' y1='{Y:.1f}' x2='{W - R}' y2='{Y:.1f}' stroke='#eee'/>")
            out.append(f"<line x1='{L - (5 if major else 3)}' y1='{Y:.1f}' x2='{L}' y2='{Y:.1f}' stroke='#000'/>")
            if label:
                out.append(f"<text x='{L - 7}' y='{Y + 4:.1f}' text-anchor='end' font-size='11'>{label}</text>")
        out.append(f"<line x1='{L}' y1='{H - B}' x2='{W - R}' y2='{H - B}' stroke='#000'/>"
                   f"<line x1='{L}' y1='{T}' x2='{L}' y2='{H - B}' stroke='#000'/>")
        out.append(f"<text x='{(L + W - R) / 2:.0f}' y='{H - B + 36}' text-anchor='middle' font-size='12'>"
                   f"{escape(x.label)}</text>")
        out.append(f"<text x='14' y='{(T + H - B) / 2:.0f}' transform='rotate(-90 14 {(T + H - B) / 2:.0f})' "
                   f"text-anchor='middle' font-size='12'>{escape(y.label)}</text>")
        return out

    def legend_at(self, i: int) -> tuple[float, float]:
        """The left end of legend entry i's symbol and its text's middle line."""
        if self.narrow:
            return 8 + (i % 2) * 166, self.legend_top + 8 + 16 * (i // 2)
        return self.W - self.R + 8, self.T + 8 + 16 * i


@dataclass
class Plot:
    title: str
    x: Axis
    y: Axis
    series: list[Series] = field(default_factory=list)
    vlines: list[tuple[float, str, str]] = field(default_factory=list)   # (x, label, colour)
    hlines: list[tuple[float, str, str]] = field(default_factory=list)
    width: int = 620
    height: int = 280

    def render(self) -> str:
        return responsive(self.draw(False), self.draw(True))

    def draw(self, narrow: bool = False) -> str:
        f = Frame.make(self.title, self.width, self.height, narrow,
                       len(self.series) + (len(self.vlines) if narrow else 0))
        L, R, T, B, W, H = f.L, f.R, f.T, f.B, f.W, f.H
        xs = [p[0] for s in self.series for p in s.points] + [v[0] for v in self.vlines]
        ys = [p[1] for s in self.series for p in s.points] + [h[0] for h in self.hlines]
        if self.x.log and any(s.steps for s in self.series):
            xs += [p[0] * (s.width or 1) for s in self.series for p in s.points]
        x0, x1 = self.x.bounds(xs)
        y0, y1 = self.y.bounds(ys)

        def tx(v: float) -> float:
            if self.x.log:
                v = max(v, x0)
                return L + (math.log10(v) - math.log10(x0)) / (math.log10(x1) - math.log10(x0)) * (W - L - R)
            return L + (v - x0) / (x1 - x0) * (W - L - R)

        def ty(v: float) -> float:
            if self.y.log:
                if v <= 0:
                    return H - B
                v = max(v, y0)
                return H - B - (math.log10(v) - math.log10(y0)) / (math.log10(y1) - math.log10(y0)) * (H - B - T)
            return H - B - (v - y0) / (y1 - y0) * (H - B - T)

        out = f.head(self.title) + f.axes(self.x, x0, x1, tx, self.y, y0, y1, ty)
        for i, s in enumerate(self.series):
            colour, dash = style(i)
            for part in segments(s.points, None if s.steps else s.gap):
                if s.steps:
                    pts = []
                    for x, y in part:
                        x2 = x * (s.width or 1) if self.x.log else x + (s.width or 1)
                        pts.append(f"{tx(x):.1f},{ty(y):.1f} {tx(x2):.1f},{ty(y):.1f}")
                else:
                    pts = [f"{tx(x):.1f},{ty(y):.1f}" for x, y in part]
                if len(part) > 1 or s.steps:
                    out.append(f"<polyline fill='none' stroke='{colour}' stroke-width='1.4' "
                               f"stroke-dasharray='{dash}' points='{' '.join(pts)}'/>")
            if s.markers:
                out += [marker(i, tx(x), ty(y), colour) for x, y in s.points]
            elif s.gap is not None:       # a lone point between two gaps is still drawn
                out += [f"<circle cx='{tx(p[0][0]):.1f}' cy='{ty(p[0][1]):.1f}' r='1.5' fill='{colour}'/>"
                        for p in segments(s.points, s.gap) if len(p) == 1]
            lx, ly = f.legend_at(i)
            out.append(f"<line x1='{lx}' y1='{ly}' x2='{lx + 24}' y2='{ly}' stroke='{colour}' "
                       f"stroke-width='1.6' stroke-dasharray='{dash}'/>"
                       + (marker(i, lx + 12, ly, colour) if s.markers else "")
                       + f"<text x='{lx + 28}' y='{ly + 4}' font-size='11' fill='{colour}'>"
                       f"{escape(shorten(s.label, 18))}</text>")
        for j, (v, label, colour) in enumerate(self.vlines):
            X = min(max(tx(v), L), W - R)
            out.append(f"<line x1='{X:.1f}' y1='{T}' x2='{X:.1f}' y2='{H - B}' stroke='{colour}' "
                       f"stroke-dasharray='3 3'/>")
            if narrow:
                lx, ly = f.legend_at(len(self.series) + j)
                out.append(f"<line x1='{lx}' y1='{ly}' x2='{lx + 24}' y2='{ly}' stroke='{colour}' "
                           f"stroke-dasharray='3 3'/><text x='{lx + 28}' y='{ly + 4}' font-size='11' "
                           f"fill='{colour}'>{escape(label)}</text>")
            else:
                out.append(f"<text x='{W - R + 8}' y='{H - B - 4 - 14 * j}' font-size='11' fill='{colour}'>"
                           f"{escape(label)}</text>")
        for v, label, colour in self.hlines:
            Y = ty(v)
            out.append(f"<line x1='{L}' y1='{Y:.1f}' x2='{W - R}' y2='{Y:.1f}' stroke='{colour}' "
                       f"stroke-dasharray='5 3'/><text x='{W - R - 4}' y='{Y - 4:.1f}' text-anchor='end' "
                       f"font-size='11' fill='{colour}'>{escape(label)}</text>")
        out.append("</svg>")
        return "".join(out)


def shorten(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def marker(i: int, x: float, y: float, colour: str) -> str:
    shape = MARKERS[i % len(MARKERS)]
    if shape == "circle":
        return f"<circle cx='{x:.1f}' cy='{y:.1f}' r='3' fill='{colour}'/>"
    if shape == "square":
        return f"<rect x='{x - 3:.1f}' y='{y - 3:.1f}' width='6' height='6' fill='{colour}'/>"
    if shape == "triangle":
        return f"<polygon points='{x:.1f},{y - 4:.1f} {x - 4:.1f},{y + 3:.1f} {x + 4:.1f},{y + 3:.1f}' fill='{colour}'/>"
    return f"<polygon points='{x:.1f},{y - 4:.1f} {x + 4:.1f},{y:.1f} {x:.1f},{y + 4:.1f} {x - 4:.1f},{y:.1f}' fill='none' stroke='{colour}'/>"


_HATCH_IDS = itertools.count(1)


def heatmap(title: str, rows: list[str], cols: list[str], cells: dict[tuple[int, int], float | None],
            row_label: str, col_label: str, binary: bool = False, cell_w: int = 58, cell_h: int = 24) -> str:
    """A grid of cells (row i, column j). binary: 0 -> 'held' (light), >0 -> 'missed'
    (dark, hatched); counts: a light-to-dark scale on log10(1+count), value printed in
    every cell so the map needs no colour to be read."""
    L, T = 34 + int(6.2 * max([len(r) for r in rows] + [4])), 34
    W = max(L + cell_w * len(cols) + 20, int(7.2 * len(title)) + 20)
    H = T + cell_h * len(rows) + 46
    top = max([v for v in cells.values() if v is not None] + [1])
    hatch = f"hatch{next(_HATCH_IDS)}"      # an id is unique in the page: one pattern per map
    # drawn at its own size (its numbers stay legible), in a region that scrolls sideways
    # where the screen is narrower, reachable by keyboard
    out = [f"<div class='wide' tabindex='0' role='region' aria-label='{escape(title)} (map)'>"
           f"<svg class='plot heat' width='{W}' height='{H}' viewBox='0 0 {W} {H}' role='img' "
           f"aria-label='{escape(title)}'><title>{escape(title)}</title>",
           f"<defs><pattern id='{hatch}' width='6' height='6' patternUnits='userSpaceOnUse' "
           "patternTransform='rotate(45)'><line x1='0' y1='0' x2='0' y2='6' stroke='#fff' stroke-width='2'/>"
           "</pattern></defs>",
           f"<text x='{W / 2:.0f}' y='18' text-anchor='middle' font-weight='bold' font-size='13'>{escape(title)}</text>"]
    for i, r in enumerate(rows):
        y = T + i * cell_h
        out.append(f"<text x='{L - 6}' y='{y + cell_h / 2 + 4:.0f}' text-anchor='end' font-size='11'>{escape(r)}</text>")
        for j, _ in enumerate(cols):
            x = L + j * cell_w
            v = cells.get((i, j))
            if v is None:
                fill, text, tc = "#fafafa", "·", "#999"
            elif binary:
                fill, text, tc = ("#c8e6c9", "0", "#000") if v == 0 else ("#7f0000", "miss", "#fff")
            else:
                shade = 0 if v == 0 else 0.25 + 0.75 * math.log10(1 + v) / math.log10(1 + top)
                g = int(235 - shade * 200)
                fill = "#e8f5e9" if v == 0 else f"rgb({min(255, g + 40)},{g // 2},{g // 2})"
                text, tc = (fmt_tick(v) if v < 1e5 else f"{v:.0e}"), ("#000" if shade < 0.6 else "#fff")
            out.append(f"<rect x='{x}' y='{y}' width='{cell_w - 1}' height='{cell_h - 1}' fill='{fill}'/>")
            if binary and v:
                out.append(f"<rect x='{x}' y='{y}' width='{cell_w - 1}' height='{cell_h - 1}' fill='url(#{hatch})' opacity='0.35'/>")
            out.append(f"<text x='{x + cell_w / 2:.0f}' y='{y + cell_h / 2 + 4:.0f}' text-anchor='middle' "
                       f"font-size='10' fill='{tc}'>{escape(text)}</text>")
    yb = T + len(rows) * cell_h
    for j, c in enumerate(cols):
        out.append(f"<text x='{L + j * cell_w + cell_w / 2:.0f}' y='{yb + 14}' text-anchor='middle' "
                   f"font-size='10'>{escape(c)}</text>")
    out.append(f"<text x='{L + cell_w * len(cols) / 2:.0f}' y='{yb + 34}' text-anchor='middle' "
               f"font-size='12'>{escape(col_label)}</text>")
    out.append(f"<text x='12' y='{T + len(rows) * cell_h / 2:.0f}' font-size='12' "
               f"transform='rotate(-90 12 {T + len(rows) * cell_h / 2:.0f})' text-anchor='middle'>"
               f"{escape(row_label)}</text></svg></div>")
    return "".join(out)


def budget_bar(title: str, period: float, parts: list[tuple[str, list[tuple[str, float]]]], unit: str = "µs",
               width: int = 620) -> str:
    """T = Ti + Ts + Tw as stacked horizontal bars, one per case (average, worst):
    Ti, Ts, Tw each a colour and a fill pattern; a bar longer than T is a miss."""
    return responsive(_budget_bar(title, period, parts, unit, width, False),
                      _budget_bar(title, period, parts, unit, NARROW, True))


def _budget_bar(title: str, period: float, parts: list[tuple[str, list[tuple[str, float]]]], unit: str,
                width: int, narrow: bool) -> str:
    L, R, bh = (84, 14, 22) if narrow else (110, 20, 22)
    heads = wrap(title, (width - 10) // 7) if narrow else [title]
    T = 14 + 16 * len(heads)
    key = (f"dark blue: Ti (dispatch latency), orange: Ts (compute), light green: Tw (slack); {unit}")
    keys = wrap(key, (width - 16) // 6) if narrow else [key]
    yb = T + len(parts) * (bh + 12)
    H = yb + 18 + 16 * len(keys)
    total = max([period] + [sum(max(v, 0) for _, v in segs) for _, segs in parts])
    scale = (width - L - R) / total if total > 0 else 1
    fills = {"Ti": "#0d47a1", "Ts": "#e65100", "Tw": "#c8e6c9"}
    out = [f"<svg class='plot' width='{width}' height='{H}' viewBox='0 0 {width} {H}' role='img' "
           f"aria-label='{escape(title)}'><title>{escape(title)}</title>"]
    out += [f"<text x='{width / 2:.0f}' y='{18 + 16 * k}' text-anchor='middle' font-weight='bold' font-size='13'>"
            f"{escape(line)}</text>" for k, line in enumerate(heads)]
    for i, (label, segs) in enumerate(parts):
        y = T + i * (bh + 12)
        x = L
        out.append(f"<text x='{L - 6}' y='{y + bh / 2 + 4:.0f}' text-anchor='end' font-size='11'>{escape(label)}</text>")
        for name, v in segs:
            w = max(v, 0) * scale
            if w <= 0:
                continue
            out.append(f"<rect x='{x:.1f}' y='{y}' width='{w:.1f}' height='{bh}' fill='{fills.get(name, '#999')}' "
                       f"stroke='#000' stroke-width='0.5'/>")
            text = f"{name} {v:,.1f}"
            if w > 6.5 * len(text) + 8:
                tc = "#000" if name == "Tw" else "#fff"
                out.append(f"<text x='{x + w / 2:.1f}' y='{y + bh / 2 + 4:.0f}' text-anchor='middle' font-size='10' "
                           f"fill='{tc}'>{text}</text>")
            x += w
    px = L + period * scale
    label = f"deadline T = {period:,.0f} {unit}"
    # the label reads from the line towards the side with room: never cut at the edge
    anchor = "end" if px - 6.2 * len(label) >= 2 else "start"
    out.append(f"<line x1='{px:.1f}' y1='{T - 6}' x2='{px:.1f}' y2='{yb}' stroke='#b71c1c' stroke-dasharray='4 2'/>"
               f"<text x='{px:.1f}' y='{yb + 14}' text-anchor='{anchor}' font-size='11' fill='#b71c1c'>"
               f"{escape(label)}</text>")
    out += [f"<text x='{8 if narrow else L}' y='{yb + 30 + 16 * k}' font-size='11'>{escape(line)}</text>"
            for k, line in enumerate(keys)]
    out.append("</svg>")
    return "".join(out)


def overlaid_histograms(title: str, curves: list[tuple[str, list, float | None]], width: int = 620,
                        height: int = 300) -> str:
    """Histograms of several systems in one figure (the cyclictest study's figures):
    curves = [(label, histogram bins [[lo_ns, hi_ns, count], ...], max_ns)], each
    rebinned onto the same log buckets and drawn as one step curve with its colour
    and dash; each curve's maximum is marked by a dashed line of its colour."""
    plot = Plot(title, Axis("latency Ti (µs, log scale)", log=True), Axis("wake-ups per bucket (log)", log=True, lo=1, integer=True),
                width=width, height=height)
    for i, (label, bins, mx) in enumerate(curves):
        pts = step_points(rebin_log(bins or []))
        if not pts:
            continue
        plot.series.append(Series(label, pts, steps=True, width=10 ** (1 / PLOT_BUCKETS_PER_DECADE)))
        if mx:
            plot.vlines.append((mx / 1000, f"max {mx / 1000:,.1f} µs", style(len(plot.series) - 1)[0]))
    if not plot.series:
        plot.title += " (no histogram stored)"
    return plot.render()


def return_level_plot(title: str, observed: list[tuple[float, float]], curve: list[tuple[float, float]],
                      band: list[tuple[float, float, float]], mark: tuple[float, float, float, float | None] | None,
                      x_label: str = "return period (cycles, log)", y_label: str = "latency (µs)",
                      width: int = 620, height: int = 300) -> str:
    """A return-level plot: observed block maxima as points at their empirical return
    periods, the fitted curve, its confidence band (shaded) and the estimated level at the
    chosen exceedance (a marker with its interval). band: (x, low, high); high may be
    inf (unbounded), drawn to the top edge. mark: (x, level, low, high or None)."""
    return responsive(*(_return_level_plot(title, observed, curve, band, mark, x_label, y_label, width, height, n)
                        for n in (False, True)))


def _return_level_plot(title, observed, curve, band, mark, x_label, y_label, width, height, narrow) -> str:
    f = Frame.make(title, width, height, narrow, 4 if mark else 3)
    L, R, T, B, W, H = f.L, f.R, f.T, f.B, f.W, f.H
    xs = [p[0] for p in observed] + [p[0] for p in curve] + [b[0] for b in band] + ([mark[0]] if mark else [])
    finite = [v for v in ([p[1] for p in observed] + [p[1] for p in curve] + [b[1] for b in band]
                          + [b[2] for b in band] + (list(m for m in mark[1:] if m is not None) if mark else []))
              if v is not None and math.isfinite(v) and v > 0]
    x_axis = Axis(x_label, log=True)
    y_log = bool(finite) and max(finite) / max(min(finite), 1e-9) > 20
    y_axis = Axis(y_label + (" log" if y_log else ""), log=y_log)
    x0, x1 = x_axis.bounds(xs)
    y0, y1 = y_axis.bounds(finite)

    def tx(v: float) -> float:
        v = min(max(v, x0), x1)
        return L + (math.log10(v) - math.log10(x0)) / (math.log10(x1) - math.log10(x0)) * (W - L - R)

    def ty(v: float) -> float:
        if not math.isfinite(v):
            return T
        v = min(max(v, y0), y1)
        if y_log:
            return H - B - (math.log10(v) - math.log10(y0)) / (math.log10(y1) - math.log10(y0)) * (H - B - T)
        return H - B - (v - y0) / (y1 - y0) * (H - B - T)

    out = f.head(title) + f.axes(x_axis, x0, x1, tx, y_axis, y0, y1, ty)
    fit_colour, obs_colour, mark_colour = COLOURS[1], COLOURS[0], COLOURS[2]
    if len(band) >= 2:
        upper = " ".join(f"{tx(x):.1f},{ty(hi):.1f}" for x, _, hi in band)
        lower = " ".join(f"{tx(x):.1f},{ty(lo):.1f}" for x, lo, _ in reversed(band))
        out.append(f"<polygon points='{upper} {lower}' fill='{fit_colour}' fill-opacity='0.15' stroke='none'/>")
    if curve:
        out.append(f"<polyline fill='none' stroke='{fit_colour}' stroke-width='1.6' points='"
                   + " ".join(f"{tx(x):.1f},{ty(y):.1f}" for x, y in curve) + "'/>")
    out += [f"<circle cx='{tx(x):.1f}' cy='{ty(y):.1f}' r='2.2' fill='{obs_colour}'/>" for x, y in observed]
    legend = [("block maxima", obs_colour, "point"), ("fitted GEV", fit_colour, "line"),
              ("95% interval", fit_colour, "band")]
    if mark:
        x, level, lo, hi = mark
        X = tx(x)
        out.append(f"<line x1='{X:.1f}' y1='{ty(lo):.1f}' x2='{X:.1f}' y2='{ty(hi if hi is not None else math.inf):.1f}' "
                   f"stroke='{mark_colour}' stroke-width='2'/>"
                   f"<polygon points='{X:.1f},{ty(level) - 5:.1f} {X + 5:.1f},{ty(level):.1f} {X:.1f},{ty(level) + 5:.1f} "
                   f"{X - 5:.1f},{ty(level):.1f}' fill='{mark_colour}'/>")
        legend.append(("pWCET at p", mark_colour, "mark"))
    for i, (label, colour, kind) in enumerate(legend):
        lx, ly = f.legend_at(i)
        if kind == "point":
            sym = f"<circle cx='{lx + 12}' cy='{ly}' r='2.5' fill='{colour}'/>"
        elif kind == "band":
            sym = f"<rect x='{lx}' y='{ly - 5}' width='24' height='10' fill='{colour}' fill-opacity='0.15'/>"
        elif kind == "mark":
            sym = (f"<polygon points='{lx + 12},{ly - 5} {lx + 17},{ly} {lx + 12},{ly + 5} "
                   f"{lx + 7},{ly}' fill='{colour}'/>")
        else:
            sym = f"<line x1='{lx}' y1='{ly}' x2='{lx + 24}' y2='{ly}' stroke='{colour}' stroke-width='1.6'/>"
        out.append(sym + f"<text x='{lx + 28}' y='{ly + 4}' font-size='11' fill='{colour}'>{escape(label)}</text>")
    out.append("</svg>")
    return "".join(out)

"""The probable worst case section: extreme value theory per latency job."""

from __future__ import annotations

from rtgauge.analysis.pwcet import measurement_pwcet, plot_data
from rtgauge.analysis.run.rows import is_latency_measurement, system_label
from rtgauge.report.html.page import e, figure, num
from rtgauge.records import Run
from rtgauge.report.svg import return_level_plot


def render_pwcet(runs: list[Run]) -> str:
    """Per latency measurement of each run: the probable worst case from extreme value
    theory (worst_case's answer: the estimate, or the reason code and the run needed), the
    checks, and a return-level plot where there is a fitted level to show."""
    out = []
    for run in runs:
        rows, figs = [], []
        for m in run.measurements:
            if not is_latency_measurement(m) or m.ok is False:
                continue
            for r in measurement_pwcet(m):
                checks = "; ".join(f"{c.name}: {'ok' if c.passed else ('not tested' if c.passed is None else 'FAIL')}"
                                   + (f" (p={c.p_value:.2g})" if c.p_value is not None else "") for c in r.checks)
                if r.applicable:
                    cells = (f"<td><b>{num(r.level_ns / 1000)}</b></td><td>{num(r.ci_low_ns / 1000)}–"
                             f"{num(r.ci_high_ns / 1000)}</td>")
                else:
                    cells = f"<td colspan='2' class='l warn'>none: <code>{e(r.code)}</code></td>"
                needed = r.needed_label()
                rows.append(f"<tr><td class='l'>{e(m.label)}</td><td class='l'>{e(m.condition)}</td>"
                            f"<td>{r.blocks} × {r.block_cycles:,}</td><td>{num((r.observed_max_ns or 0) / 1000)}</td>"
                            f"{cells}<td class='l'>{e(needed)}</td>"
                            f"<td class='l'>{e(r.summary())}<br><small>{e(checks)}</small></td></tr>")
                d = plot_data(r)
                if d is None:
                    continue    # no fitted level to show: no chart (the row says why)
                svg = return_level_plot(f"{m.label}: return levels", d["observed"], d["curve"], d["band"],
                                        d["mark"])
                at = ("the estimate at p" if r.applicable else
                      f"the level at the smallest probability the data support (p={d['exceedance']:.2g})")
                if r.by_pot:
                    what = (f"Cluster peaks of the maxima of {r.block_cycles:,}-cycle windows above "
                            f"{num(r.fit.threshold / 1000)} µs (declustered, extremal index "
                            f"{r.fit.extremal_index:.2f}) against their return period; the fitted GPD")
                else:
                    what = f"Block maxima of {r.block_cycles:,} cycles against their return period; the fitted GEV"
                cap = (f"{what} (ξ={r.fit.shape:+.2f}) with its 95% profile-likelihood band, and {at} marked with "
                       f"its interval. {e(r.summary())}.")
                figs.append(figure(svg, cap))
        if rows:
            out.append(f"<h3>{e(system_label(run))}</h3><div class='wide'><table><tr><th class='l'>job</th>"
                       "<th class='l'>condition</th><th>blocks × cycles</th><th>observed max µs</th>"
                       "<th>estimate µs</th><th>95% CI µs</th><th class='l'>run needed for p</th><th class='l'>answer and checks</th></tr>"
                       + "".join(rows) + "</table></div><div class='figs'>" + "".join(figs) + "</div>")
    if not out:
        return "<p>No latency measurement with per-window maxima in these runs.</p>"
    return ("<p class='note'>The latency exceeded with a small probability per cycle, estimated by fitting a "
            "generalised extreme value distribution to the per-window maxima, offered only where the maxima are "
            "independent, identically distributed, one regime, fitted well, not heavy-tailed and the extrapolation "
            "is within the evidence; where the maxima are dependent (late windows in bursts), by a generalised "
            "Pareto distribution fitted to declustered peaks over a threshold, with the same conditions on the "
            "cluster peaks; otherwise the reason code says why not (docs/pwcet.md). The interval is "
            "where the true level lies with 95% confidence if those conditions hold.</p>" + "".join(out))

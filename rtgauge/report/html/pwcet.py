"""The probable worst case section: extreme value theory per latency job."""

from __future__ import annotations

from rtgauge.analysis import system_label
from rtgauge.report.html.page import e, figure, num


def render_pwcet(runs: list[dict]) -> str:
    """Per latency measurement of each run: the probable worst case from extreme value
    theory (or why it is not applicable), the checks, and a return-level plot."""
    from rtgauge.analysis import is_latency_measurement
    from rtgauge.analysis.pwcet import measurement_pwcet, plot_data
    from rtgauge.report.svg import return_level_plot

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
                    high = "unbounded" if r.ci_high_ns is None else num(r.ci_high_ns / 1000)
                    cells = (f"<td><b>{num(r.level_ns / 1000)}</b></td><td>{num(r.ci_low_ns / 1000)}–{high}</td>"
                             f"<td class='l'>{e(r.rate_text())}</td>")
                else:
                    cells = f"<td colspan='3' class='l warn'>not applicable because {e(r.reason)}</td>"
                rows.append(f"<tr><td class='l'>{e(m.name)}</td><td class='l'>{e(m.condition)}</td>"
                            f"<td>{r.blocks} × {r.block_cycles:,}</td><td>{num((r.observed_max_ns or 0) / 1000)}</td>"
                            f"{cells}<td class='l'><small>{e(checks)}</small></td></tr>")
                if not r.applicable:        # no fit: no chart (the row says why)
                    continue
                d = plot_data(r)
                svg = return_level_plot(f"{m.name}: return levels", d["observed"], d["curve"], d["band"],
                                        d["mark"])
                cap = (f"Block maxima of {r.block_cycles:,} cycles against their return period; " +
                       (f"the fitted GEV (ξ={r.fit.shape:+.2f}) with its 95% profile-likelihood band, and the "
                        f"level at p marked with its interval: {e(r.summary())}."
                        if r.applicable else f"no fit shown: not applicable because {e(r.reason)}."))
                figs.append(figure(svg, cap))
        if rows:
            out.append(f"<h3>{e(system_label(run))}</h3><div class='wide'><table><tr><th class='l'>job</th>"
                       "<th class='l'>condition</th><th>blocks × cycles</th><th>observed max µs</th>"
                       "<th>pWCET µs</th><th>95% CI µs</th><th class='l'>at this rate</th><th class='l'>checks</th></tr>"
                       + "".join(rows) + "</table></div><div class='figs'>" + "".join(figs) + "</div>")
    if not out:
        return "<p>No latency measurement with per-window maxima in these runs.</p>"
    return ("<p class='note'>The latency exceeded with a small probability per cycle, estimated by fitting a "
            "generalised extreme value distribution to the per-window maxima, only where the maxima are "
            "independent, identically distributed and fitted well (docs/pwcet.md). The interval is where the "
            "true level lies with 95% confidence if those conditions hold.</p>" + "".join(out))

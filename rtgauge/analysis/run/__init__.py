"""One run's own figures (docs/design.md, "analysis/ by concern").

rows.py (the latency rows, late periods, cross-checks: decided once), marks.py,
stalls.py, starved.py, cycle.py (T = Ti + Ts + Tw), histograms.py, hil.py, tire.py (the
tire maps and limits), verdict.py (the verdict against a job), headline.py (the
headline figures and the rating), systems.py (system facts side by side) and spikes.py
(the whole-run attribution). They read pwcet/ and samples.py, never compare/ or
studies/."""

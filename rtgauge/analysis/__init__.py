"""Analysis of stored runs (rtgauge.records' Run and Measurement), by concern, each a
package (docs/design.md, "analysis/ by concern"), importing downwards in this order:

- compare/: two runs or more, figure by figure (regress, noise, trend, gate);
- studies/: the published studies beside the runs (published, conclusions, micro,
  rhealstone, tirecost);
- run/: one run's own figures (rows, verdict, headline, marks, stalls, starved, cycle,
  histograms, hil, tire, systems, spikes);
- pwcet/: the probable worst case (fit, checks, estimate, text, samples, pot, autocorr,
  compare);
- samples.py: the engine's raw samples file, read once for the pWCET and the attribution.
"""

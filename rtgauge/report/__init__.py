"""Reports of stored runs: a terminal summary and a self-contained HTML file."""

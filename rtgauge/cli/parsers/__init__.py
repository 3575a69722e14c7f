"""The commands' parsers, one module a command (its register() adds the options and help):
light at import, so `rtgauge COMMAND --help` and a usage error load no implementation.
The registry (rtgauge/cli/__init__.py) names each command's parser module and handler."""

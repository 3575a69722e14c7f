"""The field's standard tools, run as subprocesses and translated into the engine's
JSON contract so that their results are stored and compared like ours."""

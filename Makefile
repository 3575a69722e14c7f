# Conveniences; the README's two commands are the supported entry points.
.PHONY: setup test quick bench engine

setup:
	scripts/setup.sh --all

engine:
	ninja -C build/engine

test: setup
	scripts/test.sh

quick: setup
	.venv/bin/rtgauge run --profile quick

bench: setup
	.venv/bin/python bench/run.py
	.venv/bin/python bench/micro_crosscheck.py
	.venv/bin/python bench/report.py
	.venv/bin/python bench/tire.py
	.venv/bin/python bench/tirecost.py
	.venv/bin/python bench/memfloor.py
	.venv/bin/python bench/stop.py
	.venv/bin/python bench/startup.py
	.venv/bin/python bench/pwcet_runlength.py
	.venv/bin/python bench/attribution_cost.py
	.venv/bin/python bench/parse_bound.py
	.venv/bin/python bench/install_size.py

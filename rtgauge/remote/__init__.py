"""Targets: the machine a measurement runs on (this one, or a board over SSH),
and engines built for its architecture (docs/cross.md).

    async with target("ssh://root@board") as t:      # or target(None) / "local"
        run = await t.run_engine(["latency", "--duration-s", "10"])
        run.document, t.machine, t.hostname
"""

from __future__ import annotations


def target(address: str | None):
    """LocalTarget for None or "local", SshTarget for ssh://[user@]host[:port]."""
    # each target's module needs asyncssh (the ssh extra; local.py shares ssh.py's
    # RemoteRun): imported when a target is made, so this package loads without it
    if address in (None, "", "local"):
        from rtgauge.remote.local import LocalTarget

        return LocalTarget()
    from rtgauge.remote.ssh import SshTarget, parse

    return SshTarget(parse(address))

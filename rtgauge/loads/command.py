"""`command:<shell command>`: any user command as the load."""

from __future__ import annotations

from rtgauge.loads.base import LoadContext, ProcessLoad


class Command(ProcessLoad):
    """`command:<shell command>`: any user command as the load."""

    tools = ("sh",)

    def __init__(self, command: str, ctx: LoadContext | None = None):
        super().__init__(ctx)
        self.command = command
        self.name = f"command:{command}"

    def argv(self) -> list[str]:
        return ["sh", "-c", self.command]

    def tool_name(self) -> str:
        return "command"

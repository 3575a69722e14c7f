"""labgrid places held for a lab run, through labgrid's own client (labgrid.remote.client).

    with Places("labgrid.lab:20408", ["rack1-imx8", "rack1-bbb"]) as held:
        held.address("rack1-imx8")     # "ssh://root@10.0.0.21:22", from the place's NetworkService

Every place is acquired before any target runs, all or none: a place that does not
exist, that someone (you too) holds already, or that has no NetworkService is refused
with one sentence, and the places acquired before it are released. They are released
when the block ends, whatever ends it. labgrid keeps a place acquired until it is
released, so if rtgauge itself is killed (SIGKILL, power) the place stays acquired
by this host/user: `labgrid-client -p PLACE release` frees it."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from rtgauge.errors import UserError

CONNECT_TIMEOUT_S = 15
CALL_TIMEOUT_S = 30


def _labgrid():
    try:    # labgrid is the lab extra: imported only for a labgrid place, its absence a sentence
        from labgrid.remote import client
        from labgrid.remote.generated import labgrid_coordinator_pb2
    except ImportError as e:
        raise UserError(f"labgrid targets need the labgrid package ({e}); install rtgauge's lab extra: "
                        "pip install 'rtgauge[lab]'.") from None
    return client, labgrid_coordinator_pb2


class _Heard(logging.Handler):
    """labgrid's client logs through the root logger; what it says goes here (its
    last error becomes the reason of our sentence), not to the terminal."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.last: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        self.last = record.getMessage().splitlines()[0][:240] if record.getMessage() else None


class Places:
    def __init__(self, coordinator: str, names: list[str], say=print):
        self.coordinator = coordinator
        self.names = names
        self.say = say
        self.held: dict[str, str] = {}        # place -> ssh:// address
        self.loop: asyncio.AbstractEventLoop | None = None
        self.session = None
        self.heard = _Heard()

    # ---- the coordinator -------------------------------------------------

    def _connect(self) -> None:
        client, _ = _labgrid()
        # labgrid's own HOST[:PORT] reading (and LG_PROXY); the lab extra, so imported here
        from labgrid.util.proxy import proxymanager
        self.loop = client.ensure_event_loop()
        address = proxymanager.get_grpc_address(self.coordinator, default_port=20408)
        logging.getLogger().addHandler(self.heard)
        self.heard.last = None
        self.session = client.ClientSession(address, self.loop)
        try:
            self._wait(self.session.start(), CONNECT_TIMEOUT_S)
        except (client.Error, asyncio.TimeoutError, OSError) as e:
            self._disconnect()
            why = self.heard.last or str(e).removeprefix("Error: ") or type(e).__name__
            raise UserError(f"cannot reach the labgrid coordinator at {self.coordinator} ({why}); start "
                            "labgrid-coordinator there, or set [labgrid] coordinator in the lab file.") from None

    def _wait(self, coro, timeout: float):
        return self.loop.run_until_complete(asyncio.wait_for(coro, timeout))

    def _disconnect(self) -> None:
        if self.session is None:
            return
        with contextlib.suppress(Exception):
            self._wait(self.session.stop(), 10)
        with contextlib.suppress(Exception):
            self._wait(self.session.close(), 10)
        self.session = None
        logging.getLogger().removeHandler(self.heard)

    def _me(self) -> str:
        return f"{self.session.gethostname()}/{self.session.getuser()}"

    # ---- acquiring and releasing -----------------------------------------

    def __enter__(self) -> Places:
        self._connect()
        try:
            for name in self.names:
                self.held[name] = self._acquire(name)
        except BaseException:
            self.release()
            raise
        # the places stay acquired at the coordinator without a connection; the next
        # connection, at the end, releases them (and nothing of grpc's lives on meanwhile)
        self._disconnect()
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def address(self, place: str) -> str:
        return self.held[place]

    def _acquire(self, name: str) -> str:
        client, pb = _labgrid()
        place = self.session.places.get(name)
        if place is None:
            known = ", ".join(sorted(self.session.places)[:8]) or "none"
            raise UserError(f"labgrid place {name} does not exist at the coordinator {self.coordinator} "
                            f"(places: {known}); check the name with `labgrid-client places`.")
        if place.acquired:
            mine = place.acquired == self._me()
            raise UserError(f"labgrid place {name} is already acquired by {place.acquired}"
                            + (" (you, outside this lab run); release it with "
                               f"`labgrid-client -p {name} release` and run again." if mine else
                               "; wait until it is released, or ask them to release it."))
        try:
            self._wait(self.session.stub.AcquirePlace(pb.AcquirePlaceRequest(placename=name)), CALL_TIMEOUT_S)
            self._wait(self.session.sync_with_coordinator(), CALL_TIMEOUT_S)
        except Exception as e:      # grpc's AioRpcError: someone took it first, a resource is taken
            why = getattr(e, "details", lambda: str(e))() or type(e).__name__
            raise UserError(f"the labgrid coordinator refused to acquire place {name} ({why}); check it with "
                            f"`labgrid-client -p {name} show`.") from None
        self.held[name] = ""        # released even if what follows refuses it
        self.say(f"Acquired labgrid place {name}.")
        return self._ssh_address(name)

    def _ssh_address(self, name: str) -> str:
        client, _ = _labgrid()
        place = self.session.places[name]
        try:
            resources = self.session.get_target_resources(place)
        except client.Error as e:
            raise UserError(f"labgrid place {name}: {str(e).removeprefix('Error: ')}; check its exporter.") from None
        services = [r for (_, cls), r in resources.items() if cls == "NetworkService"]
        if len(services) != 1:
            raise UserError(f"labgrid place {name} has {len(services) or 'no'} NetworkService resources; rtgauge "
                            "measures a place through exactly one (address, username, port), add one match to it.")
        args = services[0].args
        host = str(args.get("address") or "")
        if not host or "%" in host:
            raise UserError(f"labgrid place {name}: its NetworkService address {host!r} is not one rtgauge can "
                            "reach directly; give the board's address (or an ~/.ssh/config Host for it).")
        if ":" in host:
            host = f"[{host}]"
        user = args.get("username") or "root"
        port = args.get("port") or 22
        # needs asyncssh (the ssh extra): imported only when a target is given
        from rtgauge.remote.ssh import parse
        return str(parse(f"ssh://{user}@{host}:{port}"))

    def release(self) -> None:
        """Release every place this lab run acquired; a place that cannot be released
        is told, with the command that frees it."""
        if not self.held:
            self._disconnect()
            return
        _, pb = _labgrid()
        for name in list(self.held):
            try:
                if self.session is None:
                    self._connect()
                self._wait(self.session.stub.ReleasePlace(pb.ReleasePlaceRequest(placename=name)), CALL_TIMEOUT_S)
                self._wait(self.session.sync_with_coordinator(), CALL_TIMEOUT_S)
                self.say(f"Released labgrid place {name}.")
            except BaseException as e:
                why = getattr(e, "details", lambda: str(e))() or type(e).__name__
                self.say(f"Could not release labgrid place {name} ({why}); free it with "
                         f"`labgrid-client -p {name} release`.")
            del self.held[name]
        self._disconnect()

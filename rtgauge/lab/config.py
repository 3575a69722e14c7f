"""LAB.toml: one profile, the targets it runs on, the shared database (docs/lab.md).

    name = "rack-1"                                  # optional label
    profile = "quick"                                # a built-in profile or a TOML file
    db = "postgresql://rtgauge@labdb/rtgauge"        # the shared database (--db wins)
    rounds = 1                                       # optional, as `rtgauge run --rounds`
    report = "rack-1.html"                           # optional HTML report (--report wins)
    targets = ["ssh://root@10.0.0.21", "labgrid:rack1-imx8"]
    [labgrid]
    coordinator = "labgrid.lab:20408"                # optional: else $LG_COORDINATOR, else 127.0.0.1:20408

A target is also a table, to give it a name of its own:

    [[targets]]
    name = "bbb"
    address = "ssh://root@bbb.lab"

Every mistake is refused with one sentence before anything runs."""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from rtgauge.errors import UserError
from rtgauge.profiles import BUILTIN, MAX_ROUNDS, Profile, load_profile, valid_rounds
from rtgauge.store.urls import normalise_url

_TOP_KEYS = {"name", "profile", "db", "rounds", "report", "targets", "labgrid"}
_TARGET_KEYS = {"name", "address"}
_LABGRID_KEYS = {"coordinator"}
DEFAULT_COORDINATOR = "127.0.0.1:20408"
MAX_TARGETS = 256
_PLACE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$")
_NAME = re.compile(r"^[^\s\x00-\x1f\x7f]{1,64}$")
_LAB_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@dataclass(frozen=True)
class Target:
    name: str            # how the output calls it
    address: str         # "ssh://..." or "labgrid:PLACE"

    @property
    def place(self) -> str | None:
        return self.address.removeprefix("labgrid:") if self.address.startswith("labgrid:") else None


@dataclass
class Lab:
    name: str
    path: Path
    profile: str         # what `rtgauge run --profile` is given (a file path made absolute)
    loaded: Profile
    db: str
    rounds: int | None
    report: str | None
    targets: list[Target]
    coordinator: str

    @property
    def places(self) -> list[str]:
        return [t.place for t in self.targets if t.place]


def load_lab(path: str, db: str | None = None) -> Lab:
    """The lab described by the file at path; db (--db) wins over the file's."""
    where = f"lab {path}"
    p = Path(path)
    if not p.is_file():
        raise UserError(f"{where} is not a readable file; give the path of a LAB.toml (docs/lab.md).")
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as e:
        raise UserError(f"cannot read {where}: {e.strerror}; check the path and permissions.") from None
    except UnicodeDecodeError as e:
        raise UserError(f"{where} is not UTF-8 text (byte {e.start}); save it as UTF-8.") from None
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{where} is not valid TOML ({e}); fix the file.") from None
    return parse_lab(data, p, where, db)


def _expect(ok: bool, sentence: str) -> None:
    if not ok:
        raise UserError(sentence)


def _reject_unknown(table: dict, known: set[str], where: str) -> None:
    unknown = sorted(set(table) - known)
    if unknown:
        raise UserError(f"{where}: unknown key {unknown[0]!r}; the keys are {', '.join(sorted(known))} "
                        "(docs/lab.md).")


def parse_lab(data: dict, path: Path, where: str, db_override: str | None = None) -> Lab:
    _reject_unknown(data, _TOP_KEYS, where)
    name = data.get("name", path.stem)
    # the name makes file names here (rtgauge-lab-NAME.html, its logs): no path in it
    _expect(isinstance(name, str) and bool(_LAB_NAME.match(name)),
            f"{where}: name must be 1 to 64 letters, digits, '.', '_' or '-' (it names files), starting "
            "with a letter or digit.")

    profile = data.get("profile")
    _expect(isinstance(profile, str) and profile.strip() != "",
            f"{where}: profile is missing; give a built-in profile ({', '.join(BUILTIN[:3])}, ...) "
            "or a TOML file, e.g. profile = \"quick\".")
    if profile not in BUILTIN:           # a file is found beside the LAB.toml
        candidate = Path(profile).expanduser()
        profile = str(candidate if candidate.is_absolute() else (path.parent / candidate).resolve())
    loaded = load_profile(profile)       # its own sentences for a bad profile
    _expect(loaded.tire is None and loaded.hil_sustained is None,
            f"{where}: profile {loaded.origin} has a [tire] or [hil_sustained] table, which cannot run on a "
            "target; give a profile of [[jobs]] only.")

    db = db_override if db_override is not None else data.get("db")
    _expect(isinstance(db, str) and db.strip() != "",
            f"{where}: db is missing; give the lab's shared PostgreSQL database, e.g. "
            "db = \"postgresql://rtgauge@labdb/rtgauge\", or --db.")
    _expect(normalise_url(db).get_backend_name() == "postgresql",
            f"{where}: db {db[:60]!r} is not a PostgreSQL URL; a lab stores every target's run in one shared "
            "database, give postgresql://USER@HOST/DB.")

    rounds = data.get("rounds")
    _expect(rounds is None or valid_rounds(rounds),
            f"{where}: rounds must be a whole number from 1 to {MAX_ROUNDS}.")

    report = data.get("report")
    _expect(report is None or (isinstance(report, str) and report.strip() != ""),
            f"{where}: report must be the path of the HTML file to write.")
    if report is not None and not Path(report).expanduser().is_absolute():
        report = str(path.parent / Path(report).expanduser())

    labgrid = data.get("labgrid", {})
    _expect(isinstance(labgrid, dict), f"{where}: [labgrid] must be a table with a coordinator key.")
    _reject_unknown(labgrid, _LABGRID_KEYS, f"{where} [labgrid]")
    coordinator = labgrid.get("coordinator", os.environ.get("LG_COORDINATOR") or DEFAULT_COORDINATOR)
    _expect(isinstance(coordinator, str) and re.match(r"^[^\s/]+$", coordinator) is not None,
            f"{where}: [labgrid] coordinator must be HOST[:PORT], e.g. \"labgrid.lab:20408\".")

    targets = parse_targets(data.get("targets"), where)
    return Lab(name=name, path=path, profile=profile, loaded=loaded, db=db, rounds=rounds, report=report,
               targets=targets, coordinator=coordinator)


def parse_targets(raw, where: str) -> list[Target]:
    _expect(isinstance(raw, list) and raw != [],
            f"{where}: targets is missing or empty; list the boards, e.g. targets = "
            "[\"ssh://root@board-1\", \"labgrid:place-2\"].")
    _expect(len(raw) <= MAX_TARGETS, f"{where}: {len(raw)} targets is more than {MAX_TARGETS}; split the lab.")
    # needs asyncssh (the ssh extra): imported only once a lab file names targets
    from rtgauge.remote.ssh import parse

    out: list[Target] = []
    for i, item in enumerate(raw, 1):
        at = f"{where}, target {i}"
        if isinstance(item, dict):
            _reject_unknown(item, _TARGET_KEYS, at)
            address, name = item.get("address"), item.get("name")
        else:
            address, name = item, None
        _expect(isinstance(address, str) and address.strip() != "",
                f"{at}: give its address as text, ssh://[user@]host[:port] or labgrid:PLACE.")
        address = address.strip()
        if address.startswith("labgrid:"):
            place = address.removeprefix("labgrid:")
            _expect(bool(_PLACE.match(place)),
                    f"{at}: {address[:80]!r} does not name a labgrid place; write labgrid:PLACE with the "
                    "place's name as `labgrid-client places` lists it.")
        elif address.startswith("ssh://"):
            try:
                address = str(parse(address))
            except UserError as e:
                raise UserError(f"{at}: {e}") from None
        else:
            raise UserError(f"{at}: {address[:80]!r} is neither ssh://[user@]host[:port] nor labgrid:PLACE; "
                            "a lab measures boards, give one of those.")
        if name is None:
            name = address.removeprefix("ssh://")
        _expect(isinstance(name, str) and bool(_NAME.match(name)),
                f"{at}: name must be text of 1 to 64 characters without spaces.")
        for seen in out:
            _expect(seen.address != address, f"{at}: {address} is listed twice; a board is measured once a lab "
                    "run, remove the second entry.")
            _expect(seen.name != name, f"{at}: the name {name!r} is used twice; give each target its own name.")
        out.append(Target(name=name, address=address))
    return out

"""`headcast probe q3|netsync HOST`: what a server says about itself, without joining."""

from __future__ import annotations

import argparse
import json
import selectors
import socket
import time
from dataclasses import dataclass
from typing import Callable

from headcast.app.errors import AppError, UnreachableError, UsageError, usage
from headcast.netcode import address as netaddress
from headcast.netcode.icmp import PORT_UNREACHABLE


@dataclass(frozen=True)
class Q3Target:
    """One server named on the command line and its addresses (the first of each family)."""

    host: str
    port: int
    addresses: tuple[tuple[int, tuple], ...]  # (family, sockaddr) in getaddrinfo's order

    @property
    def name(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def parse_q3_target(text: str) -> tuple[str, int]:
    """HOST, HOST:PORT, [IPV6], [IPV6]:PORT, or a bare IPv6 address (default port 27960)."""
    from headcast.netcode.q3.status import PORT_SERVER

    host, ports = usage(lambda: netaddress.parse_address(text, PORT_SERVER, option="probe q3", ipv6=True))
    return host, ports[0]


def resolve_q3_target(text: str) -> Q3Target:
    host, port = parse_q3_target(text)
    try:
        found = socket.getaddrinfo(host, port, 0, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
    except (OSError, UnicodeError):
        raise UsageError(f"probe q3: cannot resolve host {host!r}") from None
    # A name with several addresses of one family is round-robin DNS (several servers): take the
    # first, as quakestat does; but ask both families, since a server may listen on one only.
    firsts: dict[int, tuple] = {}
    for family, _, _, _, sockaddr in found:
        if family in (socket.AF_INET, socket.AF_INET6):
            firsts.setdefault(family, sockaddr)
    if not firsts:
        raise UsageError(f"probe q3: {host!r} has no IPv4 or IPv6 address")
    return Q3Target(host, port, tuple(firsts.items()))


def _sockaddr_text(family: int, sockaddr: tuple) -> str:
    return f"[{sockaddr[0]}]:{sockaddr[1]}" if family == socket.AF_INET6 else f"{sockaddr[0]}:{sockaddr[1]}"


class _Attempt:
    """One address of one target: a connected UDP socket (so ICMP refusals come back to it)
    and the sans-IO query."""

    def __init__(self, target_index: int, family: int, sockaddr: tuple) -> None:
        from headcast.netcode.q3.status import ServerQuery

        self.target_index = target_index
        self.address = _sockaddr_text(family, sockaddr)
        self.query = ServerQuery()
        self.error = ""  # why this address can give no answer (refused, unreachable)
        self.sock = socket.socket(family, socket.SOCK_DGRAM)
        self.sock.setblocking(False)
        try:
            self.sock.connect(sockaddr)
        except OSError as e:
            self.error = e.strerror or str(e)

    @property
    def live(self) -> bool:
        return not self.error and not self.query.done

    def send_due(self, now: float) -> None:
        for datagram in self.query.datagrams_to_send(now):
            try:
                self.sock.send(datagram)
            except PORT_UNREACHABLE:  # Windows: ConnectionResetError
                self.error = "nothing listens there (ICMP port unreachable)"
            except OSError as e:
                self.error = e.strerror or str(e)

    def drain(self, now: float) -> None:
        while self.live:
            try:
                data = self.sock.recv(65535)
            except BlockingIOError:
                return
            except PORT_UNREACHABLE:  # Windows: ConnectionResetError
                self.error = "nothing listens there (ICMP port unreachable)"
                return
            except OSError as e:
                self.error = e.strerror or str(e)
                return
            self.query.receive_datagram(data, now)

    def progress(self) -> int:
        return (self.query.info is not None) + (self.query.status is not None)


def query_q3_servers(
    targets: list[Q3Target], timeout: float, clock: Callable[[], float] = time.perf_counter
) -> list[_Attempt]:
    """Ask every address of every target at once, in one non-blocking loop, until each target has
    both answers from one of its addresses, every address of it failed, or `timeout` passed.
    Returns per target its best attempt: both answers, else the most answers, else one still
    waiting rather than one refused."""
    attempts = [_Attempt(i, family, sockaddr) for i, t in enumerate(targets) for family, sockaddr in t.addresses]
    selector = selectors.DefaultSelector()
    try:
        now = clock()
        deadline = now + timeout
        for a in attempts:
            if a.live:
                a.query.start(now)
                selector.register(a.sock, selectors.EVENT_READ, a)

        def unsettled() -> set[int]:
            done = {a.target_index for a in attempts if a.query.done}
            return {a.target_index for a in attempts if a.live and a.target_index not in done}

        while (waiting := unsettled()) and now < deadline:
            asking = [a for a in attempts if a.live and a.target_index in waiting]
            for a in asking:
                a.send_due(now)
            timers = [t for a in asking if (t := a.query.get_timer()) is not None]
            wait = max(0.0, min(timers + [deadline]) - clock())
            events = selector.select(wait)
            now = clock()
            for key, _ in events:
                key.data.drain(now)
    finally:
        selector.close()
        for a in attempts:
            a.sock.close()
    best: dict[int, _Attempt] = {}
    for a in attempts:
        b = best.get(a.target_index)
        if b is None or a.progress() > b.progress() or (a.progress() == b.progress() and b.error and not a.error):
            best[a.target_index] = a
    return [best[i] for i in range(len(targets))]


def q3_result(target: Q3Target, attempt: _Attempt, timeout: float) -> dict:
    """The JSON object for one target: what it said, or `error` (and `exit_code`) when nothing usable."""
    from headcast.netcode.q3 import oob

    out: dict = {"server": target.name}
    q = attempt.query
    if attempt.progress() == 0:
        if q.drops["malformed"]:
            out["error"] = (
                f"the Quake 3 server {target.name} answered, but not with a getinfo/getstatus reply "
                f"we can read ({q.drops['malformed']} dropped; last: {q.last_drop})"
            )
            out["exit_code"] = 1
        elif attempt.error:
            out["error"] = f"no answer from the Quake 3 server {target.name}: {attempt.error}"
            out["exit_code"] = 3
        else:
            out["error"] = (
                f"no answer from the Quake 3 server {target.name} within {timeout:g} s (not running, "
                "wrong port, a firewall, or it is rate-limiting this address; the default port is 27960)"
            )
            out["exit_code"] = 3
        return out
    info = dict(q.info.info) if q.info is not None else {}
    rules = dict(q.status.rules) if q.status is not None else {}
    players = q.status.players if q.status is not None else ()
    try:
        family = str(oob.family_for_protocol(int(info["protocol"])))
    except (KeyError, ValueError, oob.OobError):
        family = f"unknown (protocol {info.get('protocol')!r})"
    needpass = info.get("g_needpass", rules.get("g_needpass"))
    ping = q.ping_ms if q.ping_ms is not None else q.info_rtt_ms
    out.update(
        {
            "address": attempt.address,
            "ping_ms": None if ping is None else round(ping, 3),
            "hostname": info.get("hostname", rules.get("sv_hostname", "")),
            "protocol": info.get("protocol", ""),
            "family": family,
            "game": info.get("gamename", info.get("game", "")),
            "map": info.get("mapname", rules.get("mapname", "")),
            "max_clients": info.get("sv_maxclients", rules.get("sv_maxclients", "")),
            "pure": info.get("pure", rules.get("sv_pure", "")),
            "g_needpass": None if needpass is None else needpass not in ("", "0"),
            "vr_support": rules.get("vr_support", "0") == "1",
            "players": [
                {"name": p.name, "score": p.score, "ping": p.ping, **({"extra": list(p.extra)} if p.extra else {})}
                for p in players
            ],
            "rules": rules,
            "info": info,
        }
    )
    missing = [name for name, got in (("infoResponse", q.info), ("statusResponse", q.status)) if got is None]
    if missing:
        out["missing"] = missing
    if q.drops:
        out["drops"] = dict(q.drops)
    return out


def probe_q3(hosts: list[str], timeout: float) -> list[dict]:
    """`headcast probe q3 HOST...`: one JSON-ready dict per host, in the order given."""
    if not timeout > 0:
        raise UsageError(f"probe q3 --timeout {timeout:g}: must be more than 0 s")
    targets = [resolve_q3_target(h) for h in hosts]
    attempts = query_q3_servers(targets, timeout)
    return [q3_result(t, a, timeout) for t, a in zip(targets, attempts)]


def _shown(text: str) -> str:
    """A raw server string made safe for a terminal: unprintable characters as \\xNN."""
    return "".join(c if " " <= c <= "~" else f"\\x{ord(c):02x}" for c in text)


def format_q3_text(result: dict) -> list[str]:
    """Text lines for one result: colour codes stripped from names, rules raw (escaped)."""
    from headcast.netcode.q3.status import clean

    if "error" in result:
        return [result["error"]]
    where = result["server"] if result["address"] == result["server"] else f"{result['server']} ({result['address']})"
    needpass = {None: "?", True: "yes", False: "no"}[result["g_needpass"]]
    lines = [
        f"{where}: {clean(result['hostname'])!r} map {result['map']}, {len(result['players'])}/"
        f"{result['max_clients'] or '?'} players, ping {result['ping_ms']:.1f} ms",
        f"  protocol {result['protocol'] or '?'} ({result['family']}), pure {result['pure'] or '?'}, "
        f"password {needpass}, vr_support {'yes' if result['vr_support'] else 'no'}",
    ]
    if "missing" in result:
        lines.append(f"  (no {' or '.join(result['missing'])} before the timeout)")
    if result["players"]:
        lines.append("  players:   score  ping  name")
        lines += [f"           {p['score']:>5} {p['ping']:>5}  {clean(p['name'])}" for p in result["players"]]
    rules = result["rules"]
    if rules:
        width = max(map(len, rules))
        lines.append(f"  rules ({len(rules)}):")
        lines += [f"    {_shown(k):<{width}}  {_shown(v)}" for k, v in rules.items()]
    return lines


def cmd_probe_q3(args: argparse.Namespace) -> int:
    results = probe_q3(args.host, args.timeout)
    for r in results:
        if args.json:
            print(json.dumps({k: v for k, v in r.items() if k != "exit_code"}))
        elif "error" not in r or len(results) > 1:  # a lone server's error is the stderr line alone
            print("\n".join(format_q3_text(r)))
    failed = [r for r in results if "error" in r]
    if not failed:
        return 0
    message = (
        failed[0]["error"]
        if len(failed) == 1
        else (
            f"{len(failed)} of {len(results)} Quake 3 servers gave no usable answer: "
            + "; ".join(r["error"] for r in failed)
        )
    )
    no_answer = any(r["exit_code"] == UnreachableError.exit_code for r in failed)
    raise (UnreachableError if no_answer else AppError)(message)


def _all_posed(core, posing: dict, ours: set) -> bool:
    """Every member the mappings name, neither stealth nor us, has a pose in a broadcast seen."""
    return all(m.client_no in posing for m in core.members.values() if not m.stealth and m.device_id not in ours)


def probe_netsync(address: str, room: str, timeout: float) -> dict:
    """Join `room` as a stealth client that detects the server's protocol (never broadcast, so
    nobody in the room sees us), then report the protocol, the server version and the members:
    the device-ID mapping names them (clientNo, deviceId, stealth), the room broadcast says who
    sends a pose."""
    from headcast.app.errors import ProtocolMismatchError
    from headcast.app.sinks.netsync.link import default_device_id, parse_address, version_str
    from headcast.netcode.netsync.client import PROBE_SUFFIX
    from headcast.netcode.netsync.events import Joined, PeerPose, ProtocolDetected, ProtocolMismatch
    from headcast.netcode.netsync.model import FLAG_STEALTH, PoseFrame
    from headcast.netcode.netsync.transport import NetSyncClient

    host, dealer, pub, transform = parse_address(address)
    device = default_device_id() + "-probe"
    ours = {device, device + PROBE_SUFFIX}
    client = NetSyncClient(host, dealer, pub, room, device, transform_port=transform, protocol=None, stealth=True)
    stealth = PoseFrame(FLAG_STEALTH)
    posing: dict[int, str | None] = {}  # clientNo → deviceId of every member whose pose was broadcast
    joined = detected = mismatch = None
    broadcasts_before = 0
    try:
        deadline = time.monotonic() + timeout
        broadcast_until = None
        while time.monotonic() < deadline:
            now = time.monotonic()
            client.send_pose(now, stealth)
            for ev in client.poll(now):
                if isinstance(ev, ProtocolDetected):
                    detected = ev
                elif isinstance(ev, Joined):
                    joined = ev
                    broadcast_until = now + 2.5  # an idle room is broadcast every 2 s (when anyone poses)
                    # a broadcast before the mapping named us could not be read (our number unknown)
                    broadcasts_before = client.counters.room_poses
                elif isinstance(ev, PeerPose):
                    posing[ev.client_no] = ev.device_id
                elif isinstance(ev, ProtocolMismatch):
                    mismatch = ev
            if mismatch is not None:
                break
            # Done at the window's end, or once a broadcast came and every visible member named
            # so far has posed in one (a broadcast may still miss a member whose pose is late).
            if broadcast_until is not None and (
                now >= broadcast_until
                or (client.counters.room_poses > broadcasts_before and _all_posed(client.core, posing, ours))
            ):
                break
            time.sleep(0.02)
    finally:
        client.close()
    core = client.core
    if mismatch is not None:
        raise ProtocolMismatchError(f"probe netsync {host}: {mismatch.message}")
    if joined is None:
        if core.protocol is not None:
            raise UnreachableError(
                f"the NetSync server {host} (control {dealer}, pub {pub}) answered in protocol {core.protocol} "
                f"({version_str(core.server_version)}) but did not register us within {timeout:g} s"
            )
        raise UnreachableError(
            f"no answer from the NetSync server {host} (control {dealer}, pub {pub}) within {timeout:g} s "
            "(not running, wrong ports — default 5555/5556 — or a firewall)"
        )
    members = [
        {"client_no": m.client_no, "device_id": m.device_id, "stealth": m.stealth, "pose": m.client_no in posing}
        for m in sorted(core.members.values(), key=lambda m: m.client_no)
        if m.device_id not in ours
    ]
    named = {m["client_no"] for m in members}
    # A broadcast entry whose clientNo no mapping named yet: a member all the same.
    members += [
        {"client_no": no, "device_id": None, "stealth": False, "pose": True} for no in sorted(posing) if no not in named
    ]
    return {
        "server": f"{host}:{dealer}:{pub}",
        "protocol": core.protocol,
        "protocol_from": detected.how if detected is not None else "device-ID mapping",
        "server_version": version_str(joined.server_version),
        "room": room,
        "members": members,
        "broadcasting": sorted(posing),
    }


def probe_sauer(address: str, timeout: float, clock: Callable[[], float] = time.perf_counter) -> dict:
    """`headcast probe sauer HOST[:PORT]`: the ping reply and the extinfo player stats from the
    server's info port (PORT + 1), asked at once and again (doubling the wait) until answered."""
    from headcast.app.sinks.sauer.link import parse_address
    from headcast.netcode.sauer.info import SauerQuery
    from headcast.netcode.sauer.protocol import PROTOCOL_VERSION
    from headcast.netcode.sauer.wire import plain_text

    if not timeout > 0:
        raise UsageError(f"probe sauer --timeout {timeout:g}: must be more than 0 s")
    host, port = parse_address(address)
    try:
        found = socket.getaddrinfo(host, port + 1, socket.AF_INET, socket.SOCK_DGRAM)
    except (OSError, UnicodeError):
        raise UsageError(f"probe sauer: cannot resolve host {host!r}") from None
    sockaddr = found[0][4]
    query = SauerQuery(tag=int(clock() * 1000) % 1_000_000 + 1)
    error = ""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.setblocking(False)
        sock.connect(sockaddr)  # connected: an ICMP refusal comes back to it
        sel = selectors.DefaultSelector()
        sel.register(sock, selectors.EVENT_READ)
        try:
            now = clock()
            deadline = now + timeout
            query.start(now)
            while not query.done and now < deadline and not error:
                try:
                    for datagram in query.datagrams_to_send(now):
                        sock.send(datagram)
                except OSError as e:
                    error = (
                        "nothing listens there (ICMP port unreachable)"
                        if isinstance(e, PORT_UNREACHABLE)
                        else e.strerror or str(e)
                    )
                    break
                timer = query.get_timer()
                sel.select(max(0.0, min(deadline if timer is None else timer, deadline) - clock()))
                now = clock()
                while True:
                    try:
                        query.receive_datagram(sock.recv(4096), now)
                    except BlockingIOError:
                        break
                    except PORT_UNREACHABLE:  # Windows: ConnectionResetError
                        error = "nothing listens there (ICMP port unreachable)"
                        break
        finally:
            sel.close()
    where = f"{host}:{port}"
    info = query.info
    if info is None:
        why = error or f"within {timeout:g} s (not running, wrong port — the default is 28785 — or a firewall)"
        raise UnreachableError(f"no answer from the Sauerbraten server {where} (info port {port + 1}): {why}")
    players = [query.players[cn].as_dict() for cn in query.player_ids or () if cn in query.players]
    out = {
        "server": where,
        "info_port": port + 1,
        "ping_ms": None if query.ping_ms is None else round(query.ping_ms, 3),
        **info.as_dict(),
        "description_plain": plain_text(info.description),
        "compatible": info.protocol == PROTOCOL_VERSION,
        "players_listed": players,
    }
    if query.player_ids is None or len(players) < len(query.player_ids):
        out["missing"] = "extinfo player stats" if query.player_ids is None else "some players' stats"
    if query.drops:
        out["drops"] = dict(query.drops)
    return out


def format_sauer_text(r: dict) -> list[str]:
    from headcast.netcode.sauer.protocol import PROTOCOL_VERSION
    from headcast.netcode.sauer.wire import plain_text

    prot = f"protocol {r['protocol']}" + ("" if r["compatible"] else f" (headcast speaks {PROTOCOL_VERSION})")
    lines = [
        f"{r['server']}: {_shown(r['description_plain'])!r} {r['mode_name']} on {_shown(r['map']) or '(no map)'}, "
        f"{r['players']}/{r['max_players']} players, ping {r['ping_ms']:.1f} ms",
        f"  {prot}, mastermode {r['mastermode_name']} ({r['mastermode']}), password "
        f"{'yes' if r['password'] else 'no'}, {r['seconds_left']} s left"
        + (", paused" if r["paused"] else "")
        + (f", speed {r['gamespeed']}%" if r["gamespeed"] != 100 else ""),
    ]
    if r.get("missing"):
        lines.append(f"  (no {r['missing']} before the timeout)")
    if r["players_listed"]:
        lines.append("  players:  cn  frags deaths ping  state      name (team)")
        lines += [
            f"           {p['cn']:>3} {p['frags']:>6} {p['deaths']:>6} {p['ping']:>4}  {p['state']:<10} "
            f"{_shown(plain_text(p['name']))}" + (f" ({_shown(plain_text(p['team']))})" if p["team"] else "")
            for p in r["players_listed"]
        ]
    return lines


def cmd_probe(args: argparse.Namespace) -> int:
    if args.kind == "q3":
        return cmd_probe_q3(args)
    if args.kind == "sauer":
        result = probe_sauer(args.host, args.timeout)
        print(json.dumps(result) if args.json else "\n".join(format_sauer_text(result)))
        return 0
    result = probe_netsync(args.host, args.room, args.timeout)
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"{result['server']}: NetSync protocol {result['protocol']} (from the {result['protocol_from']}), "
            f"styly-netsync-server {result['server_version']}; room {result['room']!r}: "
            f"{len(result['members'])} other member(s), {len(result['broadcasting'])} broadcasting a pose"
        )
        for m in result["members"]:
            print(
                f"  #{m['client_no']} {m['device_id'] or '(no device-ID mapping yet)'}"
                f"{' stealth' if m['stealth'] else ''}{' — pose broadcast' if m['pose'] else ' — no pose'}"
            )
    return 0

"""`headcast probe q3|netsync HOST`: what a server says about itself, without joining."""
from __future__ import annotations

import argparse
import json
import secrets
import socket
import time

from headcast.app.errors import UnreachableError, UsageError


def probe_q3(host: str, port: int, timeout: float) -> dict:
    """getinfo then getstatus (two packets: well under the servers' 10/s per-address limit)."""
    from headcast.netcode.q3 import oob
    try:
        addr = (socket.gethostbyname(host), port)
    except OSError:
        raise UsageError(f"probe q3: cannot resolve host {host!r}") from None
    result: dict = {"server": f"{host}:{port}"}
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for name, packet, want in (("info", oob.getinfo(secrets.token_hex(4)), oob.InfoResponse),
                                   ("status", oob.getstatus(secrets.token_hex(4)), oob.StatusResponse)):
            sock.sendto(packet, addr)
            reply = _await(sock, addr, want, timeout)
            if reply is None:
                raise UnreachableError(
                    f"no answer from the Quake 3 server {host}:{port} within {timeout:g} s "
                    "(not running, wrong port, or a firewall; the default port is 27960)")
            result[name] = reply
    info, status = result["info"].info, result["status"]
    try:
        family = oob.family_for_protocol(int(info.get("protocol", "0")))
        result["family"] = str(family)
    except (ValueError, oob.OobError):
        result["family"] = f"unknown (protocol {info.get('protocol')!r})"
    return {
        "server": result["server"],
        "hostname": info.get("hostname", ""),
        "protocol": info.get("protocol", ""),
        "family": result["family"],
        "game": info.get("gamename", info.get("game", "")),
        "map": info.get("mapname", ""),
        "players": [{"name": p.name, "score": p.score, "ping": p.ping} for p in status.players],
        "max_clients": info.get("sv_maxclients", status.info.get("sv_maxclients", "")),
        "pure": info.get("pure", status.info.get("sv_pure", "")),
        "vr_support": status.info.get("vr_support", "0") == "1",
    }


def _await(sock: socket.socket, addr, want: type, timeout: float):
    from headcast.netcode.q3 import oob
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        sock.settimeout(left)
        try:
            data, src = sock.recvfrom(65535)
        except socket.timeout:
            return None
        except ConnectionRefusedError:
            return None  # ICMP port unreachable: nothing listens there
        if src != addr:
            continue
        try:
            reply = oob.parse_oob(data)
        except oob.OobError:
            continue
        if isinstance(reply, want):
            return reply
    return None


def probe_netsync(address: str, room: str, timeout: float) -> dict:
    """Join `room` as a stealth client that detects the server's protocol (never broadcast, so
    nobody in the room sees us), then report the protocol, the server version and the members:
    the device-ID mapping names them (clientNo, deviceId, stealth), the room broadcast says who
    sends a pose."""
    from headcast.app.errors import ProtocolMismatchError
    from headcast.app.netsync_link import default_device_id, parse_address, version_str
    from headcast.netcode.netsync.client import PROBE_SUFFIX, Joined, PeerPose, ProtocolDetected, ProtocolMismatch
    from headcast.netcode.netsync.model import FLAG_STEALTH, PoseFrame
    from headcast.netcode.netsync.transport import NetSyncClient
    host, dealer, pub, transform = parse_address(address)
    device = default_device_id() + "-probe"
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
            if broadcast_until is not None and (now >= broadcast_until
                                                or client.counters.room_poses > broadcasts_before):
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
                f"({version_str(core.server_version)}) but did not register us within {timeout:g} s")
        raise UnreachableError(
            f"no answer from the NetSync server {host} (control {dealer}, pub {pub}) within {timeout:g} s "
            "(not running, wrong ports — default 5555/5556 — or a firewall)")
    ours = {device, device + PROBE_SUFFIX}
    members = [{"client_no": m.client_no, "device_id": m.device_id, "stealth": m.stealth,
                "pose": m.client_no in posing}
               for m in sorted(core.members.values(), key=lambda m: m.client_no) if m.device_id not in ours]
    named = {m["client_no"] for m in members}
    # A broadcast entry whose clientNo no mapping named yet: a member all the same.
    members += [{"client_no": no, "device_id": None, "stealth": False, "pose": True}
                for no in sorted(posing) if no not in named]
    return {
        "server": f"{host}:{dealer}:{pub}",
        "protocol": core.protocol,
        "protocol_from": detected.how if detected is not None else "device-ID mapping",
        "server_version": version_str(joined.server_version),
        "room": room,
        "members": members,
        "broadcasting": sorted(posing),
    }


def cmd_probe(args: argparse.Namespace) -> int:
    if args.kind == "q3":
        from headcast.app.q3_link import parse_address
        for target in [args.host] if isinstance(args.host, str) else args.host:
            host, port = parse_address(target)
            result = probe_q3(host, port, args.timeout)
            if args.json:
                print(json.dumps(result))
            else:
                print(f"{result['server']}: {result['hostname']!r} map {result['map']} — protocol {result['protocol']} "
                      f"({result['family']}), {len(result['players'])}/{result['max_clients']} players, "
                      f"pure {result['pure'] or '?'}, vr_support {'yes' if result['vr_support'] else 'no'}")
                for p in result["players"]:
                    print(f"  {p['name']}  score {p['score']}  ping {p['ping']}")
        return 0
    result = probe_netsync(args.host, args.room, args.timeout)
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{result['server']}: NetSync protocol {result['protocol']} (from the {result['protocol_from']}), "
              f"styly-netsync-server {result['server_version']}; room {result['room']!r}: "
              f"{len(result['members'])} other member(s), {len(result['broadcasting'])} broadcasting a pose")
        for m in result["members"]:
            print(f"  #{m['client_no']} {m['device_id'] or '(no device-ID mapping yet)'}"
                  f"{' stealth' if m['stealth'] else ''}{' — pose broadcast' if m['pose'] else ' — no pose'}")
    return 0

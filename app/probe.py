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
    """Send a stealth pose (the join) and wait for the device-ID mapping and a room broadcast."""
    from headcast.app.netsync_link import default_device_id, parse_address
    from headcast.netcode.netsync.client import Joined, PeerPose
    from headcast.netcode.netsync.model import FLAG_STEALTH, PoseFrame
    from headcast.netcode.netsync.transport import NetSyncClient
    host, dealer, pub = parse_address(address)
    device = default_device_id() + "-probe"
    client = NetSyncClient(host, dealer, pub, room, device, stealth=True)
    stealth = PoseFrame(FLAG_STEALTH)
    peers: dict[int, str | None] = {}
    joined = None
    try:
        deadline = time.monotonic() + timeout
        broadcast_until = None
        while time.monotonic() < deadline:
            now = time.monotonic()
            client.send_pose(now, stealth)
            for ev in client.poll(now):
                if isinstance(ev, Joined):
                    joined = ev
                    broadcast_until = now + 2.5  # the idle broadcast comes every 2 s
                elif isinstance(ev, PeerPose):
                    peers[ev.client_no] = ev.device_id
            if broadcast_until is not None and (now >= broadcast_until or client.counters.room_poses):
                break
            time.sleep(0.02)
    finally:
        client.close()
    if joined is None:
        raise UnreachableError(
            f"no answer from the NetSync server {host} (dealer {dealer}, pub {pub}) within {timeout:g} s "
            "(not running, wrong ports — default 5555/5556 — or a firewall)")
    members = client.core.members
    return {
        "server": f"{host}:{dealer}:{pub}",
        "server_version": ".".join(map(str, joined.server_version)),
        "room": room,
        "members": [{"client_no": m.client_no, "device_id": m.device_id, "stealth": m.stealth}
                    for m in members.values() if m.device_id != device],
        "broadcasting": sorted(peers),
    }


def cmd_probe(args: argparse.Namespace) -> int:
    if args.kind == "q3":
        from headcast.app.q3_link import parse_address
        host, port = parse_address(args.host)
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
        print(f"{result['server']}: NetSync server {result['server_version']}, room {result['room']!r}: "
              f"{len(result['members'])} other member(s), {len(result['broadcasting'])} broadcasting a pose")
        for m in result["members"]:
            print(f"  #{m['client_no']} {m['device_id']}{' (stealth)' if m['stealth'] else ''}")
    return 0

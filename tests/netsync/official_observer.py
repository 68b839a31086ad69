"""The official Python client of a styly-netsync-server release, as a peer in a room.

Runs under that release's interpreter setup (the venv's Python with PYTHONPATH=build/netsync/
<version>, see `observer_command`), so it imports nothing from headcast: what it prints is what
STYLY's own `net_sync_manager` decodes. One JSON line per room snapshot it takes in:

    {"t": monotonic, "clients": {clientNo: {"device_id", "pose_seq", "flags", "head", "right",
     "left", "virtuals", "physical"}}}

transforms as [x, y, z, qx, qy, qz, qw] (json keeps every float bit). First line: {"ready": ...}.
`--send` also sends a pose of its own (a visible peer of that release's protocol); otherwise it
registers stealth (the official stealth handshake / heartbeat), so it sees without being seen.
Ends when stdin closes or after --seconds.
"""

import argparse
import importlib.metadata
import inspect
import json
import math
import select
import sys
import time

from styly_netsync.client import net_sync_manager
from styly_netsync.types import client_transform_data, transform_data


def tr(t):
    if t is None:
        return None
    return [t.pos_x, t.pos_y, t.pos_z, t.rot_x, t.rot_y, t.rot_z, t.rot_w]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--control-port", type=int, required=True)
    ap.add_argument("--pub-port", type=int, required=True)
    ap.add_argument("--transform-port", type=int)
    ap.add_argument("--room", required=True)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--send", action="store_true")
    a = ap.parse_args()

    kw = dict(server=f"tcp://{a.host}", dealer_port=a.control_port, sub_port=a.pub_port, room=a.room)
    if "transform_port" in inspect.signature(net_sync_manager.__init__).parameters:
        kw["transform_port"] = a.transform_port
    m = net_sync_manager(**kw)
    m.start()
    if not a.send:
        m.send_stealth_handshake()
    print(
        json.dumps(
            {"ready": True, "version": importlib.metadata.version("styly-netsync-server"), "device_id": m.device_id}
        ),
        flush=True,
    )
    last_ts = None
    next_send = 0.0
    end = time.monotonic() + a.seconds
    try:
        while time.monotonic() < end:
            if select.select([sys.stdin], [], [], 0)[0] and not sys.stdin.readline():
                break  # stdin closed: the test is done with us
            now = time.monotonic()
            if a.send and now >= next_send:
                next_send = now + 0.1
                yaw = now % 6.0
                m.send_transform(
                    client_transform_data(
                        pose_seq=int(now * 10) & 0xFFFF,
                        flags=0x04,
                        head=transform_data(
                            pos_x=0.1, pos_y=1.6, pos_z=0.2, rot_y=math.sin(yaw / 2), rot_w=math.cos(yaw / 2)
                        ),
                    )
                )
            snap = m.get_room_transform_data()
            if snap is not None and snap.timestamp != last_ts:
                last_ts = snap.timestamp
                clients = {
                    no: {
                        "device_id": m.get_device_id_from_client_no(no),
                        "pose_seq": ct.pose_seq,
                        "flags": ct.flags,
                        "head": tr(ct.head),
                        "right": tr(ct.right_hand),
                        "left": tr(ct.left_hand),
                        "virtuals": [tr(v) for v in ct.virtuals or []],
                        "physical": tr(ct.physical),
                    }
                    for no, ct in snap.clients.items()
                }
                print(json.dumps({"t": now, "clients": clients}), flush=True)
            time.sleep(0.005)
    finally:
        m.stop()


if __name__ == "__main__":
    main()

"""STYLY NetSync protocols 3–8 (styly-netsync-server 0.9.0 … 0.17.x): pose bodies, XROrigin delta, send policy, client.

- model.py      values at the boundary (PoseFrame in; PoseBody, RoomPose, DeviceIdMapping out)
- codec.py      client pose (11), room pose (12), device-ID mapping (6), hello (19), per protocol;
                typed decode errors
- origin.py     XROrigin Δ on send, physical pose rebuilt on receive as the official receivers do
- policy.py     Unity's send policy: SendRate cap, only-on-change, 1 Hz heartbeat
- client.py     sans-IO client core and its events: hello, protocol detection, mismatch naming
- transport.py  NetSyncClient: the core over pyzmq (control DEALER, transform DEALER from 7, SUB)
- releases.py   one styly-netsync-server release per protocol (build/netsync/<version>), oracles
- localserver.py / loopback_launcher.py  a real server of any release on 127.0.0.1
- docs/protocols/netsync.md#versions  what each protocol changed, and the receivers' physical-yaw error
"""

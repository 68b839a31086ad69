"""STYLY NetSync protocol 3 (styly-netsync-server 0.9.0–0.10.4): pose bodies, XROrigin delta, send policy, client.

- model.py      values at the boundary (PoseFrame in; PoseBody, RoomPose, DeviceIdMapping out)
- codec.py      client pose (11), room pose (12), device-ID mapping (6); typed decode errors
- origin.py     XROrigin Δ on send, physical pose rebuilt on receive (Unity's frame)
- policy.py     Unity's send policy: SendRate cap, only-on-change, 1 Hz heartbeat
- client.py     sans-IO client core and its events
- transport.py  NetSyncClient: the core over pyzmq (DEALER + SUB), polled once per frame
- localserver.py / loopback_launcher.py  a real server on 127.0.0.1 for tests and the demo
"""

"""roomId and deviceId travel after a one-byte length: longer ones are refused up front."""

from __future__ import annotations

import pytest

from headcast.netcode.netsync import codec
from headcast.netcode.netsync.client import NetSyncClientCore


def test_room_ids_over_255_bytes_are_refused_by_the_client_core():
    NetSyncClientCore("r" * 255, "dev")
    with pytest.raises(codec.PoseEncodeError, match="roomId is 256 bytes of UTF-8; the wire allows 255"):
        NetSyncClientCore("r" * 256, "dev")
    with pytest.raises(codec.PoseEncodeError, match="roomId is 300 bytes"):
        NetSyncClientCore("é" * 150, "dev")  # bytes, not characters
    with pytest.raises(codec.PoseEncodeError, match="roomId is not valid Unicode"):
        NetSyncClientCore("bad\udcff", "dev")  # a lone surrogate (undecodable bytes in argv)
    with pytest.raises(codec.PoseEncodeError, match="roomId is 256 bytes"):
        codec.encode_room_pose("r" * 256, 0.0, [])


def test_device_ids_over_255_bytes_are_refused():
    with pytest.raises(codec.PoseEncodeError, match="deviceId is 300 bytes of UTF-8; the wire allows 255"):
        NetSyncClientCore("room", "d" * 300)

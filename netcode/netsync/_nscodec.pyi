"""Types of the C extension built from _nscodec.c (see codec.py's NATIVE): the codec's fast paths,
each returning None for anything it leaves to the Python code (the reference)."""

from typing import Any

from .model import ClientPose, PoseBody, PoseFrame

def init(
    transform: type,
    origin_delta: type,
    pose_body: type,
    client_pose: type,
    room_entry: type,
    dq10: tuple[float, ...],
    dq10_sq: tuple[float, ...],
    rad: float,
    deg: float,
    /,
) -> None: ...
def encode(prefix: bytes, frame: PoseFrame, seq: int, protocol: int, /) -> bytes | None: ...
def decode_body(data: bytes, offset: int, family: int, size: int, /) -> tuple[PoseBody, int] | None: ...
def decode_room_entries(data: bytes, pos: int, count: int, family: int, /) -> tuple[Any, int] | None: ...
def decode_client_pose(data: bytes, expect: int, /) -> ClientPose | None: ...

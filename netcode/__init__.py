"""Protocol library: codecs and sans-IO state machines for Quake 3, STYLY NetSync and Sauerbraten.

Imports nothing from ``headcast.app`` or ``headcast.xr``.
"""

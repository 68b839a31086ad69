"""Quake 3: the VR usercmd mapping, the live link and the sink."""

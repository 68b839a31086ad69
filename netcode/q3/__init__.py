"""Quake 3 client protocol: bit I/O, Huffman, netchan, usercmds, snapshots, VR head bits."""

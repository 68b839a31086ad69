"""Cube 2: Sauerbraten N_POS records."""

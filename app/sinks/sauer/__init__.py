"""Sauerbraten: the N_POS mapping, the live link and the sink."""

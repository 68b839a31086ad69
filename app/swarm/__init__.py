"""`headcast swarm`: many simulated VR players against one server, in one process.

A protocol core is sans-IO, so a player is a core plus its socket(s) (docs/architecture.md#one-loop, "Many players,
one loop"): `loop.SwarmLoop` drives every player from one selector and one timer heap, never a
thread per player. `motion` turns a shipped motion or a recorded trace into what each protocol
sends (through the app's own rig and mappings), `players` holds one player class per protocol,
`observer` the sampled observers that measure relay latency and loss, `metrics` and `report`
what a server author reads off a run, `cli` the subcommand.
"""

"""The commands: argument parsing (`cli`), `run` and `replay` (`run`), `demo`, `doctor`, `probe`.
`headcast swarm` lives in `app/swarm/`."""

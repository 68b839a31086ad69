"""The sinks: one folder per protocol (`q3/`, `netsync/`, `sauer/`), each with its mapping (rig
state → what the protocol carries), its link (the live connection) and its sink (what the loop
calls every frame); `base` is what the loop asks of every sink, `contract` and `farside` what each
far side sees of us."""

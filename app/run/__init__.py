"""The run loop and its plumbing: the frame loop, the rig, configuration, the console, telemetry,
the run's outcome and how it stops, and the frame sources that need no headset (mock, synthetic)."""

"""headcast application: CLI, config, frame loop, rig, sinks, mirror window, telemetry."""

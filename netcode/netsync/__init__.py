"""STYLY NetSync protocol 3: pose bodies, XROrigin delta, send policy, client."""

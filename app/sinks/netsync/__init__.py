"""STYLY NetSync: the pose mapping, the live link and the sink."""

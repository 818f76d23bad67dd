"""The trainer's side of the audit: what a training run actually consumed, proven against the replay."""

"""Paddle Serving 0.9 compatibility: references recorded from the real packages."""

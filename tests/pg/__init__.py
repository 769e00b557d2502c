"""Helpers for the tests that run on a real server (see interleave.py)."""

"""Worlds: where LLM calls go (simulated, replay, live), all behind one protocol."""

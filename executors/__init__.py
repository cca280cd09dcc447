"""Runtimes that run an actor spec's processes as real OS processes: the runner, the relay, replay."""

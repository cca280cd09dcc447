"""Population protocols on real processes: the agent (`agent`), the scheduler (`scheduler`), the
run driver (`run`) and `lockstep run` (`command`)."""

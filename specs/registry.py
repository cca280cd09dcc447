"""Registered specs: short names for `lockstep check NAME`, each `module:Object`."""

SPECS: dict[str, str] = {
    "two_phase": "specs.examples.two_phase:TwoPhase",
    "tcommit": "specs.examples.tcommit:TCommit",
    "diehard": "specs.examples.diehard:DieHard",
    "peterson": "specs.examples.peterson:Peterson",
    "peterson_buggy": "specs.examples.peterson:PetersonSwapped",
    "filter_lock": "specs.examples.filter_lock:FilterLock",
    "filter_lock_buggy": "specs.examples.filter_lock:FilterLockSwapped",
    "agent_clock": "specs.examples.agent_clock:AgentClock",
    "agent_clock_buggy": "specs.examples.agent_clock:AgentClockNoWrap",
    "ewd840": "specs.examples.ewd840:EWD840",
    "ewd840_unstained": "specs.examples.ewd840:EWD840Unstained",
    "lock": "specs.examples.lock:Lock",
    "lock_weak": "specs.examples.lock:LockWeak",
}

"""Registered specs: short names for `lockstep check NAME`, each `module:Object`."""

SPECS: dict[str, str] = {
    "two_phase": "specs.examples.two_phase:TwoPhase",
    "tcommit": "specs.examples.tcommit:TCommit",
    "diehard": "specs.examples.diehard:DieHard",
    "peterson": "specs.examples.peterson:Peterson",
    "peterson_buggy": "specs.examples.peterson:PetersonSwapped",
    "filter_lock": "specs.examples.filter_lock:FilterLock",
    "filter_lock_buggy": "specs.examples.filter_lock:FilterLockSwapped",
    "ewd840": "specs.examples.ewd840:EWD840",
    "ewd840_unstained": "specs.examples.ewd840:EWD840Unstained",
    "lock": "specs.examples.lock:Lock",
    "lock_weak": "specs.examples.lock:LockWeak",
    "two_phase_commit": "specs.two_phase_commit:TwoPhaseCommit",
    "two_phase_commit_eager": "specs.two_phase_commit:TwoPhaseCommitEager",
    "bracha": "specs.bracha:Bracha",
    "bracha_equivocating_sender": "specs.bracha:BrachaEquivocatingSender",
    "bracha_byzantine_relay": "specs.bracha:BrachaByzantineRelay",
    "bracha_low_echo_quorum": "specs.bracha:BrachaLowEchoQuorum",
    "token_ring": "specs.token_ring:TokenRing",
}

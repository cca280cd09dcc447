"""Histories of real systems under faults: concurrent clients record what they called and what came back
(Jepsen's invoke / ok / fail / info), a nemesis kills, pauses and restarts nodes on a schedule, and the history
is checked for linearizability. Systems: a 3-node etcd cluster, and Lockstep's own P-SMR service."""

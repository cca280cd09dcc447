"""A key-value service replicated with P-SMR, as OS processes: sequencers, a hub, replicas' workers, clients."""

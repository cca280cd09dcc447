"""Autobahn BFT as real processes: replicas with lanes and consensus, ed25519-signed messages, a client load."""

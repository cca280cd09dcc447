"""Ed25519 keys of one run, signing and verification, and the digests of batches, cars and cuts.

Every run draws fresh keys (so signatures also authenticate the run); the runner hands each process
its own private key and everyone's public keys. What is signed is a message's canonical JSON (sorted
keys, no spaces), which any receiver rebuilds from the message it decoded, so a certificate can carry
only (signer, signature) pairs and a verifier rebuilds each signer's statement.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, PublicFormat


def canonical(obj: Any) -> bytes:
    """The one byte string a statement is signed as."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def new_keys(n: int) -> tuple[list[str], list[str]]:
    """(private, public) keys of n signers, as hex of the raw 32-byte encodings."""
    priv, pub = [], []
    for _ in range(n):
        k = Ed25519PrivateKey.generate()
        priv.append(k.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption()).hex())
        pub.append(k.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex())
    return priv, pub


class Signer:
    """One process's private key and everyone's public keys; verification results are cached per (who, bytes)."""

    def __init__(self, me: int, private_hex: str, public_hex: list[str]):
        self.me = me
        self.key = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(private_hex))
        self.pubs = [Ed25519PublicKey.from_public_bytes(bytes.fromhex(h)) for h in public_hex]
        self.verified: set[tuple[int, bytes, str]] = set()
        self.stats = {"signed": 0, "verified": 0}

    def sign(self, data: bytes) -> str:
        self.stats["signed"] += 1
        return self.key.sign(data).hex()

    def valid(self, who: int, data: bytes, sig: Any) -> bool:
        """True if `sig` is who's signature of `data` (False for an unknown signer or a malformed signature)."""
        if not (isinstance(who, int) and 0 <= who < len(self.pubs) and isinstance(sig, str) and len(sig) == 128):
            return False
        key = (who, data, sig)
        if key in self.verified:
            return True
        try:
            self.pubs[who].verify(bytes.fromhex(sig), data)
        except (InvalidSignature, ValueError):
            return False
        self.stats["verified"] += 1
        if len(self.verified) > 200_000:
            self.verified.clear()
        self.verified.add(key)
        return True

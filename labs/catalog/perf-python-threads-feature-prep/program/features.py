"""Session features: a signed hashed bag of tokens, then the log-compressed amounts.

The ranking model is trained on exactly these values: keep them as they are.
"""

import math

BUCKETS = {{ buckets }}
# Every token is counted once per salt, in a bucket of its own for each, so two tokens that collide in
# one bucket still differ in the others.
SALTS = (0x5BD1E995, 0x1B873593, 0x27D4EB2F, 0x165667B1)
MIX = 0x45D9F3B  # integer hash mixing constant: every bit of a token moves the bucket and the sign
MASK = 0xFFFFFFFF


def token_hash(token: int, salt: int) -> int:
    """A 32-bit hash of a token id."""
    h = (token + salt) & MASK
    h = (((h >> 16) ^ h) * MIX) & MASK
    h = (((h >> 16) ^ h) * MIX) & MASK
    return (h >> 16) ^ h


def session_features(tokens: list[int], amounts: list[float]) -> list[float]:
    """One session's features: BUCKETS signed counts (every token once per salt) scaled by 1/sqrt(tokens),
    then one value per amount."""
    hashed = [0.0] * BUCKETS
    count = 0
    for token in tokens:
        if token == 0:  # padding after the session's last token
            continue
        for salt in SALTS:
            h = token_hash(token, salt)
            hashed[(h >> 1) % BUCKETS] += 1.0 if h & 1 else -1.0
        count += 1
    scale = 1.0 / math.sqrt(max(count, 1))
    row = [value * scale for value in hashed]
    for amount in amounts:
        row.append(math.copysign(math.log1p(abs(amount)), amount))
    return row

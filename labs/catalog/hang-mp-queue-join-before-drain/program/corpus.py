"""Reader for the support-article archive that the retrieval index is built from.

The archive is split into SHARDS shards of ROWS records each; a record is FIELDS float32 values
(the article's token statistics after the archive's own preprocessing). ``read_shard`` decodes
one shard; ``limit`` keeps only its first records, for quick checks on a sample.

This module is owned by the data platform team: jobs import it as it is.
"""

import numpy as np

ARCHIVE_SEED = {{ data_seed }}
SHARDS = {{ shards }}
ROWS = {{ rows }}  # records per shard
FIELDS = 32


def read_shard(index: int, limit: int | None = None) -> np.ndarray:
    """The records of shard ``index`` as a (rows, FIELDS) float32 array, in the archive's order."""
    if not 0 <= index < SHARDS:
        raise IndexError(f"the archive has shards 0..{SHARDS - 1}, not {index}")
    rng = np.random.default_rng([ARCHIVE_SEED, index])
    centre = rng.standard_normal(FIELDS).astype(np.float32)
    records = rng.standard_normal((ROWS, FIELDS), dtype=np.float32) + centre
    return records if limit is None else records[:limit]

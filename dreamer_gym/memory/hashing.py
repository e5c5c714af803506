"""Content hashing: ids are hashes of content so that equal content always has equal ids."""
from __future__ import annotations

import hashlib
import json
from typing import Any


def content_hash(payload: Any, length: int = 12) -> str:
    """Hash a JSON-serialisable payload with sorted keys (stable across runs and machines)."""
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:length]

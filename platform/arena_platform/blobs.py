"""The content-addressed blob store: model files and replays, keyed by their SHA-256.

The root is a local folder (the embedded default) or any fsspec URL (s3://bucket/prefix, ...).
Writes are idempotent (the same bytes have the same key) and atomic (a temporary name, then a
move), so a crash never leaves a half-written blob under a real key. Reads verify the hash. Only
training sessions' resume points are ever deleted: one a save superseded, or an ended session's
(arena_workers.sweeper.discard_state).
"""

from __future__ import annotations

import hashlib
import uuid

import fsspec


class BlobNotFound(KeyError):
    """No blob has this key."""


class CorruptBlob(ValueError):
    """A stored blob's bytes no longer match its key."""


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class BlobStore:
    def __init__(self, url: str) -> None:
        self.fs, self.root = fsspec.core.url_to_fs(url)
        self.fs.makedirs(self.root, exist_ok=True)

    def _path(self, key: str) -> str:
        if len(key) != 64 or not all(char in "0123456789abcdef" for char in key):
            raise BlobNotFound(f"not a SHA-256 key: {key!r}")
        return f"{self.root}/{key[:2]}/{key}"

    def put(self, data: bytes) -> str:
        """Store `data`; returns its key (the SHA-256, hex)."""
        key = sha256_hex(data)
        path = self._path(key)
        if not self.fs.exists(path):
            self.fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
            temporary = f"{path}.{uuid.uuid4().hex}.tmp"
            self.fs.pipe_file(temporary, data)
            self.fs.mv(temporary, path)
        return key

    def get(self, key: str) -> bytes:
        """The bytes stored under `key`; BlobNotFound or CorruptBlob otherwise."""
        try:
            data = self.fs.cat_file(self._path(key))
        except FileNotFoundError:
            raise BlobNotFound(key) from None
        if sha256_hex(data) != key:
            raise CorruptBlob(f"blob {key} does not match its hash")
        return data

    def exists(self, key: str) -> bool:
        return self.fs.exists(self._path(key))

    def delete(self, key: str) -> None:
        """Removes the blob under `key` (nothing if there is none). Keys are contents: the caller
        checks that nothing refers to these bytes any more."""
        path = self._path(key)
        if self.fs.exists(path):
            self.fs.rm_file(path)

"""Reading a DCP checkpoint without running what it holds.

torch.distributed.checkpoint unpickles ``.metadata`` with plain ``pickle`` and the non-tensor
entries of the state dict (optimizer hyper-parameters) with ``torch.load(weights_only=False)``:
a checkpoint directory that someone else can write is a way to run code in the trainer, and the
manifest's sha256 does not help (whoever writes the files can write the manifest too). So the
trainer reads checkpoints through this reader and planner instead:

- ``.metadata`` goes through an unpickler that builds only DCP's own metadata classes, torch's
  sizes and dtypes and plain containers; anything else (``os.system``, ``builtins.eval``, ...) is
  refused before it is called;
- every storage entry must name a shard file inside the checkpoint directory;
- byte entries load with ``torch.load(weights_only=True)`` (numbers, strings, tuples, tensors).
"""

from __future__ import annotations

import io
import pickle
from pathlib import Path, PurePosixPath
from typing import Any

import torch
from torch.distributed.checkpoint import DefaultLoadPlanner, FileSystemReader
from torch.distributed.checkpoint._traverse import set_element
from torch.distributed.checkpoint.metadata import Metadata, StorageMeta, TensorStorageMetadata
from torch.distributed.checkpoint.planner import ReadItem
from torch.distributed.checkpoint.state_dict_loader import load as dcp_load

_DCP = "torch.distributed.checkpoint"
# What a DCP .metadata of torch 2.x is built from (seen in this trainer's own checkpoints).
ALLOWED_GLOBALS = frozenset(
    {
        (f"{_DCP}.metadata", name)
        for name in (
            "Metadata",
            "TensorStorageMetadata",
            "BytesStorageMetadata",
            "ChunkStorageMetadata",
            "TensorProperties",
            "MetadataIndex",
            "StorageMeta",
            "_MEM_FORMAT_ENCODING",
        )
    }
    | {
        (f"{_DCP}.filesystem", "_StorageInfo"),
        ("torch", "Size"),
        ("torch.serialization", "_get_layout"),  # a layout by name: torch.strided, ...
        ("pathlib", "PosixPath"),
        ("pathlib", "PurePosixPath"),
        ("collections", "OrderedDict"),
        ("builtins", "set"),
        ("builtins", "frozenset"),
    }
)


class UnsafeCheckpointError(ValueError):
    """The checkpoint's metadata asks for something a checkpoint never holds."""


class _MetadataUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in ALLOWED_GLOBALS:
            return super().find_class(module, name)
        if module == "torch" and isinstance(getattr(torch, name, None), torch.dtype):
            return getattr(torch, name)
        raise UnsafeCheckpointError(f".metadata refers to {module}.{name}, which is not checkpoint metadata")


def load_metadata(data: bytes) -> Metadata:
    """``.metadata``'s bytes as DCP metadata, building nothing outside ALLOWED_GLOBALS."""
    metadata = _MetadataUnpickler(io.BytesIO(data)).load()
    if not isinstance(metadata, Metadata):
        raise UnsafeCheckpointError(f".metadata holds a {type(metadata).__name__}, not checkpoint metadata")
    return metadata


class SafeFileSystemReader(FileSystemReader):
    """FileSystemReader whose metadata is unpickled through the allow-list and whose storage
    entries must name files directly inside the checkpoint directory."""

    def read_metadata(self, *args: Any, **kwargs: Any) -> Metadata:
        rank = kwargs.get("rank")
        with self.fs.create_stream(self._get_metadata_path(rank), "rb") as handle:
            metadata = load_metadata(handle.read())
        for info in (metadata.storage_data or {}).values():
            name = getattr(info, "relative_path", None)
            if not isinstance(name, str) or PurePosixPath(name).name != name or name in ("", ".", ".."):
                raise UnsafeCheckpointError(f".metadata names {name!r} as a shard, outside the checkpoint")
        storage_meta = getattr(metadata, "storage_meta", None) or StorageMeta()
        storage_meta.load_id = self.load_id  # what FileSystemReader.read_metadata does after its unpickling
        metadata.storage_meta = storage_meta
        return metadata


class SafeLoadPlanner(DefaultLoadPlanner):
    """DefaultLoadPlanner whose non-tensor entries load as data only: its own ``load_bytes``
    hard-codes ``torch.load(weights_only=False)``; this is the same code with ``True``."""

    def load_bytes(self, read_item: ReadItem, value: io.BytesIO) -> None:
        loaded = torch.load(value, weights_only=True)
        if self.flatten_state_dict:  # the paths come from our own state dict, not from the file
            set_element(self.original_state_dict, self.mappings[read_item.dest_index.fqn], loaded)
        else:
            self.state_dict[read_item.dest_index.fqn] = loaded


def safe_load(state_dict: dict[str, Any], path: Path) -> None:
    """``dcp.load`` of ``path`` into ``state_dict`` through the safe reader and planner."""
    dcp_load(state_dict, storage_reader=SafeFileSystemReader(path), planner=SafeLoadPlanner())


def saved_dtypes(path: Path, prefix: str) -> set[torch.dtype]:
    """The dtypes of the tensors whose keys start with ``prefix`` ("model.") in the checkpoint at
    ``path``, from its ``.metadata`` alone (no shard is read)."""
    entries = SafeFileSystemReader(path).read_metadata().state_dict_metadata
    return {
        e.properties.dtype for k, e in entries.items() if k.startswith(prefix) and isinstance(e, TensorStorageMetadata)
    }

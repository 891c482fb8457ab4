"""Type stubs of spinney's native module (python/src/lib.rs)."""

from collections.abc import Callable, Iterable, Iterator, Mapping
from os import PathLike
from types import TracebackType
from typing import Any, Literal, Optional, TypeVar, Union, overload

_T = TypeVar("_T")
_D = TypeVar("_D")
Kind = Literal["lsm", "btree"]
Compression = Literal["none", "lz4", "zstd"]
Durability = Literal["off", "normal", "full"]

TRANSACT_ATTEMPTS: int
"""How often ``Db.transact`` runs its body at most by default (the engine's
``spinney::TRANSACT_ATTEMPTS``)."""

def open(
    path: Union[str, PathLike[str]],
    *,
    create_if_missing: bool = True,
    read_only: bool = False,
    durability: Durability = "normal",
    cache_size: Optional[int] = None,
    background_threads: Optional[int] = None,
) -> Db:
    """Opens (or creates) the database in directory ``path``."""

class Db:
    """An open database; a context manager that closes it on exit."""

    def table(
        self,
        name: str,
        kind: Kind = "lsm",
        *,
        compression: Optional[Compression] = None,
        page_size: Optional[int] = None,
        bloom_bits_per_key: Optional[int] = None,
        write_buffer_size: Optional[int] = None,
    ) -> Table:
        """The table ``name``, created with these options if missing."""
    def create_table(
        self,
        name: str,
        kind: Kind = "lsm",
        *,
        compression: Optional[Compression] = None,
        page_size: Optional[int] = None,
        bloom_bits_per_key: Optional[int] = None,
        write_buffer_size: Optional[int] = None,
    ) -> Table:
        """Creates table ``name``; ``TableExistsError`` if it exists."""
    def drop_table(self, name: str) -> None:
        """Drops table ``name`` and its files."""
    def tables(self) -> list[str]:
        """The names of the tables, in order."""
    def batch(self) -> Batch:
        """A batch of writes across tables, applied whole."""
    def transaction(self) -> Transaction:
        """A transaction: commits on a normal exit, rolls back on an exception."""
    def transact(
        self, body: Callable[[Transaction], _T], attempts: int = TRANSACT_ATTEMPTS
    ) -> _T:
        """Runs ``body(tx)`` and commits, again while the commit conflicts."""
    def snapshot(self) -> Snapshot:
        """A consistent view as of now, until closed."""
    def stats(self) -> dict[str, Any]:
        """The database's figures."""
    def flush(self) -> None:
        """Flushes the LSM tables' memtables and checkpoints the B-trees."""
    def close(self) -> None:
        """Closes the database; later calls raise ``ClosedError``."""
    def __enter__(self) -> Db: ...
    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...

class Table:
    """A table: a mutable mapping of bytes to bytes, and ranges over it."""

    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> Kind: ...
    @overload
    def get(self, key: bytes) -> Optional[bytes]: ...
    @overload
    def get(self, key: bytes, default: _D) -> Union[bytes, _D]: ...
    def __getitem__(self, key: bytes) -> bytes: ...
    def __setitem__(self, key: bytes, value: bytes) -> None: ...
    def __delitem__(self, key: bytes) -> None: ...
    def __contains__(self, key: object) -> bool: ...
    def __iter__(self) -> Iter: ...
    def __len__(self) -> int:
        """The number of keys: a scan of the whole table."""
    def put(self, key: bytes, value: bytes) -> None: ...
    def delete(self, key: bytes) -> None:
        """Deletes ``key`` (nothing if it is absent)."""
    def delete_range(self, start: bytes, end: bytes) -> None:
        """Deletes every key in [start, end)."""
    def range(
        self, start: Optional[bytes] = None, end: Optional[bytes] = None, reverse: bool = False
    ) -> Iterator[tuple[bytes, bytes]]: ...
    def prefix(self, prefix: bytes, reverse: bool = False) -> Iterator[tuple[bytes, bytes]]: ...
    def keys(self) -> Iterator[bytes]: ...
    def values(self) -> Iterator[bytes]: ...
    def items(self) -> Iterator[tuple[bytes, bytes]]: ...
    def pop(self, key: bytes, *default: bytes) -> bytes: ...
    def popitem(self) -> tuple[bytes, bytes]: ...
    def setdefault(self, key: bytes, default: bytes) -> bytes: ...
    def update(
        self,
        other: Union[Mapping[bytes, bytes], Iterable[tuple[bytes, bytes]], None] = None,
        **kwargs: bytes,
    ) -> None: ...
    def clear(self) -> None: ...

class Iter(Iterator[Any]):
    def __iter__(self) -> Iter: ...
    def __next__(self) -> Any: ...

class Snapshot:
    """A consistent view of the database, until closed."""

    def get(self, table: Table, key: bytes, default: Optional[bytes] = None) -> Optional[bytes]: ...
    def range(
        self,
        table: Table,
        start: Optional[bytes] = None,
        end: Optional[bytes] = None,
        reverse: bool = False,
    ) -> Iterator[tuple[bytes, bytes]]: ...
    def prefix(self, table: Table, prefix: bytes, reverse: bool = False) -> Iterator[tuple[bytes, bytes]]: ...
    def close(self) -> None: ...
    def __enter__(self) -> Snapshot: ...
    def __exit__(self, *exc: object) -> bool: ...

class Batch:
    """Writes across tables, applied whole."""

    def put(self, table: Table, key: bytes, value: bytes) -> None: ...
    def delete(self, table: Table, key: bytes) -> None: ...
    def delete_range(self, table: Table, start: bytes, end: bytes) -> None: ...
    def write(self) -> None: ...
    def __len__(self) -> int: ...
    def __enter__(self) -> Batch: ...
    def __exit__(self, *exc: object) -> bool: ...

class Transaction:
    """A transaction: snapshot isolation, the first committer wins."""

    def get(self, table: Table, key: bytes, default: Optional[bytes] = None) -> Optional[bytes]: ...
    def get_for_update(self, table: Table, key: bytes, default: Optional[bytes] = None) -> Optional[bytes]: ...
    def put(self, table: Table, key: bytes, value: bytes) -> None: ...
    def delete(self, table: Table, key: bytes) -> None: ...
    def delete_range(self, table: Table, start: bytes, end: bytes) -> None: ...
    def commit(self) -> None: ...
    def rollback(self) -> None: ...
    def __enter__(self) -> Transaction: ...
    def __exit__(self, *exc: object) -> bool: ...

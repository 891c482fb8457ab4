"""spinney: an embedded storage engine whose tables are B-trees or LSM trees,
chosen per table, in one database.

    import spinney

    with spinney.open("/tmp/bank") as db:
        accounts = db.table("accounts", "btree")
        accounts[b"alice"] = b"90"
        with db.transaction() as tx:
            tx.put(accounts, b"bob", b"110")
        print(dict(accounts.items()))

Keys and values are bytes. Engine calls release the GIL. Errors are the
exceptions of ``spinney.errors``, all under ``spinney.Error``.
"""

from collections.abc import MutableMapping

from . import errors
from ._spinney import TRANSACT_ATTEMPTS, Batch, Db, Iter, Snapshot, Table, Transaction, open
from .errors import (
    ClosedError,
    ConflictError,
    CorruptionError,
    Error,
    InvalidArgumentError,
    IoError,
    LockedError,
    NewerFormatError,
    NoSuchTableError,
    ReadOnlyError,
    TableExistsError,
    UnsupportedError,
)

# A table is a mutable mapping of bytes to bytes: code written for such
# mappings (shelve.Shelf over one, dbm-style code) takes it as it is.
MutableMapping.register(Table)

__all__ = [
    "open",
    "TRANSACT_ATTEMPTS",
    "Db",
    "Table",
    "Snapshot",
    "Batch",
    "Transaction",
    "Iter",
    "errors",
    "Error",
    "CorruptionError",
    "ConflictError",
    "ReadOnlyError",
    "IoError",
    "InvalidArgumentError",
    "NoSuchTableError",
    "TableExistsError",
    "LockedError",
    "UnsupportedError",
    "ClosedError",
    "NewerFormatError",
]

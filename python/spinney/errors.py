"""The exceptions spinney raises: every one is a ``spinney.Error``."""


class Error(Exception):
    """An error of spinney."""


class CorruptionError(Error):
    """A file is damaged; the message names it and the place."""


class ConflictError(Error):
    """A transaction's commit lost to an earlier commit of a key it wrote or
    read for update; nothing of it was written. Run it again
    (``Db.transact`` does)."""


class ReadOnlyError(Error):
    """The database refuses writes: opened read-only, or a write or sync
    failed (the message says which)."""


class IoError(Error, OSError):
    """The operating system refused a read, write or sync."""


class InvalidArgumentError(Error, ValueError):
    """A bad argument: a key too long, a name not valid, an unknown option."""


class NoSuchTableError(Error, KeyError):
    """No table of that name."""


class TableExistsError(Error):
    """A table of that name exists."""


class LockedError(Error):
    """Another process holds the database."""


class UnsupportedError(Error):
    """Valid, but not supported by this build or table kind."""


class ClosedError(Error):
    """The database is closed."""


class NewerFormatError(Error):
    """A file was written by a newer spinney."""

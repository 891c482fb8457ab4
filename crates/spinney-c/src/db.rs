//! Options, opening and closing, tables, snapshots and figures.

use std::ffi::{c_char, CStr};

use spinney::{Compression, Db, Durability, Options, Snapshot, Table, TableKind, TableOptions};

use crate::{
    c_bytes, c_string, handle, handle_mut, invalid, put_out, run, run_or, spinney_status, CResult,
};

/// Options of a database (spinney::Options), made by
/// spinney_options_create with spinney's defaults.
pub struct spinney_options_t {
    pub(crate) options: Options,
}

/// Options of a table (spinney::TableOptions), made by
/// spinney_table_options_create.
pub struct spinney_table_options_t {
    pub(crate) options: TableOptions,
}

/// An open database.
pub struct spinney_db_t {
    pub(crate) db: Db,
}

/// A table of a database.
pub struct spinney_table_t {
    pub(crate) table: Table,
}

/// A consistent view of the database as of its creation.
pub struct spinney_snapshot_t {
    pub(crate) snapshot: Snapshot,
}

/// A table kind: an LSM tree.
pub const SPINNEY_LSM: i32 = 0;
/// A table kind: a B-tree.
pub const SPINNEY_BTREE: i32 = 1;

/// Durability: never sync (a crash keeps a prefix of the commits).
pub const SPINNEY_DURABILITY_OFF: i32 = 0;
/// Durability (the default): each commit handed to the OS, synced at
/// flushes and on close.
pub const SPINNEY_DURABILITY_NORMAL: i32 = 1;
/// Durability: each commit synced before it returns.
pub const SPINNEY_DURABILITY_FULL: i32 = 2;

/// Compression: none (the default).
pub const SPINNEY_COMPRESSION_NONE: i32 = 0;
/// Compression: LZ4.
pub const SPINNEY_COMPRESSION_LZ4: i32 = 1;
/// Compression: zstd.
pub const SPINNEY_COMPRESSION_ZSTD: i32 = 2;

/// spinney's default options (create_if_missing on, Normal durability, a
/// 64 MiB cache, two background threads). Free with
/// spinney_options_destroy. NULL only if spinney panicked.
#[no_mangle]
pub extern "C" fn spinney_options_create() -> *mut spinney_options_t {
    run_or(std::ptr::null_mut(), || {
        Box::into_raw(Box::new(spinney_options_t {
            options: Options::default(),
        }))
    })
}

/// Frees options (NULL is ignored).
#[no_mangle]
pub extern "C" fn spinney_options_destroy(options: *mut spinney_options_t) {
    if !options.is_null() {
        // SAFETY: made by spinney_options_create, destroyed once.
        drop(unsafe { Box::from_raw(options) });
    }
}

/// Runs a setter of database options.
fn set(
    options: *mut spinney_options_t,
    errptr: *mut *mut c_char,
    f: impl FnOnce(&mut Options) -> CResult<()>,
) -> spinney_status {
    run(errptr, || {
        f(&mut handle_mut(options, "options")?.options)?;
        Ok(spinney_status::SPINNEY_OK)
    })
}

/// Runs a setter of table options.
fn set_table(
    options: *mut spinney_table_options_t,
    errptr: *mut *mut c_char,
    f: impl FnOnce(&mut TableOptions) -> CResult<()>,
) -> spinney_status {
    run(errptr, || {
        f(&mut handle_mut(options, "table options")?.options)?;
        Ok(spinney_status::SPINNEY_OK)
    })
}

/// Whether opening creates a missing database (default 1).
#[no_mangle]
pub extern "C" fn spinney_options_set_create_if_missing(
    options: *mut spinney_options_t,
    value: i32,
    errptr: *mut *mut c_char,
) -> spinney_status {
    set(options, errptr, |o| {
        o.create_if_missing = value != 0;
        Ok(())
    })
}

/// Whether to open without writing a byte (default 0): a shared lock,
/// beside other read-only openers.
#[no_mangle]
pub extern "C" fn spinney_options_set_read_only(
    options: *mut spinney_options_t,
    value: i32,
    errptr: *mut *mut c_char,
) -> spinney_status {
    set(options, errptr, |o| {
        o.read_only = value != 0;
        Ok(())
    })
}

/// SPINNEY_DURABILITY_OFF, _NORMAL (the default) or _FULL.
#[no_mangle]
pub extern "C" fn spinney_options_set_durability(
    options: *mut spinney_options_t,
    durability: i32,
    errptr: *mut *mut c_char,
) -> spinney_status {
    set(options, errptr, |o| {
        o.durability = match durability {
            SPINNEY_DURABILITY_OFF => Durability::Off,
            SPINNEY_DURABILITY_NORMAL => Durability::Normal,
            SPINNEY_DURABILITY_FULL => Durability::Full,
            other => return invalid(format!("durability {other} is not 0, 1 or 2")),
        };
        Ok(())
    })
}

/// The cache's budget in bytes, for SST blocks and B-tree pages together.
#[no_mangle]
pub extern "C" fn spinney_options_set_cache_size(
    options: *mut spinney_options_t,
    bytes: u64,
    errptr: *mut *mut c_char,
) -> spinney_status {
    set(options, errptr, |o| {
        o.cache_size = bytes;
        Ok(())
    })
}

/// Background threads (default 2; 0: writers do the work).
#[no_mangle]
pub extern "C" fn spinney_options_set_background_threads(
    options: *mut spinney_options_t,
    threads: usize,
    errptr: *mut *mut c_char,
) -> spinney_status {
    set(options, errptr, |o| {
        o.background_threads = threads;
        Ok(())
    })
}

/// The defaults of a table of `kind` (SPINNEY_LSM or SPINNEY_BTREE). Free
/// with spinney_table_options_destroy. NULL for another kind.
#[no_mangle]
pub extern "C" fn spinney_table_options_create(kind: i32) -> *mut spinney_table_options_t {
    run_or(std::ptr::null_mut(), || {
        let options = match kind {
            SPINNEY_LSM => TableOptions::lsm(),
            SPINNEY_BTREE => TableOptions::btree(),
            _ => return std::ptr::null_mut(),
        };
        Box::into_raw(Box::new(spinney_table_options_t { options }))
    })
}

/// Frees table options (NULL is ignored).
#[no_mangle]
pub extern "C" fn spinney_table_options_destroy(options: *mut spinney_table_options_t) {
    if !options.is_null() {
        // SAFETY: made by spinney_table_options_create, destroyed once.
        drop(unsafe { Box::from_raw(options) });
    }
}

/// SPINNEY_COMPRESSION_NONE, _LZ4 or _ZSTD, of SST blocks or B-tree pages.
#[no_mangle]
pub extern "C" fn spinney_table_options_set_compression(
    options: *mut spinney_table_options_t,
    compression: i32,
    errptr: *mut *mut c_char,
) -> spinney_status {
    set_table(options, errptr, |o| {
        o.compression = match compression {
            SPINNEY_COMPRESSION_NONE => Compression::None,
            SPINNEY_COMPRESSION_LZ4 => Compression::Lz4,
            SPINNEY_COMPRESSION_ZSTD => Compression::Zstd,
            other => return invalid(format!("compression {other} is not 0, 1 or 2")),
        };
        Ok(())
    })
}

/// A B-tree table's page size: a power of two from 4096 to 32768
/// (checked when the table is created).
#[no_mangle]
pub extern "C" fn spinney_table_options_set_page_size(
    options: *mut spinney_table_options_t,
    bytes: usize,
    errptr: *mut *mut c_char,
) -> spinney_status {
    set_table(options, errptr, |o| {
        o.page_size = bytes;
        Ok(())
    })
}

/// An LSM table's bloom filter bits per key (0: no filter).
#[no_mangle]
pub extern "C" fn spinney_table_options_set_bloom_bits_per_key(
    options: *mut spinney_table_options_t,
    bits: u32,
    errptr: *mut *mut c_char,
) -> spinney_status {
    set_table(options, errptr, |o| {
        o.bloom_bits_per_key = bits;
        Ok(())
    })
}

/// An LSM table's memtable size in bytes.
#[no_mangle]
pub extern "C" fn spinney_table_options_set_write_buffer_size(
    options: *mut spinney_table_options_t,
    bytes: usize,
    errptr: *mut *mut c_char,
) -> spinney_status {
    set_table(options, errptr, |o| {
        o.write_buffer_size = bytes;
        Ok(())
    })
}

fn c_str<'a>(ptr: *const c_char, what: &str) -> CResult<&'a str> {
    if ptr.is_null() {
        return invalid(format!("{what} is NULL"));
    }
    // SAFETY: non-NULL, and the caller passes a NUL-terminated string.
    let s = unsafe { CStr::from_ptr(ptr) };
    s.to_str()
        .or_else(|_| invalid(format!("{what} is not UTF-8")))
}

/// Opens (or, with create_if_missing, creates) the database in directory
/// `path`; `options` may be NULL for the defaults. On success *db is the
/// database, which spinney_close closes and frees.
#[no_mangle]
pub extern "C" fn spinney_open(
    path: *const c_char,
    options: *const spinney_options_t,
    db: *mut *mut spinney_db_t,
    errptr: *mut *mut c_char,
) -> spinney_status {
    put_out(db, std::ptr::null_mut());
    run(errptr, || {
        let path = c_str(path, "path")?;
        if db.is_null() {
            return invalid("db (the out-pointer) is NULL");
        }
        let options = match options.is_null() {
            true => Options::default(),
            false => handle(options, "options")?.options.clone(),
        };
        let opened = Db::open(path, options)?;
        put_out(db, Box::into_raw(Box::new(spinney_db_t { db: opened })));
        Ok(spinney_status::SPINNEY_OK)
    })
}

/// Closes the database (its memtables flushed, its log synced) and frees
/// the handle, whatever the status (NULL is ignored). Handles of its
/// tables, snapshots, transactions and cursors must still be destroyed.
#[no_mangle]
pub extern "C" fn spinney_close(db: *mut spinney_db_t, errptr: *mut *mut c_char) -> spinney_status {
    run(errptr, || {
        if db.is_null() {
            return Ok(spinney_status::SPINNEY_OK);
        }
        // SAFETY: made by spinney_open, closed once.
        let db = unsafe { Box::from_raw(db) };
        db.db.close()?;
        Ok(spinney_status::SPINNEY_OK)
    })
}

fn table_out(
    table: *mut *mut spinney_table_t,
    made: impl FnOnce() -> spinney::Result<Table>,
) -> CResult<spinney_status> {
    if table.is_null() {
        return invalid("table (the out-pointer) is NULL");
    }
    let t = made()?;
    put_out(table, Box::into_raw(Box::new(spinney_table_t { table: t })));
    Ok(spinney_status::SPINNEY_OK)
}

/// Creates table `name` (SPINNEY_TABLE_EXISTS if it exists). `options`
/// NULL: an LSM table with the defaults. Free *table with
/// spinney_table_destroy.
#[no_mangle]
pub extern "C" fn spinney_create_table(
    db: *const spinney_db_t,
    name: *const c_char,
    options: *const spinney_table_options_t,
    table: *mut *mut spinney_table_t,
    errptr: *mut *mut c_char,
) -> spinney_status {
    put_out(table, std::ptr::null_mut());
    run(errptr, || {
        let (db, name) = (handle(db, "db")?, c_str(name, "name")?);
        let options = table_options(options)?;
        table_out(table, || db.db.create_table(name, options))
    })
}

/// Opens table `name`, creating it with `options` if it is missing; an
/// existing table of another kind or page size is refused.
#[no_mangle]
pub extern "C" fn spinney_open_table(
    db: *const spinney_db_t,
    name: *const c_char,
    options: *const spinney_table_options_t,
    table: *mut *mut spinney_table_t,
    errptr: *mut *mut c_char,
) -> spinney_status {
    put_out(table, std::ptr::null_mut());
    run(errptr, || {
        let (db, name) = (handle(db, "db")?, c_str(name, "name")?);
        let options = table_options(options)?;
        table_out(table, || db.db.open_table(name, options))
    })
}

/// The existing table `name` (SPINNEY_NO_SUCH_TABLE if there is none).
#[no_mangle]
pub extern "C" fn spinney_get_table(
    db: *const spinney_db_t,
    name: *const c_char,
    table: *mut *mut spinney_table_t,
    errptr: *mut *mut c_char,
) -> spinney_status {
    put_out(table, std::ptr::null_mut());
    run(errptr, || {
        let (db, name) = (handle(db, "db")?, c_str(name, "name")?);
        table_out(table, || db.db.table(name))
    })
}

fn table_options(options: *const spinney_table_options_t) -> CResult<TableOptions> {
    match options.is_null() {
        true => Ok(TableOptions::lsm()),
        false => Ok(handle(options, "table options")?.options.clone()),
    }
}

/// Drops table `name` and its files. Its handles then answer
/// SPINNEY_NO_SUCH_TABLE; destroy them.
#[no_mangle]
pub extern "C" fn spinney_drop_table(
    db: *const spinney_db_t,
    name: *const c_char,
    errptr: *mut *mut c_char,
) -> spinney_status {
    run(errptr, || {
        let (db, name) = (handle(db, "db")?, c_str(name, "name")?);
        db.db.drop_table(name)?;
        Ok(spinney_status::SPINNEY_OK)
    })
}

/// The names of the tables, in order: *names is an array of *count
/// NUL-terminated names, freed with spinney_free_names.
#[no_mangle]
pub extern "C" fn spinney_list_tables(
    db: *const spinney_db_t,
    names: *mut *mut *mut c_char,
    count: *mut usize,
    errptr: *mut *mut c_char,
) -> spinney_status {
    put_out(names, std::ptr::null_mut());
    put_out(count, 0);
    run(errptr, || {
        let db = handle(db, "db")?;
        if names.is_null() || count.is_null() {
            return invalid("names or count (the out-pointers) is NULL");
        }
        let tables = db.db.tables();
        let list: Box<[*mut c_char]> = tables.iter().map(|t| c_string(&t.name)).collect();
        put_out(count, list.len());
        put_out(names, Box::into_raw(list).cast::<*mut c_char>());
        Ok(spinney_status::SPINNEY_OK)
    })
}

/// Frees a list of names from spinney_list_tables (NULL is ignored).
#[no_mangle]
pub extern "C" fn spinney_free_names(names: *mut *mut c_char, count: usize) {
    if names.is_null() {
        return;
    }
    // SAFETY: made by spinney_list_tables with this count, freed once.
    let list = unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(names, count)) };
    for &name in list.iter() {
        crate::spinney_free(name.cast());
    }
}

/// Frees a table handle (NULL is ignored); the table stays.
#[no_mangle]
pub extern "C" fn spinney_table_destroy(table: *mut spinney_table_t) {
    if !table.is_null() {
        // SAFETY: made by this API, destroyed once.
        drop(unsafe { Box::from_raw(table) });
    }
}

/// The table's kind: SPINNEY_LSM or SPINNEY_BTREE (-1 for NULL).
#[no_mangle]
pub extern "C" fn spinney_table_kind(table: *const spinney_table_t) -> i32 {
    run_or(-1, || match handle(table, "table") {
        Ok(t) => match t.table.options().kind {
            TableKind::Btree => SPINNEY_BTREE,
            _ => SPINNEY_LSM,
        },
        Err(_) => -1,
    })
}

/// A snapshot: reads through it see the database as of now, until it is
/// destroyed. NULL for a NULL db.
#[no_mangle]
pub extern "C" fn spinney_snapshot_create(db: *const spinney_db_t) -> *mut spinney_snapshot_t {
    run_or(std::ptr::null_mut(), || match handle(db, "db") {
        Ok(db) => Box::into_raw(Box::new(spinney_snapshot_t {
            snapshot: db.db.snapshot(),
        })),
        Err(_) => std::ptr::null_mut(),
    })
}

/// Frees a snapshot (NULL is ignored): the versions it kept may go.
#[no_mangle]
pub extern "C" fn spinney_snapshot_destroy(snapshot: *mut spinney_snapshot_t) {
    if !snapshot.is_null() {
        // SAFETY: made by spinney_snapshot_create, destroyed once.
        drop(unsafe { Box::from_raw(snapshot) });
    }
}

/// Flushes every LSM table's memtable and checkpoints every B-tree table.
#[no_mangle]
pub extern "C" fn spinney_flush(
    db: *const spinney_db_t,
    errptr: *mut *mut c_char,
) -> spinney_status {
    run(errptr, || {
        handle(db, "db")?.db.flush()?;
        Ok(spinney_status::SPINNEY_OK)
    })
}

/// The database's figures (spinney::Stats) as JSON: *json is a
/// NUL-terminated text of *len bytes, freed with spinney_free.
#[no_mangle]
pub extern "C" fn spinney_stats_json(
    db: *const spinney_db_t,
    json: *mut *mut c_char,
    len: *mut usize,
    errptr: *mut *mut c_char,
) -> spinney_status {
    put_out(json, std::ptr::null_mut());
    put_out(len, 0);
    run(errptr, || {
        let db = handle(db, "db")?;
        if json.is_null() {
            return invalid("json (the out-pointer) is NULL");
        }
        let text = serde_json::to_string(&db.db.stats())
            .or_else(|e| invalid(format!("stats do not serialize: {e}")))?;
        put_out(len, text.len());
        put_out(json, c_bytes(text.as_bytes()));
        Ok(spinney_status::SPINNEY_OK)
    })
}

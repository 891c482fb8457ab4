//! The model's own tests: crashes, faults, handles and locks.

use super::*;

fn io_kind(result: Result<impl Sized>) -> io::ErrorKind {
    match result {
        Err(Error::Io { source, .. }) => source.kind(),
        Err(other) => panic!("expected an I/O error, got {other}"),
        Ok(_) => panic!("expected an I/O error, got success"),
    }
}

fn io_message(result: Result<impl Sized>) -> String {
    match result {
        Err(Error::Io { source, .. }) => source.to_string(),
        Err(other) => panic!("expected an I/O error, got {other}"),
        Ok(_) => panic!("expected an I/O error, got success"),
    }
}

/// A file system with the directory "db", made durable.
fn fs_with_db() -> Arc<FaultFs> {
    let fs = FaultFs::new();
    fs.create_dir_all(Path::new("db")).expect("mkdir");
    fs
}

/// Creates `path` holding `data`, synced, and its entry synced.
fn write_durable(fs: &FaultFs, path: &str, data: &[u8]) {
    let path = Path::new(path);
    let mut file = fs.create(path).expect("create");
    file.append(data).expect("append");
    file.sync().expect("sync");
    fs.sync_dir(path.parent().expect("parent"))
        .expect("sync_dir");
}

fn read(fs: &FaultFs, path: &str) -> Vec<u8> {
    fs.read_all(Path::new(path)).expect("read_all")
}

#[test]
fn unsynced_appends_are_lost_on_crash() {
    // Goal: bytes appended after the last sync do not survive a crash.
    let fs = fs_with_db();
    write_durable(&fs, "db/f", b"synced");
    let mut file = fs.create(Path::new("db/f")).expect("create");
    file.append(b"synced").expect("append");
    file.sync().expect("sync");
    file.append(b"+lost").expect("append");
    file.flush().expect("flush");
    assert_eq!(read(&fs, "db/f"), b"synced+lost");
    fs.crash(None);
    assert_eq!(read(&fs, "db/f"), b"synced");
}

#[test]
fn synced_data_and_entries_survive_crash() {
    let fs = fs_with_db();
    write_durable(&fs, "db/f", b"hello");
    fs.crash(None);
    assert_eq!(read(&fs, "db/f"), b"hello");
    assert_eq!(fs.list(Path::new("db")).expect("list"), vec!["f"]);
}

#[test]
fn create_without_sync_dir_is_lost_on_crash() {
    // Goal: a synced file whose directory entry was never synced is gone.
    let fs = fs_with_db();
    let mut file = fs.create(Path::new("db/new")).expect("create");
    file.append(b"data").expect("append");
    file.sync().expect("sync");
    fs.crash(None);
    assert!(!fs.exists(Path::new("db/new")).expect("exists"));
    assert_eq!(fs.files(), Vec::<PathBuf>::new());
}

#[test]
fn rename_without_sync_dir_is_undone_by_crash() {
    // Goal: after a crash the old name is back with its durable bytes and
    // a replaced target has its old contents again.
    let fs = fs_with_db();
    write_durable(&fs, "db/CURRENT", b"old");
    write_durable(&fs, "db/tmp", b"new");
    fs.rename(Path::new("db/tmp"), Path::new("db/CURRENT"))
        .expect("rename");
    assert_eq!(read(&fs, "db/CURRENT"), b"new");
    assert!(!fs.exists(Path::new("db/tmp")).expect("exists"));
    fs.crash(None);
    assert_eq!(read(&fs, "db/CURRENT"), b"old");
    assert_eq!(read(&fs, "db/tmp"), b"new");

    // With the directory synced the rename sticks.
    fs.rename(Path::new("db/tmp"), Path::new("db/CURRENT"))
        .expect("rename");
    fs.sync_dir(Path::new("db")).expect("sync_dir");
    fs.crash(None);
    assert_eq!(read(&fs, "db/CURRENT"), b"new");
    assert_eq!(fs.list(Path::new("db")).expect("list"), vec!["CURRENT"]);
}

#[test]
fn remove_without_sync_dir_is_undone_by_crash() {
    let fs = fs_with_db();
    write_durable(&fs, "db/f", b"kept");
    fs.remove(Path::new("db/f")).expect("remove");
    assert!(!fs.exists(Path::new("db/f")).expect("exists"));
    fs.crash(None);
    assert_eq!(read(&fs, "db/f"), b"kept");
}

#[test]
fn truncating_create_without_sync_restores_old_bytes() {
    // Goal: `create` of an existing name truncates the same node; until
    // synced, a crash brings the old bytes back, and no tear applies.
    let fs = fs_with_db();
    write_durable(&fs, "db/f", b"old contents");
    let mut file = fs.create(Path::new("db/f")).expect("create");
    file.append(b"new contents, longer").expect("append");
    fs.crash(Some(7));
    assert_eq!(read(&fs, "db/f"), b"old contents");
}

#[test]
fn torn_tail_keeps_a_prefix_of_unsynced_bytes_and_never_more() {
    // Goal: across many seeds, the file after a torn crash is the synced
    // bytes plus a prefix of the unsynced ones, and the prefix length
    // varies from none to all.
    let synced = b"synced:".to_vec();
    let unsynced: Vec<u8> = (0u8..32).collect();
    let mut lengths = BTreeSet::new();
    for seed in 0..200 {
        let fs = fs_with_db();
        let mut file = fs.create(Path::new("db/log")).expect("create");
        file.append(&synced).expect("append");
        file.sync().expect("sync");
        fs.sync_dir(Path::new("db")).expect("sync_dir");
        file.append(&unsynced).expect("append");
        fs.crash(Some(seed));
        let after = read(&fs, "db/log");
        assert!(after.len() <= synced.len() + unsynced.len(), "seed {seed}");
        let (head, tail) = after.split_at(synced.len());
        assert_eq!(head, synced.as_slice(), "seed {seed}");
        assert_eq!(tail, &unsynced[..tail.len()], "seed {seed}");
        lengths.insert(tail.len());
        // What the tear kept is now durable.
        fs.crash(None);
        assert_eq!(read(&fs, "db/log"), after, "seed {seed}");
    }
    assert!(lengths.len() > 10, "tear lengths barely vary: {lengths:?}");
}

#[test]
fn eio_fails_exactly_the_chosen_op() {
    // Goal: inject(2, Eio) fails the third mutating call and no other.
    let fs = fs_with_db();
    let mut file = fs.create(Path::new("db/f")).expect("create");
    let start = fs.mutating_ops();
    fs.inject(2, FaultKind::Eio);
    file.append(b"a").expect("op 0");
    file.append(b"b").expect("op 1");
    match file.append(b"c") {
        Err(Error::Io { source, .. }) => {
            assert_eq!(source.kind(), io::ErrorKind::Other);
            assert_eq!(source.to_string(), "injected EIO");
        }
        other => panic!("expected EIO, got {:?}", other.map(|_| ())),
    }
    assert_eq!(fs.mutating_ops(), start + 3);
    // The failed append wrote nothing; the op after it is unharmed.
    file.append(b"d").expect("op 3");
    assert_eq!(read(&fs, "db/f"), b"abd");
    // Reads do not count.
    fs.inject(0, FaultKind::Eio);
    fs.list(Path::new("db")).expect("list");
    fs.open(Path::new("db/f")).expect("open");
    assert!(fs.sync_dir(Path::new("db")).is_err());
    fs.sync_dir(Path::new("db")).expect("second sync_dir");
}

#[test]
fn no_space_is_enospc_and_writes_nothing() {
    let fs = fs_with_db();
    let mut file = fs.create(Path::new("db/f")).expect("create");
    file.append(b"kept").expect("append");
    fs.inject(0, FaultKind::NoSpace);
    match file.append(b"refused") {
        Err(Error::Io { source, op, .. }) => {
            assert_eq!(source.raw_os_error(), Some(ENOSPC));
            assert_eq!(op, "write");
        }
        other => panic!("expected ENOSPC, got {:?}", other.map(|_| ())),
    }
    assert_eq!(read(&fs, "db/f"), b"kept");
    assert_eq!(file.len(), 4);
}

#[test]
fn several_faults_fire_in_turn_and_clear_faults_drops_them() {
    let fs = fs_with_db();
    fs.inject(0, FaultKind::Eio);
    fs.inject(1, FaultKind::NoSpace);
    fs.inject(5, FaultKind::Eio);
    assert!(fs.sync_dir(Path::new("db")).is_err());
    assert!(fs.sync_dir(Path::new("db")).is_err());
    fs.clear_faults();
    for _ in 0..10 {
        fs.sync_dir(Path::new("db")).expect("sync_dir");
    }
}

#[test]
fn crash_fault_fails_everything_until_crash() {
    // Goal: once a Crash fault fires, every call fails, reads included,
    // and `crash` ends it and rolls back to what was durable.
    let fs = fs_with_db();
    write_durable(&fs, "db/f", b"durable");
    let reader = fs.open(Path::new("db/f")).expect("open");
    let mut file = fs.create(Path::new("db/g")).expect("create");
    fs.inject(1, FaultKind::Crash);
    file.append(b"x").expect("op 0");
    assert!(io_message(file.sync()).contains("crashed"));
    assert!(fs.is_crashed());
    assert!(file.append(b"y").is_err());
    assert!(fs.open(Path::new("db/f")).is_err());
    assert!(reader.read_at(0, 1).is_err());
    assert!(fs.list(Path::new("db")).is_err());
    assert!(fs.exists(Path::new("db/f")).is_err());
    assert!(fs.lock(Path::new("db/LOCK")).is_err());
    assert!(fs.create(Path::new("db/h")).is_err());
    fs.crash(None);
    assert!(!fs.is_crashed());
    assert_eq!(read(&fs, "db/f"), b"durable");
    assert!(!fs.exists(Path::new("db/g")).expect("exists"));
}

#[test]
fn handles_from_before_a_crash_are_dead() {
    let fs = fs_with_db();
    write_durable(&fs, "db/f", b"abc");
    let mut file = fs.create(Path::new("db/g")).expect("create");
    fs.sync_dir(Path::new("db")).expect("sync_dir");
    let reader = fs.open(Path::new("db/f")).expect("open");
    fs.crash(None);
    assert!(io_message(file.append(b"late")).contains("crashed"));
    assert!(file.sync().is_err());
    assert!(reader.read_at(0, 1).is_err());
    // New handles on the same files work.
    let reader = fs.open(Path::new("db/f")).expect("open");
    assert_eq!(reader.read_at(1, 2).expect("read"), b"bc");
    assert_eq!(fs.file_len(Path::new("db/g")), Some(0));
}

#[test]
fn lock_conflicts_until_guard_drops() {
    let fs = fs_with_db();
    let lock_path = Path::new("db/LOCK");
    let guard = fs.lock(lock_path).expect("lock");
    match fs.lock(lock_path) {
        Err(Error::Locked { path }) => assert_eq!(path, lock_path),
        other => panic!("expected Locked, got {:?}", other.map(|_| ())),
    }
    drop(guard);
    let guard = fs.lock(lock_path).expect("relock after drop");
    // A crash releases it; the stale guard must not release the new one.
    fs.crash(None);
    let fresh = fs.lock(lock_path).expect("lock after crash");
    drop(guard);
    assert!(matches!(fs.lock(lock_path), Err(Error::Locked { .. })));
    drop(fresh);
    fs.lock(lock_path).expect("lock after release");
}

#[test]
fn reads_see_appends_and_fail_past_the_end() {
    let fs = fs_with_db();
    let mut file = fs.create(Path::new("db/f")).expect("create");
    file.append(b"abc").expect("append");
    let reader = fs.open(Path::new("db/f")).expect("open");
    file.append(b"def").expect("append");
    assert_eq!(reader.len(), 3);
    assert_eq!(reader.read_at(2, 3).expect("read"), b"cde");
    assert_eq!(io_kind(reader.read_at(4, 3)), io::ErrorKind::UnexpectedEof);
    assert_eq!(
        io_kind(reader.read_at(u64::MAX, 1)),
        io::ErrorKind::UnexpectedEof
    );
    assert_eq!(fs.io_stats().snapshot().bytes_read, 3);
    assert_eq!(fs.io_stats().snapshot().bytes_written, 6);
}

#[test]
fn missing_files_and_directories_are_not_found() {
    let fs = fs_with_db();
    assert_eq!(
        io_kind(fs.open(Path::new("db/nope"))),
        io::ErrorKind::NotFound
    );
    assert_eq!(
        io_kind(fs.remove(Path::new("db/nope"))),
        io::ErrorKind::NotFound
    );
    assert_eq!(
        io_kind(fs.rename(Path::new("db/nope"), Path::new("db/x"))),
        io::ErrorKind::NotFound
    );
    assert_eq!(
        io_kind(fs.create(Path::new("other/f"))),
        io::ErrorKind::NotFound
    );
    assert_eq!(
        io_kind(fs.list(Path::new("other"))),
        io::ErrorKind::NotFound
    );
    assert_eq!(
        io_kind(fs.sync_dir(Path::new("other"))),
        io::ErrorKind::NotFound
    );
}

#[test]
fn list_is_sorted_and_includes_subdirectories() {
    let fs = fs_with_db();
    fs.create_dir_all(Path::new("db/sub/deeper"))
        .expect("mkdir");
    for name in ["db/b", "db/a", "db/./c"] {
        fs.create(Path::new(name)).expect("create");
    }
    assert_eq!(
        fs.list(Path::new("db/")).expect("list"),
        vec!["a", "b", "c", "sub"]
    );
    assert!(fs.exists(Path::new("db/sub")).expect("exists"));
    assert_eq!(
        fs.files(),
        vec![
            PathBuf::from("db/a"),
            PathBuf::from("db/b"),
            PathBuf::from("db/c")
        ]
    );
    // Directories are durable at once; their entries are not.
    fs.crash(None);
    assert_eq!(fs.list(Path::new("db")).expect("list"), vec!["sub"]);
}

#[test]
fn corrupt_byte_flips_current_and_durable_bytes() {
    let fs = fs_with_db();
    write_durable(&fs, "db/f", b"\x00\x01");
    assert!(fs.corrupt_byte(Path::new("db/f"), 1, 0xff));
    assert!(!fs.corrupt_byte(Path::new("db/f"), 2, 0xff));
    assert!(!fs.corrupt_byte(Path::new("db/nope"), 0, 0xff));
    fs.crash(None);
    assert_eq!(read(&fs, "db/f"), b"\x00\xfe");
    assert_eq!(fs.file_len(Path::new("db/f")), Some(2));
}

#[test]
fn unsynced_page_writes_are_kept_whole_torn_or_lost_on_crash() {
    // Goal: a crash keeps synced page bytes exactly, and each unsynced
    // positional write is either fully there, a sector prefix, or absent.
    for seed in 0..40u64 {
        let fs = fs_with_db();
        let path = Path::new("db/f.btree");
        let f = fs.open_paged(path, true).expect("open");
        fs.sync_dir(Path::new("db")).expect("sync dir");
        f.write_at(0, &[1u8; 4096]).expect("write");
        f.sync().expect("sync");
        f.write_at(0, &[2u8; 4096]).expect("write");
        f.write_at(4096, &[3u8; 4096]).expect("write");
        fs.crash(Some(seed));
        let f = fs.open_paged(path, false).expect("reopen");
        let mut buf = vec![0u8; 8192];
        let n = f.read_at(0, &mut buf).expect("read");
        assert!(n >= 4096 && n.is_multiple_of(512), "length {n}");
        let first = buf.get(..4096).expect("first page");
        let switch = first.iter().position(|&b| b != 2).unwrap_or(4096);
        assert!(first.iter().skip(switch).all(|&b| b == 1), "seed {seed}");
        assert_eq!(switch % 512, 0);
        assert!(buf.get(4096..n).expect("tail").iter().all(|&b| b == 3));
    }
}

/// What one append's region holds after a pessimistic crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Fate {
    Kept,
    Lost,
    Torn,
    Garbage,
}

/// Names the fate of `expected` in `file` at `offset`: whole, zeros
/// (or past the end), whole sectors of it then zeros, or neither
/// (garbage). Garbage is told by a byte that is neither its nor zero.
fn fate(file: &[u8], offset: usize, expected: &[u8]) -> Fate {
    let region = file.get(offset..).unwrap_or(&[]);
    let region = region.get(..expected.len()).unwrap_or(region);
    if region == expected {
        return Fate::Kept;
    }
    if region.iter().all(|&b| b == 0) {
        return Fate::Lost;
    }
    let same = region
        .iter()
        .zip(expected)
        .take_while(|(a, b)| a == b)
        .count();
    let rest_zero = region.get(same..).unwrap_or(&[]).iter().all(|&b| b == 0);
    if rest_zero && (offset + same).is_multiple_of(512) {
        Fate::Torn
    } else {
        Fate::Garbage
    }
}

#[test]
fn a_pessimistic_crash_decides_each_append_on_its_own() {
    // Goal: under `PendingWrites::Any` every unsynced append is kept,
    // lost, torn at a sector or filled with garbage, each on its own
    // (a later one may outlive an earlier one), and synced bytes stay.
    // Method: three unsynced appends of 1,000 bytes after a synced
    // one, 200 seeds; every region must be one of the four, and every
    // combination of "first lost, a later one kept" must be seen.
    let appends: Vec<Vec<u8>> = (1..=3u8).map(|i| vec![i; 1000]).collect();
    let mut seen = BTreeSet::new();
    let mut later_outlived_earlier = false;
    for seed in 0..200u64 {
        let fs = fs_with_db();
        write_durable(&fs, "db/log", &[9u8; 100]);
        let mut file = fs.create(Path::new("db/log")).expect("create");
        file.append(&[9u8; 100]).expect("append");
        file.sync().expect("sync");
        for bytes in &appends {
            file.append(bytes).expect("append");
        }
        fs.crash_with(PendingWrites::Any(seed));
        let after = read(&fs, "db/log");
        assert!(after.len() <= 3100, "seed {seed}: {} bytes", after.len());
        assert_eq!(after.get(..100), Some(&[9u8; 100][..]), "seed {seed}");
        let fates: Vec<Fate> = appends
            .iter()
            .enumerate()
            .map(|(i, bytes)| fate(&after, 100 + i * 1000, bytes))
            .collect();
        later_outlived_earlier |= fates[0] == Fate::Lost && fates[2] == Fate::Kept;
        seen.extend(fates);
    }
    assert_eq!(seen.len(), 4, "fates seen: {seen:?}");
    assert!(later_outlived_earlier);
}

#[test]
fn a_pessimistic_crash_keeps_a_prefix_of_the_directory_changes() {
    // Goal: under `PendingWrites::Any` a directory keeps the changes
    // made since its last sync up to some point, in order, and a rename
    // whole: never a later change without an earlier one.
    let prefixes: [&[&str]; 5] = [&[], &["a"], &["a", "b"], &["b", "c"], &["c"]];
    let mut seen = BTreeSet::new();
    for seed in 0..100u64 {
        let fs = fs_with_db();
        for name in ["db/a", "db/b"] {
            let mut f = fs.create(Path::new(name)).expect("create");
            f.append(b"x").expect("append");
            f.sync().expect("sync");
        }
        fs.rename(Path::new("db/a"), Path::new("db/c"))
            .expect("rename");
        fs.remove(Path::new("db/b")).expect("remove");
        fs.crash_with(PendingWrites::Any(seed));
        let names = fs.list(Path::new("db")).expect("list");
        let at = prefixes
            .iter()
            .position(|p| names == *p)
            .unwrap_or_else(|| panic!("seed {seed}: {names:?} is no prefix of the changes"));
        seen.insert(at);
    }
    assert_eq!(seen.len(), prefixes.len(), "prefixes seen: {seen:?}");
}

#[test]
fn a_pessimistic_crash_keeps_an_unsynced_cut_or_not() {
    // Goal: a truncating create not yet synced is, after a crash under
    // `PendingWrites::Any`, either undone (the old bytes) or done (what
    // was appended since, each append with its own fate).
    let mut old = 0;
    let mut cut = 0;
    for seed in 0..60u64 {
        let fs = fs_with_db();
        write_durable(&fs, "db/CURRENT", b"MANIFEST-000001\n");
        let mut file = fs.create(Path::new("db/CURRENT")).expect("create");
        file.append(b"MANIFEST-000002\n").expect("append");
        fs.crash_with(PendingWrites::Any(seed));
        let after = read(&fs, "db/CURRENT");
        if after == b"MANIFEST-000001\n" {
            old += 1;
        } else {
            assert!(after.len() <= 16, "seed {seed}: {after:?}");
            cut += 1;
        }
    }
    assert!(old > 0 && cut > 0, "old {old}, cut {cut}");
}

#[test]
fn fault_fs_is_send_sync_debug() {
    fn assert_traits<T: Send + Sync + fmt::Debug>() {}
    assert_traits::<FaultFs>();
    let fs: Arc<dyn Fs> = FaultFs::new();
    assert!(format!("{fs:?}").contains("FaultFs"));
}

// The RocksDB calls the lab needs beyond its C API (Debian's librocksdb-dev
// 7.8.3), behind plain C functions that ffi.rs declares.
//
// Two calls: compacting every file of one level into the next, which
// db_bench's compact0 and compact1 do through DB::CompactFiles and which
// c.h of 7.8 does not offer (its rocksdb_compact_range_cf always takes every
// level), for the lsm-shape scenario and the db_bench mode's compact0 and
// compact1; and Iterator::Refresh, which c.h of 7.8 lacks too, so that a
// session keeps one iterator per table for its seeks, as spinney's keep a
// cursor.
//
// Errors never cross the boundary as C++ exceptions: every function catches
// them and reports them, as c.cc does, through `errptr` (a malloc()ed
// string the caller frees with rocksdb_free, which is free()).
//
// Thread-safety: as DB::CompactFiles, which may be called from any thread;
// it runs the compaction in the calling thread and returns when it is done.

#include <rocksdb/c.h>
#include <rocksdb/db.h>
#include <rocksdb/metadata.h>
#include <rocksdb/options.h>
#include <rocksdb/perf_level.h>
#include <rocksdb/version.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

static_assert((ROCKSDB_MAJOR == 7 && ROCKSDB_MINOR == 8) ||
                  (ROCKSDB_MAJOR == 11 && ROCKSDB_MINOR == 8),
              "the structs below mirror db/c.cc of RocksDB 7.8 and 11.8; "
              "check them against the c.cc of any other version before "
              "building");

// The C API's handles are structs defined in RocksDB's db/c.cc, opaque in
// c.h. In 7.8.3 the three the shim reads are exactly these: one pointer to
// the C++ object, first and only member. Declaring the same layout here is
// how a C API user reaches the C++ object; it is safe for the packaged
// version because the layout was checked against its binary
// (librocksdb.so.7.8.3: rocksdb_column_family_handle_destroy and
// rocksdb_iter_destroy delete the `rep` they find at offset 0 and free an
// 8-byte struct, and rocksdb_flush_cf passes the pointers found at offset 0
// of the database and column family handles to DB::Flush), and the
// static_assert above stops a build against another version's headers.
// In 11.8.1 (the source librocksdb-sys 0.19.0 bundles, for the lab's
// `rocksdb-current`) db/c.cc declares the same three with `rep` first, and
// the column family handle has a `bool immortal` after it; the shim only
// reads `rep`, at offset 0, and the C API still owns and destroys the
// handles, so the shorter declaration here is enough for both.
extern "C" {
struct rocksdb_t {
  rocksdb::DB* rep;
};
struct rocksdb_column_family_handle_t {
  rocksdb::ColumnFamilyHandle* rep;
};
struct rocksdb_iterator_t {
  rocksdb::Iterator* rep;
};
}

// The numbers the Rust adapter passes to rocksdb_set_perf_level and
// rocksdb_perfcontext_metric, checked against this c.h when the shim
// compiles (the Rust side declares them by hand).
static_assert(rocksdb_disable == 1 && rocksdb_enable_count == 2,
              "perf levels of c.h");
static_assert(rocksdb_disable == static_cast<int>(rocksdb::kDisable) &&
                  rocksdb_enable_count ==
                      static_cast<int>(rocksdb::kEnableCount),
              "c.h's perf levels are perf_level.h's");
static_assert(rocksdb_user_key_comparison_count == 0, "perf metric");
static_assert(rocksdb_block_cache_hit_count == 1, "perf metric");
static_assert(rocksdb_block_read_count == 2, "perf metric");
static_assert(rocksdb_get_from_memtable_count == 16, "perf metric");
static_assert(rocksdb_seek_child_seek_count == 24, "perf metric");
static_assert(rocksdb_bloom_sst_hit_count == 44, "perf metric");
static_assert(rocksdb_bloom_sst_miss_count == 45, "perf metric");

namespace {

// What spinney_rocksdb_compact_level returns.
constexpr int kCompacted = 0;
constexpr int kBusy = 1;
constexpr int kFailed = -1;

// Hands `message` to the caller through `errptr`, as c.cc's SaveError does.
void save_error(char** errptr, const std::string& message) {
  if (errptr == nullptr) {
    return;
  }
  std::free(*errptr);
  *errptr = strdup(message.c_str());
}

}  // namespace

// Compacts every file of `level` of the column family `cf` into
// `level + 1` (DB::CompactFiles, which adds the files of `level + 1` that
// overlap them): 0 when done or when the level holds no file; 1 when a
// background compaction holds some of the files (nothing was done; wait
// for it and call again); -1 on any other failure. Both non-zero results
// leave a message in `errptr`.
//
// The output takes the column family's compression for its level
// (kDisableCompressionOption: CompactionOptions would otherwise default to
// snappy) and is cut into files of target_file_size_base, as the column
// family's own compactions are when levels are static.
extern "C" int spinney_rocksdb_compact_level(rocksdb_t* db,
                                             rocksdb_column_family_handle_t* cf,
                                             int level, char** errptr) {
  try {
    rocksdb::ColumnFamilyMetaData meta;
    db->rep->GetColumnFamilyMetaData(cf->rep, &meta);
    const int levels = static_cast<int>(meta.levels.size());
    if (level < 0 || level + 1 >= levels) {
      save_error(errptr, "compact level " + std::to_string(level) +
                             ": the column family has levels 0 to " +
                             std::to_string(levels - 1) +
                             ", and only a level above the last can be "
                             "compacted into the next");
      return kFailed;
    }
    std::vector<std::string> files;
    for (const rocksdb::LevelMetaData& l : meta.levels) {
      if (l.level != level) {
        continue;
      }
      for (const rocksdb::SstFileMetaData& f : l.files) {
        if (f.being_compacted) {
          save_error(errptr, "compact level " + std::to_string(level) +
                                 ": " + f.relative_filename +
                                 " is being compacted in the background");
          return kBusy;
        }
        files.push_back(f.relative_filename);
      }
    }
    if (files.empty()) {
      return kCompacted;
    }
    rocksdb::CompactionOptions options;
    options.compression = rocksdb::kDisableCompressionOption;
    options.output_file_size_limit =
        db->rep->GetOptions(cf->rep).target_file_size_base;
    const rocksdb::Status s =
        db->rep->CompactFiles(options, cf->rep, files, level + 1);
    if (s.ok()) {
      return kCompacted;
    }
    save_error(errptr, "CompactFiles of level " + std::to_string(level) +
                           ": " + s.ToString());
    // RocksDB says Aborted when a running compaction holds an input file
    // or writes to the output level in an overlapping range.
    return s.IsAborted() ? kBusy : kFailed;
  } catch (const std::exception& e) {
    save_error(errptr, std::string("compact level: ") + e.what());
    return kFailed;
  } catch (...) {
    save_error(errptr, "compact level: an unknown C++ exception");
    return kFailed;
  }
}

// Refreshes the iterator `it` to the database's current state
// (Iterator::Refresh; its position is lost, so the caller seeks next): 0,
// or -1 with a message in `errptr`.
extern "C" int spinney_rocksdb_iter_refresh(rocksdb_iterator_t* it,
                                            char** errptr) {
  try {
    const rocksdb::Status s = it->rep->Refresh();
    if (s.ok()) {
      return 0;
    }
    save_error(errptr, "Iterator::Refresh: " + s.ToString());
    return -1;
  } catch (const std::exception& e) {
    save_error(errptr, std::string("Iterator::Refresh: ") + e.what());
    return -1;
  } catch (...) {
    save_error(errptr, "Iterator::Refresh: an unknown C++ exception");
    return -1;
  }
}

// The version of the RocksDB this process runs ("11.8.1"), as the library
// itself reports it (GetRocksVersionAsString is compiled into the library,
// so it names the copy linked, not the headers the shim was built with),
// copied into `out` (`cap` bytes, NUL-terminated, cut short if need be).
extern "C" void spinney_rocksdb_version(char* out, size_t cap) {
  if (out == nullptr || cap == 0) {
    return;
  }
  try {
    const std::string v = rocksdb::GetRocksVersionAsString(true);
    const size_t n = v.size() < cap - 1 ? v.size() : cap - 1;
    std::memcpy(out, v.data(), n);
    out[n] = '\0';
  } catch (const std::exception&) {
    out[0] = '\0';
  }
}

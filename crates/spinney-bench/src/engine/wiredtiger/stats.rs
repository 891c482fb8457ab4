//! What the WiredTiger adapter reads of WiredTiger's statistics: the keys
//! it reads, and what the store makes of them through a statistics cursor
//! (`handles::Statistics`): the `stats` printout, an LSM tree's shape, and
//! the signs of running LSM work that `waitforcompaction` watches.
//!
//! Thread-safety: a statistics cursor borrows its session mutably, so the
//! session does nothing else meanwhile.

use super::handles::SessionHandle;
use super::WiredTigerStore;
use crate::engine::EngineResult;
use crate::lineup::Engine;

// Statistics keys the adapter reads (wiredtiger.h's `WT_STAT_CONN_*` and
// `WT_STAT_DSRC_*`), with the descriptions WiredTiger gives them; the test
// `wiredtiger_codes_and_statistics_keys_match_the_header` checks each pair.
pub(super) const LSM_WORK_QUEUE_APP: i32 = 1000;
pub(super) const LSM_WORK_QUEUE_MANAGER: i32 = 1001;
pub(super) const LSM_ROWS_MERGED: i32 = 1002;
pub(super) const LSM_CHECKPOINT_THROTTLE: i32 = 1003;
pub(super) const LSM_MERGE_THROTTLE: i32 = 1004;
pub(super) const LSM_WORK_QUEUE_SWITCH: i32 = 1005;
pub(super) const LSM_WORK_UNITS_DONE: i32 = 1007;
pub(super) const BLOCK_BYTE_READ: i32 = 1026;
pub(super) const BLOCK_BYTE_WRITE: i32 = 1027;
pub(super) const BLOCK_BYTE_WRITE_CHECKPOINT: i32 = 1028;
pub(super) const CACHE_BYTES_INUSE: i32 = 1037;
pub(super) const CACHE_BYTES_READ: i32 = 1040;
pub(super) const CACHE_BYTES_WRITE: i32 = 1041;
pub(super) const CACHE_BYTES_MAX: i32 = 1103;
pub(super) const CACHE_EVICTION_DIRTY: i32 = 1105;
pub(super) const CACHE_EVICTION_APP: i32 = 1112;
pub(super) const CACHE_READ: i32 = 1117;
pub(super) const CACHE_WRITE: i32 = 1129;
pub(super) const CACHE_BYTES_DIRTY: i32 = 1134;
pub(super) const CACHE_EVICTION_CLEAN: i32 = 1136;
pub(super) const LOG_BYTES_WRITTEN: i32 = 1233;
pub(super) const LOG_FLUSH: i32 = 1235;
pub(super) const LOG_SYNC: i32 = 1246;
pub(super) const LOG_WRITES: i32 = 1250;
pub(super) const TXN_CHECKPOINT: i32 = 1384;
pub(super) const TXN_COMMIT: i32 = 1398;
pub(super) const TXN_ROLLBACK: i32 = 1399;

pub(super) const BLOOM_FALSE_POSITIVE: i32 = 2000;
pub(super) const BLOOM_HIT: i32 = 2001;
pub(super) const BLOOM_MISS: i32 = 2002;
pub(super) const BLOOM_COUNT: i32 = 2005;
pub(super) const LSM_CHUNK_COUNT: i32 = 2006;
pub(super) const LSM_GENERATION_MAX: i32 = 2007;
pub(super) const LSM_LOOKUP_NO_BLOOM: i32 = 2008;
pub(super) const BLOOM_SIZE: i32 = 2011;
pub(super) const BLOCK_SIZE: i32 = 2020;
pub(super) const BTREE_MAXIMUM_DEPTH: i32 = 2034;

/// Connection statistics of the `stats` printout, in its order.
const CONNECTION_PRINTOUT: [i32; 20] = [
    CACHE_BYTES_MAX,
    CACHE_BYTES_INUSE,
    CACHE_BYTES_DIRTY,
    CACHE_BYTES_READ,
    CACHE_BYTES_WRITE,
    CACHE_READ,
    CACHE_WRITE,
    CACHE_EVICTION_CLEAN,
    CACHE_EVICTION_DIRTY,
    CACHE_EVICTION_APP,
    BLOCK_BYTE_READ,
    BLOCK_BYTE_WRITE,
    BLOCK_BYTE_WRITE_CHECKPOINT,
    LOG_BYTES_WRITTEN,
    LOG_WRITES,
    LOG_FLUSH,
    LOG_SYNC,
    TXN_COMMIT,
    TXN_ROLLBACK,
    TXN_CHECKPOINT,
];

/// The LSM manager's statistics (kept by the connection) in the
/// printout of an LSM store.
const LSM_CONNECTION_PRINTOUT: [i32; 7] = [
    LSM_ROWS_MERGED,
    LSM_WORK_UNITS_DONE,
    LSM_WORK_QUEUE_APP,
    LSM_WORK_QUEUE_MANAGER,
    LSM_WORK_QUEUE_SWITCH,
    LSM_MERGE_THROTTLE,
    LSM_CHECKPOINT_THROTTLE,
];

/// Statistics of an LSM table in the `stats` printout.
const LSM_TABLE_PRINTOUT: [i32; 8] = [
    LSM_CHUNK_COUNT,
    LSM_GENERATION_MAX,
    BLOOM_COUNT,
    BLOOM_SIZE,
    BLOOM_HIT,
    BLOOM_MISS,
    BLOOM_FALSE_POSITIVE,
    LSM_LOOKUP_NO_BLOOM,
];

/// Statistics of a B-tree table in the `stats` printout.
const BTREE_TABLE_PRINTOUT: [i32; 2] = [BTREE_MAXIMUM_DEPTH, BLOCK_SIZE];

impl WiredTigerStore {
    /// What moves while LSM work runs: rows merged, block bytes written, and
    /// each table's chunk count.
    pub(super) fn merge_signs(&self, session: &mut SessionHandle<'_>) -> EngineResult<Vec<i64>> {
        let mut signs = Vec::with_capacity(2 + self.tables.len());
        {
            let mut connection = session.statistics(c"statistics:")?;
            signs.push(connection.value(LSM_ROWS_MERGED)?);
            signs.push(connection.value(BLOCK_BYTE_WRITE)?);
        }
        for table in &self.tables {
            signs.push(
                session
                    .statistics(&table.statistics_uri)?
                    .value(LSM_CHUNK_COUNT)?,
            );
        }
        Ok(signs)
    }

    /// The `stats` printout: a selection of the connection's statistics
    /// and of table 0's, in WiredTiger's words.
    pub(super) fn statistics_text(&self) -> EngineResult<String> {
        let mut session = self.conn.session()?;
        let mut text = String::from("WiredTiger statistics (connection)\n");
        let lsm = self.engine == Engine::WiredtigerLsm;
        {
            let lsm_keys: &[i32] = if lsm { &LSM_CONNECTION_PRINTOUT } else { &[] };
            let mut connection = session.statistics(c"statistics:")?;
            for &key in CONNECTION_PRINTOUT.iter().chain(lsm_keys) {
                if let Some((description, value)) = connection.get(key)? {
                    text.push_str(&format!("  {description}: {value}\n"));
                }
            }
        }
        let table = self.table(0)?;
        text.push_str(&format!("WiredTiger statistics (table {})\n", table.name));
        let keys: &[i32] = if lsm {
            &LSM_TABLE_PRINTOUT
        } else {
            &BTREE_TABLE_PRINTOUT
        };
        let mut statistics = session.statistics(&table.statistics_uri)?;
        for &key in keys {
            if let Some((description, value)) = statistics.get(key)? {
                text.push_str(&format!("  {description}: {value}\n"));
            }
        }
        Ok(text)
    }

    /// The LSM shape of table 0: chunks, bloom filters, merge generations.
    pub(super) fn lsm_shape(&self) -> EngineResult<LsmShape> {
        let mut session = self.conn.session()?;
        let table = self.table(0)?;
        let mut statistics = session.statistics(&table.statistics_uri)?;
        Ok(LsmShape {
            chunks: statistics.value(LSM_CHUNK_COUNT)?,
            bloom_filters: statistics.value(BLOOM_COUNT)?,
            bloom_bytes: statistics.value(BLOOM_SIZE)?,
            generation_max: statistics.value(LSM_GENERATION_MAX)?,
        })
    }
}

/// An LSM tree's shape, from its statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct LsmShape {
    pub(super) chunks: i64,
    pub(super) bloom_filters: i64,
    pub(super) bloom_bytes: i64,
    pub(super) generation_max: i64,
}

//! What a simulated power loss makes of the model: directory entries back
//! to their durable state, and each pending write kept, lost, torn or
//! garbled as `PendingWrites` says.

use std::collections::BTreeSet;

use super::state::{mix, FileId, Node, Pending, State};
use super::PendingWrites;

impl State {
    /// Power loss and reboot; see the module comment and `PendingWrites`.
    pub(super) fn crash(&mut self, mode: PendingWrites) {
        for dir in self.dirs.values_mut() {
            dir.entries = dir.durable.clone();
        }
        if let PendingWrites::Any(seed) = mode {
            // Directory changes reach the disk in order, a rename whole: a
            // prefix of them, cut between two operations, is kept.
            let changes = std::mem::take(&mut self.entry_changes);
            let ops = changes.iter().map(|c| c.op).collect::<BTreeSet<_>>();
            let kept_ops = (mix(seed ^ 0xd1) % (ops.len() as u64 + 1)) as usize;
            let last_kept = ops.iter().nth(kept_ops.wrapping_sub(1)).copied();
            for change in changes {
                if last_kept.is_none_or(|last| change.op > last) {
                    break;
                }
                if let Some(dir) = self.dirs.get_mut(&change.dir) {
                    match change.id {
                        Some(id) => dir.entries.insert(change.name, id),
                        None => dir.entries.remove(&change.name),
                    };
                }
            }
        }
        self.entry_changes.clear();
        let mut reachable = BTreeSet::new();
        for dir in self.dirs.values_mut() {
            dir.durable = dir.entries.clone();
            reachable.extend(dir.entries.values().copied());
        }
        self.files.retain(|id, _| reachable.contains(id));
        for (&id, node) in &mut self.files {
            match mode {
                PendingWrites::Lost => {}
                PendingWrites::InOrder(seed) => node.crash_in_order(id, seed),
                PendingWrites::Any(seed) => node.crash_any(id, seed),
            }
            node.data.clone_from(&node.durable);
            node.durable_is_prefix = true;
            node.pending.clear();
            node.cut_to = None;
        }
        self.generation += 1;
        self.locks.clear();
        self.faults.clear();
        self.random = None;
        self.read_faults = None;
        self.crashed = false;
    }
}

impl Node {
    /// `PendingWrites::InOrder`: positional writes each kept whole, torn (a
    /// prefix in 512-byte sectors) or lost; an appended file keeps a prefix
    /// of its unsynced tail.
    fn crash_in_order(&mut self, id: FileId, seed: u64) {
        for (i, pending) in self.pending.iter().enumerate() {
            let Pending::At(offset, bytes) = pending else {
                continue;
            };
            let roll = mix(seed ^ mix(id) ^ mix(i as u64 + 1));
            let kept = match roll % 3 {
                0 => 0,
                1 => bytes.len(),
                _ => ((roll >> 8) as usize % (bytes.len() / 512 + 1)) * 512,
            }
            .min(bytes.len());
            if let Some(src) = bytes.get(..kept) {
                overlay(&mut self.durable, *offset, src);
            }
        }
        let durable_len = self.durable.len();
        if self.durable_is_prefix && self.data.len() > durable_len {
            let unsynced = (self.data.len() - durable_len) as u64;
            let kept = mix(seed ^ mix(id)) % (unsynced + 1);
            let end = durable_len + kept as usize;
            if let Some(tail) = self.data.get(durable_len..end) {
                self.durable.extend_from_slice(tail);
            }
        }
    }

    /// `PendingWrites::Any`: each pending write on its own kept, lost, torn
    /// at a sector or filled with garbage; a cut kept or not.
    fn crash_any(&mut self, id: FileId, seed: u64) {
        if let Some(len) = self.cut_to {
            if mix(seed ^ mix(id) ^ 0xc7).is_multiple_of(2) {
                // The cut reached the disk; what was written after it is
                // below.
                self.durable.truncate(len);
            }
        }
        let pending = std::mem::take(&mut self.pending);
        for (i, write) in pending.iter().enumerate() {
            let (offset, bytes) = match write {
                Pending::At(offset, bytes) => (*offset, bytes.as_slice()),
                Pending::Appended(offset, len) => {
                    let Some(bytes) = self.data.get(*offset..offset + len) else {
                        continue;
                    };
                    (*offset, bytes)
                }
            };
            let roll = mix(seed ^ mix(id) ^ mix(i as u64 + 1));
            match roll % 4 {
                0 => {}
                1 => overlay(&mut self.durable, offset, bytes),
                2 => {
                    // Torn: whole sectors up to a boundary inside the write;
                    // a write within one sector is whole or lost.
                    let first = offset.div_ceil(512) * 512;
                    let end = offset + bytes.len();
                    let boundaries = if end > first { (end - first) / 512 } else { 0 };
                    if boundaries > 0 {
                        let at = first + ((roll >> 8) as usize % boundaries) * 512;
                        if let Some(kept) = bytes.get(..at - offset) {
                            overlay(&mut self.durable, offset, kept);
                        }
                    } else if (roll >> 8).is_multiple_of(2) {
                        overlay(&mut self.durable, offset, bytes);
                    }
                }
                _ => {
                    let garbage: Vec<u8> = (0..bytes.len())
                        .map(|j| mix(roll ^ mix(j as u64)) as u8)
                        .collect();
                    overlay(&mut self.durable, offset, &garbage);
                }
            }
        }
        self.pending = pending;
    }
}

/// Writes `bytes` into `file` at `offset`, growing it with zeros as needed.
fn overlay(file: &mut Vec<u8>, offset: usize, bytes: &[u8]) {
    let end = offset + bytes.len();
    if file.len() < end {
        file.resize(end, 0);
    }
    if let Some(dst) = file.get_mut(offset..end) {
        dst.copy_from_slice(bytes);
    }
}

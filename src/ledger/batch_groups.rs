//! The groups of a batch being admitted: each item's group id, asked once
//! per run of one group, and the check a foreign key would make.

use super::{LedgerError, NewItem, Result};
use crate::model::GroupKey;

/// Each item's group id, in batch order: `id_of` is asked once per run of
/// items of one group (a batch is mostly one group).
pub fn group_ids(batch: &[NewItem], mut id_of: impl FnMut(&GroupKey) -> Result<i64>) -> Result<Vec<i64>> {
    let mut ids = Vec::with_capacity(batch.len());
    let mut last: Option<(&GroupKey, i64)> = None;
    for item in batch {
        let id = match last {
            Some((key, id)) if *key == *item.group => id,
            _ => id_of(&item.group)?,
        };
        last = Some((&item.group, id));
        ids.push(id);
    }
    Ok(ids)
}

/// What a foreign key from items to their group would check, once per
/// group of a batch: `found` of the `wanted` distinct group ids are in the
/// ledger. Admission checks it itself on both backends: SQLite's runs with
/// foreign keys off, PostgreSQL's items have no such key (docs/design.md).
pub fn groups_found(found: i64, wanted: usize) -> Result<()> {
    if found as usize != wanted {
        return Err(LedgerError::Invalid(format!(
            "a group of the items being admitted is not in the ledger ({found} of {wanted} found)"
        )));
    }
    Ok(())
}

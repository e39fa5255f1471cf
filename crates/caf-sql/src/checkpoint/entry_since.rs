//! Where the current revisions of a line's entries start: the `from_seq` of the revision each
//! position of each part shows at the line's tip.
//!
//! A save closes the revisions it replaces by the `entries` key (`line_id`, `from_seq`, `part`,
//! `position`), one lookup each, so that no index of the current revisions has to be kept up
//! on every save (migration `…_entries_closed_by_key`). The line's cached tip carries these
//! seqs beside its snapshot ([`crate::checkpoint::line_cache::Tip`]); a tip read back from the
//! database reads them with its entries ([`crate::checkpoint::entry_revisions::load`]).

use crate::checkpoint::entry_revisions::PARTS;

/// The `from_seq` of the current revision at each position, by part (in [`PARTS`] order).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct EntrySince([Vec<i64>; PARTS.len()]);

impl EntrySince {
    /// The seq where the revision at `position` of part `part` (an index into [`PARTS`])
    /// starts; `None` when the part has no such position.
    pub fn get(&self, part: usize, position: usize) -> Option<i64> {
        self.0.get(part)?.get(position).copied()
    }

    /// Part `part` after a save at `seq` that wrote new revisions at `written` (in increasing
    /// order), the part now having `len` positions.
    pub fn advance(
        &mut self,
        part: usize,
        len: usize,
        written: impl Iterator<Item = usize>,
        seq: i64,
    ) {
        let Some(since) = self.0.get_mut(part) else {
            return;
        };
        since.truncate(len);
        for position in written {
            match since.get_mut(position) {
                Some(slot) => *slot = seq,
                None => since.push(seq),
            }
        }
    }

    /// Adds the revision visible at `position` of `part`, starting at `from_seq`: revisions come
    /// in key order, so that a part's are at 0, 1, 2…, one each (else what is stored is
    /// damaged, and the message says how).
    pub fn push(&mut self, part: &str, position: i64, from_seq: i64) -> Result<(), String> {
        let k = PARTS
            .iter()
            .position(|p| *p == part)
            .ok_or_else(|| format!("unknown entry part {part:?}"))?;
        let positions = &mut self.0[k];
        if usize::try_from(position).ok() != Some(positions.len()) {
            return Err(format!(
                "{part} position {position} where {} was expected",
                positions.len()
            ));
        }
        positions.push(from_seq);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_takes_each_part_in_position_order_and_says_what_does_not_add_up() {
        let mut since = EntrySince::default();
        since.push("variables", 0, 3).unwrap();
        since.push("variables", 1, 7).unwrap();
        since.push("history", 0, 1).unwrap();
        assert_eq!(since.get(6, 1), Some(7));
        assert_eq!(since.get(0, 0), Some(1));
        assert_eq!(
            since.push("variables", 3, 9).unwrap_err(),
            "variables position 3 where 2 was expected"
        );
        assert!(since.push("nope", 0, 1).unwrap_err().contains("unknown"));
    }

    #[test]
    fn advance_starts_the_written_positions_at_the_seq_and_drops_the_removed() {
        let mut since = EntrySince::default();
        since.advance(0, 3, [0, 1, 2].into_iter(), 1);
        since.advance(0, 4, [1, 3].into_iter(), 5);
        assert_eq!(since.0[0], [1, 5, 1, 5]);
        since.advance(0, 2, std::iter::empty(), 6);
        assert_eq!(since.0[0], [1, 5]);
        assert_eq!(since.get(0, 1), Some(5));
        assert_eq!(since.get(0, 2), None);
        assert_eq!(since.get(PARTS.len(), 0), None);
        assert!(since.0[1..].iter().all(Vec::is_empty));
    }
}

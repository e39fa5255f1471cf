//! The layout of `caf log --graph`: checkpoint summaries in, rows of a graph out, drawn the way
//! `git log --graph` draws history. Pure: no store, no terminal.
//!
//! Each checkpoint sits in a *lane* (a column, 0 = leftmost). A lane carries the line of history
//! from a checkpoint down to its parent. Checkpoints have one parent, so history is a forest: two
//! lanes waiting for the same parent join (that parent is a branch point), and a lane ends at a
//! root or at a checkpoint whose parent is not among the summaries (pruned, or in an execution
//! that is not shown).
//!
//! ```text
//! * b2          a branch, newest first
//! * b1
//! | * c5        the original line, in a lane of its own
//! | * c4
//! |/            the two lanes join: c3 is the branch point
//! * c3
//! * c2
//! ```
//!
//! Glyphs: `*` a checkpoint, `|` a lane going on, `/` a lane moving one column left (joining its
//! neighbour, or closing the gap of a lane that ended), `_` a lane passing under others on its
//! way to the lane it joins (`|_|/`). Lanes never move right, so git's `\` is never needed: it
//! draws merges, and a checkpoint has one parent.
//!
//! The order is git's `--topo-order`: a checkpoint never comes before one of its children;
//! otherwise newest first, following one line of history down until it reaches a checkpoint
//! whose other children are not shown yet.

use caf_core::{CheckpointId, CheckpointSummary};
use std::collections::HashMap;

/// One row of the graph: a checkpoint, what is drawn beside it, and the lines that follow it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The checkpoint: its index in the summaries given to [`layout`].
    pub index: usize,
    /// The lane the checkpoint sits in (0 = leftmost).
    pub lane: usize,
    /// The lane its parent edge continues in, in the next row's numbering; `None` when its line
    /// ends here (a root, or a parent that is not among the summaries).
    pub parent_lane: Option<usize>,
    /// Drawn left of the checkpoint's line: `*` in its lane, `|` in the others (two characters
    /// per lane).
    pub node: String,
    /// Drawn left of any further lines of the checkpoint (its children, a gap): every lane goes
    /// on, but its own is blank when its line ends here.
    pub padding: String,
    /// Lines drawn after the checkpoint, before the next row: lanes joining or moving left, or a
    /// blank separating a finished line of history from an unrelated one that starts in the same
    /// column. No trailing spaces.
    pub after: Vec<String>,
}

/// Lays out `items` (newest first, as a store lists them) as rows of a graph, one row per
/// checkpoint, in graph order (see the [module documentation](self)). A parent that is not in
/// `items` ends its child's line. Duplicate ids and cycles (hand-edited files) still give one row
/// per item.
pub fn layout(items: &[CheckpointSummary]) -> Vec<Row> {
    let mut position: HashMap<&CheckpointId, usize> = HashMap::with_capacity(items.len());
    for (i, s) in items.iter().enumerate() {
        position.entry(&s.id).or_insert(i);
    }
    let parent: Vec<Option<usize>> = items
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let p = *position.get(s.parent_id.as_ref()?)?;
            (p != i).then_some(p)
        })
        .collect();

    let mut rows: Vec<Row> = Vec::with_capacity(items.len());
    // lanes[l]: the checkpoint lane l is waiting for. Never two lanes for one checkpoint.
    let mut lanes: Vec<usize> = Vec::new();
    let mut shown = vec![false; items.len()];
    for i in order(&parent) {
        let lane = match lanes.iter().position(|&w| w == i) {
            Some(lane) => lane,
            None => {
                // A head: a new lane on the right. If the previous line of history ended in that
                // very column, a blank line keeps the two from looking connected.
                if let Some(prev) = rows.last_mut() {
                    if prev.parent_lane.is_none() && prev.lane == lanes.len() {
                        prev.after.push(lanes_line(lanes.len()));
                    }
                }
                lanes.push(i);
                lanes.len() - 1
            }
        };
        shown[i] = true;
        let width = lanes.len();
        let node: String = (0..width)
            .map(|l| if l == lane { "* " } else { "| " })
            .collect();
        // A parent already shown can only come from a cycle: the line ends instead.
        let row = match parent[i].filter(|&p| !shown[p]) {
            Some(p) => {
                lanes[lane] = p;
                let other = (0..width).find(|&l| l != lane && lanes[l] == p);
                let (parent_lane, after) = match other {
                    Some(other) => {
                        let (keep, gone) = (lane.min(other), lane.max(other));
                        lanes.remove(gone);
                        (keep, vec![join_line(width, keep, gone)])
                    }
                    None => (lane, Vec::new()),
                };
                Row {
                    index: i,
                    lane,
                    parent_lane: Some(parent_lane),
                    node,
                    padding: "| ".repeat(width),
                    after,
                }
            }
            None => {
                let padding = (0..width)
                    .map(|l| if l == lane { "  " } else { "| " })
                    .collect();
                let after = if lane + 1 < width {
                    vec![shift_line(width, lane)]
                } else {
                    Vec::new()
                };
                lanes.remove(lane);
                Row {
                    index: i,
                    lane,
                    parent_lane: None,
                    node,
                    padding,
                    after,
                }
            }
        };
        rows.push(row);
    }
    // Every lane waited for a checkpoint that has been shown since: the last row has no
    // `after` lines.
    rows
}

/// Graph order: children before parents; otherwise newest first, depth first (git's
/// `--topo-order`). `parent[i]` is the index of item `i`'s parent among the items.
fn order(parent: &[Option<usize>]) -> Vec<usize> {
    let n = parent.len();
    let mut pending_children = vec![0usize; n];
    for &p in parent.iter().flatten() {
        pending_children[p] += 1;
    }
    // The heads, the newest on top.
    let mut ready: Vec<usize> = (0..n).rev().filter(|&i| pending_children[i] == 0).collect();
    let mut emitted = vec![false; n];
    let mut out = Vec::with_capacity(n);
    let mut oldest_unforced = 0;
    loop {
        let i = match ready.pop() {
            Some(i) => i,
            None => {
                // Everything left is on a cycle or below one: go on from the newest of it.
                while oldest_unforced < n && emitted[oldest_unforced] {
                    oldest_unforced += 1;
                }
                if oldest_unforced == n {
                    break;
                }
                oldest_unforced
            }
        };
        if emitted[i] {
            continue;
        }
        emitted[i] = true;
        out.push(i);
        if let Some(p) = parent[i].filter(|&p| !emitted[p]) {
            pending_children[p] = pending_children[p].saturating_sub(1);
            if pending_children[p] == 0 {
                ready.push(p);
            }
        }
    }
    out
}

/// Every one of `width` lanes going on (`| | |`).
fn lanes_line(width: usize) -> String {
    "| ".repeat(width).trim_end().to_string()
}

/// The line after a checkpoint whose lane `gone` joins lane `keep` (to its left), among `width`
/// lanes: `|/` for neighbours, `|_|/` under the lanes between; the lanes right of `gone` move
/// one column left.
fn join_line(width: usize, keep: usize, gone: usize) -> String {
    let mut cells = vec![' '; 2 * width];
    for l in 0..gone {
        cells[2 * l] = '|';
    }
    for l in keep..gone.saturating_sub(1) {
        cells[2 * l + 1] = '_';
    }
    cells[2 * gone - 1] = '/';
    for l in gone + 1..width {
        cells[2 * l - 1] = '/';
    }
    cells.into_iter().collect::<String>().trim_end().to_string()
}

/// The line after a checkpoint whose lane `ended` ends, among `width` lanes: the lanes right of
/// it move one column left (`|  /`).
fn shift_line(width: usize, ended: usize) -> String {
    let mut cells = vec![' '; 2 * width];
    for l in 0..ended {
        cells[2 * l] = '|';
    }
    for l in ended + 1..width {
        cells[2 * l - 1] = '/';
    }
    cells.into_iter().collect::<String>().trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use caf_core::{CheckpointReason, ExecutionId, Timestamp};

    /// Summaries from `(id, parent)` pairs, given newest first; the id is also the text.
    fn history(pairs: &[(&str, Option<&str>)]) -> Vec<CheckpointSummary> {
        let n = pairs.len() as i64;
        pairs
            .iter()
            .enumerate()
            .map(|(i, (id, parent))| CheckpointSummary {
                id: CheckpointId::new(*id).unwrap(),
                parent_id: parent.map(|p| CheckpointId::new(p).unwrap()),
                execution_id: ExecutionId::new("exec").unwrap(),
                agent_id: "agent".into(),
                step_number: 0,
                checkpoint_reason: CheckpointReason::StepCompleted,
                timestamp: Timestamp::from_micros((n - i as i64) * 1_000_000),
                tokens_used: 0,
                name: None,
                labels: Vec::new(),
                bytes: 0,
            })
            .collect()
    }

    /// The graph as text: each row's node line with its id, a padding line `~` for rows whose
    /// line ends, then its `after` lines.
    fn draw(items: &[CheckpointSummary]) -> String {
        let rows = layout(items);
        assert!(rows.last().is_none_or(|r| r.after.is_empty()), "{rows:?}");
        let mut out = Vec::new();
        for r in rows {
            out.push(format!("{}{}", r.node, items[r.index].id));
            if r.parent_lane.is_none() {
                out.push(format!("{}~", r.padding));
            }
            out.extend(r.after.iter().cloned());
        }
        out.join("\n")
    }

    fn lanes(items: &[CheckpointSummary]) -> Vec<(String, usize, Option<usize>)> {
        layout(items)
            .into_iter()
            .map(|r| (items[r.index].id.to_string(), r.lane, r.parent_lane))
            .collect()
    }

    #[test]
    fn linear_history_is_one_lane() {
        let h = history(&[("c3", Some("c2")), ("c2", Some("c1")), ("c1", None)]);
        assert_eq!(draw(&h), "* c3\n* c2\n* c1\n  ~");
        assert_eq!(
            lanes(&h),
            vec![
                ("c3".into(), 0, Some(0)),
                ("c2".into(), 0, Some(0)),
                ("c1".into(), 0, None)
            ]
        );
    }

    #[test]
    fn one_fork_joins_at_the_branch_point() {
        // c1 - c2 - c3 - c4 - c5, and b1 - b2 from c3; b2 is the newest.
        let h = history(&[
            ("b2", Some("b1")),
            ("c5", Some("c4")),
            ("b1", Some("c3")),
            ("c4", Some("c3")),
            ("c3", Some("c2")),
            ("c2", Some("c1")),
            ("c1", None),
        ]);
        // Topological order follows the branch down before the interleaved original line.
        assert_eq!(
            draw(&h),
            "\
* b2
* b1
| * c5
| * c4
|/
* c3
* c2
* c1
  ~"
        );
        let l = lanes(&h);
        assert_eq!(l[2], ("c5".into(), 1, Some(1)));
        assert_eq!(l[3], ("c4".into(), 1, Some(0)));
    }

    #[test]
    fn an_old_branch_waits_for_the_newer_line() {
        let h = history(&[
            ("c5", Some("c4")),
            ("c4", Some("c3")),
            ("b1", Some("c3")),
            ("c3", None),
        ]);
        assert_eq!(draw(&h), "* c5\n* c4\n| * b1\n|/\n* c3\n  ~");
    }

    #[test]
    fn two_forks_from_one_checkpoint_and_a_fork_of_a_fork() {
        // r <- a1 <- a2; r <- b1 <- b2; r <- c1; b1 <- d1
        let h = history(&[
            ("d1", Some("b1")),
            ("a2", Some("a1")),
            ("c1", Some("r")),
            ("b2", Some("b1")),
            ("a1", Some("r")),
            ("b1", Some("r")),
            ("r", None),
        ]);
        assert_eq!(
            draw(&h),
            "\
* d1
| * a2
| * a1
| | * c1
| |/
| | * b2
|_|/
* | b1
|/
* r
  ~"
        );
        let l = lanes(&h);
        assert_eq!(l[3], ("c1".into(), 2, Some(1)));
        assert_eq!(l[4], ("b2".into(), 2, Some(0)));
    }

    #[test]
    fn a_join_passes_under_the_lanes_between() {
        // R <- B <- X <- {p, q}, and B <- b: b's lane is between p's and q's when q joins p.
        let h = history(&[
            ("p", Some("X")),
            ("b", Some("B")),
            ("q", Some("X")),
            ("X", Some("B")),
            ("B", Some("R")),
            ("R", None),
        ]);
        assert_eq!(
            draw(&h),
            "\
* p
| * b
| | * q
|_|/
* | X
|/
* B
* R
  ~"
        );
    }

    #[test]
    fn unrelated_lines_are_separated_by_a_blank() {
        let h = history(&[
            ("a2", Some("a1")),
            ("b2", Some("b1")),
            ("c2", Some("c1")),
            ("b1", None),
            ("a1", None),
            ("c1", None),
        ]);
        // Topological order shows a's line, then b's, then c's: each in lane 0.
        assert_eq!(
            draw(&h),
            "* a2\n* a1\n  ~\n\n* b2\n* b1\n  ~\n\n* c2\n* c1\n  ~"
        );
    }

    #[test]
    fn lanes_right_of_a_finished_line_move_left() {
        // p and q are children of the root x; r and s of r0, whose parent is missing.
        let h = history(&[
            ("p", Some("x")),
            ("r", Some("r0")),
            ("q", Some("x")),
            ("s", Some("r0")),
            ("r0", Some("missing")),
            ("x", None),
        ]);
        assert_eq!(
            draw(&h),
            "\
* p
| * r
| | * q
|_|/
* | x
  | ~
 /
| * s
|/
* r0
  ~"
        );
        let rows = layout(&h);
        assert_eq!((rows[3].lane, rows[3].parent_lane), (0, None));
        assert_eq!(rows[3].padding, "  | ");
        assert_eq!(rows[3].after, vec![" /"]);
    }

    #[test]
    fn a_parent_that_is_not_given_ends_the_line() {
        let h = history(&[("c3", Some("c2")), ("c2", Some("gone"))]);
        assert_eq!(draw(&h), "* c3\n* c2\n  ~");
        // A fork into another execution, shown without its parent's execution: the same.
        let h = history(&[("f2", Some("f1")), ("f1", Some("elsewhere")), ("e1", None)]);
        assert_eq!(draw(&h), "* f2\n* f1\n  ~\n\n* e1\n  ~");
    }

    #[test]
    fn cycles_and_duplicates_still_give_one_row_per_item() {
        let h = history(&[("a", Some("b")), ("b", Some("a")), ("s", Some("s"))]);
        let rows = layout(&h);
        let mut seen: Vec<usize> = rows.iter().map(|r| r.index).collect();
        seen.sort_unstable();
        assert_eq!(seen, vec![0, 1, 2]);
        assert!(rows.iter().all(|r| r.node.contains('*')));
        let h = history(&[("a", None), ("a", None)]);
        assert_eq!(layout(&h).len(), 2);
        assert!(layout(&[]).is_empty());
    }
}

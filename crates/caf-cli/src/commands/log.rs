//! `caf log`: the history of the store's checkpoints, newest first, or drawn as a graph of
//! branches (`--graph`, laid out by [`crate::graph`]).
//!
//! Everything comes from one listing of summaries (the index or the database); no checkpoint
//! is loaded. Relations are those of the whole store, also with `--execution`: a checkpoint
//! whose only child is in another execution is not a head, and a parent in another execution is
//! named as such, not reported missing.

use super::{execution_id, open_existing};
use crate::cli::LogArgs;
use crate::graph;
use crate::output::{self, BOLD, CYAN, DIM, GREEN, RED, YELLOW};
use crate::target::Target;
use crate::{CmdResult, Failure};
use caf_core::history::{LogEntry, ParentLink, Relations};
use caf_core::{CheckpointId, CheckpointReason, CheckpointSummary, ListFilter};
use std::collections::{HashMap, HashSet};
use std::io::Write;

/// The line that stands for checkpoints missing between a checkpoint and `parent`: its parent
/// is not in the store. `pruned_between`, when the number is known, is how many were pruned
/// after `parent`, which is then the nearest ancestor still kept.
pub fn gap_text(parent: &CheckpointId, pruned_between: Option<usize>) -> String {
    match pruned_between {
        None => format!("⋮ parent {parent} not in the store (pruned?)"),
        Some(n) => format!("⋮ {n} pruned since {parent}"),
    }
}

/// Ids shortened the way git shortens hashes: each to the shortest prefix that tells it apart
/// from every other id of the store, and at least 8 characters after its `ckpt_` / `exec_`
/// prefix.
struct Abbrev<'a>(HashMap<&'a str, usize>);

impl<'a> Abbrev<'a> {
    fn of(ids: impl IntoIterator<Item = &'a str>) -> Self {
        let mut ids: Vec<&str> = ids.into_iter().collect();
        ids.sort_unstable();
        ids.dedup();
        let common =
            |a: &str, b: &str| a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
        let lens = ids
            .iter()
            .enumerate()
            .map(|(k, id)| {
                let before = k.checked_sub(1).map_or(0, |j| common(ids[j], id));
                let after = ids.get(k + 1).map_or(0, |next| common(id, next));
                let len = (before.max(after) + 1).max(min_len(id)).min(id.len());
                (*id, len)
            })
            .collect();
        Self(lens)
    }

    /// `id` shortened (ids are ASCII: checked when they were read); in full if it is not known.
    fn short<'b>(&self, id: &'b str) -> &'b str {
        let len = self.0.get(id).copied().unwrap_or(id.len());
        id.get(..len).unwrap_or(id)
    }
}

/// The shortest abbreviation shown of `id`: 8 characters, after its kind's prefix if it has one.
fn min_len(id: &str) -> usize {
    ["ckpt_", "exec_"]
        .iter()
        .find(|p| id.starts_with(**p))
        .map_or(8, |p| p.len() + 8)
}

/// `s` on one line and harmless to a terminal: whitespace runs become one space, other control
/// characters (an escape sequence in a hand-edited name) are shown escaped.
fn printable(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .map(|c| {
            if c.is_control() {
                c.escape_debug().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Shows the history.
pub fn run(t: &Target, json: bool, a: &LogArgs) -> CmdResult {
    let store = open_existing(t)?;
    let execution = a.execution.as_deref().map(execution_id).transpose()?;
    let all = store.list(&ListFilter::default())?;
    let rel = Relations::of(&all);
    // Missing parents that were pruned: the tombstones lead to the nearest kept ancestor.
    let tombstones = store.pruned()?;
    let mut gaps: HashMap<CheckpointId, (Option<CheckpointId>, usize)> = HashMap::new();
    let listed: HashSet<&CheckpointId> = all.iter().map(|s| &s.id).collect();
    for s in &all {
        // Only a parent missing from the listing can be a gap.
        if let Some(p) = s.parent_id.as_ref().filter(|p| !listed.contains(p)) {
            if tombstones.is_empty() {
                break;
            }
            if let Some(gap) = caf_core::prune::ancestry(&**store, &tombstones, p)? {
                if gap.pruned > 0 {
                    gaps.insert(p.clone(), (gap.nearest_kept, gap.pruned));
                }
            }
        }
    }
    // The checkpoints shown, as indexes into `all`, newest first.
    let shown: Vec<usize> = (0..all.len())
        .filter(|&i| execution.as_ref().is_none_or(|e| &all[i].execution_id == e))
        .collect();
    if shown.is_empty() {
        if let Some(e) = &execution {
            return Err(Failure::msg(format!(
                "execution {e} has no checkpoints in {}",
                t.describe()
            )));
        }
        if json {
            output::print_json(&Vec::<LogEntry>::new());
        } else {
            crate::say!("no checkpoints in {}", t.describe());
        }
        return Ok(());
    }
    // With --graph: rows in graph order, each with its index into `all`.
    let rows: Vec<(usize, Option<graph::Row>)> = if a.graph {
        let items: Vec<CheckpointSummary> = shown.iter().map(|&i| all[i].clone()).collect();
        graph::layout(&items)
            .into_iter()
            .map(|r| (shown[r.index], Some(r)))
            .collect()
    } else {
        shown.iter().map(|&i| (i, None)).collect()
    };
    if json {
        let entries: Vec<LogEntry> = rows
            .iter()
            .map(|(i, row)| LogEntry::of(&all, &rel, *i, row.as_ref().map(|r| r.lane)))
            .collect();
        output::print_json(&entries);
        return Ok(());
    }
    let ids = Abbrev::of(all.iter().map(|s| s.id.as_str()));
    let executions = Abbrev::of(all.iter().map(|s| s.execution_id.as_str()));
    let several = shown
        .iter()
        .any(|&i| all[i].execution_id != all[shown[0]].execution_id);
    let view = View {
        gaps: &gaps,
        all: &all,
        rel: &rel,
        ids,
        executions: several.then_some(executions),
        shown: shown.iter().copied().collect(),
    };
    let mut out = anstream::stdout();
    for (i, row) in &rows {
        let (node, padding) = match row {
            Some(r) => (r.node.as_str(), r.padding.as_str()),
            None => ("", ""),
        };
        let _ = writeln!(out, "{node}{}", view.line(*i));
        for extra in view.notes(*i) {
            let _ = writeln!(out, "{padding}  {extra}");
        }
        for line in row.iter().flat_map(|r| &r.after) {
            let _ = writeln!(out, "{line}");
        }
    }
    Ok(())
}

/// How the text output shows checkpoints.
struct View<'a> {
    /// For each missing parent: the nearest kept ancestor and how many were pruned since.
    gaps: &'a HashMap<CheckpointId, (Option<CheckpointId>, usize)>,
    all: &'a [CheckpointSummary],
    rel: &'a Relations,
    ids: Abbrev<'a>,
    /// Set when checkpoints of several executions are shown: the execution goes on each line.
    executions: Option<Abbrev<'a>>,
    shown: HashSet<usize>,
}

impl View<'_> {
    /// The checkpoint's line: id, markers, time, execution, step, reason, name, labels.
    fn line(&self, i: usize) -> String {
        let s = &self.all[i];
        let mut line = format!("{CYAN}{}{CYAN:#}", self.ids.short(s.id.as_str()));
        let mut marks = Vec::new();
        if self.rel.children[i].is_empty() {
            let head = GREEN.bold();
            marks.push(format!("{head}head{head:#}"));
        }
        if self.rel.latest[i] {
            let latest = YELLOW.bold();
            marks.push(format!("{latest}latest{latest:#}"));
        }
        if !marks.is_empty() {
            line.push_str(&format!(
                " {YELLOW}({YELLOW:#}{}{YELLOW}){YELLOW:#}",
                marks.join(&format!("{YELLOW},{YELLOW:#} "))
            ));
        }
        line.push_str(&format!(" {DIM}{}{DIM:#}", output::short_time(s.timestamp)));
        if let Some(e) = &self.executions {
            line.push_str(&format!("  {}", e.short(s.execution_id.as_str())));
        }
        let reason = s.checkpoint_reason.as_str();
        let style = match s.checkpoint_reason {
            CheckpointReason::Error => RED,
            CheckpointReason::Branch => YELLOW,
            _ => anstyle::Style::new(),
        };
        line.push_str(&format!(
            "  step {}  {style}{reason}{style:#}",
            s.step_number
        ));
        if let Some(name) = &s.name {
            line.push_str(&format!("  {BOLD}{}{BOLD:#}", printable(name)));
        }
        if !s.labels.is_empty() {
            let labels: Vec<String> = s.labels.iter().map(|l| printable(l)).collect();
            line.push_str(&format!(" [{}]", labels.join(", ")));
        }
        line
    }

    /// The lines under a checkpoint: its children when it is a branch point, and where its
    /// parent is when that is not the next line of its history.
    fn notes(&self, i: usize) -> Vec<String> {
        let mut notes = Vec::new();
        let children = &self.rel.children[i];
        if children.len() > 1 {
            let ids: Vec<&str> = children
                .iter()
                .map(|&c| self.ids.short(self.all[c].id.as_str()))
                .collect();
            notes.push(format!("{DIM}children: {}{DIM:#}", ids.join(", ")));
        }
        let s = &self.all[i];
        match (self.rel.parent[i], &s.parent_id) {
            (ParentLink::Missing, Some(p)) => {
                let text = match self.gaps.get(p) {
                    Some((Some(kept), n)) => gap_text(kept, Some(*n)),
                    Some((None, n)) => {
                        format!("⋮ {n} pruned before it (back to the start of its line)")
                    }
                    None => gap_text(p, None),
                };
                notes.push(format!("{YELLOW}{}{YELLOW:#}", text));
            }
            (ParentLink::Stored(p), _) if !self.shown.contains(&p) => {
                let parent = &self.all[p];
                notes.push(format!(
                    "{DIM}parent {} is in execution {}{DIM:#}",
                    self.ids.short(parent.id.as_str()),
                    parent.execution_id
                ));
            }
            _ => {}
        }
        notes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gap_text_names_the_parent_and_later_a_count() {
        let p = CheckpointId::new("ckpt_1234abcd").unwrap();
        assert_eq!(
            gap_text(&p, None),
            "⋮ parent ckpt_1234abcd not in the store (pruned?)"
        );
        assert_eq!(gap_text(&p, Some(3)), "⋮ 3 pruned since ckpt_1234abcd");
    }

    #[test]
    fn names_are_printed_on_one_line_without_control_characters() {
        assert_eq!(printable("plan  B\n(retry)"), "plan B (retry)");
        assert_eq!(printable("red\u{1b}[31m"), "red\\u{1b}[31m");
    }

    #[test]
    fn abbreviations_are_the_shortest_unique_prefixes() {
        let ids = [
            "ckpt_0193aaaa-0001-0000",
            "ckpt_0193aaaa-0002-0000",
            "ckpt_0193aaab-0000-0000",
            "ckpt_0194",
            "ckpt_0195ffffffffffff",
        ];
        let a = Abbrev::of(ids);
        assert_eq!(a.short(ids[0]), "ckpt_0193aaaa-0001");
        assert_eq!(a.short(ids[1]), "ckpt_0193aaaa-0002");
        assert_eq!(a.short(ids[2]), "ckpt_0193aaab");
        assert_eq!(a.short(ids[3]), "ckpt_0194");
        assert_eq!(a.short(ids[4]), "ckpt_0195ffff");
        assert_eq!(a.short("ckpt_not_in_the_store"), "ckpt_not_in_the_store");
        let a = Abbrev::of(["custom-id-12345", "custom-id-12399", "x"]);
        assert_eq!(a.short("custom-id-12345"), "custom-id-1234");
        assert_eq!(a.short("x"), "x");
    }
}

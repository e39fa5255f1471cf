//! `caf bench --peer … --rounds N`: caf's modes and the peer measured N times, alternately, and
//! the spread of each ratio over the rounds.
//!
//! One run sets caf beside the peer measured a minute later; on a disk whose flush moves by half
//! from one minute to the next (docs/benchmarks.md), one run's ratio moves with it. Rounds that
//! alternate which side goes first (caf in the odd rounds, the peer in the even ones) put each
//! side as often before the other as after it, and the median over the rounds, with the least
//! and the greatest, says how far one run's ratio can be trusted. Each round's stores are in a
//! scratch directory of their own, removed when the round ends.

use super::peer::{shown, verdict, PeerFigures, PeerRun, SideBySide};
use super::stats::median;
use super::{label, measure_modes, run_peer, BenchArgs, Figures, Mode};
use crate::output::{self, Table};
use crate::{CmdResult, Failure};
use anstyle::Style;
use serde::Serialize;
use std::path::Path;

/// What one round measured.
struct Round {
    caf: Vec<Figures>,
    peer: PeerFigures,
    peer_async: Option<PeerFigures>,
    peer_first: bool,
}

/// One round in the JSON report: the side-by-side report of a single run, and its order.
#[derive(Serialize)]
struct RoundReport<'a> {
    /// From 1.
    round: u32,
    /// Whether the peer ran before caf's modes in this round.
    peer_first: bool,
    #[serde(flatten)]
    side: SideBySide<'a>,
}

/// A ratio over the rounds.
#[derive(Debug, Serialize, PartialEq)]
struct Spread {
    /// The median (of an even count, the upper of the two middle values).
    median: f64,
    min: f64,
    max: f64,
}

impl Spread {
    /// `None` for no values.
    fn of(mut values: Vec<f64>) -> Option<Self> {
        let min = values.iter().copied().reduce(f64::min)?;
        let max = values.iter().copied().reduce(f64::max)?;
        Some(Self {
            median: median(&mut values),
            min,
            max,
        })
    }
}

/// One mode's ratios (caf / peer: below 1, caf is faster) over the rounds.
#[derive(Serialize)]
struct ModeSpread {
    mode: Mode,
    /// The mode's label: its name, and `async` for the async durability.
    label: String,
    save: Spread,
    /// Only when the peer reported the page floor of its own loop in every round.
    #[serde(skip_serializing_if = "Option::is_none")]
    save_in_page_floors: Option<Spread>,
    restore: Spread,
    list: Spread,
}

/// `caf bench --peer … --rounds N --json`.
#[derive(Serialize)]
struct RoundsReport<'a> {
    rounds: Vec<RoundReport<'a>>,
    /// Half the peer's save over the page floor of its own loop, over the rounds: below 1, no
    /// durable save could have been twice as fast as the peer's.
    peer_half_save_over_page_floor: Spread,
    /// Each mode's ratios over the rounds.
    spread: Vec<ModeSpread>,
}

/// Measures `rounds` rounds (see the module docs) and prints them, with the spread.
pub(super) fn run(
    modes: &[Mode],
    a: &BenchArgs,
    scratch: &Path,
    pg: Option<&str>,
    peer: &PeerRun,
    json: bool,
) -> CmdResult {
    let mut rounds = Vec::new();
    for i in 0..a.rounds {
        let peer_first = i % 2 == 1;
        if !json {
            eprintln!(
                "round {} of {}{} …",
                i + 1,
                a.rounds,
                if peer_first { ", the peer first" } else { "" }
            );
        }
        let dir = tempfile::Builder::new()
            .prefix("round-")
            .tempdir_in(scratch)
            .map_err(|e| Failure::msg(format!("{}: {e}", scratch.display())))?;
        let (caf, (peer, peer_async)) = if peer_first {
            let p = run_peer(peer, a, dir.path(), json)?;
            (measure_modes(modes, a, dir.path(), pg, json)?, p)
        } else {
            let c = measure_modes(modes, a, dir.path(), pg, json)?;
            (c, run_peer(peer, a, dir.path(), json)?)
        };
        rounds.push(Round {
            caf,
            peer,
            peer_async,
            peer_first,
        });
    }
    let sides: Vec<SideBySide<'_>> = rounds
        .iter()
        .map(|r| SideBySide::new(&r.caf, &r.peer, r.peer_async.as_ref()))
        .collect();
    let spread = spread(&sides);
    let half = Spread::of(
        sides
            .iter()
            .map(|s| s.peer_half_save_over_page_floor)
            .collect(),
    )
    .ok_or_else(|| Failure::msg("no round was measured"))?;
    if !json {
        print(&rounds, &sides, &spread, &half);
        return Ok(());
    }
    let report = RoundsReport {
        rounds: sides
            .into_iter()
            .zip(&rounds)
            .zip(1..)
            .map(|((side, r), round)| RoundReport {
                round,
                peer_first: r.peer_first,
                side,
            })
            .collect(),
        peer_half_save_over_page_floor: half,
        spread,
    };
    output::print_json(&report);
    Ok(())
}

/// Each mode's ratios over the rounds (every round measured the same modes, in order).
fn spread(sides: &[SideBySide<'_>]) -> Vec<ModeSpread> {
    let Some(first) = sides.first() else {
        return Vec::new();
    };
    let column = |i: usize, of: fn(&super::peer::Ratio) -> f64| -> Vec<f64> {
        sides.iter().map(|s| of(&s.ratios[i])).collect()
    };
    first
        .caf
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            let in_page_floors: Option<Vec<f64>> = sides
                .iter()
                .map(|s| s.ratios[i].save_in_page_floors)
                .collect();
            Some(ModeSpread {
                mode: f.mode,
                label: label(f),
                save: Spread::of(column(i, |r| r.save))?,
                save_in_page_floors: in_page_floors.and_then(Spread::of),
                restore: Spread::of(column(i, |r| r.restore))?,
                list: Spread::of(column(i, |r| r.list))?,
            })
        })
        .collect()
}

/// `0.61 (caf 1.63x faster), 0.57–0.80`.
fn spread_text(s: &Spread) -> String {
    format!("{}, {}–{}", verdict(s.median), shown(s.min), shown(s.max))
}

fn print(rounds: &[Round], sides: &[SideBySide<'_>], spread: &[ModeSpread], half: &Spread) {
    let plain = Style::new();
    crate::say!();
    crate::say!(
        "{} rounds side by side with LangGraph's SqliteSaver, alternating which goes first; \
         caf / LangGraph, medians per operation in each round (below 1, caf is faster):",
        rounds.len()
    );
    let mut table = Table::new(&[
        "ROUND",
        "FIRST",
        "MODE",
        "SAVE",
        "SAVE IN PAGE FLOORS",
        "RESTORE-LATEST",
        "LIST",
    ]);
    for ((r, side), n) in rounds.iter().zip(sides).zip(1..) {
        for (f, ratio) in side.caf.iter().zip(&side.ratios) {
            let mut save = verdict(ratio.save);
            if !ratio.save_like_for_like {
                save.push_str(" [not like for like]");
            }
            table.row(vec![
                (format!("{n}"), plain),
                (
                    (if r.peer_first { "langgraph" } else { "caf" }).into(),
                    plain,
                ),
                (label(f), plain),
                (save, plain),
                (ratio.save_in_page_floors.map_or("-".into(), verdict), plain),
                (verdict(ratio.restore), plain),
                (verdict(ratio.list), plain),
            ]);
        }
    }
    table.print();
    crate::say!();
    crate::say!("over the rounds: the median, then the least and the greatest ratio");
    let mut over = Table::new(&[
        "MODE",
        "SAVE",
        "SAVE IN PAGE FLOORS",
        "RESTORE-LATEST",
        "LIST",
    ]);
    for m in spread {
        over.row(vec![
            (m.label.clone(), plain),
            (spread_text(&m.save), plain),
            (
                m.save_in_page_floors
                    .as_ref()
                    .map_or("-".into(), spread_text),
                plain,
            ),
            (spread_text(&m.restore), plain),
            (spread_text(&m.list), plain),
        ]);
    }
    over.print();
    crate::say!(
        "half LangGraph's save over the page floor of its own loop: {:.2} ({:.2}–{:.2}); \
         below 1, no durable save could have been twice as fast. --json has every round's \
         figures.",
        half.median,
        half.min,
        half.max
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spread_is_the_median_least_and_greatest() {
        assert_eq!(Spread::of(Vec::new()), None);
        assert_eq!(
            Spread::of(vec![0.8, 0.5, 0.6]),
            Some(Spread {
                median: 0.6,
                min: 0.5,
                max: 0.8
            })
        );
        // An even count: the upper of the two middle values.
        assert_eq!(Spread::of(vec![0.4, 0.9]).map(|s| s.median), Some(0.9));
    }
}

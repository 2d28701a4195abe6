//! The report's row: one comparison with its anchor, as a line of the
//! markdown table and an object of the JSON array.

use serde::Serialize;

use crate::rounds::{Rounds, Spread};

/// One row of the report.
#[derive(Serialize)]
pub(crate) struct Row {
    pub(crate) scenario: String,
    pub(crate) n: usize,
    pub(crate) ours: f64,
    pub(crate) anchor: String,
    pub(crate) anchor_value: f64,
    /// Oriented so that higher is better for the hub.
    pub(crate) ratio: f64,
    pub(crate) target: String,
    /// `None` for a figure reported without a target.
    pub(crate) met: Option<bool>,
    /// For medians of interleaved rounds: their count, least and greatest.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub(crate) spread: Option<Spread>,
}

impl Row {
    /// A row whose `ratio` must reach `at_least`.
    pub(crate) fn new(
        scenario: &str,
        n: usize,
        ours: f64,
        anchor: &str,
        anchor_value: f64,
        ratio: f64,
        at_least: f64,
    ) -> Self {
        Self {
            scenario: scenario.to_owned(),
            n,
            ours,
            anchor: anchor.to_owned(),
            anchor_value,
            ratio,
            target: format!(">= {at_least}x"),
            met: Some(ratio >= at_least),
            spread: None,
        }
    }

    /// A row of rates (higher is better) measured in interleaved rounds:
    /// `ours` and the anchor are the medians, the ratio theirs.
    pub(crate) fn rounds(
        scenario: &str,
        n: usize,
        ours: &Rounds,
        anchor: &str,
        anchor_rounds: &Rounds,
        at_least: f64,
    ) -> Self {
        let (ours_median, anchor_median) = (ours.median(), anchor_rounds.median());
        let mut row = Self::new(
            scenario,
            n,
            ours_median,
            anchor,
            anchor_median,
            ours_median / anchor_median,
            at_least,
        );
        row.spread = Some(Spread::of(ours, anchor_rounds));
        row
    }

    /// [`rounds`](Self::rounds) for costs (lower is better: times,
    /// instructions): the ratio is the anchor's median over ours.
    pub(crate) fn cost_rounds(
        scenario: &str,
        n: usize,
        ours: &Rounds,
        anchor: &str,
        anchor_rounds: &Rounds,
        at_least: f64,
    ) -> Self {
        let mut row = Self::rounds(scenario, n, ours, anchor, anchor_rounds, at_least);
        row.ratio = 1.0 / row.ratio;
        row.met = Some(row.ratio >= at_least);
        row
    }

    /// Holds a row of [`rounds`](Self::rounds) to `at_least` in every
    /// round, each against the anchor's figure of the same round, instead
    /// of at the medians only.
    pub(crate) fn in_every_round(mut self, ours: &Rounds, anchor: &Rounds, at_least: f64) -> Self {
        let least = ours.least_ratio_to(anchor);
        self.target = format!(">= {at_least}x in every round (least {least:.2}x)");
        self.met = Some(least >= at_least);
        self
    }

    /// Holds a cost row's own figure to at most `bound` as well.
    pub(crate) fn at_most(mut self, bound: f64) -> Self {
        self.target = format!("{}, ours <= {bound}", self.target);
        self.met = self.met.map(|met| met && self.ours <= bound);
        self
    }

    /// A figure reported beside the targets, with nothing to meet.
    pub(crate) fn reported(mut self) -> Self {
        self.target = "reported".to_owned();
        self.met = None;
        self
    }
}

/// The rows as a markdown table.
pub(crate) fn markdown(rows: &[Row]) -> String {
    let mut table = String::from(
        "| scenario | N | ours | anchor | anchor value | ratio | target | met |\n\
         | --- | ---: | ---: | --- | ---: | ---: | --- | --- |\n",
    );
    for row in rows {
        table += &format!(
            "| {} | {} | {:.3e} | {} | {:.3e} | {:.2} | {} | {} |\n",
            row.scenario,
            row.n,
            row.ours,
            row.anchor,
            row.anchor_value,
            row.ratio,
            row.target,
            match row.met {
                Some(true) => "yes",
                Some(false) => "no",
                None => "-",
            }
        );
    }
    table
}

//! The command line's tests, in one binary (one link of Polars instead of one per file): a
//! module per verb or concern, sharing the helpers in `common`.

mod common;

mod aggregates;
mod browser;
mod budget;
mod check;
mod decision;
mod docs;
mod export;
mod front;
mod hardening;
mod import;
mod import_identity;
mod import_real;
mod injection;
mod interactions;
mod live;
mod output;
mod pandas;
mod properties;
mod regressions;
mod report;
mod reweight;
mod round_eight;
mod round_eighteen;
mod round_eleven;
mod round_five;
mod round_nine;
mod round_seven_import;
mod round_seven_output;
mod round_seven_stats;
mod round_seventeen;
mod round_six;
mod round_six_import;
mod round_six_output;
mod round_six_stats;
mod round_sixteen;
mod round_ten;
mod round_twelve;
mod safety;
mod samples;
mod sequential;
mod simulate;
mod snapshot;
mod sweep;

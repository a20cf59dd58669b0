//! Tests of the guard through its public API, in one binary:
//! - `judge`: SPEC §3 rule by rule, with every boundary, as tables behind `check`.
//! - `props`: arbitrary command sequences never approve without identity or past a budget.

mod judge;
mod props;

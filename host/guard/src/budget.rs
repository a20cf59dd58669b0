//! The per-token sliding-window budgets of SPEC §3.2, bounded in memory.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use nightcrow_protocol::Token;

use crate::{BudgetKind, GuardLimits, Refused};

/// A token's charges as ages at some moment, oldest first: what a daemon journals so that a
/// restart loop cannot multiply approvals (a restarted daemon restores them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BudgetCharges {
    pub sends: Vec<Duration>,
    pub relaunches: Vec<Duration>,
}

/// Approvals charged per token within the sliding window (SPEC §3.2).
///
/// Memory stays bounded: a deque never holds more than its limit (a charge is only added
/// below the limit), expired charges are dropped whenever a token is checked, every charge
/// sweeps tokens with nothing left in the window, and [`Budgets::forget`] drops a token.
#[derive(Debug, Default)]
pub(crate) struct Budgets {
    by_token: HashMap<Token, Charges>,
}

#[derive(Debug, Default)]
struct Charges {
    sends: VecDeque<Instant>,
    relaunches: VecDeque<Instant>,
}

impl Charges {
    fn of(&mut self, kind: BudgetKind) -> &mut VecDeque<Instant> {
        match kind {
            BudgetKind::SendInput => &mut self.sends,
            BudgetKind::Relaunch => &mut self.relaunches,
        }
    }

    /// Drops charges at least one window old: those are free again.
    fn expire(&mut self, now: Instant, window: Duration) {
        for charges in [&mut self.sends, &mut self.relaunches] {
            while charges
                .front()
                .is_some_and(|&at| now.saturating_duration_since(at) >= window)
            {
                charges.pop_front();
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.sends.is_empty() && self.relaunches.is_empty()
    }
}

impl Budgets {
    /// Refuses if `token` has no `kind` approval left in the window ending at `now`.
    pub(crate) fn check(
        &mut self,
        token: &Token,
        kind: BudgetKind,
        now: Instant,
        limits: &GuardLimits,
    ) -> Result<(), Refused> {
        let limit = limit_of(kind, limits);
        let window = limits.window();
        let Some(charges) = self.by_token.get_mut(token) else {
            return within(0, limit, kind, window, None);
        };
        charges.expire(now, window);
        let charges = charges.of(kind);
        // After a reload lowered the limit there may be more charges than the limit; the
        // next approval fits once all but `limit - 1` have expired.
        let oldest_blocking = charges
            .len()
            .checked_sub(limit as usize)
            .and_then(|index| charges.get(index));
        let free_in =
            oldest_blocking.map(|&at| window.saturating_sub(now.saturating_duration_since(at)));
        within(charges.len(), limit, kind, window, free_in)
    }

    /// Records an approval. Call only after [`Budgets::check`] passed at the same `now`.
    pub(crate) fn charge(
        &mut self,
        token: &Token,
        kind: BudgetKind,
        now: Instant,
        limits: &GuardLimits,
    ) {
        let window = limits.window();
        self.by_token.retain(|_, charges| {
            charges.expire(now, window);
            !charges.is_empty()
        });
        self.by_token
            .entry(token.clone())
            .or_default()
            .of(kind)
            .push_back(now);
    }

    /// The ages at `now` of the token's charges still in the window, oldest first.
    pub(crate) fn ages(&self, token: &Token, now: Instant, limits: &GuardLimits) -> BudgetCharges {
        let window = limits.window();
        let ages = |charges: &VecDeque<Instant>| {
            charges
                .iter()
                .map(|&at| now.saturating_duration_since(at))
                .filter(|&age| age < window)
                .collect()
        };
        self.by_token
            .get(token)
            .map(|charges| BudgetCharges {
                sends: ages(&charges.sends),
                relaunches: ages(&charges.relaunches),
            })
            .unwrap_or_default()
    }

    /// Replaces the token's charges with `charges` (ages at `now`): those a window old are
    /// dropped and at most the limit of each kind is kept, the newest, so the bound holds.
    pub(crate) fn restore(
        &mut self,
        token: &Token,
        charges: &BudgetCharges,
        now: Instant,
        limits: &GuardLimits,
    ) {
        let window = limits.window();
        let mut restored = Charges::default();
        for (kind, ages) in [
            (BudgetKind::SendInput, &charges.sends),
            (BudgetKind::Relaunch, &charges.relaunches),
        ] {
            let mut at: Vec<Instant> = ages
                .iter()
                .filter(|&&age| age < window)
                .filter_map(|&age| now.checked_sub(age))
                .collect();
            at.sort();
            let excess = at.len().saturating_sub(limit_of(kind, limits) as usize);
            restored.of(kind).extend(&at[excess..]);
        }
        if restored.is_empty() {
            self.by_token.remove(token);
        } else {
            self.by_token.insert(token.clone(), restored);
        }
    }

    pub(crate) fn forget(&mut self, token: &Token) {
        self.by_token.remove(token);
    }

    #[cfg(test)]
    pub(crate) fn tracked_tokens(&self) -> usize {
        self.by_token.len()
    }
}

fn limit_of(kind: BudgetKind, limits: &GuardLimits) -> u32 {
    match kind {
        BudgetKind::SendInput => limits.max_sends_per_window(),
        BudgetKind::Relaunch => limits.max_relaunches_per_window(),
    }
}

fn within(
    used: usize,
    limit: u32,
    kind: BudgetKind,
    window: Duration,
    free_in: Option<Duration>,
) -> Result<(), Refused> {
    if used < limit as usize {
        Ok(())
    } else {
        Err(Refused::RateLimited {
            kind,
            limit,
            window,
            free_in: if limit == 0 { None } else { free_in },
        })
    }
}

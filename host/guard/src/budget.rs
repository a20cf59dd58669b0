//! Per-token budgets of approved actions over a sliding window (SPEC §3.2).

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use nightcrow_protocol::Token;

/// Budget limits, the `[guard]` config section.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GuardLimits {
    /// Approved `send_input`s per token per window.
    pub max_sends_per_window: u32,
    /// Approved `relaunch`es per token per window.
    pub max_relaunches_per_window: u32,
    /// Length of the sliding window in seconds.
    pub window_secs: u64,
}

impl Default for GuardLimits {
    fn default() -> GuardLimits {
        GuardLimits {
            max_sends_per_window: 5,
            max_relaunches_per_window: 3,
            window_secs: 60,
        }
    }
}

/// Which counter a charge goes to; the two never share a budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetKind {
    SendInput,
    Relaunch,
}

impl GuardLimits {
    fn limit(&self, kind: BudgetKind) -> u32 {
        match kind {
            BudgetKind::SendInput => self.max_sends_per_window,
            BudgetKind::Relaunch => self.max_relaunches_per_window,
        }
    }

    pub(crate) fn window(&self) -> Duration {
        Duration::from_secs(self.window_secs)
    }
}

/// Times of approved actions still inside the window. Each queue holds at most its limit,
/// because a charge is only made below the limit.
#[derive(Debug, Default)]
struct Charges {
    sends: VecDeque<Instant>,
    relaunches: VecDeque<Instant>,
}

impl Charges {
    fn queue(&mut self, kind: BudgetKind) -> &mut VecDeque<Instant> {
        match kind {
            BudgetKind::SendInput => &mut self.sends,
            BudgetKind::Relaunch => &mut self.relaunches,
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct Budgets {
    by_token: HashMap<Token, Charges>,
}

impl Budgets {
    /// Whether one more `kind` may be approved for `token` at `now`; forgets expired charges.
    pub(crate) fn has_room(
        &mut self,
        limits: &GuardLimits,
        token: &Token,
        kind: BudgetKind,
        now: Instant,
    ) -> bool {
        let limit = limits.limit(kind) as usize;
        let Some(charges) = self.by_token.get_mut(token) else {
            return limit > 0;
        };
        let window = limits.window();
        let queue = charges.queue(kind);
        // A charge exactly one window old is free again.
        while queue
            .front()
            .is_some_and(|&charged| now.saturating_duration_since(charged) >= window)
        {
            queue.pop_front();
        }
        let room = queue.len() < limit;
        if charges.sends.is_empty() && charges.relaunches.is_empty() {
            self.by_token.remove(token);
        }
        room
    }

    /// Records an approval. Call only right after `has_room` said yes. Tokens whose every
    /// charge has left the window are dropped here, so memory follows recent approvals only.
    pub(crate) fn charge(
        &mut self,
        limits: &GuardLimits,
        token: &Token,
        kind: BudgetKind,
        now: Instant,
    ) {
        let window = limits.window();
        self.by_token.retain(|_, charges| {
            let recent = |queue: &VecDeque<Instant>| {
                queue
                    .back()
                    .is_some_and(|&charged| now.saturating_duration_since(charged) < window)
            };
            recent(&charges.sends) || recent(&charges.relaunches)
        });
        self.by_token
            .entry(token.clone())
            .or_default()
            .queue(kind)
            .push_back(now);
    }

    pub(crate) fn clear(&mut self, token: &Token) {
        self.by_token.remove(token);
    }

    pub(crate) fn tracked_tokens(&self) -> usize {
        self.by_token.len()
    }
}

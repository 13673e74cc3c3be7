//! How many calls one CI API may still take: a per-minute budget refilled continuously, and a
//! pause until the moment the CI's rate-limit headers named.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

pub struct Budget {
    per_minute: f64,
    state: Mutex<State>,
}

struct State {
    calls: f64,
    refilled_at: Instant,
    paused_until: Option<Instant>,
}

/// Why a call may not be made now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    Paused(Duration),
    Spent,
}

impl Budget {
    /// A full budget of `per_minute` calls.
    pub fn new(per_minute: u32) -> Self {
        let per_minute = f64::from(per_minute.max(1));
        Self {
            per_minute,
            state: Mutex::new(State { calls: per_minute, refilled_at: Instant::now(), paused_until: None }),
        }
    }

    /// Takes one call, or says why not.
    pub fn take(&self) -> Result<(), Refusal> {
        let mut state = self.refilled();
        if let Some(until) = state.paused_until {
            return Err(Refusal::Paused(until - Instant::now()));
        }
        if state.calls < 1.0 {
            return Err(Refusal::Spent);
        }
        state.calls -= 1.0;
        Ok(())
    }

    /// Whole calls left now (none while paused).
    pub fn available(&self) -> u32 {
        let state = self.refilled();
        if state.paused_until.is_some() { 0 } else { state.calls.floor() as u32 }
    }

    /// No call for `pause`, unless a longer pause is already set.
    pub fn pause(&self, pause: Duration) {
        let mut state = self.refilled();
        let until = Instant::now() + pause;
        state.paused_until = Some(state.paused_until.map_or(until, |current| current.max(until)));
    }

    fn refilled(&self) -> std::sync::MutexGuard<'_, State> {
        let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        let elapsed = now.duration_since(state.refilled_at).as_secs_f64();
        state.calls = (state.calls + elapsed * self.per_minute / 60.0).min(self.per_minute);
        state.refilled_at = now;
        if state.paused_until.is_some_and(|until| until <= now) {
            state.paused_until = None;
        }
        state
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_spent_budget_refills_at_its_rate() {
        let budget = Budget::new(60);
        for _ in 0..60 {
            budget.take().unwrap();
        }
        assert_eq!(budget.take(), Err(Refusal::Spent));
        tokio::time::advance(Duration::from_millis(2500)).await;
        assert_eq!(budget.available(), 2);
        tokio::time::advance(Duration::from_secs(3600)).await;
        assert_eq!(budget.available(), 60, "never more than a minute's worth");
    }

    #[tokio::test(start_paused = true)]
    async fn a_pause_stops_every_call_until_it_ends() {
        let budget = Budget::new(600);
        budget.pause(Duration::from_secs(30));
        budget.pause(Duration::from_secs(5));
        assert!(matches!(budget.take(), Err(Refusal::Paused(left)) if left == Duration::from_secs(30)));
        assert_eq!(budget.available(), 0);
        tokio::time::advance(Duration::from_secs(30)).await;
        assert_eq!(budget.take(), Ok(()));
    }
}

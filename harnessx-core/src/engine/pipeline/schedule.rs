//! The scheduling rule of a batch: which calls start at once and which wait their turn.

/// How one call of a batch takes part in the schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// It has a result and does not run.
    Settled,
    /// It runs alongside the others.
    Concurrent,
    /// It runs one at a time, in call order, alongside the concurrent ones.
    Serial,
}

/// The scheduling rule of a batch, written once for every way of running calls (the
/// engine's handlers here, a Restate workflow's fanned-out invocations): every
/// concurrent call starts at once, and so does the first serial one; each serial call
/// starts when the one before it finishes. Results return in call order whatever order
/// they finish in (the caller's job).
#[derive(Debug, Clone, Default)]
pub struct Schedule {
    first: Vec<usize>,
    serial: std::collections::VecDeque<usize>,
    slots: Vec<Slot>,
}

impl Schedule {
    /// The schedule of a batch whose calls have these slots, in call order.
    pub fn new(slots: impl IntoIterator<Item = Slot>) -> Self {
        let slots: Vec<Slot> = slots.into_iter().collect();
        let mut first = Vec::new();
        let mut serial = std::collections::VecDeque::new();
        for (i, slot) in slots.iter().enumerate() {
            match slot {
                Slot::Concurrent => first.push(i),
                Slot::Serial => serial.push_back(i),
                Slot::Settled => {}
            }
        }
        if let Some(head) = serial.pop_front() {
            first.push(head);
        }
        Self { first, serial, slots }
    }

    /// The calls to start now: every concurrent call, then the first serial one.
    pub fn start(&mut self) -> Vec<usize> {
        std::mem::take(&mut self.first)
    }

    /// Call `index` finished: the serial call to start next, if `index` was serial.
    pub fn finished(&mut self, index: usize) -> Option<usize> {
        match self.slots.get(index) {
            Some(Slot::Serial) => self.serial.pop_front(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(slots: &[Slot], finish_order: impl Fn(&[usize]) -> Vec<usize>) -> Vec<usize> {
        let mut schedule = Schedule::new(slots.iter().copied());
        let mut started = Vec::new();
        let mut running = schedule.start();
        while !running.is_empty() {
            started.extend(&running);
            let mut next = Vec::new();
            for index in finish_order(&running) {
                next.extend(schedule.finished(index));
            }
            running = next;
        }
        started
    }

    #[test]
    fn concurrent_calls_and_the_first_serial_one_start_at_once() {
        use Slot::*;
        let mut schedule = Schedule::new([Serial, Concurrent, Settled, Serial, Concurrent]);
        assert_eq!(schedule.start(), vec![1, 4, 0]);
        // Taken once.
        assert!(schedule.start().is_empty());
        assert_eq!(schedule.finished(1), None);
        assert_eq!(schedule.finished(0), Some(3));
        assert_eq!(schedule.finished(3), None);
    }

    #[test]
    fn serial_calls_start_in_call_order_whatever_order_others_finish_in() {
        use Slot::*;
        let slots = [Serial, Concurrent, Serial, Concurrent, Serial];
        let backwards = run(&slots, |running| running.iter().rev().copied().collect());
        assert_eq!(backwards, vec![1, 3, 0, 2, 4]);
    }

    #[test]
    fn settled_calls_never_start_and_finishing_them_starts_nothing() {
        use Slot::*;
        let mut schedule = Schedule::new([Settled, Settled]);
        assert!(schedule.start().is_empty());
        assert_eq!(schedule.finished(0), None);
        // An index past the batch starts nothing either.
        assert_eq!(schedule.finished(9), None);
    }
}

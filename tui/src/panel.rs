//! The dashboard's right-hand panels, named once: the tabs, the keys `1`…`5` and the help
//! all list them from here.

/// The right-hand panels, in tab order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Tab {
    #[default]
    Timeline,
    Gaps,
    Memory,
    Gpu,
    Stats,
}

impl Tab {
    pub const ALL: [Tab; 5] = [Tab::Timeline, Tab::Gaps, Tab::Memory, Tab::Gpu, Tab::Stats];

    pub fn title(self) -> &'static str {
        match self {
            Tab::Timeline => "Timeline",
            Tab::Gaps => "Gaps",
            Tab::Memory => "Memory",
            Tab::Gpu => "GPU",
            Tab::Stats => "Stats",
        }
    }

    pub fn next(self) -> Tab {
        self.step(1)
    }

    pub fn prev(self) -> Tab {
        self.step(Tab::ALL.len() - 1)
    }

    fn step(self, by: usize) -> Tab {
        let i = Tab::ALL.iter().position(|t| *t == self).unwrap_or(0);
        Tab::ALL[(i + by) % Tab::ALL.len()]
    }
}

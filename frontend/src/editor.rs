//! The console's input line: what is typed, and ↑/↓ through the history.
//!
//! It behaves like redis-cli's line editor: ↑ walks back through earlier
//! lines, ↓ walks forward, and stepping past the newest line gives back what
//! you had typed before you started browsing.

/// The line being edited.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LineEditor {
    pub text: String,
    /// Index into the history while browsing it.
    pos: Option<usize>,
    /// The unfinished line, kept while browsing.
    draft: String,
}

impl LineEditor {
    /// The user typed: the line is theirs again.
    pub fn edit(&mut self, text: String) {
        self.text = text;
        self.pos = None;
    }

    /// ↑: the previous history line (stays on the oldest).
    pub fn up(&mut self, history: &[String]) {
        let Some(last) = history.len().checked_sub(1) else {
            return;
        };
        let pos = match self.pos {
            None => {
                self.draft = std::mem::take(&mut self.text);
                last
            }
            Some(p) => p.saturating_sub(1),
        };
        self.pos = Some(pos);
        self.text = history[pos].clone();
    }

    /// ↓: the next history line, then the draft.
    pub fn down(&mut self, history: &[String]) {
        let Some(p) = self.pos else { return };
        if p + 1 < history.len() {
            self.pos = Some(p + 1);
            self.text = history[p + 1].clone();
        } else {
            self.pos = None;
            self.text = std::mem::take(&mut self.draft);
        }
    }

    /// Enter: hand over the line and start a fresh one.
    pub fn submit(&mut self) -> String {
        self.pos = None;
        self.draft.clear();
        std::mem::take(&mut self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn browses_history_and_restores_the_draft() {
        let h: Vec<String> = ["SET a 1", "GET a"].map(String::from).to_vec();
        let mut e = LineEditor::default();
        e.down(&h);
        assert_eq!(e.text, "");
        e.edit("TT".into());
        e.up(&h);
        assert_eq!(e.text, "GET a");
        e.up(&h);
        e.up(&h);
        assert_eq!(e.text, "SET a 1");
        e.down(&h);
        assert_eq!(e.text, "GET a");
        e.down(&h);
        assert_eq!(e.text, "TT");
        assert_eq!(e.submit(), "TT");
        assert_eq!(e.text, "");
        e.up(&[]);
        assert_eq!(e, LineEditor::default());
    }
}

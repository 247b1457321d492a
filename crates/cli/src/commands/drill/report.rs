//! What a drill found, and how it is printed: one [`Outcome`] per drill
//! (its name, PASS/FAIL, the bound it checked, the figures it measured and,
//! on failure, why), as lines for people or as one JSON array for scripts.

use serde_json::{json, Map, Value};

/// One drill's result.
#[derive(Debug)]
pub struct Outcome {
    /// The drill's name (as `--only` takes it).
    pub drill: &'static str,
    /// What it proves, in one sentence.
    pub claim: &'static str,
    /// Passed; `None` if it could not run here (skipped, with `failure` saying why).
    pub pass: Option<bool>,
    /// The bound it checked, as people read it ("lost within 667 ms + 1000 ms").
    pub bound: String,
    /// The figures it measured, by name (units last: `pass_on_ms`).
    pub measured: Map<String, Value>,
    /// Why it failed or was skipped.
    pub failure: Option<String>,
}

impl Outcome {
    /// An outcome not yet decided, for `drill` and its `claim`.
    pub fn new(drill: &'static str, claim: &'static str) -> Outcome {
        Outcome {
            drill,
            claim,
            pass: None,
            bound: String::new(),
            measured: Map::new(),
            failure: None,
        }
    }

    /// Records a measured figure.
    pub fn set(&mut self, name: &str, value: impl Into<Value>) {
        self.measured.insert(name.to_owned(), value.into());
    }

    /// Marks the drill as skipped (it could not run here), saying why.
    pub fn skip(&mut self, why: &str) {
        self.failure = Some(why.to_owned());
    }

    /// Whether it failed (a skip is not a failure).
    pub fn failed(&self) -> bool {
        self.pass == Some(false)
    }

    /// The word people read: PASS, FAIL or SKIP.
    pub fn verdict(&self) -> &'static str {
        match self.pass {
            Some(true) => "PASS",
            Some(false) => "FAIL",
            None => "SKIP",
        }
    }

    /// The outcome as JSON: `drill`, `pass` (false for a skip, with
    /// `skipped: true`), `measured`, `bound`, `claim`, and `failure`.
    pub fn to_json(&self) -> Value {
        json!({
            "drill": self.drill,
            "pass": self.pass == Some(true),
            "skipped": self.pass.is_none(),
            "claim": self.claim,
            "bound": self.bound,
            "measured": self.measured,
            "failure": self.failure,
        })
    }

    /// The outcome for people: the verdict line, then what was measured
    /// and the bound, then why it failed.
    pub fn human(&self) -> String {
        let mut out = format!("{} {}: {}\n", self.verdict(), self.drill, self.claim);
        let figures: Vec<String> = self
            .measured
            .iter()
            .map(|(name, value)| match value {
                Value::String(text) => format!("{name}={text}"),
                other => format!("{name}={other}"),
            })
            .collect();
        if !figures.is_empty() {
            out.push_str(&format!("    measured: {}\n", figures.join(" ")));
        }
        if !self.bound.is_empty() {
            out.push_str(&format!("    bound: {}\n", self.bound));
        }
        if let Some(failure) = &self.failure {
            out.push_str(&format!("    why: {failure}\n"));
        }
        out
    }
}

/// The closing line: how many passed, failed, were skipped.
pub fn summary(outcomes: &[Outcome]) -> String {
    let count = |verdict| outcomes.iter().filter(|o| o.verdict() == verdict).count();
    format!(
        "{} passed, {} failed, {} skipped",
        count("PASS"),
        count("FAIL"),
        count("SKIP")
    )
}

//! What a lesson run on real servers comes to ([`RealReport`]): its step
//! results, verdict and metrics, and the transcript the CLI prints. Apart
//! from the run because a report outlives it (the CLI, the checks and the
//! page's proof all read one).

use std::collections::BTreeMap;

use locklab_core::lesson::render;
use locklab_core::lesson::run::{LessonRun, Shown, StepResult};
use locklab_core::lesson::{Lang, Lesson};

/// A finished real run.
#[derive(Debug)]
pub struct RealReport {
    pub server_version: String,
    pub factor: u64,
    pub results: Vec<StepResult>,
    /// Per step, what was actually sent or done when it differs from the
    /// lesson (compressed TTLs, the DELEX fallback, a held-back replication).
    pub notes: BTreeMap<usize, String>,
    /// Did the lesson's outcome happen, where a real run can tell, judged
    /// by core's monitor as in the simulator: two holders by the clients'
    /// beliefs, a stale write by grant order at the resource, a wrong
    /// release by what the lock observer saw on the servers. `None` for a
    /// deadlock (an unbounded hold), which a real run does not time.
    pub outcome: Option<bool>,
}

impl RealReport {
    /// Every expectation held, and the outcome too where it is judged.
    pub fn passed(&self) -> bool {
        self.results.iter().all(|r| r.ok) && self.outcome != Some(false)
    }

    /// The transcript, in the simulator's layout, with the real run's notes.
    /// In Chinese the runner's own words come from core (the same wording
    /// as the simulator's transcript); commands and replies stay as they
    /// are, and the notes on what was sent (compressed TTLs, fallbacks)
    /// stay in English.
    pub fn transcript(&self, lesson: &Lesson, lang: Lang) -> String {
        let zh = lang == Lang::Zh;
        // A lock service's version names itself ("etcd 3.4.23", "ZooKeeper
        // 3.8.0"); redis-server's is a bare number.
        let server = match self.server_version.starts_with(|c: char| c.is_ascii_digit()) {
            true => format!("redis-server {}", self.server_version),
            false => self.server_version.clone(),
        };
        let mut out = if zh {
            format!(
                "第 {} 课 — {}\n真实 {server}，时间压缩 {}×\n\n",
                lesson.id, lesson.title.zh, self.factor
            )
        } else {
            format!(
                "lesson {} — {}\nreal {server}, time compressed {}×\n\n",
                lesson.id, lesson.title.en, self.factor
            )
        };
        // Core's wording of each step, with the world's names.
        let sim = LessonRun::new(lesson).ok();
        for r in &self.results {
            let who = r.actor.as_deref().unwrap_or(if zh { "环境" } else { "world" });
            let is_write = lesson.steps.get(r.index).is_some_and(|s| s.write.is_some());
            let shown = match (&sim, zh) {
                (Some(run), true) => run
                    .shown(r.index)
                    .map_or(r.shown.clone(), |s| s.text(run.world().names(), lang)),
                _ => r.shown.clone(),
            };
            out.push_str(&format!("[{:>8} ms] {who}> {shown}\n", r.at_ms));
            if let Some(note) = self.notes.get(&r.index) {
                out.push_str(&format!("{:>14}({note})\n", ""));
            }
            if let Some(reply) = &r.reply {
                for line in reply.lines() {
                    let line = match (zh && is_write, line) {
                        (true, "accepted") => "被接受",
                        (true, "rejected") => "被拒绝",
                        _ => line,
                    };
                    out.push_str(&format!("{:>14}{line}\n", ""));
                }
            }
            // A belief folded into the step (`Step::belief`), in core's words.
            let step = lesson.steps.get(r.index);
            if let (Some(run), Some(client), Some((key, holds))) = (
                &sim,
                step.and_then(|s| s.client.as_deref()),
                step.and_then(|s| s.belief()),
            ) {
                let belief = Shown::Hold { client, key, holds };
                out.push_str(&format!("{:>14}{}\n", "", belief.text(run.world().names(), lang)));
            }
            if !r.ok {
                let label = if zh { "✗ 期望：" } else { "✗ expected: " };
                let expected = render::expected(lesson.steps.get(r.index), r);
                out.push_str(&format!("{:>14}{label}{expected}\n", ""));
            }
        }
        let name = render::invariant_name(lesson.outcome.invariant, lang);
        let want = match (zh, lesson.outcome.broken) {
            (false, true) => "broken",
            (false, false) => "held",
            (true, true) => "被破坏",
            (true, false) => "成立",
        };
        out.push_str(&match (self.outcome, zh) {
            (Some(true), false) => format!("\noutcome: {name}: {want}, as the lesson teaches ✓\n"),
            (Some(true), true) => format!("\n结论：{name}：{want}，与本课要讲的一致 ✓\n"),
            (Some(false), false) => format!("\noutcome: {name}: the lesson says {want}, the run shows otherwise ✗ MISMATCH\n"),
            (Some(false), true) => format!("\n结论：{name}：本课说它应当{want}，这次运行不是这样 ✗ 不一致\n"),
            (None, false) => format!(
                "\noutcome: {name}: the lesson says {want}; not judged on a real run (the simulator derives it from its model of every node)\n"
            ),
            (None, true) => format!("\n结论：{name}：本课说它应当{want}；真实运行不作判定（模拟器根据它对每个节点的模型得出）\n"),
        });
        out
    }
}
